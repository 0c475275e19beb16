//! Sweeps beyond one machine: the recipes in `deploy/` work as written, and `merge` is the
//! fleet's reduce step.
//!
//! For each recipe (a Kubernetes Indexed Job, a GitHub Actions workflow, a GitLab CI pipeline, a
//! Slurm job array) the test takes the shard command and the merge command out of the recipe
//! file itself (so the test cannot drift from it), runs the shard command as N concurrent local
//! processes with the variables that engine sets for task i (and no other engine's), then the
//! merge command, and checks the merged report equals `wakesim run` of the same scenarios
//! unsharded: the same JSON Lines (timing aside: seeds, failures, verdicts, coverage, run
//! identity) and the same exit code. The recipes also get a structural check of the fields
//! their engine needs (kubectl and the engines are not on the machine): an Indexed Job's
//! completion mode, completions equal to parallelism and to WAKESIM_SHARD_COUNT, a workflow's
//! matrix and a merge job that needs it, and so on. Everything runs in a copy of
//! `scenarios/pi` under target/tmp with the seed multiplier at 1 (the recipes' nightly 100 would
//! cost minutes), so nothing writes into the repository's scenarios.
//!
//! Then `merge` itself: the same shards in any order, or one given twice, give the same bytes;
//! shards of different scenarios are refused naming the files and the scenario (issue 29, case
//! 8); `--save-failures --cap` saves the failing seeds the shards found and stops at the cap;
//! `--format junit` parses as XML with a case per scenario and per saved failure and a failure
//! that carries the replay line.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use common::{root, tempdir};
use yaml_rust2::{Yaml, YamlLoader};

/// Every variable `--shard auto` reads: cleared in each child, so that a test run inside a CI
/// job (GitLab sets CI_NODE_INDEX) sees only the engine it plays.
const SHARD_VARS: &[&str] = &[
    "WAKESIM_SHARD",
    "WAKESIM_SHARD_COUNT",
    "JOB_COMPLETION_INDEX",
    "CI_NODE_INDEX",
    "CI_NODE_TOTAL",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_COUNT",
    "AWS_BATCH_JOB_ARRAY_INDEX",
    "AWS_BATCH_JOB_ARRAY_SIZE",
    "CIRCLE_NODE_INDEX",
    "CIRCLE_NODE_TOTAL",
    "BUILDKITE_PARALLEL_JOB",
    "BUILDKITE_PARALLEL_JOB_COUNT",
];

/// A directory holding a copy of `scenarios/pi` (with its saved failures), where a recipe runs.
fn fixture(name: &str) -> PathBuf {
    let dir = tempdir(name);
    copy_dir(&root().join("scenarios/pi"), &dir.join("scenarios/pi"));
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let p = e.expect("entry").path();
        let dest = to.join(p.file_name().expect("name"));
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).expect("copy");
        }
    }
}

/// A shell script run the way an engine would: in `dir`, with the built `wakesim` first on PATH,
/// the seed multiplier at 1, no other engine's variables, and `env` (the recipe's and the task's).
fn script(shell: &[&str], text: &str, dir: &Path, env: &BTreeMap<String, String>) -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_wakesim"))
        .parent()
        .expect("bin dir")
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let mut c = Command::new(shell[0]);
    c.args(&shell[1..]).arg(text).current_dir(dir);
    for v in SHARD_VARS {
        c.env_remove(v);
    }
    c.envs(env)
        .env("PATH", path)
        .env("WAKESIM_SEEDS_MULTIPLIER", "1");
    c
}

/// Run the shard command of each task at once (N processes), then wait for all.
fn run_tasks(tasks: Vec<Command>) {
    let children: Vec<_> = tasks
        .into_iter()
        .map(|mut c| c.spawn().expect("a shard starts"))
        .collect();
    for (i, ch) in children.into_iter().enumerate() {
        let out = ch.wait_with_output().expect("a shard ends");
        assert!(out.status.success(), "task {i}: {:?}", out.status);
    }
}

fn run_output(mut c: Command) -> Output {
    c.output().expect("runs")
}

/// JSON Lines without the timing fields.
fn untimed(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            if let Some(o) = v.as_object_mut() {
                for k in ["seconds", "seeds_per_s", "events_per_s"] {
                    o.remove(k);
                }
            }
            v
        })
        .collect()
}

