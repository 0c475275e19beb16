//! External wake logic through adapter processes (`docs/protocol.md`): the Node reference adapter
//! must reproduce the built-in variants seed for seed, runs through an adapter must be as
//! deterministic as built-in ones, and a broken adapter must end in its own outcome (or, when it
//! cannot even start, in a scenario error) within its wall-clock bound, never in a hang or a
//! panic of the simulator.
//!
//! The adapters run for real: `node` with the pinned sucrase (`npm ci --prefix adapters/node`,
//! which `.ci/run` does), `python3` for the misbehaving adapter under `tests/data/adapters/`.

mod common;
use common::{
    bad_file_errors, full_gate, inline, insta_settings, root, sample, scenario, tempdir, wakesim,
};

use std::time::{Duration, Instant};

use wakesim::adapter::FaultKind;
use wakesim::engine::{Outcome, Runner};
use wakesim::family::Registry;
use wakesim::report;
use wakesim::scenario::{Expect, Scenario};

// ---------------------------------------------------------------------------------------------
// The same logic in TypeScript gives the built-in's run, seed for seed.

/// Each external scenario and the built-in variant its module re-implements.
const TWINS: [(&str, &str); 27] = [
    (
        "scenarios/external/node-g0-idle-wake-skips-harness.toml",
        "pi.raw-trigger-turn",
    ),
    (
        "scenarios/external/node-g0-follow-up-while-parent-calls-tools.toml",
        "pi.raw-follow-up",
    ),
    (
        "scenarios/external/node-g0-wake-during-compaction.toml",
        "pi.raw-trigger-turn",
    ),
    (
        "scenarios/external/node-g1-counter-strands-between-inner-runs.toml",
        "pi.counter",
    ),
    (
        "scenarios/external/node-g2-two-wakes-during-preparation.toml",
        "pi.is-idle",
    ),
    (
        "scenarios/external/node-g2-pi058-wake-in-the-retry-gap.toml",
        "pi.is-idle",
    ),
    (
        "scenarios/external/node-g2-stale-ctx-takes-host-path.toml",
        "pi.is-idle",
    ),
    (
        "scenarios/external/node-g3-failed-wake-strands.toml",
        "pi.reservation",
    ),
    (
        "scenarios/external/node-g3-compaction-takes-host-path.toml",
        "pi.reservation",
    ),
    (
        "scenarios/external/node-g3-passes-without-failed-wake.toml",
        "pi.reservation",
    ),
    (
        "scenarios/external/node-g4-failed-wake-prompt-strands.toml",
        "pi.gentle",
    ),
    (
        "scenarios/external/node-g4-fixed-passes.toml",
        "pi.gentle-fixed",
    ),
    (
        "scenarios/external/node-g4-passes-with-faults.toml",
        "pi.gentle",
    ),
    (
        "scenarios/external/node-g4-pre-t2-held-over-tree.toml",
        "pi.gentle-pre-t2",
    ),
    (
        "scenarios/external/node-g4-session-replacement-drops-documented.toml",
        "pi.gentle",
    ),
    (
        "scenarios/external/python-g2-two-wakes-during-preparation.toml",
        "pi.is-idle",
    ),
    (
        "scenarios/external/python-g3-failed-wake-strands.toml",
        "pi.reservation",
    ),
    (
        "scenarios/external/python-w0-refused-event-dropped.toml",
        "gptme.w0-drop-refused",
    ),
    (
        "scenarios/external/python-w1-burst-refuses-itself.toml",
        "gptme.w1-per-event-drain",
    ),
    (
        "scenarios/external/python-w2-one-wake-per-burst-passes.toml",
        "gptme.w2-one-wake-per-burst",
    ),
    (
        "scenarios/external/python-w2-subagent-completions-reordered.toml",
        "gptme.w2-subagent",
    ),
    (
        "scenarios/external/python-b0-exits-with-job-running.toml",
        "gptme.b0-exit-on-empty",
    ),
    (
        "scenarios/external/python-pr3843-chat-loop-baseline.toml",
        "gptme.b0-exit-on-empty",
    ),
    (
        "scenarios/external/python-pr3843-chat-loop-fixed.toml",
        "gptme.b1-idle-wait",
    ),
    (
        "scenarios/external/python-b1-passes-with-faults.toml",
        "gptme.b1-idle-wait",
    ),
    (
        "scenarios/external/python-b1-pre-stale-control-spins.toml",
        "gptme.b1-pre-control-any",
    ),
    (
        "scenarios/external/python-b1-no-recheck-lost-wakeup.toml",
        "gptme.b1-no-recheck",
    ),
];

