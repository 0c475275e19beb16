//! A new user's first hour (issue 25), each friction as the user meets it, through the built
//! binary or `wakesim::testing`: `run` without `scenarios/` says what to do; a Ctrl-C while
//! adapters start stops with a line and exit 130; wake logic named by `node`/`python` without a
//! path into the checkout; a TypeScript syntax error named by file, line and column without
//! sucrase's frames; Mermaid declaring only the participants a run uses; `WAKESIM_SEED` running
//! a plain seed labelled as one and printing its timeline once; an adapter's
//! `sendUserMessage(text)` showing its text on the timeline.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh directory under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("first-hour-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn wakesim(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("wakesim runs")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

#[test]
fn run_without_a_scenarios_directory_says_what_to_do() {
    let dir = scratch("no-scenarios");
    let out = wakesim(&dir, &["run"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("no `scenarios/` directory"), "{t}");
    assert!(t.contains("wakesim run path/to/scenario.toml"), "{t}");
    assert!(!t.contains("os error"), "{t}");
}

/// An adapter that never says hello holds start-up; Ctrl-C (SIGINT) then stops the run at once.
#[cfg(unix)]
#[test]
fn ctrl_c_during_start_up_says_it_stops_and_exits_130() {
    let dir = scratch("ctrl-c");
    std::fs::write(
        dir.join("slow.toml"),
        "name = \"slow start\"\nhost = \"pi\"\nwake = { command = [\"sleep\", \"30\"], start_timeout_ms = 30000 }\nseeds = 2\n[expect]\nverdict = \"pass\"\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args(["run", "slow.toml"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wakesim starts");
    // Wait until wakesim has started the adapter (so start-up is under way and the Ctrl-C
    // handler is in place), however loaded the machine is.
    // (Adapters are spawned by wakesim's spawner thread: look at the children of every task.)
    let tasks = format!("/proc/{}/task", child.id());
    let has_child = || {
        std::fs::read_dir(&tasks).is_ok_and(|d| {
            d.filter_map(|e| e.ok()).any(|e| {
                std::fs::read_to_string(e.path().join("children"))
                    .is_ok_and(|c| !c.trim().is_empty())
            })
        })
    };
    let waiting = Instant::now();
    while !has_child() {
        assert!(
            waiting.elapsed() < Duration::from_secs(60),
            "the adapter never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT");
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no exit 10 s after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let t = text(&out);
    assert_eq!(status.code(), Some(130), "{t}");
    assert!(t.contains("stopped during start-up (Ctrl-C)"), "{t}");
}

/// `wake = { node = "..." }` and `{ python = "..." }`: the reference adapters found without a
/// path into the checkout; the label is `node:FILE`.
#[test]
fn wake_logic_named_by_node_or_python_runs_through_the_reference_adapter() {
    let dir = scratch("by-name");
    // The modules stay where they are (they import their neighbours); `cwd` points there.
    for (key, examples, file, label) in [
        (
            "node",
            "adapters/node/examples",
            "g3-reservation.ts",
            "node:g3-reservation.ts",
        ),
        (
            "python",
            "adapters/python/examples",
            "g3_reservation.py",
            "python:g3_reservation.py",
        ),
    ] {
        let scn = format!("{key}.toml");
        std::fs::write(
            dir.join(&scn),
            format!(
                "name = \"{key}\"\nhost = \"pi\"\nwake = {{ {key} = \"{file}\", cwd = \"{}\", constants_ms = [60000] }}\nseeds = 3\n[expect]\nverdict = \"pass\"\n",
                root().join(examples).display()
            ),
        )
        .unwrap();
        let out = wakesim(&dir, &["run", &scn, "--no-save"]);
        let t = text(&out);
        assert_ne!(out.status.code(), Some(2), "{t}");
        assert!(t.contains(label), "{t}");
    }
    // A module that is not there: the file, line and column of its key.
    std::fs::write(dir.join("missing.toml"), "name = \"m\"\nhost = \"pi\"\nwake = { node = \"nope.ts\" }\nseeds = 3\n[expect]\nverdict = \"pass\"\n").unwrap();
    let out = wakesim(&dir, &["run", "missing.toml"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains("missing.toml:3:") && t.contains("nope.ts` is not a file"),
        "{t}"
    );
}

#[test]
fn a_typescript_syntax_error_names_file_line_and_column_without_sucrase_frames() {
    let dir = scratch("ts-syntax");
    std::fs::write(
        dir.join("bad.ts"),
        "export default function (pi: any) {\n  const x: number = ;\n}\n",
    )
    .unwrap();
    std::fs::write(dir.join("bad.toml"), "name = \"bad\"\nhost = \"pi\"\nwake = { node = \"bad.ts\" }\nseeds = 2\n[expect]\nverdict = \"pass\"\n").unwrap();
    let out = wakesim(&dir, &["run", "bad.toml"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("bad.ts:2:"), "{t}");
    assert!(!t.contains("sucrase/dist") && !t.contains("    at "), "{t}");
}

#[test]
fn mermaid_declares_only_the_participants_the_run_uses() {
    let out = wakesim(
        &root(),
        &[
            "replay",
            "scenarios/pi/g2-two-wakes-during-preparation.toml",
            "--seed",
            "2",
            "--format",
            "mermaid",
        ],
    );
    let t = String::from_utf8_lossy(&out.stdout);
    let declared = wakesim::report::mermaid::participants(&t);
    assert_eq!(declared, ["P", "W", "H"], "{t}");
    for id in declared {
        assert!(
            t.lines()
                .any(|l| !l.contains("participant") && l.contains(id)),
            "{id} unused: {t}"
        );
    }
}

/// Run by [`wakesim_seed_runs_a_plain_seed_and_prints_its_timeline_once`] in a child process
/// with `WAKESIM_SEED` set; alone it checks nothing.
#[test]
fn seed_env_child() {
    if std::env::var_os("FIRST_HOUR_CHILD").is_none() {
        return;
    }
    let registry = wakesim::family::Registry::builtin();
    wakesim::testing::check(
        &registry,
        root().join("scenarios/pi/g2-two-wakes-during-preparation.toml"),
    );
}

#[test]
fn wakesim_seed_runs_a_plain_seed_and_prints_its_timeline_once() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["seed_env_child", "--exact", "--nocapture"])
        .env("FIRST_HOUR_CHILD", "1")
        .env("WAKESIM_SEED", "2")
        .output()
        .unwrap();
    let t = text(&out);
    assert!(t.contains("· seed 2 ·"), "{t}");
    assert!(!t.contains("recorded choices"), "{t}");
    assert_eq!(t.matches("· wakesim ").count(), 1, "the timeline once: {t}");
}

/// A Node or Python wake logic's `sendUserMessage(text)` shows its text on the timeline (it was
/// `" "` whatever the text), a long text cut at `USER_MESSAGE_TEXT_BYTES_MAX` bytes with an
/// ellipsis, the blank `" "` as before; text parts of a content list count as its text.
#[test]
fn a_user_message_sent_through_an_adapter_shows_its_text() {
    let dir = scratch("user-text");
    std::fs::write(
        dir.join("wake.ts"),
        r#"export default function (pi: any, options: { text?: string; repeat?: number }) {
  const text = (options.text ?? "You have new background results.").repeat(options.repeat ?? 1);
  return (message: { content: string }) => {
    pi.sendMessage({ customType: "note", content: message.content, display: true }, { deliverAs: "nextTurn" });
    pi.sendUserMessage(text);
  };
}
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("wake.py"),
        r#"def wake(pi, options):
    text = options.get("text", "You have new background results.") * options.get("repeat", 1)
    def send(message, _options):
        pi.send_message({"custom_type": "note", "content": message["content"]}, {"deliver_as": "nextTurn"})
        pi.send_user_message([{"type": "text", "text": text}])
    return send
"#,
    )
    .unwrap();
    let max = wakesim::limits::USER_MESSAGE_TEXT_BYTES_MAX;
    // "é" is two bytes: 150 of them are cut to as many as fit with the three-byte ellipsis.
    let cut = format!("{}…", "é".repeat((max - 3) / 2));
    for (name, wake, shown) in [
        (
            "node",
            r#"{ node = "wake.ts" }"#,
            r#"sendUserMessage("You have new background results.") = P1 "#.to_string(),
        ),
        (
            "python",
            r#"{ python = "wake.py" }"#,
            r#"sendUserMessage("You have new background results.") = P1 "#.to_string(),
        ),
        (
            "long",
            r#"{ node = "wake.ts", options = { text = "é", repeat = 150 } }"#,
            format!(r#"sendUserMessage("{cut}") = P1 "#),
        ),
        (
            "long-python",
            r#"{ python = "wake.py", options = { text = "é", repeat = 150 } }"#,
            format!(r#"sendUserMessage("{cut}") = P1 "#),
        ),
        (
            "blank",
            r#"{ node = "wake.ts", options = { text = " " } }"#,
            r#"sendUserMessage(" ") = P1 "#.to_string(),
        ),
    ] {
        let scn = format!("{name}.toml");
        std::fs::write(
            dir.join(&scn),
            format!("name = \"{name}\"\nhost = \"pi\"\nwake = {wake}\nseeds = 1\n[expect]\nverdict = \"pass\"\n"),
        )
        .unwrap();
        let out = wakesim(&dir, &["replay", &scn, "--seed", "0"]);
        let t = text(&out);
        assert_ne!(out.status.code(), Some(2), "{t}");
        assert!(t.contains(&shown), "{name}: no `{shown}` in\n{t}");
    }
}

/// Copy `from` into `to`, directories included, leaving out `node_modules`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a directory");
    for e in std::fs::read_dir(from).expect("a directory").flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_name() == "node_modules" || e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if src.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).expect("a copy");
        }
    }
}

