//! `wakesim run` for long runs: `--filter`, `--time-budget` and `--fail-fast` (a partial report
//! that says so), Ctrl-C (a partial summary and exit 130), colour that honours `NO_COLOR`,
//! `CLICOLOR_FORCE` and pipes, coverage lines with the `must_reach_share` warning, and the
//! warning that `--check-determinism` through an adapter is dear.

mod common;
use common::{root, tempdir};

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

const G2: &str = "scenarios/pi/g2-two-wakes-during-preparation.toml";
const G4: &str = "scenarios/pi/g4-fixed-passes.toml";

/// The binary with the colour variables of the test's own environment removed.
fn wakesim_cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wakesim"));
    c.args(args)
        .current_dir(root())
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR");
    c
}

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = wakesim_cmd(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("wakesim runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The last JSON line (the summary).
fn summary(out: &Output) -> serde_json::Value {
    let stdout = text(&out.stdout);
    let last = stdout.lines().last().expect("a summary line");
    serde_json::from_str(last).expect("JSON")
}

/// A copy of a repository scenario with `edit` applied, in `dir`.
fn variant(dir: &Path, name: &str, from: &str, edit: impl Fn(String) -> String) -> String {
    let original = std::fs::read_to_string(root().join(from)).expect("scenario");
    let changed = edit(original.clone());
    assert_ne!(changed, original, "the edit applies");
    let path = dir.join(name);
    std::fs::write(&path, changed).expect("write");
    path.display().to_string()
}

#[test]
fn filter_runs_the_matching_scenarios_with_their_regressions_and_refuses_to_match_nothing() {
    let out = run(
        &[
            "run",
            "--filter",
            "two-wakes",
            "--seeds",
            "0..20",
            "--color",
            "never",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let files: Vec<&str> = (stdout.lines())
        .filter(|l| l.starts_with('✓') || l.starts_with('✗'))
        .map(|l| l.split(" · ").next().expect("a file"))
        .collect();
    assert!(!files.is_empty());
    assert!(files.iter().all(|f| f.contains("two-wakes")), "{stdout}");
    assert!(files.iter().any(|f| f.contains("regressions/")), "{stdout}");
    assert!(files.iter().any(|f| f.ends_with(G2)), "{stdout}");

    let none = run(&["run", "--filter", "no-such-scenario-anywhere"], &[]);
    assert_eq!(none.status.code(), Some(2));
    assert!(text(&none.stderr).contains("no scenario or regression file matches --filter"));
}

#[test]
fn a_time_budget_stops_starting_seeds_and_flags_the_report_partial() {
    // No machine runs the pi scenarios' 70,000 seeds in a millisecond.
    let out = run(
        &[
            "run",
            "scenarios/pi",
            "--time-budget",
            "1ms",
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = summary(&out);
    let why = s["stopped"].as_str().expect("flagged as stopped");
    assert!(why.contains("--time-budget"), "{why}");
    assert!(why.contains("depends on this machine's speed"), "{why}");
    let (seeds, planned) = (s["seeds"].as_u64(), s["seeds_planned"].as_u64());
    assert!(seeds < planned, "{seeds:?} of {planned:?}");
    assert!(s["not_run"].as_u64() > Some(0));

    let out = run(&["run", "scenarios/pi", "--time-budget", "1ms"], &[]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("not run (the run stopped)"), "{stdout}");
    assert!(stdout.contains("\npartial: --time-budget"), "{stdout}");

    let bad = run(&["run", "--time-budget", "soon"], &[]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn fail_fast_stops_at_the_first_expectation_not_met() {
    let dir = tempdir("fail-fast");
    // `a-`: G2's bug, but expected to pass (seed 2 fails it); `b-`: a scenario that passes.
    let a = variant(&dir, "a-unmet.toml", G2, |t| {
        let at = t.find("[expect]").expect("[expect]");
        format!("{}[expect]\nverdict = \"pass\"\n", &t[..at])
    });
    std::fs::copy(root().join(G4), dir.join("b-passes.toml")).expect("copy");
    let dir_arg = dir.display().to_string();
    let out = run(
        &[
            "run",
            &dir_arg,
            "--fail-fast",
            "--threads",
            "1",
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let first: serde_json::Value =
        serde_json::from_str(stdout.lines().next().expect("a line")).expect("JSON");
    assert_eq!(first["file"].as_str(), Some(a.as_str()));
    assert_eq!(first["met"], false);
    // Within the scenario it stopped at the first seed the expectation does not allow.
    let unexpected = first["unexpected"]["seed"]
        .as_u64()
        .expect("an unexpected seed");
    assert_eq!(first["seed_range"][1].as_u64(), Some(unexpected + 1));
    assert!(first["stopped"]["why"].as_str().is_some());
    let s = summary(&out);
    assert_eq!(s["not_run"], 1, "{stdout}");
    assert!(
        s["stopped"]
            .as_str()
            .expect("stopped")
            .contains("--fail-fast")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_prints_what_ran_and_exits_130() {
    let mut child = wakesim_cmd(&["run", "scenarios/pi", "scenarios/gptme", "--threads", "1"])
        .env("WAKESIM_SEEDS_MULTIPLIER", "50")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wakesim starts");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    // The regressions come first; once a line is out, the handler is installed.
    let first = lines.next().expect("a line").expect("utf-8");
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(kill.success());
    let rest: Vec<String> = lines.map(|l| l.expect("utf-8")).collect();
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{first}\n{}", rest.join("\n"));
    let all = rest.join("\n");
    assert!(all.contains("summary: "), "{all}");
    assert!(all.contains("partial: interrupted (Ctrl-C)"), "{all}");
    assert!(all.contains("not run (the run stopped)"), "{all}");
}

#[test]
fn colour_only_on_request_or_a_terminal_and_never_with_no_color() {
    let args = ["run", G2, "--seeds", "0..10"];
    let forced = run(&args, &[("CLICOLOR_FORCE", "1")]);
    assert!(text(&forced.stdout).contains("\x1b[32m✓\x1b[0m"));
    let both = run(&args, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!text(&both.stdout).contains('\x1b'));
    let piped = run(&args, &[]);
    assert!(
        !text(&piped.stdout).contains('\x1b'),
        "a pipe is not a terminal"
    );
    let always = run(
        &[&args[..], &["--color", "always"]].concat(),
        &[("NO_COLOR", "1")],
    );
    assert!(text(&always.stdout).contains("\x1b[32m✓"));
    // Colour changes nothing else.
    let strip = |s: String| s.replace("\x1b[32m", "").replace("\x1b[0m", "");
    let cut = |s: String| s.rsplit_once("\nsummary:").expect("summary").0.to_string();
    assert_eq!(
        cut(strip(text(&forced.stdout))),
        cut(text(&piped.stdout)),
        "same text"
    );
}

#[test]
fn coverage_shows_windows_and_faults_and_warns_below_the_share() {
    // 600 seeds: g4-fixed-passes first reaches prompt-races-settle at its third hundred since
    // its faults gained prompt_compaction_fails (2 of 600 seeds).
    let out = run(&["run", G4, "--seeds", "0..600", "--color", "never"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    let coverage = (stdout.lines())
        .find(|l| l.starts_with("  coverage: windows reached: "))
        .expect("a coverage line");
    assert!(coverage.contains("stale-ctx "), "{coverage}");
    assert!(coverage.contains("%)"), "{coverage}");
    assert!(coverage.contains(" · faults: "), "{coverage}");
    assert!(coverage.contains("fired in "), "{coverage}");

    // Every window reached by fewer than all seeds is thin at a share of 1/1.
    let dir = tempdir("coverage");
    let strict = variant(&dir, "strict.toml", G4, |t| {
        t.replace("[coverage]\n", "[coverage]\nmust_reach_share = \"1/1\"\n")
    });
    let out = run(
        &["run", &strict, "--seeds", "0..600", "--color", "never"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "a warning is not a failure");
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("warning: the must_reach window stale-ctx was reached in only"),
        "{stdout}"
    );
    assert!(stdout.contains("below [coverage] must_reach_share 1/1"));
    let json = run(
        &["run", &strict, "--seeds", "0..600", "--format", "json"],
        &[],
    );
    let line: serde_json::Value =
        serde_json::from_str(text(&json.stdout).lines().next().expect("line")).expect("JSON");
    assert!(line["thin_coverage"]["stale-ctx"].as_u64() > Some(0));
    assert!(line["faults"].as_object().is_some_and(|f| !f.is_empty()));

    // A share that is not a ratio is an error naming the file, line and key.
    let bad = variant(&dir, "bad.toml", G4, |t| {
        t.replace("[coverage]\n", "[coverage]\nmust_reach_share = \"3/2\"\n")
    });
    let out = run(&["run", &bad], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains(&format!("{bad}:")), "{err}");
    assert!(err.contains("must_reach_share"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_determinism_through_an_adapter_warns_of_its_cost() {
    let ext = "scenarios/external/node-g2-two-wakes-during-preparation.toml";
    let out = run(&["run", ext, "--seeds", "0..3", "--check-determinism"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("warning: --check-determinism runs each seed twice more through an adapter"),
        "{err}"
    );
    assert!(err.contains(ext), "{err}");
    let builtin = run(&["run", G2, "--seeds", "0..3", "--check-determinism"], &[]);
    assert!(!text(&builtin.stderr).contains("warning"));
}

#[test]
fn a_fail_fast_sweep_reports_the_first_unexpected_seed_whatever_the_threads() {
    use wakesim::engine::parallel::{Sweep, run_scenario_swept};
    use wakesim::family::Registry;
    use wakesim::scenario::{Expect, Scenario};
    let registry = Registry::builtin();
    let g2 = Scenario::load(&root().join(G2), &registry).expect("scenario");
    // G2's bug, expected to pass: most seeds are unexpected, in every chunk.
    let scn = Scenario {
        expect: Expect::Pass,
        ..g2
    };
    let sweep = Sweep {
        stop: &|| false,
        progress: &|_| {},
        fail_fast: true,
    };
    let one = run_scenario_swept(&registry, &scn, 3..3000, 1, &sweep);
    let first = one.unexpected.as_ref().expect("an unexpected seed").seed;
    assert_eq!(one.seeds, 3..first + 1, "stopped right after it");
    for threads in [2, 3, 8] {
        let many = run_scenario_swept(&registry, &scn, 3..3000, threads, &sweep);
        assert_eq!(
            many.unexpected.map(|u| u.seed),
            Some(first),
            "{threads} threads"
        );
        assert_eq!(many.seeds, 3..first + 1, "{threads} threads");
        assert!(!many.met);
    }
}

#[test]
fn merge_refuses_a_shard_that_stopped_early() {
    let dir = tempdir("merge-stopped");
    let out = run(
        &[
            "run",
            "scenarios/pi",
            "--shard",
            "1/2",
            "--time-budget",
            "1ms",
            "--format",
            "json",
        ],
        &[],
    );
    let shard = dir.join("shard-1.jsonl");
    std::fs::write(&shard, &out.stdout).expect("write");
    let shard = shard.display().to_string();
    let merged = run(&["merge", &shard], &[]);
    assert_eq!(merged.status.code(), Some(2));
    let err = text(&merged.stderr);
    assert!(err.contains(&shard), "{err}");
    assert!(err.contains("stopped before its end"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