/// `wakesim run SCENARIOS --format json --no-save`, unsharded, in a fixture: the report every
/// recipe's merged report must equal (computed once; the scenario paths and contents are the
/// same in every fixture).
fn unsharded(scenarios: &str) -> &'static (String, Option<i32>) {
    static WHOLE: OnceLock<(String, Option<i32>)> = OnceLock::new();
    let got = WHOLE.get_or_init(|| {
        let dir = fixture("whole");
        let cmd = format!("wakesim run {scenarios} --format json --no-save");
        let out = run_output(script(&["sh", "-c"], &cmd, &dir, &BTreeMap::new()));
        assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
        let text = String::from_utf8(out.stdout).expect("utf-8");
        let _ = std::fs::write(dir.join("whole.jsonl"), &text);
        (text, out.status.code())
    });
    assert!(
        got.0.contains(&format!("\"file\":\"{scenarios}/")),
        "every recipe sweeps {scenarios}"
    );
    got
}

/// The merged report in `results` equals the unsharded run, and the JUnit XML beside it has a
/// case per scenario and per saved failure.
fn check_merged(dir: &Path, results: &str, scenarios: &str, merge: &Output) {
    let (whole, code) = unsharded(scenarios);
    let merged = std::fs::read_to_string(dir.join(results).join("merged.jsonl")).expect("merged");
    assert_eq!(
        untimed(&merged),
        untimed(whole),
        "merged report in {}",
        dir.display()
    );
    assert_eq!(merge.status.code(), *code, "{merge:?}");
    let xml = std::fs::read_to_string(dir.join(results).join("junit.xml")).expect("junit.xml");
    let cases = junit_cases(&xml);
    let lines = untimed(whole);
    let expected = lines.iter().filter(|l| l["type"] != "summary").count();
    assert_eq!(cases.len(), expected, "{xml}");
    for l in &lines {
        if l["type"] == "scenario" {
            let name = l["name"].as_str().unwrap();
            assert!(cases.iter().any(|(n, _)| n == name), "no case for {name}");
        }
    }
}

/// The test cases of a JUnit document: (name, failure text if any). Panics unless it is XML
/// shaped as JUnit: `testsuites` > `testsuite` > `testcase`, counts that add up.
fn junit_cases(xml: &str) -> Vec<(String, Option<String>)> {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("not XML: {e}\n{xml}"));
    let top = doc.root_element();
    assert_eq!(top.tag_name().name(), "testsuites");
    let mut cases = Vec::new();
    let mut failures = 0;
    for suite in top.children().filter(|n| n.is_element()) {
        assert_eq!(suite.tag_name().name(), "testsuite");
        let n = suite
            .children()
            .filter(|c| c.has_tag_name("testcase"))
            .count();
        assert_eq!(suite.attribute("tests"), Some(n.to_string().as_str()));
        for case in suite.children().filter(|c| c.has_tag_name("testcase")) {
            assert!(case.attribute("classname").is_some());
            let failure = case
                .children()
                .find(|c| c.has_tag_name("failure"))
                .map(|f| f.text().unwrap_or("").to_string());
            failures += usize::from(failure.is_some());
            cases.push((case.attribute("name").expect("a name").to_string(), failure));
        }
    }
    assert_eq!(
        top.attribute("tests"),
        Some(cases.len().to_string().as_str())
    );
    assert_eq!(
        top.attribute("failures"),
        Some(failures.to_string().as_str())
    );
    cases
}

