//! What the gptme scenarios' gate does not pin down by itself: the PR #3843 replay's exact
//! request contents, the control-file fingerprint against a same-size rewrite, the 100-record
//! cap, a timeout reported once, determinism and replay on both gptme hosts, the isolation
//! checker firing on purpose-built wake logics, bad gptme scenario files, and `wakesim list`.
//!
//! Each test runs scenarios through the public API and asserts on the recorded observations
//! (`trace::Ev`), the checkers' verdicts or the CLI's output, so a regression fails here.

mod common;
use common::{bad_file_errors, inline, insta_settings, scenario, wakesim};

use wakesim::check::Invariant;
use wakesim::engine::{Outcome, RunResult, Runner};
use wakesim::family::Registry;
use wakesim::family::common::conv::ConvId;
use wakesim::family::gptme_cli::api::{Cli, CliWake, Flow, Item, Resume};
use wakesim::family::gptme_cli::note::Note;
use wakesim::family::gptme_cli::vocab::SAME_SIZE_REWRITE;
use wakesim::scenario::Scenario;
use wakesim::sim::msg::MsgKind;
use wakesim::sim::record::{Ev, WorkOp};

fn run(scn: &Scenario, seed: u64, registry: &Registry) -> RunResult {
    Runner::new(registry).run_seed(scn, seed, true)
}

