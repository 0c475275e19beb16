//! What the lane's scenario gate does not cover: determinism by wakesim's own trace comparison
//! (madsim's `check_determinism` compares only its random draws and its clock, so a wake logic
//! whose effect on the host varies run to run would pass it), the replay line working as printed,
//! the guard against a build without `--cfg madsim`, and the bridge's budgets and panics.

use std::path::{Path, PathBuf};
use std::process::Command;

use wakesim::engine::Outcome;
use wakesim::report;
use wakesim::scenario::Scenario;
use wakesim_madsim::bridge::{Event, Events, Host};
use wakesim_madsim::run::{Lane, replay_line};
use wakesim_madsim::wake::AsyncWake;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("madsim/ has a parent")
        .to_path_buf()
}

fn scenario(lane: &Lane, rel: &str) -> Scenario {
    let scn = lane.load(&root().join(rel)).expect("scenario loads");
    Scenario {
        path: PathBuf::from(rel),
        ..scn
    }
}

const BUGGY: &str = "madsim/scenarios/is-idle-two-wakes-during-preparation.toml";
const FIXED: &str = "madsim/scenarios/reservation-timer-passes-with-faults.toml";

// ---------------------------------------------------------------------------------------------
// Determinism, judged on wakesim's traces.

#[test]
fn a_seed_run_twice_gives_a_byte_identical_trace() {
    let lane = Lane::builtin();
    for rel in [BUGGY, FIXED] {
        let scn = scenario(&lane, rel);
        for seed in [0, 3, 7, 128, 999] {
            let a = lane.run_seed(&scn, seed, true);
            let b = lane.run_seed(&scn, seed, true);
            assert_eq!(a.trace, b.trace, "{rel} seed {seed}");
            assert_eq!(a.trace_hash, b.trace_hash);
            assert_eq!(a.outcome, b.outcome);
            assert_eq!(
                report::text::timeline(&scn, &a),
                report::text::timeline(&scn, &b)
            );
        }
    }
}

#[test]
fn a_seed_alone_equals_the_same_seed_after_other_seeds() {
    let lane = Lane::builtin();
    let scn = scenario(&lane, FIXED);
    let other = scenario(&lane, BUGGY);
    let alone: Vec<u64> = (40..60)
        .map(|s| Lane::builtin().run_seed(&scn, s, false).trace_hash)
        .collect();
    for s in 0..40 {
        lane.run_seed(&other, s, false);
        lane.run_seed(&scn, s, false);
    }
    let after: Vec<u64> = (40..60)
        .map(|s| lane.run_seed(&scn, s, false).trace_hash)
        .collect();
    assert_eq!(alone, after);
}

#[test]
fn tracing_does_not_change_the_run() {
    let lane = Lane::builtin();
    let scn = scenario(&lane, FIXED);
    for seed in 0..40 {
        let quiet = lane.run_seed(&scn, seed, false);
        let traced = lane.run_seed(&scn, seed, true);
        assert_eq!(quiet.trace_hash, traced.trace_hash, "seed {seed}");
        assert_eq!(quiet.outcome, traced.outcome);
    }
}

#[test]
fn seeds_give_different_runs() {
    // Not a tautology guard: a bridge that ignored the seed would replay one run forever.
    let lane = Lane::builtin();
    let scn = scenario(&lane, FIXED);
    let hashes: std::collections::BTreeSet<u64> = (0..20)
        .map(|s| lane.run_seed(&scn, s, false).trace_hash)
        .collect();
    assert!(hashes.len() > 15, "{} distinct runs of 20", hashes.len());
}

// ---------------------------------------------------------------------------------------------
// The replay line, run as printed.

/// `target/<profile>/examples/replay`, which `cargo test` builds with the tests.
fn replay_example() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>");
    profile_dir
        .join("examples")
        .join(format!("replay{}", std::env::consts::EXE_SUFFIX))
}

fn trace_hash_in(timeline: &str) -> &str {
    let at = timeline.rfind(" · trace ").expect("a trace hash") + " · trace ".len();
    &timeline[at..at + 16]
}