fn yaml(rel: &str) -> Vec<Yaml> {
    let text = std::fs::read_to_string(root().join(rel)).expect("recipe");
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn s(y: &Yaml) -> &str {
    y.as_str().unwrap_or_else(|| panic!("not a string: {y:?}"))
}

fn int(y: &Yaml) -> u64 {
    y.as_i64()
        .unwrap_or_else(|| panic!("not an integer: {y:?}")) as u64
}

/// A YAML mapping of names to values (`variables:`, `env:`), as strings.
fn vars(y: &Yaml) -> BTreeMap<String, String> {
    let Some(h) = y.as_hash() else {
        return BTreeMap::new();
    };
    h.iter()
        .map(|(k, v)| {
            let v = match v {
                Yaml::Integer(i) => i.to_string(),
                v => s(v).to_string(),
            };
            (s(k).to_string(), v)
        })
        .collect()
}

/// A Kubernetes container's `env:` list.
fn container_env(c: &Yaml) -> BTreeMap<String, String> {
    (c["env"].as_vec().expect("env"))
        .iter()
        .map(|e| (s(&e["name"]).to_string(), s(&e["value"]).to_string()))
        .collect()
}

/// The `sh -c SCRIPT` of a container.
fn container_script(c: &Yaml) -> String {
    let cmd: Vec<&str> = c["command"]
        .as_vec()
        .expect("command")
        .iter()
        .map(s)
        .collect();
    assert_eq!(&cmd[..2], ["sh", "-c"], "one sh -c script");
    assert_eq!(cmd.len(), 3);
    cmd[2].to_string()
}

#[test]
fn the_kubernetes_indexed_job_merges_to_the_unsharded_run() {
    let docs = yaml("deploy/kubernetes/sweep-job.yaml");
    let job = docs.iter().find(|d| s(&d["kind"]) == "Job").expect("a Job");
    let pvc = docs
        .iter()
        .find(|d| s(&d["kind"]) == "PersistentVolumeClaim")
        .expect("a PVC");
    assert_eq!(s(&job["apiVersion"]), "batch/v1");
    let spec = &job["spec"];
    assert_eq!(s(&spec["completionMode"]), "Indexed");
    let n = int(&spec["completions"]);
    assert_eq!(int(&spec["parallelism"]), n, "one pod per shard at once");
    let pod = &spec["template"]["spec"];
    // An Indexed Job's pods may not restart in place (Always is refused by the API).
    assert!(["Never", "OnFailure"].contains(&s(&pod["restartPolicy"])));
    let c = &pod["containers"][0];
    assert!(!s(&c["name"]).is_empty() && !s(&c["image"]).is_empty());
    let mut env = container_env(c);
    assert_eq!(env["WAKESIM_SHARD_COUNT"], n.to_string(), "= completions");
    // The results live on the volume every pod mounts, the recipe's claim.
    let mount = &c["volumeMounts"][0];
    assert_eq!(s(&mount["mountPath"]), env["WAKESIM_RESULTS"]);
    let vol = &pod["volumes"][0];
    assert_eq!(s(&vol["name"]), s(&mount["name"]));
    assert_eq!(
        s(&vol["persistentVolumeClaim"]["claimName"]),
        s(&pvc["metadata"]["name"])
    );
    assert_eq!(s(&pvc["spec"]["accessModes"][0]), "ReadWriteMany");
    let shard = container_script(c);

    let merge_docs = yaml("deploy/kubernetes/merge-job.yaml");
    let merge_job = &merge_docs[0];
    assert_eq!(s(&merge_job["kind"]), "Job");
    let mc = &merge_job["spec"]["template"]["spec"]["containers"][0];
    let merge = container_script(mc);
    let mut merge_env = container_env(mc);
    assert_eq!(merge_env["WAKESIM_RESULTS"], env["WAKESIM_RESULTS"]);

    let dir = fixture("k8s");
    // The volume, here a directory of the fixture.
    std::fs::create_dir_all(dir.join("results")).expect("mkdir");
    env.insert("WAKESIM_RESULTS".into(), "results".into());
    merge_env.insert("WAKESIM_RESULTS".into(), "results".into());
    let tasks = (0..n)
        .map(|i| {
            let mut e = env.clone();
            e.insert("JOB_COMPLETION_INDEX".into(), i.to_string());
            script(&["sh", "-c"], &shard, &dir, &e)
        })
        .collect();
    run_tasks(tasks);
    let out = run_output(script(&["sh", "-c"], &merge, &dir, &merge_env));
    check_merged(&dir, "results", &env["WAKESIM_SCENARIOS"], &out);
}

/// `${{ ... }}` expressions of a GitHub workflow, for the ones the recipe uses.
fn github_expand(text: &str, vals: &BTreeMap<&str, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${{") {
        out += &rest[..at];
        let end = rest[at..].find("}}").expect("a closed expression") + at;
        let expr = rest[at + 3..end].trim();
        let v = vals
            .get(expr)
            .unwrap_or_else(|| panic!("an expression the test does not know: {expr}"));
        out += v;
        rest = &rest[end + 2..];
    }
    out + rest
}

/// The `run:` of the step with `id`.
fn step_run<'a>(job: &'a Yaml, id: &str) -> &'a str {
    let steps = job["steps"].as_vec().expect("steps");
    let step = steps
        .iter()
        .find(|st| st["id"].as_str() == Some(id))
        .unwrap_or_else(|| panic!("a step with id {id}"));
    s(&step["run"])
}