#[test]
fn every_twin_gives_the_builtin_trace_and_verdict_seed_for_seed() {
    let registry = Registry::builtin();
    let mut runner = Runner::new(&registry);
    for (file, builtin) in TWINS {
        let ext = scenario(file, &registry);
        assert!(ext.adapter.is_some(), "{file} names an adapter");
        // The twin differs in the wake logic only.
        let twin = Scenario {
            wake: builtin.to_string(),
            adapter: None,
            ..ext.clone()
        };
        let mut failing = 0;
        // The quick gate compares fewer seeds; every external scenario's own gate trial runs
        // more through the adapter, and the full gate compares all 150 here.
        let seeds = if full_gate() { 150 } else { 50 };
        for seed in 0..seeds {
            let a = runner.run_seed(&ext, seed, false);
            let b = runner.run_seed(&twin, seed, false);
            assert_eq!(a.outcome, b.outcome, "{file} seed {seed}: verdicts differ");
            assert_eq!(
                a.trace_hash, b.trace_hash,
                "{file} seed {seed}: traces differ from {builtin}'s"
            );
            failing += u32::from(!a.outcome.is_pass());
        }
        // The snapshot seed in full, record by record.
        let a = runner.run_seed(&ext, ext.snapshot_seed.unwrap_or(0), true);
        let b = runner.run_seed(&twin, ext.snapshot_seed.unwrap_or(0), true);
        assert_eq!(a.trace, b.trace, "{file}: snapshot seed");
        assert_eq!(
            a.outcome, b.outcome,
            "{file}: snapshot seed's verdicts differ"
        );
        // A rare failure (W2-subagent's reorder since the completion wakes its parent at once:
        // 8 of 2,000 seeds) is compared at the snapshot seed, which shows it.
        failing += u32::from(!a.outcome.is_pass());
        if ext.expect != Expect::Pass {
            assert!(
                failing > 0,
                "{file}: no failing seed in 0..{seeds} or at its snapshot seed to compare"
            );
        }
    }
}

/// G4 races whose scope is too large to explore through a process in the gate have no scenario
/// copy in `scenarios/external/`; their built-in scenarios run through `g4-gentle.ts` here: the
/// built-in scenario, the built-in's name, the module's options and constants.
const G4_ONLY_HERE: [(&str, &str, &str, &[u64]); 3] = [
    (
        "scenarios/pi/g4-held-orchestrator-overtaken.toml",
        "pi.gentle",
        "{}",
        &[30_000, 1_000, 2_000],
    ),
    (
        "scenarios/pi/g4-pre-t3-user-prompt-race.toml",
        "pi.gentle-pre-t3",
        r#"{"t3":false}"#,
        &[30_000, 1_000],
    ),
    (
        "scenarios/pi/g4-user-prompt-compaction-race.toml",
        "pi.gentle",
        "{}",
        &[30_000, 1_000, 2_000],
    ),
];

#[test]
fn g4_races_through_node_give_the_builtin_traces_and_find_the_bugs() {
    let registry = Registry::builtin();
    let mut runner = Runner::new(&registry);
    let model = scenario("scenarios/external/node-g4-fixed-passes.toml", &registry);
    let model = model.adapter.expect("an adapter");
    for (file, builtin, options, constants) in G4_ONLY_HERE {
        let twin = scenario(file, &registry);
        assert_eq!(twin.wake, builtin);
        let mut spec = model.clone();
        spec.options = serde_json::from_str(options).expect("JSON");
        spec.constants_ms = constants.to_vec();
        let ext = Scenario {
            wake: "node:g4-gentle.ts".to_string(),
            adapter: Some(spec),
            ..twin.clone()
        };
        // Up to the built-in's first expected failure, and a little past it.
        let rep = runner.run_scenario(&twin, 0..twin.seeds);
        let last = rep.first_expected.expect("the built-in shows its bug") + 20;
        let mut found = false;
        for seed in 0..=last {
            let a = runner.run_seed(&ext, seed, false);
            let b = runner.run_seed(&twin, seed, false);
            assert_eq!(a.outcome, b.outcome, "{file} seed {seed}");
            assert_eq!(a.trace_hash, b.trace_hash, "{file} seed {seed}");
            found |= wakesim::engine::shows_expected(&twin.expect, &a.outcome);
        }
        assert!(found, "{file}: the module shows the bug too");
    }
}

