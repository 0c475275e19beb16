//! Everything the per-scenario gate does not cover: determinism, replay from recorded choices,
//! scenario-file errors, the CLI's exit codes and formats, checkers firing on purpose-built wake
//! logics, and runaway or panicking wake logics plugged in through the public API.
//!
//! Each test builds what it needs from the public API (or runs the built binary) and asserts on
//! observable output, so a regression in any of them fails here.

mod common;
use common::{bad_file_errors, inline, insta_settings, scenario, tempdir, wakesim};

use wakesim::check::Invariant;
use wakesim::engine::{Outcome, Runner};
use wakesim::family::Registry;
use wakesim::family::pi::api::{Ctx, CustomMessage, Message, Pi, PiWake, SendOptions};
use wakesim::report;
use wakesim::scenario::Expect;

// ---------------------------------------------------------------------------------------------
// Determinism

#[test]
fn a_seed_run_twice_gives_a_byte_identical_trace() {
    let registry = Registry::builtin();
    for rel in [
        "scenarios/pi/g2-two-wakes-during-preparation.toml",
        "scenarios/pi/g4-fixed-passes.toml",
    ] {
        let scn = scenario(rel, &registry);
        for seed in [0, 7, 128, 999] {
            let a = Runner::new(&registry).run_seed(&scn, seed, true);
            let b = Runner::new(&registry).run_seed(&scn, seed, true);
            assert_eq!(a.trace, b.trace, "{rel} seed {seed}");
            assert_eq!(a.trace_hash, b.trace_hash);
            assert_eq!(
                report::text::timeline(&scn, &a),
                report::text::timeline(&scn, &b)
            );
        }
    }
}

#[test]
fn a_seed_alone_equals_the_same_seed_after_other_seeds() {
    let registry = Registry::builtin();
    let scn = scenario("scenarios/pi/g4-passes-with-faults.toml", &registry);
    let alone: Vec<u64> = (40..60)
        .map(|s| Runner::new(&registry).run_seed(&scn, s, false).trace_hash)
        .collect();
    let mut shared = Runner::new(&registry);
    let other = scenario(
        "scenarios/pi/g1-counter-strands-between-inner-runs.toml",
        &registry,
    );
    for s in 0..40 {
        shared.run_seed(&other, s, false);
        shared.run_seed(&scn, s, false);
    }
    let after: Vec<u64> = (40..60)
        .map(|s| shared.run_seed(&scn, s, false).trace_hash)
        .collect();
    assert_eq!(alone, after);
}

#[test]
fn tracing_does_not_change_the_run() {
    let registry = Registry::builtin();
    let scn = scenario("scenarios/pi/g3-failed-wake-strands.toml", &registry);
    for seed in 0..50 {
        let quiet = Runner::new(&registry).run_seed(&scn, seed, false);
        let traced = Runner::new(&registry).run_seed(&scn, seed, true);
        assert_eq!(quiet.trace_hash, traced.trace_hash, "seed {seed}");
        assert_eq!(quiet.outcome, traced.outcome);
    }
}

#[test]
fn replaying_the_recorded_choices_reproduces_the_run() {
    let registry = Registry::builtin();
    let scn = scenario(
        "scenarios/pi/g2-two-wakes-during-preparation.toml",
        &registry,
    );
    let mut runner = Runner::new(&registry);
    for seed in 0..30 {
        let first = runner.run_seed(&scn, seed, true);
        let again = runner.run_choices(&scn, seed, first.choices.clone(), true);
        assert_eq!(again.stale, None, "seed {seed}");
        assert_eq!(first.trace, again.trace, "seed {seed}");
        assert_eq!(first.outcome, again.outcome);
    }
}

// ---------------------------------------------------------------------------------------------
// Scenario-file errors: file, line, column and key; exit code 2.