#[test]
fn the_printed_replay_line_reproduces_the_run_with_the_same_trace_hash() {
    let lane = Lane::builtin();
    let scn = scenario(&lane, BUGGY);
    let seed = (0..200)
        .find(|s| !lane.run_seed(&scn, *s, false).outcome.is_pass())
        .expect("the buggy coordinator fails some seed");
    let r = lane.run_seed(&scn, seed, true);
    let line = replay_line(&scn.path, seed);
    assert_eq!(
        line,
        format!("reproduce: cargo run -p wakesim-madsim --example replay -- {BUGGY} --seed {seed}")
    );
    // What the line runs, twice: the example with the arguments after `--`, from the root.
    let args: Vec<&str> = line
        .split(" -- ")
        .nth(1)
        .expect("args")
        .split(' ')
        .collect();
    let run = || {
        Command::new(replay_example())
            .args(&args)
            .current_dir(root())
            .output()
            .expect("the replay example runs (cargo test builds it)")
    };
    let (first, second) = (run(), run());
    assert_eq!(first.status.code(), Some(1), "a failing seed exits 1");
    assert_eq!(
        first.stdout, second.stdout,
        "replaying twice prints the same run"
    );
    let text = String::from_utf8(first.stdout).expect("utf-8");
    assert_eq!(trace_hash_in(&text), format!("{:016x}", r.trace_hash));
    assert_eq!(
        text,
        report::text::timeline_with(&scn, &r, &line),
        "the example prints the timeline the gate would"
    );
    assert!(text.ends_with(&format!("{line}\n")));
}

#[test]
fn the_replay_example_rejects_bad_usage_with_exit_2() {
    for args in [vec![], vec![BUGGY], vec!["nope.toml", "--seed", "1"]] {
        let out = Command::new(replay_example())
            .args(&args)
            .current_dir(root())
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
    }
}

// ---------------------------------------------------------------------------------------------
// The guard: without `--cfg madsim` the lane must not build, let alone pass with zero tests.