/// The fixed G4's later fixes (a wake withdrawn at `input` in favour of a user prompt, held
/// orchestrator messages kept in order, slow user prompts and promoted steers expected as long as
/// a wake window, windows kept open through a compaction) act only in scenarios too large to copy
/// through a process:
/// their built-in scenarios run through `g4-gentle.ts` with `fixed` here, seed for seed, over a
/// range that includes a seed where the withdrawal happens. The quick gate samples every fifth
/// seed of the others (`common::sample`) but keeps the withdrawal's whole range.
const G4_FIXED_HERE: [(&str, u64); 5] = [
    ("scenarios/pi/g4-fixed-user-prompt-races.toml", 260),
    ("scenarios/pi/g4-fixed-orchestrator-in-order.toml", 100),
    ("scenarios/pi/g4-fixed-slow-user-prompts.toml", 100),
    ("scenarios/pi/g4-fixed-long-compaction.toml", 100),
    ("scenarios/pi/g4-fixed-steers-become-prompts.toml", 100),
];

#[test]
fn the_fixed_g4_through_node_gives_the_builtin_traces_where_its_fixes_act() {
    let registry = Registry::builtin();
    let mut runner = Runner::new(&registry);
    let model = scenario("scenarios/external/node-g4-fixed-passes.toml", &registry);
    let model = model.adapter.expect("an adapter");
    let mut withdrawn = 0;
    for (file, seeds) in G4_FIXED_HERE {
        let twin = scenario(file, &registry);
        assert_eq!(twin.wake, "pi.gentle-fixed");
        let ext = Scenario {
            wake: "node:g4-gentle.ts".to_string(),
            adapter: Some(model.clone()),
            ..twin.clone()
        };
        let stride = if file.ends_with("user-prompt-races.toml") {
            1
        } else {
            5
        };
        for seed in sample(0..seeds, stride) {
            let a = runner.run_seed(&ext, seed, true);
            let b = runner.run_seed(&twin, seed, true);
            assert_eq!(a.outcome, b.outcome, "{file} seed {seed}");
            assert_eq!(a.trace_hash, b.trace_hash, "{file} seed {seed}");
            let text = report::text::timeline(&twin, &b);
            withdrawn += text
                .matches("handled by the wake logic's input handler")
                .count();
        }
    }
    assert!(
        withdrawn > 0,
        "no seed withdrew a wake: the range misses the fix"
    );
}

#[test]
fn the_twin_table_covers_every_external_variant_scenario() {
    let mut files: Vec<String> = std::fs::read_dir(root().join("scenarios/external"))
        .expect("scenarios/external")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("node-") || n.starts_with("python-"))
        .collect();
    files.sort();
    let mut twins: Vec<String> = TWINS
        .iter()
        .map(|(f, _)| f.rsplit('/').next().expect("name").to_string())
        .collect();
    twins.sort();
    assert_eq!(files, twins);
}

// ---------------------------------------------------------------------------------------------
// Determinism through the adapter.

fn clockwork(registry: &Registry) -> Scenario {
    inline(
        r#"name = "clockwork"
host = "pi"
wake = { command = ["node", "adapters/node/adapter.mjs", "tests/data/adapters/node/clockwork.ts"] }
seeds = 60
snapshot_seed = 3
[producers]
messages = { min = 1, max = 4 }
[faults]
retries = "1/2"
session_replacement = "1/4"
[expect]
verdict = "pass"
"#,
        registry,
    )
}

#[test]
fn a_seed_through_the_adapter_is_the_same_alone_after_other_seeds_and_in_another_process() {
    let registry = Registry::builtin();
    let scn = clockwork(&registry);
    let mut shared = Runner::new(&registry);
    let other = scenario(
        "scenarios/external/node-g2-two-wakes-during-preparation.toml",
        &registry,
    );
    let mut after = Vec::new();
    for seed in 0..30 {
        shared.run_seed(&other, seed, false);
        after.push(shared.run_seed(&scn, seed, true));
    }
    // A fresh runner is a fresh adapter process: the quick gate starts one for a sample.
    for seed in sample(0..30, 4) {
        let a = &after[seed as usize];
        let alone = Runner::new(&registry).run_seed(&scn, seed, true);
        assert_eq!(a.trace, alone.trace, "seed {seed}");
        assert_eq!(a.outcome, alone.outcome, "seed {seed}");
        assert_eq!(
            report::text::timeline(&scn, a),
            report::text::timeline(&scn, &alone)
        );
    }
    // The module really used the clock, timers and microtasks (the trace shows timer calls).
    let text = report::text::timeline(&scn, &after[3]);
    assert!(text.contains("sets timer T0 (+1 ms)"), "{text}");
    assert!(text.contains("clears timer"), "{text}");
}