#[test]
fn bad_scenario_files_name_file_line_and_key_and_exit_2() {
    let all = bad_file_errors("tests/data/bad", 8);
    insta_settings().bind(|| insta::assert_snapshot!("errors__bad-scenarios", all));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(wakesim(&["run", "--seeds", "5..1"]).status.code(), Some(2));
    assert_eq!(
        wakesim(&["replay", "scenarios/pi/g0-idle-wake-skips-harness.toml"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(wakesim(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(wakesim(&["run", "no/such/dir"]).status.code(), Some(2));
}

// ---------------------------------------------------------------------------------------------
// CLI behaviour

#[test]
fn run_json_has_a_line_per_scenario_and_a_summary() {
    let out = wakesim(&[
        "run",
        "scenarios/pi",
        "--seeds",
        "0..20",
        "--format",
        "json",
    ]);
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let (summary, all) = lines.split_last().expect("lines");
    assert_eq!(summary["type"], "summary");
    // The scenarios' saved regressions come first, one line each.
    let regressions = all.iter().take_while(|l| l["type"] == "regression").count();
    assert!(regressions > 0 && summary["regressions"].as_u64() == Some(regressions as u64));
    let scenarios = &all[regressions..];
    for key in [
        "scenarios",
        "seeds",
        "events",
        "seeds_per_s",
        "events_per_s",
    ] {
        assert!(summary.get(key).is_some(), "summary lacks {key}");
    }
    assert_eq!(summary["scenarios"].as_u64(), Some(scenarios.len() as u64));
    for s in scenarios {
        assert_eq!(s["type"], "scenario");
        for key in [
            "file",
            "host",
            "wake",
            "seeds",
            "failures",
            "first_failure",
            "expect",
            "met",
        ] {
            assert!(s.get(key).is_some(), "scenario line lacks {key}: {s}");
        }
        if let Some(first) = s["first_failure"].as_object() {
            assert!(first.contains_key("seed") && first.contains_key("invariant"));
        }
    }
}

#[test]
fn an_unmet_expectation_exits_1_and_prints_the_replay_line() {
    let dir = tempdir("unmet");
    let file = dir.join("g2-expected-to-pass.toml");
    std::fs::write(
        &file,
        "name = \"G2 wrongly expected to pass\"\nhost = \"pi\"\nwake = \"pi.is-idle\"\nseeds = 200\nsnapshot_seed = 0\n\
         [producers]\nmessages = { min = 2, max = 4 }\nspacing_ms = { min = 0, max = 200 }\n[expect]\nverdict = \"pass\"\n",
    )
    .expect("write");
    let out = wakesim(&["run", file.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("reproduce: wakesim replay"))
        .expect("a reproduce line");
    // The printed line replays the failing seed.
    let seed = line.rsplit(' ').next().expect("seed");
    let replay = wakesim(&["replay", file.to_str().expect("utf-8"), "--seed", seed]);
    assert_eq!(replay.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&replay.stdout).contains("✗ single-starter"));
}

#[test]
fn the_main_job_over_the_pi_scenarios_meets_every_expectation() {
    let out = wakesim(&["run", "scenarios/pi", "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn replay_prints_the_same_run_every_time_in_every_format() {
    let file = "scenarios/pi/g2-two-wakes-during-preparation.toml";
    let scn = scenario(file, &Registry::builtin());
    let (dec, hex) = (
        scn.snapshot_seed.unwrap_or(0).to_string(),
        format!("{:#x}", scn.snapshot_seed.unwrap_or(0)),
    );
    for format in ["text", "json", "mermaid"] {
        let a = wakesim(&["replay", file, "--seed", &dec, "--format", format]);
        let b = wakesim(&["replay", file, "--seed", &hex, "--format", format]);
        assert_eq!(a.stdout, b.stdout, "{format}");
        assert_eq!(a.status.code(), Some(1));
    }
    let mermaid =
        String::from_utf8(wakesim(&["replay", file, "--seed", &dec, "--format", "mermaid"]).stdout)
            .expect("utf-8");
    assert!(mermaid.starts_with("sequenceDiagram\n"));
    // Every line after the header is a participant, a message or a note: what Mermaid parses.
    for l in mermaid.lines().skip(1) {
        let l = l.trim_start();
        assert!(
            l.starts_with("participant ") || l.starts_with("Note over ") || l.contains("->>"),
            "not a sequence-diagram statement: {l}"
        );
        let unescaped = l
            .replace("#quot;", "")
            .replace("#35;", "")
            .replace("#59;", "");
        assert!(!unescaped.contains(';'), "unescaped ; breaks Mermaid: {l}");
    }
    assert!(mermaid.contains("single-starter"));
}

#[test]
fn list_names_hosts_wakes_invariants_and_faults() {
    let out = wakesim(&["list"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "pi-0.58",
        "pi@0.99.1",
        "pi@1.6.0",
        "pi.gentle-fixed",
        "single-starter",
        "flag-coherence",
        "session_replacement",
    ] {
        assert!(text.contains(name), "list lacks {name}");
    }
    let json = wakesim(&["list", "--format", "json"]);
    for l in String::from_utf8_lossy(&json.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
        assert!(
            ["host", "wake", "invariant", "fault", "window", "scenario", "matrix"]
                .contains(&v["type"].as_str().expect("type"))
        );
    }
    // The scenarios too, with their expectation and saved regressions.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("scenarios/pi/g2-stale-ctx-takes-host-path.toml · G2")
            && text.contains("· pi · pi.is-idle · expect fail harness · 1 regression(s)"),
        "{text}"
    );
    let scenario = String::from_utf8_lossy(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON"))
        .find(|v| v["type"] == "scenario" && v["file"] == "scenarios/pi/g4-fixed-passes.toml")
        .expect("a scenario line");
    assert_eq!(scenario["expect"], "pass");
    assert_eq!(scenario["host"], "pi");
}

// ---------------------------------------------------------------------------------------------
// Checkers fire on wake logics built to break them (the built-in variants prove the rest).

/// G4, but every producer message is handed to it twice: the conversation gets it twice.
struct Twice(wakesim::family::pi::wakes::Gentle);
impl PiWake for Twice {
    fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message) {
        self.0.on_message(pi, msg);
        self.0.on_message(pi, msg);
    }
    fn on_session_start(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.0.on_session_start(pi, ctx);
    }
    fn on_agent_start(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.0.on_agent_start(pi, ctx);
    }
    fn on_turn_end(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.0.on_turn_end(pi, ctx);
    }
    fn on_agent_end(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.0.on_agent_end(pi, ctx);
    }
    fn on_agent_settled(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.0.on_agent_settled(pi, ctx);
    }
    fn on_before_agent_start(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.0.on_before_agent_start(pi, ctx);
    }
    fn on_timer(&mut self, pi: &mut Pi<'_>, t: wakesim::family::pi::api::TimerId) {
        self.0.on_timer(pi, t);
    }
}

/// Holds messages and releases them newest first at agent_settled or on the next message.
#[derive(Default)]
struct Lifo {
    held: Vec<wakesim::sim::msg::MsgId>,
}
impl PiWake for Lifo {
    fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message) {
        self.held.push(msg.id);
        if self.held.len() >= 2 {
            while let Some(id) = self.held.pop() {
                pi.send_message(CustomMessage::carrying(id), SendOptions::store());
            }
            pi.send_user_message(Default::default(), None);
        }
    }
    fn on_agent_settled(&mut self, pi: &mut Pi<'_>, _ctx: Ctx) {
        while let Some(id) = self.held.pop() {
            pi.send_message(CustomMessage::carrying(id), SendOptions::store());
        }
    }
}

/// Panics on the first message.
struct Panics;
impl PiWake for Panics {
    fn on_message(&mut self, _pi: &mut Pi<'_>, _msg: Message) {
        panic!("wake logic bug: unexpected message");
    }
}

/// Loops forever calling the host from one handler.
struct Spins;
impl PiWake for Spins {
    fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message) {
        loop {
            pi.send_message(CustomMessage::carrying(msg.id), SendOptions::next_turn());
        }
    }
}

/// Re-arms a timer forever: the run never goes quiet.
struct Ticks;
impl PiWake for Ticks {
    fn on_message(&mut self, pi: &mut Pi<'_>, _msg: Message) {
        pi.set_timeout(0);
    }
    fn on_timer(&mut self, pi: &mut Pi<'_>, _t: wakesim::family::pi::api::TimerId) {
        pi.set_timeout(0);
    }
}

fn test_registry() -> Registry {
    Registry::builtin()
        .with_pi("test.twice", "hands G4 every message twice", || {
            Box::new(Twice(wakesim::family::pi::wakes::Gentle::new(true, true)))
        })
        .with_pi("test.lifo", "delivers newest first", || {
            Box::new(Lifo::default())
        })
        .with_pi("test.panics", "panics", || Box::new(Panics))
        .with_pi("test.spins", "loops in a handler", || Box::new(Spins))
        .with_pi("test.ticks", "re-arms a zero timer forever", || {
            Box::new(Ticks)
        })
}

fn custom(wake: &str, extra: &str, expect: &str) -> String {
    format!(
        "name = \"{wake}\"\nhost = \"pi\"\nwake = \"{wake}\"\nseeds = 50\nsnapshot_seed = 0\n{extra}\n[producers]\nmessages = {{ min = 2, max = 4 }}\nkinds = [\"notification\"]\nsubagents = 1\n[expect]\n{expect}\n"
    )
}

#[test]
fn exactly_once_fires_on_a_duplicate() {
    let registry = test_registry();
    let scn = inline(
        &custom(
            "test.twice",
            "",
            "verdict = \"fail\"\ninvariant = \"exactly-once\"",
        ),
        &registry,
    );
    let rep = Runner::new(&registry).run_scenario(&scn, 0..scn.seeds);
    assert!(rep.met, "{:?}", rep.why);
    assert_eq!(rep.counts.get("exactly-once"), Some(&50));
}

#[test]
fn fifo_fires_on_a_reorder() {
    let registry = test_registry();
    let scn = inline(
        &custom("test.lifo", "", "verdict = \"fail\"\ninvariant = \"fifo\""),
        &registry,
    );
    let r = Runner::new(&registry).run_seed(&scn, 0, true);
    let Outcome::Fail(v) = &r.outcome else {
        panic!("expected a failure, got {:?}", r.outcome)
    };
    assert!(v.iter().any(|v| v.invariant == Invariant::Fifo), "{v:?}");
}

#[test]
fn a_panicking_wake_logic_gets_its_own_verdict_and_other_seeds_still_run() {
    let registry = test_registry();
    let scn = inline(&custom("test.panics", "", "verdict = \"panic\""), &registry);
    assert_eq!(scn.expect, Expect::Panic);
    let rep = Runner::new(&registry).run_scenario(&scn, 0..scn.seeds);
    assert!(rep.met);
    assert_eq!(rep.counts.get("panic"), Some(&50));
    let r = Runner::new(&registry).run_seed(&scn, 3, true);
    assert_eq!(
        r.outcome,
        Outcome::Panic("wake logic bug: unexpected message".to_string())
    );
    let text = report::text::timeline(&scn, &r);
    assert!(
        text.contains("reproduce: wakesim replay inline.toml --seed 3"),
        "{text}"
    );
    // The process is fine afterwards: a normal scenario still runs.
    let ok = scenario("scenarios/pi/g4-fixed-passes.toml", &registry);
    assert_eq!(Runner::new(&registry).run_scenario(&ok, 0..20).failures, 0);
}

#[test]
fn a_runaway_handler_and_a_timer_loop_end_as_step_budget() {
    let registry = test_registry();
    for wake in ["test.spins", "test.ticks"] {
        let scn = inline(
            &custom(wake, "steps_max = 5000", "verdict = \"step-budget\""),
            &registry,
        );
        let rep = Runner::new(&registry).run_scenario(&scn, 0..scn.seeds);
        assert!(rep.met, "{wake}: {:?}", rep.why);
        let r = Runner::new(&registry).run_seed(&scn, 0, true);
        assert!(
            matches!(r.outcome, Outcome::StepBudget { .. }),
            "{wake}: {:?}",
            r.outcome
        );
        assert!(report::text::timeline(&scn, &r).contains("reproduce: wakesim replay"));
    }
}

// ---------------------------------------------------------------------------------------------
// Coverage marks: a scenario can require race windows its budget must reach.

#[test]
fn a_budget_that_never_reaches_a_required_window_fails() {
    let registry = Registry::builtin();
    let text = |must: &str| {
        format!(
            "name = \"g0 without compaction\"\nhost = \"pi\"\nwake = \"pi.raw-trigger-turn\"\nseeds = 30\nsnapshot_seed = 0\n\
             [coverage]\nmust_reach = [\"{must}\"]\n[expect]\nverdict = \"fail\"\ninvariant = \"harness\"\n"
        )
    };
    let unreachable = inline(&text("message-while-compacting"), &registry);
    let rep = Runner::new(&registry).run_scenario(&unreachable, 0..30);
    assert!(!rep.met);
    assert!(
        rep.why
            .as_deref()
            .unwrap_or("")
            .contains("message-while-compacting"),
        "{:?}",
        rep.why
    );
    // With /compact on in every seed, the same budget reaches it.
    let reachable = inline(
        &text("message-while-compacting").replace(
            "[coverage]",
            "[producers]\nstart_ms = { min = 1000, max = 30000 }\n[faults]\nmanual_compaction = \"1/1\"\n[coverage]",
        ),
        &registry,
    );
    let rep = Runner::new(&registry).run_scenario(&reachable, 0..200);
    assert!(rep.met, "{:?}", rep.why);
    assert!(rep.windows["message-while-compacting"] > 0);
}

// ---------------------------------------------------------------------------------------------
// Scale: the report does not depend on threads or shards.

fn without_timing(jsonl: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(jsonl)
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
            if let Some(o) = v.as_object_mut() {
                for k in ["seconds", "seeds_per_s", "events_per_s"] {
                    o.remove(k);
                }
            }
            v
        })
        .collect()
}

#[test]
fn run_json_is_the_same_for_one_thread_many_threads_and_merged_shards() {
    let args = [
        "run",
        "scenarios/pi",
        "--seeds",
        "0..300",
        "--format",
        "json",
    ];
    let one = wakesim(&[&args[..], &["--threads", "1"]].concat());
    let many = wakesim(&[&args[..], &["--threads", "3"]].concat());
    assert_eq!(without_timing(&one.stdout), without_timing(&many.stdout));

    let dir = tempdir("shards");
    let mut files = Vec::new();
    for k in 1..=3 {
        let shard = format!("{k}/3");
        let out = wakesim(&[&args[..], &["--shard", &shard]].concat());
        let f = dir.join(format!("shard-{k}.jsonl"));
        std::fs::write(&f, &out.stdout).expect("write shard");
        files.push(f.to_str().expect("utf-8").to_string());
    }
    files.reverse(); // merge does not care about the order of its inputs
    let merged = wakesim(
        &[
            &["merge"][..],
            &files.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
    );
    assert_eq!(merged.status.code(), one.status.code());
    assert_eq!(without_timing(&merged.stdout), without_timing(&one.stdout));
}

#[test]
fn findability_reports_rate_and_median_seeds_to_first_failure() {
    let registry = Registry::builtin();
    let scn = scenario(
        "scenarios/pi/g2-two-wakes-during-preparation.toml",
        &registry,
    );
    let f = wakesim::engine::findability::findability(&registry, &scn, 0..400, 2);
    assert_eq!(f.seeds, 400);
    assert!(f.failing > 0 && f.failing < 400, "{f:?}");
    let median = f.median_seeds_to_first.expect("a failure");
    assert!((1..=100).contains(&median), "{f:?}");
    // A brute-force median over every starting point agrees with the wrap-around scan.
    let hits = wakesim::engine::findability::expected_hits(&registry, &scn, 0..400, 1);
    assert_eq!(hits.iter().filter(|h| **h).count() as u64, f.failing);
    let mut dist: Vec<u64> = (0..400)
        .map(|start| (0..400).find(|d| hits[(start + d) % 400]).expect("a hit") as u64 + 1)
        .collect();
    dist.sort_unstable();
    assert_eq!(dist[200], median);
    let clean = scenario("scenarios/pi/g4-fixed-passes.toml", &registry);
    assert_eq!(
        wakesim::engine::findability::findability(&registry, &clean, 0..50, 2)
            .median_seeds_to_first,
        None
    );
}

#[test]
fn check_determinism_finds_no_divergence_in_the_real_models() {
    let registry = Registry::builtin();
    for rel in [
        "scenarios/pi/g4-fixed-passes.toml",
        "scenarios/pi/g2-pi058-wake-in-the-retry-gap.toml",
    ] {
        let scn = scenario(rel, &registry);
        assert_eq!(
            wakesim::engine::determinism::check_determinism(&registry, &scn, 0..40),
            Vec::<String>::new()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Shrinking and regressions

#[test]
fn shrink_keeps_the_invariant_and_never_grows_the_run() {
    let registry = Registry::builtin();
    let scn = scenario(
        "scenarios/pi/g2-two-wakes-during-preparation.toml",
        &registry,
    );
    let mut runner = Runner::new(&registry);
    let first = (0..100)
        .find(|&s| !runner.run_seed(&scn, s, false).outcome.is_pass())
        .expect("a failing seed");
    let sh = wakesim::engine::shrink::shrink(
        &mut runner,
        &scn,
        first,
        Some(Invariant::SingleStarter),
        5_000,
    )
    .expect("it fails");
    assert!(
        sh.minimal
            .outcome
            .violations()
            .iter()
            .any(|v| v.invariant == Invariant::SingleStarter)
    );
    assert!(sh.minimal.choices.len() <= sh.original.choices.len());
    assert!(sh.minimal.records <= sh.original.records);
    // The minimal sequence replays exactly, with nothing stale.
    let again = runner.run_choices(&scn, first, sh.minimal.choices.clone(), true);
    assert_eq!(again.stale, None);
    assert_eq!(again.trace, sh.minimal.trace);
}

#[test]
fn shrink_writes_a_regression_that_run_replays_and_a_stale_one_is_reported() {
    let dir = tempdir("regressions");
    let out = wakesim(&[
        "shrink",
        "scenarios/pi/g2-two-wakes-during-preparation.toml",
        "--seed",
        "2",
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The scenario expects this failure, so it is a witness (pinned).
    let file = dir.join("g2-two-wakes-during-preparation-seed-2.toml");
    let text = std::fs::read_to_string(&file).expect("regression written");
    assert!(text.contains("format = \"wakesim-regression/1\""));
    assert!(text.contains("invariant = \"single-starter\""));
    let run = wakesim(&["run", file.to_str().expect("utf-8")]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stdout)
    );
    let replay = wakesim(&["replay", file.to_str().expect("utf-8")]);
    assert!(String::from_utf8_lossy(&replay.stdout).contains("✗ single-starter"));

    // Edit one recorded choice's bound: the model no longer draws it that way.
    let stale_file = dir.join("stale.toml");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let i = lines
        .iter()
        .position(|l| l.contains("/3 await"))
        .expect("an await choice");
    lines[i] = lines[i].replace("/3 await", "/7 await");
    std::fs::write(&stale_file, lines.join("\n")).expect("write");
    // A stale recording runs as its seed, with a notice naming the choice and bounds; seed 2
    // still shows the pinned failure, so it is met.
    let run = wakesim(&["run", stale_file.to_str().expect("utf-8")]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("stale recording")
            && stdout.contains("(await) is now drawn with bound 3, recorded with bound 7")
            && stdout.contains("ran as seed 2 instead: met"),
        "{stdout}"
    );
    let replay = wakesim(&["replay", stale_file.to_str().expect("utf-8")]);
    assert_eq!(replay.status.code(), Some(1), "seed 2 fails");
    assert!(String::from_utf8_lossy(&replay.stderr).contains("is stale"));

    // Drop the last choices: the run draws past the end of the recording.
    let short = dir.join("short.toml");
    let cut: Vec<String> = text
        .lines()
        .filter(|l| !l.contains("/3 model"))
        .map(String::from)
        .collect();
    std::fs::write(&short, cut.join("\n")).expect("write");
    let run = wakesim(&["run", short.to_str().expect("utf-8")]);
    assert_eq!(run.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&run.stdout).contains("stale recording"));

    // A second shrink of the same seed keeps the first file (edited since) and says so.
    let first = std::fs::read_to_string(&file).expect("read");
    std::fs::write(&file, format!("# edited by hand\n{first}")).expect("write");
    let again = wakesim(&[
        "shrink",
        "scenarios/pi/g2-two-wakes-during-preparation.toml",
        "--seed",
        "2",
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(stdout.contains("(a different regression)"), "{stdout}");
    let kept = std::fs::read_to_string(&file).expect("read");
    assert!(kept.starts_with("# edited by hand"));
}

/// A stale recording whose draw moved to another site names both sites, not one bound twice.
#[test]
fn a_stale_message_names_the_label_that_changed() {
    let registry = Registry::builtin();
    let scn = scenario(
        "scenarios/pi/g2-two-wakes-during-preparation.toml",
        &registry,
    );
    let mut runner = Runner::new(&registry);
    let r = runner.run_seed(&scn, 2, false);
    let mut choices = r.choices.clone();
    let i = choices
        .iter()
        .position(|c| c.label == "await")
        .expect("an await choice");
    choices[i].label = "handlers";
    let again = runner.run_choices(&scn, 2, choices, false);
    let why = again.stale.expect("stale");
    assert!(
        why.contains("is now drawn at `await` with bound 3, recorded at `handlers` (same bound)"),
        "{why}"
    );
}

/// The user's loop: `run` saves an unexpected failure beside the scenario; the next run replays
/// it first and fails; after the fix the same command passes with no file edited by hand.
#[test]
fn run_saves_a_failure_that_runs_first_and_passes_after_the_fix() {
    let dir = tempdir("loop");
    let file = dir.join("mine.toml");
    let text = |wake: &str| {
        format!(
            "name = \"mine\"\nhost = \"pi\"\nwake = \"{wake}\"\nseeds = 200\n\
             [producers]\nmessages = {{ min = 2, max = 3 }}\nspacing_ms = {{ min = 0, max = 200 }}\n[expect]\nverdict = \"pass\"\n"
        )
    };
    std::fs::write(&file, text("pi.is-idle")).expect("write");
    let path = file.to_str().expect("utf-8");
    let out = wakesim(&["run", path]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("saved the single-starter failure"),
        "{stdout}"
    );
    let saved: Vec<_> = std::fs::read_dir(dir.join("regressions"))
        .expect("regressions/ beside the scenario")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let name = saved[0]
        .file_name()
        .expect("name")
        .to_string_lossy()
        .to_string();
    assert!(name.starts_with("mine-single-starter-seed-"), "{name}");
    let body = std::fs::read_to_string(&saved[0]).expect("read");
    assert!(
        !body.contains("[expect]"),
        "a saved failure follows the scenario"
    );

    // Naming the scenario file alone runs its saved failure first; it is not saved twice.
    let out = wakesim(&["run", path]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.starts_with(&format!("✗ {}", saved[0].display())),
        "{stdout}"
    );
    assert!(stdout.contains("already saved: kept"), "{stdout}");
    assert!(stdout.contains("1 regressions, 1 scenarios"), "{stdout}");

    // The fix: every expectation met, the saved failure included.
    std::fs::write(&file, text("pi.gentle")).expect("write");
    let out = wakesim(&["run", path]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("all 2 expectations met"), "{stdout}");
    let check = wakesim(&["regressions", "check", path]);
    assert_eq!(check.status.code(), Some(0));
    let list = wakesim(&["regressions", "list", path]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("saved failure: follows expect pass"));
}

#[test]
fn a_regression_recorded_against_a_fixed_logic_passes_and_fails_when_pointed_at_a_buggy_one() {
    let dir = tempdir("record");
    let out = wakesim(&[
        "replay",
        "scenarios/pi/g2-two-wakes-during-preparation.toml",
        "--seed",
        "0",
        "--record",
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    assert!(out.status.code().is_some());
    let file = std::fs::read_dir(&dir)
        .expect("recorded")
        .map(|e| e.expect("entry").path())
        .find(|p| p.to_string_lossy().contains("-seed-0.toml"))
        .expect("recorded file");
    let text = std::fs::read_to_string(&file).expect("recorded");
    // A failure the scenario expects is pinned as a witness; a pass follows the scenario (which
    // allows a pass of one seed): either way it replays as met.
    let run = wakesim(&["run", file.to_str().expect("utf-8")]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stdout)
    );
    // Flip the expectation: the gate must notice.
    let flipped = if !text.contains("[expect]") {
        format!("{text}\n[expect]\nverdict = \"fail\"\ninvariant = \"single-starter\"\n")
    } else {
        let start = text.find("[expect]").expect("expect table");
        format!("{}[expect]\nverdict = \"pass\"\n", &text[..start])
    };
    std::fs::write(&file, flipped).expect("write");
    assert_eq!(
        wakesim(&["run", file.to_str().expect("utf-8")])
            .status
            .code(),
        Some(1)
    );
}

// ---------------------------------------------------------------------------------------------
// Exhaustive exploration

#[test]
fn explore_finds_g2s_race_and_proves_the_fixed_g4_clean() {
    let registry = Registry::builtin();
    let mut runner = Runner::new(&registry);
    let g2 = scenario(
        "scenarios/pi/g2-two-wakes-during-preparation.toml",
        &registry,
    );
    let ex = wakesim::engine::explore::explore(&mut runner, &g2, g2.explore);
    assert!(ex.exhausted);
    assert!(
        ex.distinct > 100 && ex.distinct <= ex.runs,
        "{} of {}",
        ex.distinct,
        ex.runs
    );
    let smallest = ex.smallest_expected.expect("G2's race is in the scope");
    assert!(
        smallest
            .outcome
            .violations()
            .iter()
            .any(|v| v.invariant == Invariant::SingleStarter)
    );

    let fixed = scenario("scenarios/pi/g4-fixed-passes.toml", &registry);
    let ex = wakesim::engine::explore::explore(&mut runner, &fixed, fixed.explore);
    assert!(
        ex.exhausted && ex.failing == 0,
        "{} failing of {}",
        ex.failing,
        ex.runs
    );

    // Every run of a scope is a distinct choice sequence: a wider scope runs strictly more.
    let narrow = wakesim::scenario::Scope {
        deviations_max: 1,
        ..g2.explore
    };
    let wide = wakesim::engine::explore::explore(&mut runner, &g2, g2.explore);
    let narrow = wakesim::engine::explore::explore(&mut runner, &g2, narrow);
    assert!(narrow.runs < wide.runs);
}

#[test]
fn explore_cli_records_a_regression_that_replays() {
    let out = wakesim(&[
        "explore",
        "scenarios/pi/g3-failed-wake-strands.toml",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    assert_eq!(v["exhausted"], true);
    assert_eq!(v["met"], true);
    assert!(v["runs"].as_u64().expect("runs") > 0);
    // A pass scenario of a buggy logic: explore finds its bug and exits 1.
    let dir = tempdir("explore");
    let file = dir.join("g2-wrongly-pass.toml");
    std::fs::write(
        &file,
        "name = \"g2 wrongly expected to pass\"\nhost = \"pi\"\nwake = \"pi.is-idle\"\nseeds = 10\nsnapshot_seed = 0\n\
         [producers]\nmessages = { min = 2, max = 2 }\nspacing_ms = { min = 0, max = 200 }\n[expect]\nverdict = \"pass\"\n",
    )
    .expect("write");
    let out = wakesim(&["explore", file.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("✗ single-starter"));
}

/// A clean, exhausted scope is reported as that scope only (issue 15, class 5): the text says
/// what it does not cover and the JSON says `"proof": "scope-only"`; `--interior N` adds interior
/// delay points, so the same scope runs strictly more sequences, and a recorded run keeps them.
#[test]
fn explore_states_its_scope_and_never_proof() {
    let file = "scenarios/gptme/pr3843-chat-loop-fixed.toml";
    let out = wakesim(&["explore", file]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("no run of this scope breaks an invariant; scope only, not a proof: not covered are runs with more than 2 message(s)"),
        "{text}"
    );
    assert!(!text.contains("no run breaks any invariant"), "{text}");
    let json = |extra: &[&str]| {
        let mut args = vec!["explore", file, "--format", "json"];
        args.extend_from_slice(extra);
        let out = wakesim(&args);
        assert_eq!(out.status.code(), Some(0), "{extra:?}");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("one JSON line")
    };
    let plain = json(&[]);
    assert_eq!(plain["proof"], "scope-only");
    assert_eq!(plain["exhausted"], true);
    assert_eq!(plain["scope"]["interior_points"], 0);
    assert_eq!(plain["scope"]["instant_points"], 7);
    assert_eq!(
        plain["scope"]["not_covered"].as_array().map(Vec::len),
        Some(3)
    );
    let wide = json(&["--interior", "3"]);
    assert_eq!(wide["scope"]["interior_points"], 3);
    assert_eq!(wide["exhausted"], true);
    let runs = |v: &serde_json::Value| v["runs"].as_u64().expect("runs");
    assert!(
        runs(&wide) > runs(&plain),
        "{} vs {}",
        runs(&wide),
        runs(&plain)
    );
    let out = wakesim(&["explore", file, "--interior", "17"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--interior 17 is out of range 0..=16"));

    // A failure found with interior points is recorded with them, and replays as found.
    let dir = tempdir("explore-interior");
    let out = wakesim(&[
        "explore",
        "scenarios/pi/g3-failed-wake-strands.toml",
        "--interior",
        "2",
        "--record",
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved = dir.join("g3-failed-wake-strands-explored.toml");
    let text = std::fs::read_to_string(&saved).expect("recorded");
    assert!(
        text.contains("profile = \"boundary\"\nmessages_max = 2\ninterior = 2\n"),
        "{text}"
    );
    let out = wakesim(&["replay", saved.to_str().expect("utf-8")]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains("stale"), "{all}");
    assert!(all.contains("bounded-latency"), "{all}");
}