/// The Node adapter's own first-use install of sucrase (a copy of the adapter without
/// `node_modules`, as in a fresh clone) says what it installs and how long it took, in the
/// `wakesim: ` lines every install prints, which `run` relays (it said `wakesim-node: ...`,
/// which nothing relayed). Needs the npm registry, as the adapter itself does on first use.
#[test]
fn the_node_adapters_sucrase_install_says_wakesim_installing_and_installed() {
    let dir = scratch("sucrase-install");
    let adapter = dir.join("adapter");
    copy_tree(&root().join("adapters/node"), &adapter);
    let pinned = std::fs::read_to_string(adapter.join("package.json")).expect("package.json");
    let version = pinned
        .split("\"sucrase\": \"")
        .nth(1)
        .and_then(|v| v.split('"').next())
        .expect("sucrase pinned in package.json");
    std::fs::write(
        dir.join("wake.ts"),
        "export default function (pi: any) {\n  return (m: { content: string }) => pi.sendUserMessage(m.content);\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("fresh.toml"),
        format!(
            "name = \"fresh\"\nhost = \"pi\"\nwake = {{ command = [\"node\", \"{}\", \"wake.ts\"], start_timeout_ms = 300000 }}\nseeds = 2\n[expect]\nverdict = \"pass\"\n",
            adapter.join("adapter.mjs").display()
        ),
    )
    .unwrap();
    let out = wakesim(&dir, &["run", "fresh.toml", "--no-save"]);
    let t = text(&out);
    assert_ne!(out.status.code(), Some(2), "{t}");
    let installing = format!("wakesim: installing sucrase {version} (pinned, ");
    assert!(t.contains(&installing), "no `{installing}` in\n{t}");
    let installed = format!("wakesim: installed sucrase {version} in ");
    assert!(
        t.lines()
            .any(|l| l.starts_with(&installed) && l.ends_with(" s")),
        "no `{installed}N s` line in\n{t}"
    );
    assert!(!t.contains("wakesim-node: installing"), "{t}");
}