#[test]
fn replay_through_the_adapter_prints_the_same_bytes_every_time() {
    let file = "scenarios/external/node-g2-two-wakes-during-preparation.toml";
    for format in ["text", "json", "mermaid"] {
        let a = wakesim(&["replay", file, "--seed", "11", "--format", format]);
        let b = wakesim(&["replay", file, "--seed", "11", "--format", format]);
        assert_eq!(a.status.code(), Some(1), "{format}");
        assert_eq!(a.stdout, b.stdout, "{format}");
    }
    let text = String::from_utf8(wakesim(&["replay", file, "--seed", "11"]).stdout).expect("utf-8");
    assert!(text.contains("✗ single-starter"), "{text}");
    assert!(text.contains(&format!("reproduce: wakesim replay {file} --seed 11")));
}

// ---------------------------------------------------------------------------------------------
// Faults of the adapter itself.

fn misbehaving(mode: &str, messages: &str, extra: &str, expect: &str) -> String {
    format!(
        r#"name = "misbehave {mode}"
host = "pi"
wake = {{ command = ["python3", "tests/data/adapters/misbehave.py", "{mode}"]{extra} }}
seeds = 20
snapshot_seed = 0
[producers]
messages = {messages}
[expect]
verdict = "{expect}"
"#
    )
}

#[test]
fn each_adapter_fault_is_its_own_outcome_within_the_bound() {
    let registry = Registry::builtin();
    let cases = [
        ("crash", FaultKind::Exited, "crashed on purpose"),
        ("not-json", FaultKind::NotJson, "about to write garbage"),
        ("not-protocol", FaultKind::Protocol, ""),
        ("unknown-call", FaultKind::UnknownCall, ""),
        ("wrong-known", FaultKind::Protocol, ""),
        ("silent", FaultKind::Timeout, "going silent"),
    ];
    let mut runner = Runner::new(&registry);
    for (mode, kind, stderr) in cases {
        // Only the silent adapter needs the bound; the others answer at once.
        let bound = if mode == "silent" {
            ", timeout_ms = 1000"
        } else {
            ""
        };
        let scn = inline(&misbehaving(mode, "2", bound, "adapter-fault"), &registry);
        let started = Instant::now();
        let rep = runner.run_scenario(&scn, 0..scn.seeds);
        assert!(rep.met, "{mode}: {:?}", rep.why);
        // The sweep stops at the first fault instead of restarting the adapter for every seed.
        assert_eq!(rep.seed_count(), 1, "{mode}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{mode} took {:?}",
            started.elapsed()
        );

        let r = runner.run_seed(&scn, 0, true);
        let Outcome::AdapterFault(f) = &r.outcome else {
            panic!("{mode}: expected an adapter fault, got {:?}", r.outcome)
        };
        assert_eq!(f.kind, kind, "{mode}: {f}");
        assert!(
            f.stderr_tail.contains(stderr),
            "{mode}: {:?}",
            f.stderr_tail
        );
        let text = report::text::timeline(&scn, &r);
        assert!(
            text.contains(&format!("✗ adapter fault ({})", kind.name())),
            "{text}"
        );
        assert!(text.contains("while handling `message`"), "{text}");
        assert!(
            text.ends_with("reproduce: wakesim replay inline.toml --seed 0\n"),
            "{text}"
        );
        // Not an invariant violation: the first message was delivered normally before the fault.
        assert!(r.outcome.violations().is_empty());
    }
    // The runner is fine afterwards: a good adapter still runs in it.
    let good = scenario(
        "scenarios/external/node-g2-two-wakes-during-preparation.toml",
        &registry,
    );
    assert!(runner.run_scenario(&good, 0..50).met);
}

#[test]
fn a_parallel_sweep_stops_at_the_first_adapter_fault_whatever_the_threads() {
    let registry = Registry::builtin();
    let text = misbehaving("crash", "2", "", "adapter-fault").replace("seeds = 20", "seeds = 400");
    let scn = inline(&text, &registry);
    for threads in [1, 2] {
        let started = Instant::now();
        let rep = wakesim::engine::parallel::run_scenario_parallel(
            &registry,
            &scn,
            0..400,
            threads,
            &|_| {},
        );
        assert!(rep.met, "{threads} threads: {:?}", rep.why);
        // Every seed crashes the adapter: the report ends at seed 0, not 400 restarts later.
        assert_eq!(rep.seeds, 0..1, "{threads} threads");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{threads} threads"
        );
    }
}