#[test]
fn the_github_actions_matrix_merges_to_the_unsharded_run() {
    let wf = &yaml("deploy/github/wakesim-sweep.yml")[0];
    let sweep = &wf["jobs"]["sweep"];
    let merge_job = &wf["jobs"]["merge"];
    let shards: Vec<u64> = (sweep["strategy"]["matrix"]["shard"].as_vec())
        .expect("a shard matrix")
        .iter()
        .map(int)
        .collect();
    let n = shards.len() as u64;
    assert_eq!(shards, (1..=n).collect::<Vec<_>>(), "shards 1..=N");
    assert_eq!(sweep["strategy"]["fail-fast"].as_bool(), Some(false));
    assert_eq!(s(&merge_job["needs"]), "sweep");
    // The merge job runs when a shard found something (exit 1 is folded into success, but a
    // shard may still fail): only a cancelled run skips it.
    assert!(s(&merge_job["if"]).contains("!cancelled()"));
    // Each shard's artifact is one the merge job downloads.
    let upload = (sweep["steps"].as_vec().unwrap().iter())
        .find(|st| (st["uses"].as_str()).is_some_and(|u| u.starts_with("actions/upload-artifact")))
        .expect("an upload");
    let download = (merge_job["steps"].as_vec().unwrap().iter())
        .find(|st| {
            st["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/download-artifact"))
        })
        .expect("a download");
    let pattern = s(&download["with"]["pattern"]).trim_end_matches('*');
    assert!(s(&upload["with"]["name"]).starts_with(pattern));
    assert_eq!(download["with"]["merge-multiple"].as_bool(), Some(true));

    let mut env = vars(&wf["env"]);
    let dir = fixture("github");
    env.insert("WAKESIM_RESULTS".into(), "results".into());
    let tasks = shards
        .iter()
        .map(|k| {
            let vals = BTreeMap::from([
                ("matrix.shard", k.to_string()),
                ("strategy.job-total", n.to_string()),
            ]);
            let mut e = env.clone();
            for (name, v) in vars(&sweep["env"]) {
                e.insert(name, github_expand(&v, &vals));
            }
            let run = github_expand(step_run(sweep, "sweep"), &vals);
            // GitHub's `run:` shell on Linux.
            script(
                &["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"],
                &run,
                &dir,
                &e,
            )
        })
        .collect();
    run_tasks(tasks);
    let merge = github_expand(step_run(merge_job, "merge"), &BTreeMap::new());
    let out = run_output(script(
        &["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"],
        &merge,
        &dir,
        &env,
    ));
    check_merged(&dir, "results", &env["WAKESIM_SCENARIOS"], &out);
}