// It compiles madsim a second time (minutes on a busy machine), so it is not part of every
// `cargo test`: `.ci/run` runs it with `--ignored`.
#[test]
#[ignore = "compiles madsim again without its cfg; .ci/run runs it: cargo test -p wakesim-madsim --test lane -- --ignored"]
fn without_the_cfg_the_lane_fails_to_build_loudly() {
    // A RUSTFLAGS in the environment replaces .cargo/config.toml's flags, which is how the cfg
    // gets lost in practice. A separate target directory keeps this build from evicting the
    // normal one; only its first run compiles much (the failure comes from the build script).
    let out = Command::new(env!("CARGO"))
        .args(["check", "-p", "wakesim-madsim", "--lib", "--quiet"])
        .env("RUSTFLAGS", "")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env("CARGO_TARGET_DIR", root().join("target/guard-check"))
        .current_dir(root())
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the lane built without --cfg madsim");
    assert!(
        stderr.contains("wakesim-madsim must be compiled with `--cfg madsim`"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// Budgets and panics of async wake logics.

fn with(
    lane: Lane,
    name: &'static str,
    start: fn(Host, Events) -> wakesim_madsim::bridge::WakeFuture,
) -> Lane {
    lane.with(AsyncWake {
        name,
        summary: "test logic",
        constants_ms: &[],
        kernel_counterpart: "pi.raw-trigger-turn",
        start,
    })
}

fn inline(lane: &Lane, wake: &str, expect: &str) -> Scenario {
    let text = format!(
        "name = \"t\"\nhost = \"pi\"\nwake = \"{wake}\"\nseeds = 5\nsnapshot_seed = 0\n\
         steps_max = 5000\n[expect]\n{expect}\n"
    );
    let names: Vec<&str> = lane.wakes().iter().map(|w| w.name).collect();
    Scenario::parse_for(Path::new("inline.toml"), &text, &names).expect("parses")
}

#[test]
fn a_coordinator_that_calls_the_host_forever_ends_as_step_budget() {
    let lane = with(Lane::builtin(), "test.spin", |host, mut events| {
        Box::pin(async move {
            let Some(Event::SessionStart(ctx)) = events.recv().await else {
                return;
            };
            loop {
                host.call(move |pi| ctx.is_idle(pi).is_ok()).await;
            }
        })
    });
    let scn = inline(&lane, "test.spin", "verdict = \"step-budget\"");
    let r = lane.run_seed(&scn, 0, false);
    assert_eq!(r.outcome, Outcome::StepBudget { steps: 5000 });
    assert!(lane.run_scenario(&scn, 0..3).met);
}

#[test]
fn a_panicking_coordinator_gets_its_own_verdict() {
    let lane = with(Lane::builtin(), "test.panic", |_host, mut events| {
        Box::pin(async move {
            while let Some(ev) = events.recv().await {
                if let Event::Message(m) = ev {
                    panic!("cannot handle {}", m.id);
                }
            }
        })
    });
    let scn = inline(&lane, "test.panic", "verdict = \"panic\"");
    let r = lane.run_seed(&scn, 1, false);
    assert_eq!(r.outcome, Outcome::Panic("cannot handle m1".to_string()));
}

#[test]
fn a_coordinator_that_ignores_messages_loses_them() {
    // The checkers judge the lane's runs: doing nothing is caught, at the end, as no-loss.
    let lane = with(Lane::builtin(), "test.deaf", |_host, mut events| {
        Box::pin(async move { while events.recv().await.is_some() {} })
    });
    let scn = inline(
        &lane,
        "test.deaf",
        "verdict = \"fail\"\ninvariant = \"no-loss\"\nalso = [\"bounded-latency\"]",
    );
    let r = lane.run_seed(&scn, 2, false);
    let broken: Vec<_> = r
        .outcome
        .violations()
        .iter()
        .map(|v| v.invariant.name())
        .collect();
    assert!(broken.contains(&"no-loss"), "{broken:?}");
    assert!(lane.run_scenario(&scn, 0..5).met);
}

// ---------------------------------------------------------------------------------------------
// The kernel's stepping API, which the bridge drives on madsim's clock, is `kernel::drive`.

#[test]
fn stepping_the_kernel_by_hand_reproduces_drive() {
    use wakesim::check::Monitor;
    use wakesim::engine::Runner;
    use wakesim::family::Registry;
    use wakesim::family::pi::config::PiConfig;
    use wakesim::family::pi::{Gen, PiFamily, PiHost};
    use wakesim::sim::choice::{Choices, Profile};
    use wakesim::sim::sink::Sink;
    use wakesim::sim::time::Ms;
    use wakesim::sim::{Kernel, World};

    let registry = Registry::builtin();
    let rel = "scenarios/pi/g4-fixed-passes.toml";
    let scn = Scenario::load(&root().join(rel), &registry).expect("loads");
    let mut runner = Runner::new(&registry);
    for seed in 0..50 {
        let expected = runner.run_seed(&scn, seed, false);
        let mut k = Kernel::new(
            Choices::random(seed, Profile::default()),
            Monitor::new(scn.host.invariants(), scn.check, false),
            scn.limits,
        );
        let entry = registry.get(&scn.wake).expect("registered");
        let wake = entry.make::<PiFamily>().expect("a pi wake logic");
        let config = scn.config.get::<PiConfig>().expect("a pi scenario");
        let mut world = PiHost::new(Gen::V099, config.clone(), wake);
        let active_end = Ms(scn.limits.active_ms);
        let horizon = active_end + scn.limits.quiesce_ms_max;
        world.start(&mut k);
        while k.steps() < scn.limits.steps_max {
            let next = k.next_time();
            if !k.quiescent() && next.is_none_or(|t| t >= active_end) {
                k.advance_to(active_end);
                k.begin_quiescence();
                world.quiesce(&mut k);
                continue;
            }
            match next {
                Some(t) if t <= horizon => {
                    let ev = k.pop_event().expect("peeked");
                    world.step(&mut k, ev);
                }
                Some(_) => {
                    k.advance_to(horizon);
                    break;
                }
                None => break,
            }
        }
        world.finish(&mut k);
        let t = k.now();
        k.sink.finish(t);
        assert_eq!(k.sink.trace_hash(), expected.trace_hash, "seed {seed}");
        assert_eq!(k.steps(), expected.events);
    }
}