#[test]
fn an_exception_in_the_wake_logic_is_a_panic_not_an_adapter_fault() {
    let registry = Registry::builtin();
    let scn = inline(&misbehaving("throws", "2", "", "panic"), &registry);
    let mut runner = Runner::new(&registry);
    let rep = runner.run_scenario(&scn, 0..scn.seeds);
    assert!(rep.met, "{:?}", rep.why);
    // The adapter answered `done` properly, so it serves every seed.
    assert_eq!(rep.seed_count(), 20);
    let r = runner.run_seed(&scn, 0, false);
    assert_eq!(
        r.outcome,
        Outcome::Panic(
            "the `message` handler threw: Error: the wake logic threw on purpose".to_string()
        )
    );
}

#[test]
fn a_flood_on_stderr_does_not_block_the_run() {
    let registry = Registry::builtin();
    let scn = inline(&misbehaving("chatty", "1", "", "pass"), &registry);
    let rep = Runner::new(&registry).run_scenario(&scn, 0..5);
    assert!(rep.met, "{:?}", rep.why);
}

#[test]
fn an_adapter_that_cannot_start_is_a_scenario_error_with_exit_2() {
    let registry = Registry::builtin();
    let cases = [
        ("exit-at-start", "exiting before the handshake", ""),
        (
            "bad-version",
            "the adapter speaks protocol 99, wakesim speaks 1",
            "",
        ),
        (
            "silent-hello",
            "no answer within 1000 ms while shaking hands",
            ", start_timeout_ms = 1000",
        ),
    ];
    for (mode, says, bound) in cases {
        let scn = inline(&misbehaving(mode, "2", bound, "pass"), &registry);
        let started = Instant::now();
        let err = Runner::new(&registry)
            .prepare(&scn)
            .expect_err("the adapter cannot start");
        assert!(started.elapsed() < Duration::from_secs(5), "{mode}");
        let text = err.to_string();
        assert!(
            text.starts_with("inline.toml:3:8: wake: the adapter did not start: "),
            "{text}"
        );
        assert!(text.contains(says), "{mode}: {text}");
        assert_eq!(err.exit_code(), 2);
    }

    // Through the CLI: a module that does not exist.
    let dir = tempdir("nostart");
    let file = dir.join("missing-module.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"missing module\"\nhost = \"pi\"\nwake = {{ command = [\"node\", \"adapters/node/adapter.mjs\", \"adapters/node/examples/no-such.ts\"], cwd = \"{}\" }}\nseeds = 5\nsnapshot_seed = 0\n[expect]\nverdict = \"pass\"\n",
            root().display()
        ),
    )
    .expect("write");
    let out = wakesim(&["run", file.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "no partial run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "error: {}:3:8: wake: the adapter did not start",
            file.display()
        )),
        "{err}"
    );
    assert!(err.contains("no-such.ts not found"), "{err}");
}

#[test]
fn an_unexpected_adapter_fault_fails_the_run_with_exit_1_and_the_replay_line() {
    let dir = tempdir("unexpected");
    let file = dir.join("crashes.toml");
    let text = misbehaving("crash", "2", "", "pass").replace(
        "wake = {",
        &format!("wake = {{ cwd = \"{}\",", root().display()),
    );
    std::fs::write(&file, text).expect("write");
    let out = wakesim(&["run", file.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("seed 0 ended with an adapter fault (exited)"),
        "{stdout}"
    );
    assert!(stdout.contains("crashed on purpose"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "reproduce: wakesim replay {} --seed 0",
            file.display()
        )),
        "{stdout}"
    );
    let json = wakesim(&[
        "replay",
        file.to_str().expect("utf-8"),
        "--seed",
        "0",
        "--format",
        "json",
    ]);
    assert_eq!(json.status.code(), Some(1));
    let last = String::from_utf8_lossy(&json.stdout)
        .lines()
        .last()
        .expect("a verdict line")
        .to_string();
    let v: serde_json::Value = serde_json::from_str(&last).expect("JSON");
    assert_eq!(v["verdict"], "adapter-fault");
    assert_eq!(v["fault"], "exited");
    assert!(
        v["stderr_tail"]
            .as_str()
            .expect("tail")
            .contains("crashed on purpose")
    );
}