/// Failing seeds are counted per seed, expected apart from unexpected, the same in the summary
/// and in the progress line (whose figures the ETA log records): over a directory holding G2 as
/// it is (every failing seed expected), G2 with `harness` taken out of `also` (seeds that also
/// break `harness` are unexpected, the others expected: one scenario, both kinds) and G2 expected
/// to pass (every failing seed unexpected). The figures are checked against each seed's outcome
/// classified here, from its invariants.
#[test]
fn failing_seeds_are_counted_per_seed_in_the_progress_line_and_the_summary() {
    let dir = scratch("per-seed-counts");
    let g2 =
        std::fs::read_to_string(root().join("scenarios/pi/g2-two-wakes-during-preparation.toml"))
            .expect("G2");
    let also = r#"also = ["no-loss", "flag-coherence", "harness", "fifo", "bounded-latency", "no-wasted-wake"]"#;
    assert!(g2.contains(also), "G2's `also` moved: {g2}");
    let without_harness = g2.replace(
        also,
        r#"also = ["no-loss", "flag-coherence", "fifo", "bounded-latency", "no-wasted-wake"]"#,
    );
    let expect = g2.find("[expect]").expect("an [expect] table");
    let passing = format!("{}[expect]\nverdict = \"pass\"\n", &g2[..expect]);
    let files = [
        ("a-expected.toml", g2.clone(), vec!["single-starter"], also),
        (
            "b-mixed.toml",
            without_harness,
            vec!["single-starter"],
            "no-loss flag-coherence fifo bounded-latency no-wasted-wake",
        ),
        ("c-pass.toml", passing, vec![], ""),
    ];
    let registry = wakesim::family::Registry::builtin();
    let mut runner = wakesim::engine::Runner::new(&registry);
    let (mut expected, mut unexpected) = (0u64, 0u64);
    for (name, text, wanted, allowed) in &files {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let scn = wakesim::scenario::Scenario::load(&path, &registry).expect("the scenario");
        for seed in 0..200 {
            let r = runner.run_verdict(&scn, seed);
            if r.outcome.is_pass() {
                continue;
            }
            let names: Vec<&str> = r
                .outcome
                .violations()
                .iter()
                .map(|v| v.invariant.name())
                .collect();
            let ok = !names.is_empty()
                && !wanted.is_empty()
                && names
                    .iter()
                    .all(|n| wanted.contains(n) || allowed.contains(n));
            match ok {
                true => expected += 1,
                false => unexpected += 1,
            }
        }
    }
    // Each kind is there, and the mixed scenario holds both.
    assert!(expected > 0 && unexpected > 0, "{expected} {unexpected}");
    let log = dir.join("eta.tsv");
    let out = Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args(["run", ".", "--seeds", "0..200", "--no-save"])
        .env("WAKESIM_ETA_LOG", &log)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .output()
        .expect("wakesim runs");
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "two expectations not met: {t}");
    let figures = format!("failing seeds: {expected} expected, {unexpected} unexpected");
    let summary = t
        .lines()
        .find(|l| l.starts_with("summary: "))
        .expect("a summary");
    assert!(summary.contains(&figures), "no `{figures}` in {summary}");
    assert!(summary.contains("2 of 3 expectations NOT met"), "{summary}");
    // The progress line's own figures at the end of the run.
    let log = std::fs::read_to_string(&log).expect("the ETA log");
    let end = log
        .lines()
        .find(|l| l.starts_with("end\t"))
        .expect("an end record");
    let f: Vec<&str> = end.split('\t').collect();
    assert_eq!(
        f[2..],
        ["600", "600", &expected.to_string(), &unexpected.to_string()],
        "{end}"
    );
}