/// The model requests of a run, each with the messages appended since the previous one.
fn requests(r: &RunResult) -> Vec<Vec<wakesim::sim::msg::MsgId>> {
    let mut out = Vec::new();
    let mut carried = Vec::new();
    for rec in &r.trace {
        match rec.ev {
            Ev::Appended { msg } => carried.push(msg),
            Ev::Request { .. } => out.push(std::mem::take(&mut carried)),
            _ => {}
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// PR #3843's chat-loop replay

#[test]
fn the_fixed_loop_makes_three_calls_and_the_third_carries_the_completion_once() {
    let registry = Registry::builtin();
    let scn = scenario("scenarios/gptme/pr3843-chat-loop-fixed.toml", &registry);
    for seed in 0..scn.seeds {
        let r = run(&scn, seed, &registry);
        assert!(r.outcome.is_pass(), "seed {seed}: {:?}", r.outcome);
        let reqs = requests(&r);
        assert_eq!(reqs.len(), 3, "seed {seed}: {reqs:?}");
        let own_job = |m: &wakesim::sim::msg::MsgId| {
            let info = &r.messages[m.0 as usize];
            info.kind == MsgKind::Job && info.conv == 0
        };
        assert!(reqs[0].is_empty() && reqs[1].is_empty(), "seed {seed}");
        assert_eq!(reqs[2].len(), 1, "seed {seed}: {reqs:?}");
        assert!(
            own_job(&reqs[2][0]),
            "seed {seed}: the third call carries the completion"
        );
        // No other conversation's output in any request; its result stayed claimable by its
        // owner (claimed there, or still queued when the run ended).
        let appended_foreign = r.trace.iter().any(
            |rec| matches!(rec.ev, Ev::Appended { msg } if r.messages[msg.0 as usize].conv != 0),
        );
        assert!(!appended_foreign, "seed {seed}");
    }
}

#[test]
fn the_baseline_makes_two_calls_and_its_job_is_killed_unreported() {
    let registry = Registry::builtin();
    let scn = scenario("scenarios/gptme/pr3843-chat-loop-baseline.toml", &registry);
    for seed in 0..scn.seeds {
        let r = run(&scn, seed, &registry);
        assert_eq!(requests(&r).len(), 2, "seed {seed}");
        let killed = r.trace.iter().any(|rec| {
            matches!(
                rec.ev,
                Ev::Work {
                    conv: 0,
                    op: WorkOp::Killed,
                    ..
                }
            )
        });
        assert!(
            killed,
            "seed {seed}: the exit cleanup kills the running job"
        );
        let invariants: Vec<_> = r.outcome.violations().iter().map(|v| v.invariant).collect();
        assert_eq!(invariants, vec![Invariant::AliveWhileOwed], "seed {seed}");
    }
}

// ---------------------------------------------------------------------------------------------
// B1's edges

const CONTROL: &str = r#"
name = "control.jsonl while a job runs"
host = "gptme-cli"
wake = "WAKE"
seeds = 400
snapshot_seed = 0

[producers]
script = ["job", "text"]
jobs = 0

[timing]
model_ms = 500
job_ms = { min = 20000, max = 40000 }

[faults]
stale_control = "1/1"
control_writes = { share = "1/1", max = 3 }

[check]
latency_requests_max = 100

[expect]
verdict = "pass"
"#;

#[test]
fn a_same_size_rewrite_interrupts_the_fingerprinted_wait_again_and_a_stale_file_never_twice() {
    let registry = Registry::builtin();
    let scn = inline(&CONTROL.replace("WAKE", "gptme.b1-idle-wait"), &registry);
    let mut rewrites_seen = 0;
    for seed in 0..scn.seeds {
        let r = run(&scn, seed, &registry);
        assert!(r.outcome.is_pass(), "seed {seed}: {:?}", r.outcome);
        let mut fingerprints = Vec::new();
        let mut rewrite_pending = false;
        for rec in &r.trace {
            match rec.ev {
                Ev::Mark(w) if w == SAME_SIZE_REWRITE => rewrite_pending = true,
                Ev::InputInterrupt { input } => {
                    assert!(
                        !fingerprints.contains(&input),
                        "seed {seed}: interrupted twice"
                    );
                    fingerprints.push(input);
                    if rewrite_pending {
                        rewrites_seen += 1;
                        rewrite_pending = false;
                    }
                }
                _ => {}
            }
        }
    }
    assert!(
        rewrites_seen > 0,
        "some seed rewrote control.jsonl with the same size during a wait and was interrupted"
    );
}

#[test]
fn without_the_fingerprint_the_same_file_interrupts_again() {
    let registry = Registry::builtin();
    let scn = inline(
        &CONTROL.replace("WAKE", "gptme.b1-pre-control-any"),
        &registry,
    );
    let rep = Runner::new(&registry).run_scenario(&scn, 0..scn.seeds);
    assert!(rep.counts.get("no-spin").copied().unwrap_or(0) > scn.seeds / 2);
}

#[test]
fn a_wait_takes_one_hundred_prompts_and_leaves_the_rest_on_disk_in_order() {
    let registry = Registry::builtin();
    let scn = scenario(
        "scenarios/gptme/b1-passes-with-queued-prompts.toml",
        &registry,
    );
    let r = run(&scn, scn.snapshot_seed.unwrap_or(0), &registry);
    let took = r.trace.iter().find_map(|rec| match &rec.ev {
        Ev::Note(n) => match n.downcast_ref::<Note>()? {
            Note::TakePrompts { payload, left } => Some((payload.ids().to_vec(), *left)),
            _ => None,
        },
        _ => None,
    });
    let (ids, left) = took.expect("the snapshot seed's wait takes prompts");
    assert_eq!((ids.len(), left), (100, 1));
    assert!(ids.windows(2).all(|w| w[0].0 + 1 == w[1].0), "in order");
}

#[test]
fn a_timed_out_wait_reports_each_job_once_and_stops_waiting_for_it() {
    let registry = Registry::builtin();
    let scn = scenario("scenarios/gptme/b1-passes-with-faults.toml", &registry);
    let mut timeouts = 0;
    for seed in 0..300 {
        let r = run(&scn, seed, &registry);
        let mut noticed: Vec<u32> = Vec::new();
        for rec in &r.trace {
            if let Ev::WorkNoticed { work } = rec.ev {
                assert!(!noticed.contains(&work), "seed {seed}: job noticed twice");
                noticed.push(work);
                timeouts += 1;
            }
        }
    }
    assert!(timeouts > 0, "some seed timed out");
}

// ---------------------------------------------------------------------------------------------
// Determinism on the gptme hosts

#[test]
fn gptme_seeds_replay_byte_for_byte_alone_after_others_and_from_their_choices() {
    let registry = Registry::builtin();
    for rel in [
        "scenarios/gptme/w2-one-wake-per-burst-passes.toml",
        "scenarios/gptme/b1-passes-with-faults.toml",
        "scenarios/gptme/b1-passes-with-queued-prompts.toml",
    ] {
        let scn = scenario(rel, &registry);
        let mut warm = Runner::new(&registry);
        for seed in 0..40 {
            let a = run(&scn, seed, &registry);
            let b = warm.run_seed(&scn, seed, true);
            assert_eq!(a.trace, b.trace, "{rel} seed {seed}");
            let c = warm.run_choices(&scn, seed, a.choices.clone(), true);
            assert_eq!(a.trace, c.trace, "{rel} seed {seed} from its choices");
            assert_eq!(
                c.stale, None,
                "{rel} seed {seed}: its own choices replay exactly"
            );
            let quiet = warm.run_seed(&scn, seed, false);
            assert_eq!(a.trace_hash, quiet.trace_hash, "{rel} seed {seed} untraced");
        }
    }
}

/// One runner keeps a family's world across seeds and renews it for each (`Family::renew`):
/// seeds of scenarios with other configurations, faults and wake logics, interleaved on one
/// runner, give the traces of fresh runs, so no field of a renewed host outlives its seed.
#[test]
fn a_renewed_gptme_world_runs_as_a_fresh_one_across_scenarios() {
    let registry = Registry::builtin();
    let scns: Vec<_> = [
        "scenarios/gptme/w2-one-wake-per-burst-passes.toml",
        "scenarios/gptme/w1-burst-refuses-itself.toml",
        "scenarios/gptme/w2-storm-coalesced-documented.toml",
        "scenarios/gptme/b1-passes-with-faults.toml",
        "scenarios/gptme/b0-exits-with-job-running.toml",
        "scenarios/gptme/b1-passes-with-steer-writes.toml",
    ]
    .into_iter()
    .map(|rel| (rel, scenario(rel, &registry)))
    .collect();
    let mut warm = Runner::new(&registry);
    for seed in 0..25 {
        for (rel, scn) in &scns {
            let fresh = run(scn, seed, &registry);
            let renewed = warm.run_seed(scn, seed, false);
            assert_eq!(fresh.trace_hash, renewed.trace_hash, "{rel} seed {seed}");
            assert_eq!(fresh.mix, renewed.mix, "{rel} seed {seed}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ISOLATION fires on wake logics built to break it (the built-in ones never do).

/// B1's wait, but counting every conversation's jobs as its own: it waits for a foreign job.
struct WaitsForEveryJob;

impl CliWake for WaitsForEveryJob {
    fn loop_continue_priority(&self) -> i32 {
        1500
    }
    fn name(&self) -> &'static str {
        "waits for every job"
    }
    fn loop_continue(&mut self, cli: &mut Cli<'_>) -> Flow {
        self.resume(cli, Resume::Notified)
    }
    fn resume(&mut self, cli: &mut Cli<'_>, _why: Resume) -> Flow {
        let me = cli.conversation();
        let done: Vec<Item> = cli
            .claim_completions(me)
            .into_iter()
            .map(Item::Completion)
            .collect();
        if !done.is_empty() {
            return Flow::yield_and_stop(done);
        }
        if cli.jobs().iter().any(|j| !j.notified) {
            return Flow::Wait { timeout_ms: 1_000 };
        }
        Flow::nothing()
    }
}

/// Claims the other conversation's completions at STEP_PRE, as a drain keyed on the wrong id.
struct ClaimsEveryConversation;

impl CliWake for ClaimsEveryConversation {
    fn loop_continue_priority(&self) -> i32 {
        1500
    }
    fn name(&self) -> &'static str {
        "claims every conversation's completions"
    }
    fn step_pre(&mut self, cli: &mut Cli<'_>) -> Vec<Item> {
        let mut items: Vec<Item> = Vec::new();
        for conv in [ConvId(0), ConvId(1)] {
            items.extend(
                cli.claim_completions(conv)
                    .into_iter()
                    .map(Item::Completion),
            );
        }
        items
    }
    fn loop_continue(&mut self, _cli: &mut Cli<'_>) -> Flow {
        Flow::nothing()
    }
}

fn isolation_registry() -> Registry {
    Registry::builtin()
        .with_gptme_cli("test.waits-for-every-job", "waits for foreign jobs", || {
            Box::new(WaitsForEveryJob)
        })
        .with_gptme_cli("test.claims-every-conversation", "steals", || {
            Box::new(ClaimsEveryConversation)
        })
}

const FOREIGN: &str = r#"
name = "another conversation's jobs"
host = "gptme-cli"
wake = "WAKE"
seeds = 300
snapshot_seed = 0

[producers]
jobs = 0
script = ["tool", "tool", "tool", "tool", "text"]

[timing]
model_ms = 2000
job_ms = { min = 1000, max = 4000 }
claim_ms = 30000

[faults]
foreign_jobs = { share = "1/1", max = 3 }

[expect]
verdict = "fail"
invariant = "isolation"
also = ["no-loss", "bounded-latency", "exactly-once"]
"#;

#[test]
fn isolation_fires_on_a_wait_held_open_by_a_foreign_job_and_on_stolen_output() {
    let registry = isolation_registry();
    for (wake, what) in [
        ("test.waits-for-every-job", "held open"),
        ("test.claims-every-conversation", "leaked in"),
    ] {
        let scn = inline(&FOREIGN.replace("WAKE", wake), &registry);
        let rep = Runner::new(&registry).run_scenario(&scn, 0..scn.seeds);
        assert!(rep.met, "{wake}: {:?}", rep.why);
        let seed = rep.first_expected.expect("a seed breaks isolation");
        let r = run(&scn, seed, &registry);
        let v = r
            .outcome
            .violations()
            .iter()
            .find(|v| v.invariant == Invariant::Isolation)
            .expect("isolation");
        assert!(v.detail.contains(what), "{wake}: {}", v.detail);
    }
    // B1 itself, in the same setting, never waits for or takes another conversation's job.
    let b1 = inline(
        &FOREIGN
            .replace("WAKE", "gptme.b1-idle-wait")
            .replace("verdict = \"fail\"", "verdict = \"pass\"")
            .replace("invariant = \"isolation\"\n", "")
            .replace(
                "also = [\"no-loss\", \"bounded-latency\", \"exactly-once\"]\n",
                "",
            ),
        &registry,
    );
    let rep = Runner::new(&registry).run_scenario(&b1, 0..b1.seeds);
    assert!(rep.met, "{:?}", rep.why);
}

#[test]
fn a_panicking_gptme_wake_logic_gets_its_own_verdict() {
    struct Panics;
    impl CliWake for Panics {
        fn loop_continue_priority(&self) -> i32 {
            1500
        }
        fn name(&self) -> &'static str {
            "panics"
        }
        fn loop_continue(&mut self, _cli: &mut Cli<'_>) -> Flow {
            panic!("wake logic bug at LOOP_CONTINUE")
        }
    }
    let registry = Registry::builtin().with_gptme_cli("test.panics", "panics", || Box::new(Panics));
    let scn = inline(
        "name = \"p\"\nhost = \"gptme-cli\"\nwake = \"test.panics\"\nseeds = 5\nsnapshot_seed = 0\n[expect]\nverdict = \"panic\"\n",
        &registry,
    );
    let r = run(&scn, 0, &registry);
    assert_eq!(
        r.outcome,
        Outcome::Panic("wake logic bug at LOOP_CONTINUE".to_string())
    );
}

// ---------------------------------------------------------------------------------------------
// Scenario files and the CLI

#[test]
fn bad_gptme_scenario_files_name_file_line_and_key_and_exit_2() {
    let all = bad_file_errors("tests/data/bad-gptme", 8);
    insta_settings().bind(|| insta::assert_snapshot!("errors__bad-gptme-scenarios", all));
}

#[test]
fn list_shows_the_gptme_hosts_wake_logics_invariants_and_faults() {
    let text = String::from_utf8(wakesim(&["list"]).stdout).expect("utf-8");
    for name in [
        "gptme-server",
        "gptme-cli",
        "gptme.w1-per-event-drain",
        "gptme.b1-idle-wait",
        "no-self-refusal",
        "alive-while-owed",
        "no-spin",
        "isolation",
        "tool_confirmation",
        "prompt_flood",
        "notify-before-wait",
    ] {
        assert!(text.contains(name), "list lacks {name}");
    }
    let json = String::from_utf8(wakesim(&["list", "--format", "json"]).stdout).expect("utf-8");
    let lines: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let has = |ty: &str, name: &str, family: Option<&str>| {
        lines.iter().any(|v| {
            v["type"] == ty && v["name"] == name && family.is_none_or(|f| v["family"] == f)
        })
    };
    assert!(has("host", "gptme-cli", Some("gptme-cli")));
    assert!(has(
        "wake",
        "gptme.w2-one-wake-per-burst",
        Some("gptme-server")
    ));
    assert!(has("fault", "concurrent_drain", Some("gptme-cli")));
    assert!(has("invariant", "no-spin", None));
    let spin = lines
        .iter()
        .find(|v| v["type"] == "invariant" && v["name"] == "no-spin")
        .expect("no-spin");
    // The model and the real gptme 0.35.1 chat loop, a host of the same family.
    assert_eq!(
        spin["hosts"],
        serde_json::json!(["gptme-cli", "gptme-cli@0.35.1"])
    );
}