// ---------------------------------------------------------------------------------------------
// Bad `wake` tables: file, line, column and key; exit 2.

#[test]
fn bad_wake_tables_name_file_line_and_key_and_exit_2() {
    let all = bad_file_errors("tests/data/bad-wake", 6);
    for err in all.lines().filter(|l| l.starts_with("error: ")) {
        assert!(err.contains(": wake"), "names the key: {err}");
    }
    insta_settings().bind(|| insta::assert_snapshot!("external__bad-wake-tables", all));
}

// ---------------------------------------------------------------------------------------------
// The gptme hosts through the Python adapter.

/// A session whose job outlives the run: every run ends with the LOOP_CONTINUE hook suspended in
/// its wait, and the next run's reset must leave that hook behind.
const ENDS_WAITING: &str = r#"name = "ends waiting"
host = "gptme-cli"
wake = { command = ["python3", "adapters/python/run.py", "adapters/python/examples/gptme/b1_idle_wait.py"], constants_ms = [1000] }
seeds = 10
snapshot_seed = 0
duration_ms = 5000
quiesce_ms_max = 5000
[producers]
script = ["job", "text"]
jobs = 0
[timing]
job_ms = 600000
idle_max_ms = 3600000
[expect]
verdict = "fail"
invariant = "bounded-latency"
"#;

#[test]
fn a_gptme_seed_through_the_adapter_is_the_same_alone_and_after_other_seeds() {
    let registry = Registry::builtin();
    let ends_waiting = inline(ENDS_WAITING, &registry);
    let cases = [
        (
            scenario(
                "scenarios/external/python-b1-passes-with-faults.toml",
                &registry,
            ),
            0..30,
        ),
        (
            scenario(
                "scenarios/external/python-w2-one-wake-per-burst-passes.toml",
                &registry,
            ),
            0..30,
        ),
        (ends_waiting, 0..10),
    ];
    for (scn, seeds) in cases {
        let file = scn.path.display().to_string();
        // One process serves the seeds in order.
        let mut shared = Runner::new(&registry);
        let after: Vec<_> = (seeds.clone())
            .map(|s| shared.run_seed(&scn, s, true))
            .collect();
        // A fresh runner is a fresh adapter process: the quick gate starts one for a sample.
        for seed in sample(seeds, 4) {
            let a = &after[seed as usize];
            let alone = Runner::new(&registry).run_seed(&scn, a.seed, true);
            assert_eq!(a.trace, alone.trace, "{file} seed {}", a.seed);
            assert_eq!(a.outcome, alone.outcome, "{file} seed {}", a.seed);
            if file == "inline.toml" {
                let text = report::text::timeline(&scn, a);
                let last = text
                    .lines()
                    .rfind(|l| l.starts_with(' '))
                    .expect("a timeline");
                assert!(last.trim_end().ends_with("WAITING"), "{text}");
            }
        }
    }
}

#[test]
fn replay_of_a_gptme_scenario_through_the_adapter_prints_the_same_bytes_every_time() {
    for (file, seed) in [
        (
            "scenarios/external/python-w1-burst-refuses-itself.toml",
            "7",
        ),
        (
            "scenarios/external/python-b1-no-recheck-lost-wakeup.toml",
            "11",
        ),
    ] {
        let a = wakesim(&["replay", file, "--seed", seed, "--format", "json"]);
        let b = wakesim(&["replay", file, "--seed", seed, "--format", "json"]);
        assert_eq!(a.status.code(), Some(1), "{file}");
        assert_eq!(a.stdout, b.stdout, "{file}");
    }
}

fn misbehaving_gptme(host: &str, mode: &str, extra: &str, expect: &str) -> String {
    let producers = if host == "gptme-server" {
        "events = { min = 2, max = 4 }\nspacing_ms = { min = 0, max = 2000 }\n[faults]\nuser_steps = \"1/1\""
    } else {
        "script = [\"job\", \"text\"]\njobs = 0"
    };
    format!(
        r#"name = "misbehave {mode}"
host = "{host}"
wake = {{ command = ["python3", "tests/data/adapters/misbehave_gptme.py", "{mode}"]{extra} }}
seeds = 20
snapshot_seed = 0
[producers]
{producers}
[expect]
verdict = "{expect}"
"#
    )
}