/// A run stopped part-way (here `--time-budget` over a range it cannot finish) judges what the
/// seeds that ran showed, but not what they have not reached yet: a failure the scenario expects
/// and has not seen is reported unjudged and met, not failed (it was failed, exit 1). How many
/// seeds run in the second depends on the machine; the verdict does not: the scenario has no
/// tool turns, so nothing breaks `tool-pairing`, and every other invariant is allowed (beyond
/// its budget of 100 seeds the fixed G4 meets rarer timings: seed 7208 breaks bounded-latency).
const ALSO: &str = r#"["no-loss", "exactly-once", "fifo", "bounded-latency", "single-starter", "flag-coherence", "harness", "no-wasted-wake", "boundary-flush"]"#;

#[test]
fn a_partial_run_leaves_an_expected_failure_not_yet_seen_unjudged() {
    let dir = scratch("partial");
    let passes = std::fs::read_to_string(root().join("tests/data/reliab/passes.toml")).unwrap();
    let expect = passes.find("[expect]").expect("an [expect] table");
    std::fs::write(
        dir.join("never.toml"),
        format!(
            "{}[expect]\nverdict = \"fail\"\ninvariant = \"tool-pairing\"\nalso = {ALSO}\n",
            &passes[..expect]
        ),
    )
    .unwrap();
    let out = wakesim(
        &dir,
        &[
            "run",
            "never.toml",
            "--seeds",
            "0..10000000000000",
            "--time-budget",
            "1s",
            "--threads",
            "1",
            "--no-save",
        ],
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("unjudged: ") && t.contains(" of 10000000000000 seeds ran"),
        "{t}"
    );
    assert!(t.contains("partial: --time-budget"), "{t}");
}