#[test]
fn the_gitlab_parallel_jobs_merge_to_the_unsharded_run() {
    let ci = &yaml("deploy/gitlab/wakesim-sweep.gitlab-ci.yml")[0];
    let sweep = &ci["wakesim-sweep"];
    let merge_job = &ci["wakesim-merge"];
    let n = int(&sweep["parallel"]);
    assert!(n >= 2);
    assert!(
        (merge_job["needs"].as_vec().expect("needs"))
            .iter()
            .any(|j| s(j) == "wakesim-sweep")
    );
    let env = vars(&ci["variables"]);
    assert_eq!(
        s(&merge_job["artifacts"]["reports"]["junit"]),
        format!("{}/junit.xml", env["WAKESIM_RESULTS"])
    );
    let lines = |job: &Yaml| -> String {
        (job["script"].as_vec().expect("script"))
            .iter()
            .map(s)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let dir = fixture("gitlab");
    let tasks = (1..=n)
        .map(|i| {
            let mut e = env.clone();
            e.insert("CI_NODE_INDEX".into(), i.to_string());
            e.insert("CI_NODE_TOTAL".into(), n.to_string());
            // A job fails at its first script line that fails, as `-e` does.
            script(&["sh", "-e", "-c"], &lines(sweep), &dir, &e)
        })
        .collect();
    run_tasks(tasks);
    let out = run_output(script(&["sh", "-e", "-c"], &lines(merge_job), &dir, &env));
    check_merged(
        &dir,
        &env["WAKESIM_RESULTS"],
        &env["WAKESIM_SCENARIOS"],
        &out,
    );
}

#[test]
fn the_slurm_array_merges_to_the_unsharded_run() {
    let sweep =
        std::fs::read_to_string(root().join("deploy/slurm/wakesim-sweep.sbatch")).expect("sbatch");
    let merge =
        std::fs::read_to_string(root().join("deploy/slurm/wakesim-merge.sbatch")).expect("sbatch");
    let array = (sweep.lines())
        .find_map(|l| l.strip_prefix("#SBATCH --array="))
        .expect("an --array line");
    let (lo, hi) = array.split_once('-').expect("a range A-B");
    let (lo, hi): (u64, u64) = (lo.parse().unwrap(), hi.parse().unwrap());
    let n = hi - lo + 1;
    // Slurm reads #SBATCH lines only before the first command.
    for text in [&sweep, &merge] {
        let first_cmd = (text.lines())
            .position(|l| !l.starts_with('#') && !l.trim().is_empty())
            .unwrap();
        assert!(
            text.lines()
                .skip(first_cmd)
                .all(|l| !l.starts_with("#SBATCH"))
        );
    }
    let dir = fixture("slurm");
    let tasks = (lo..=hi)
        .map(|id| {
            let e = BTreeMap::from([
                ("SLURM_ARRAY_TASK_ID".to_string(), id.to_string()),
                ("SLURM_ARRAY_TASK_MIN".to_string(), lo.to_string()),
                ("SLURM_ARRAY_TASK_MAX".to_string(), hi.to_string()),
                ("SLURM_ARRAY_TASK_COUNT".to_string(), n.to_string()),
                ("SLURM_ARRAY_JOB_ID".to_string(), "1000".to_string()),
            ]);
            script(&["bash", "-c"], &sweep, &dir, &e)
        })
        .collect();
    run_tasks(tasks);
    let out = run_output(script(&["bash", "-c"], &merge, &dir, &BTreeMap::new()));
    check_merged(&dir, "results", "scenarios/pi", &out);
}

// ---------------------------------------------------------------------------------------------
// merge itself

fn wakesim_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wakesim"));
    c.args(args).current_dir(dir);
    for v in SHARD_VARS {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    c.output().expect("wakesim runs")
}

/// `wakesim run ARGS --shard K/N --format json --no-save` for k = 1..=n, written to files.
fn shards(dir: &Path, args: &[&str], n: u64, tag: &str) -> Vec<String> {
    (1..=n)
        .map(|k| {
            let shard = format!("{k}/{n}");
            let mut a = vec!["run"];
            a.extend(args);
            a.extend(["--shard", &shard, "--format", "json", "--no-save"]);
            let out = wakesim_in(dir, &a, &[]);
            assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
            let f = format!("{tag}-{k}.jsonl");
            std::fs::write(dir.join(&f), &out.stdout).expect("write");
            f
        })
        .collect()
}

#[test]
fn merge_is_commutative_and_idempotent_and_refuses_another_runs_shard() {
    let dir = fixture("merge-laws");
    let a = "scenarios/pi/g1-counter-strands-between-inner-runs.toml";
    let b = "scenarios/pi/g2-two-wakes-during-preparation.toml";
    let both = shards(&dir, &[a, b, "--seeds", "0..300"], 3, "ab");
    let merged = |files: &[&str]| {
        let mut args = vec!["merge"];
        args.extend(files);
        wakesim_in(&dir, &args, &[])
    };
    let f: Vec<&str> = both.iter().map(String::as_str).collect();
    let once = merged(&f);
    assert!(once.status.code().is_some_and(|c| c <= 1), "{once:?}");
    // A retried task's output: the same report, slower.
    let retried = dir.join("ab-1-retried.jsonl");
    let text = std::fs::read_to_string(dir.join(f[0])).unwrap();
    std::fs::write(&retried, text.replace("\"seconds\":", "\"seconds\":9")).unwrap();
    let r = "ab-1-retried.jsonl";
    for order in [
        vec![f[2], f[0], f[1]],
        vec![f[1], f[2], f[0], f[1]],
        vec![f[0], f[0], f[1], f[2], f[2]],
        vec![r, f[1], f[0], f[2]],
        vec![f[2], f[1], r, f[0]],
    ] {
        let again = merged(&order);
        assert_eq!(again.status.code(), once.status.code(), "{order:?}");
        assert_eq!(again.stdout, once.stdout, "{order:?}: byte for byte");
    }
    // Issue 29, case 8: shard 1 of a run of one scenario with shard 2 of a run of another.
    let one = shards(&dir, &[a, "--seeds", "0..300"], 2, "a");
    let other = shards(&dir, &[b, "--seeds", "0..300"], 2, "b");
    let out = merged(&[&one[0], &other[1]]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert!(err.contains(&one[0]) && err.contains(&other[1]), "{err}");
    assert!(err.contains("different runs") && err.contains(a), "{err}");
    // And a shard of the same scenarios over other seeds.
    let wider = shards(&dir, &[a, "--seeds", "0..400"], 2, "wide");
    let out = merged(&[&one[0], &wider[1]]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--seeds 0..300") && err.contains("--seeds 0..400"),
        "{err}"
    );
    // A scenario file edited after the shards ran is not judged as it is now.
    let edited = dir.join(a);
    let text = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(&edited, format!("{text}\n# edited\n")).unwrap();
    let out = merged(&[&one[0], &one[1]]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("has changed since the shards ran it"), "{err}");
}

#[test]
fn shard_auto_names_the_variables_when_none_is_set_and_refuses_two_engines() {
    let dir = fixture("auto-errors");
    let out = wakesim_in(&dir, &["run", "scenarios/pi", "--shard", "auto"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for v in [
        "WAKESIM_SHARD",
        "JOB_COMPLETION_INDEX",
        "CI_NODE_INDEX",
        "SLURM_ARRAY_TASK_ID",
    ] {
        assert!(err.contains(v), "{err}");
    }
    let out = wakesim_in(
        &dir,
        &["run", "scenarios/pi", "--shard", "auto"],
        &[
            ("CI_NODE_INDEX", "1"),
            ("CI_NODE_TOTAL", "2"),
            ("BUILDKITE_PARALLEL_JOB", "0"),
            ("BUILDKITE_PARALLEL_JOB_COUNT", "2"),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("more than one engine"), "{err}");
}

/// A scenario whose expectation its seeds do not meet: G2 expected to pass.
const WRONG: &str = "name = \"G2 wrongly expected to pass\"\nhost = \"pi\"\nwake = \"pi.is-idle\"\nseeds = 200\n\
     [producers]\nmessages = { min = 2, max = 4 }\nspacing_ms = { min = 0, max = 200 }\n[expect]\nverdict = \"pass\"\n";

#[test]
fn merge_saves_the_shards_failing_seeds_up_to_the_cap_and_junit_carries_the_replay_line() {
    let dir = tempdir("save-failures");
    std::fs::create_dir_all(dir.join("s")).unwrap();
    std::fs::write(dir.join("s/wrong.toml"), WRONG).unwrap();
    let files = shards(&dir, &["s/wrong.toml"], 3, "w");
    let lines: Vec<serde_json::Value> = (files.iter())
        .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
        .flat_map(|t| untimed(&t))
        .filter(|l| l["type"] == "scenario")
        .collect();
    let mut firsts: Vec<u64> = (lines.iter())
        .filter_map(|l| l["unexpected"]["seed"].as_u64())
        .collect();
    firsts.sort_unstable();
    assert_eq!(
        firsts.len(),
        3,
        "each shard found a failing seed: {lines:?}"
    );
    let regs = dir.join("s/regressions");
    let saved = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&regs)
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let mut args = vec!["merge", "--save-failures", "--cap", "2"];
    args.extend(files.iter().map(String::as_str));
    let out = wakesim_in(&dir, &args, &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let got = saved();
    assert_eq!(got.len(), 2, "{got:?}");
    // The least seeds first.
    for seed in &firsts[..2] {
        let name = format!("-seed-{seed}.toml");
        assert!(got.iter().any(|f| f.ends_with(&name)), "{seed} in {got:?}");
    }
    // At the cap, nothing more.
    let out = wakesim_in(&dir, &args, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(saved(), got);
    assert!(String::from_utf8_lossy(&out.stderr).contains("at --cap 2"));

    // JUnit: the scenario's case fails with its replay line; each saved failure is a case (the
    // shards ran before they were saved, so a fresh run shows them).
    let out = wakesim_in(
        &dir,
        &["run", "s/wrong.toml", "--format", "junit", "--no-save"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let xml = String::from_utf8(out.stdout).unwrap();
    let cases = junit_cases(&xml);
    assert_eq!(cases.len(), 1 + got.len(), "{xml}");
    let (_, failure) = cases
        .iter()
        .find(|(n, _)| n == "G2 wrongly expected to pass")
        .expect("the scenario's case");
    let failure = failure.as_ref().expect("it failed");
    assert!(
        failure.contains("reproduce: wakesim replay s/wrong.toml --seed"),
        "{failure}"
    );
    for (name, f) in &cases {
        if name.contains("regressions") {
            let f = f.as_ref().expect("a saved failure fails until fixed");
            assert!(
                f.contains("reproduce: wakesim replay s/regressions/"),
                "{f}"
            );
        }
    }
}