#[test]
fn each_gptme_protocol_breach_is_an_adapter_fault_that_says_what() {
    let registry = Registry::builtin();
    let cases = [
        (
            "gptme-server",
            "requeue-unknown",
            FaultKind::Protocol,
            "not a watch event the simulator handed out",
        ),
        (
            "gptme-server",
            "wrong-logdir",
            FaultKind::Protocol,
            "the server model runs one conversation, A",
        ),
        (
            "gptme-server",
            "pi-call",
            FaultKind::UnknownCall,
            "`send_user_message`, which the gptme server does not have",
        ),
        (
            "gptme-server",
            "bad-ready",
            FaultKind::Protocol,
            "`agent_end`",
        ),
        (
            "gptme-cli",
            "wait-in-step-pre",
            FaultKind::Protocol,
            "a STEP_PRE hook cannot block",
        ),
        (
            "gptme-cli",
            "item-unclaimed",
            FaultKind::Protocol,
            "neither a completion the hook claimed",
        ),
        (
            "gptme-cli",
            "input-without-control",
            FaultKind::Protocol,
            "read no non-empty control.jsonl",
        ),
        (
            "gptme-cli",
            "no-hooks",
            FaultKind::Protocol,
            "`hooks.step_pre`",
        ),
        (
            "gptme-cli",
            "mark-unknown-job",
            FaultKind::Protocol,
            "the handle of a job",
        ),
        (
            "gptme-cli",
            "silent-resume",
            FaultKind::Timeout,
            "no answer within 1000 ms while handling `resume`",
        ),
    ];
    let mut runner = Runner::new(&registry);
    for (host, mode, kind, says) in cases {
        let bound = if mode == "silent-resume" {
            ", timeout_ms = 1000"
        } else {
            ""
        };
        let scn = inline(
            &misbehaving_gptme(host, mode, bound, "adapter-fault"),
            &registry,
        );
        let started = Instant::now();
        let rep = runner.run_scenario(&scn, 0..scn.seeds);
        assert!(rep.met, "{mode}: {:?}", rep.why);
        assert_eq!(
            rep.seed_count(),
            1,
            "{mode}: the sweep stops at the first fault"
        );
        assert!(started.elapsed() < Duration::from_secs(5), "{mode}");
        let r = runner.run_seed(&scn, 0, false);
        let Outcome::AdapterFault(f) = &r.outcome else {
            panic!("{mode}: expected an adapter fault, got {:?}", r.outcome)
        };
        assert_eq!(f.kind, kind, "{mode}: {f}");
        assert!(f.detail.contains(says), "{mode}: {f}");
    }
}

fn gptme_module(host: &str, module: &str, expect: &str) -> String {
    format!(
        r#"name = "{module}"
host = "{host}"
wake = {{ command = ["python3", "adapters/python/run.py", "tests/data/adapters/gptme/{module}"] }}
seeds = 5
snapshot_seed = 0
[producers]
script = ["job", "text"]
jobs = 0
[expect]
verdict = "{expect}"
"#
    )
}