/// The main job's ETA starts from what the previous run measured: a first `wakesim run` (no cost
/// file in its cache directory) writes each scenario file's cost to `eta-costs.tsv` there, its
/// ETA log saying each prior was derived from the file; a second run of the same files starts
/// from those costs (`remembered`), and a cost file that does not parse is ignored, not an error,
/// and replaced by the run's.
#[test]
fn the_eta_remembers_each_scenario_files_cost_between_runs() {
    let dir = scratch("eta-costs");
    let g2 =
        std::fs::read_to_string(root().join("scenarios/pi/g2-two-wakes-during-preparation.toml"))
            .expect("G2");
    std::fs::write(dir.join("g2.toml"), &g2).unwrap();
    let cache = dir.join("cache");
    let costs = cache.join("eta-costs.tsv");
    let run = |log: &str| {
        let log = dir.join(log);
        let out = Command::new(env!("CARGO_BIN_EXE_wakesim"))
            .args(["run", "g2.toml", "--seeds", "0..300", "--no-save"])
            .env("WAKESIM_ETA_LOG", &log)
            .env("WAKESIM_CACHE_DIR", &cache)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .expect("wakesim runs");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let log = std::fs::read_to_string(&log).expect("the ETA log");
        let first = log.lines().next().expect("a scenario record").to_string();
        first
            .rsplit('\t')
            .next()
            .expect("its prior's source")
            .to_string()
    };
    assert!(!costs.exists());
    assert_eq!(run("1.tsv"), "derived");
    let file = std::fs::read_to_string(&costs).expect("the cost file written");
    let abs = std::fs::canonicalize(dir.join("g2.toml")).unwrap();
    let line = (file.lines())
        .find(|l| l.starts_with(&format!("{}\t", abs.display())))
        .unwrap_or_else(|| panic!("no line for g2.toml in\n{file}"));
    assert_eq!(line.split('\t').nth(3), Some("300"), "{line}");
    assert_eq!(run("2.tsv"), "remembered");
    std::fs::write(&costs, "wakesim-eta-costs\t1\tnot a version\nhalf a line").unwrap();
    assert_eq!(run("3.tsv"), "derived");
    let again = std::fs::read_to_string(&costs).expect("the cost file");
    assert!(
        again
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with(&abs.display().to_string())),
        "{again}"
    );
}