#[test]
fn a_gptme_module_that_fails_is_a_panic_with_its_own_words() {
    let registry = Registry::builtin();
    let mut runner = Runner::new(&registry);
    let cases = [
        (
            "yields_plain_text.py",
            "the `loop_continue` handler threw: ValueError: a hook yielded Message('system', 'still thinking')",
        ),
        (
            // Raised on the hook's thread after a suspension, reported with the module's line.
            "raises_after_waiting.py",
            "the `resume` handler threw: RuntimeError: woke up on the wrong side",
        ),
    ];
    for (module, says) in cases {
        let scn = inline(&gptme_module("gptme-cli", module, "panic"), &registry);
        let rep = runner.run_scenario(&scn, 0..scn.seeds);
        assert!(rep.met, "{module}: {:?}", rep.why);
        // The adapter answered `done` with the error: it serves every seed.
        assert_eq!(rep.seed_count(), 5, "{module}");
        let Outcome::Panic(text) = runner.run_seed(&scn, 0, false).outcome else {
            panic!("{module}: not a panic")
        };
        assert!(text.starts_with(says), "{module}: {text}");
        if module == "raises_after_waiting.py" {
            assert!(text.contains("raises_after_waiting.py:9 in hook"), "{text}");
        }
    }
    // A server module without its retry function cannot start: a scenario error, exit 2.
    let text = gptme_module("gptme-server", "no_retry.py", "pass")
        .replace("[producers]\nscript = [\"job\", \"text\"]\njobs = 0\n", "");
    let err = Runner::new(&registry)
        .prepare(&inline(&text, &registry))
        .expect_err("cannot start");
    assert_eq!(err.exit_code(), 2);
    assert!(
        err.to_string()
            .contains("defines retry_deferred_watch_wakes(conversation_id)"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// A fresh clone: nobody ran `npm ci --prefix adapters/node`.

#[test]
fn the_node_adapter_installs_its_pinned_sucrase_once_when_adapters_start_side_by_side() {
    // A copy of the adapter without node_modules, as a fresh clone has it.
    let copy = tempdir("fresh-node");
    let _ = std::fs::remove_dir_all(&copy);
    std::fs::create_dir_all(copy.join("lib")).expect("mkdir");
    let node = root().join("adapters/node");
    for f in ["adapter.mjs", "package.json", "package-lock.json"] {
        std::fs::copy(node.join(f), copy.join(f)).expect("copy");
    }
    for e in std::fs::read_dir(node.join("lib")).expect("lib") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), copy.join("lib").join(e.file_name())).expect("copy");
    }
    assert!(!copy.join("node_modules").exists());

    let registry = Registry::builtin();
    let scn = scenario(
        "scenarios/external/node-g2-two-wakes-during-preparation.toml",
        &registry,
    );
    let mut spec = scn.adapter.clone().expect("an adapter");
    spec.command[1] = copy.join("adapter.mjs").display().to_string();
    let fresh = Scenario {
        adapter: Some(spec),
        ..scn.clone()
    };
    // Three adapters start at once, each loading a TypeScript module: one installs under the
    // lock, the others wait for it and load what it installed.
    std::thread::scope(|s| {
        let starts: Vec<_> = (0..3)
            .map(|_| s.spawn(|| Runner::new(&registry).prepare(&fresh)))
            .collect();
        for st in starts {
            st.join().expect("thread").expect("the adapter starts");
        }
    });
    assert!(copy.join("node_modules/sucrase/package.json").is_file());
    assert!(!copy.join(".install.lock").exists(), "the lock is released");
    // And the copy runs the scenario as the installed adapter does, seed for seed.
    let mut runner = Runner::new(&registry);
    for seed in 0..20 {
        let a = runner.run_seed(&fresh, seed, false);
        let b = runner.run_seed(&scn, seed, false);
        assert_eq!(a.trace_hash, b.trace_hash, "seed {seed}");
    }
    let _ = std::fs::remove_dir_all(&copy);
}

#[test]
fn a_module_with_its_own_deliver_runs_as_gptme_s_deliver_does() {
    // The W2 scenario with a module that also writes out `_deliver`: every watch event now
    // crosses the process boundary (a `deliver` event, `request_watch_wake`, `queue_watch_event`)
    // and the runs are those of the built-in W2 with gptme's own `_deliver`.
    let registry = Registry::builtin();
    let w2 = scenario(
        "scenarios/external/python-w2-one-wake-per-burst-passes.toml",
        &registry,
    );
    let mut spec = w2.adapter.clone().expect("an adapter");
    spec.command[2] = "tests/data/adapters/gptme/w2_own_deliver.py".to_string();
    let own = Scenario {
        adapter: Some(spec),
        ..w2.clone()
    };
    let twin = Scenario {
        wake: "gptme.w2-one-wake-per-burst".to_string(),
        adapter: None,
        ..w2.clone()
    };
    let mut runner = Runner::new(&registry);
    let mut deferred = 0;
    for seed in 0..100 {
        let a = runner.run_seed(&own, seed, true);
        let b = runner.run_seed(&twin, seed, false);
        assert_eq!(a.trace_hash, b.trace_hash, "seed {seed}");
        assert_eq!(a.outcome, b.outcome, "seed {seed}");
        deferred += usize::from(
            report::text::timeline(&own, &a).contains("appended to _pending_deliveries"),
        );
    }
    assert!(
        deferred > 0,
        "some watch event was deferred by the module's deliver"
    );
}

#[test]
fn the_node_adapter_on_a_gptme_host_refuses_to_start() {
    let registry = Registry::builtin();
    let text = r#"name = "node on gptme"
host = "gptme-server"
wake = { command = ["node", "adapters/node/adapter.mjs", "adapters/node/examples/g2-is-idle.ts"] }
seeds = 5
snapshot_seed = 0
[expect]
verdict = "pass"
"#;
    let err = Runner::new(&registry)
        .prepare(&inline(text, &registry))
        .expect_err("no gptme facade in Node");
    assert_eq!(err.exit_code(), 2);
    assert!(
        err.to_string()
            .contains("has a facade for pi only, not gptme-server"),
        "{err}"
    );
}
