//! Events sent ahead of their answers (`src/adapter/speculate.rs`) change no run: with an
//! adapter that takes them and one that does not, every seed gives the same outcome (an adapter
//! fault with the same kind and detail, at the same event), the same events and the same trace
//! hash, while fewer round trips are made and the mispredicts re-run their seeds. Its own test
//! binary, its tests one at a time (`SERIAL`): the counters it reads are the process's.

mod common;

use std::sync::Mutex;

use common::inline;
use wakesim::adapter::slot::round_trips;
use wakesim::adapter::speculate::{reruns, sent_ahead};
use wakesim::engine::{Outcome, Runner};
use wakesim::family::Registry;

fn scenario(mode: &str, wake: &str) -> String {
    format!(
        r#"name = "ahead {mode}"
host = "pi"
wake = {wake}
seeds = 20
snapshot_seed = 0
[producers]
messages = {{ min = 1, max = 4 }}
spacing_ms = {{ min = 0, max = 20000 }}
[faults]
retries = "1/3"
extra_continues = "1/3"
[expect]
verdict = "pass"
"#
    )
}

/// The tests read process-wide counters: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// What must be equal between the two runs of a seed.
fn outcome(o: &Outcome) -> String {
    match o {
        // The stderr tail is the process's: one that was restarted after a fault met ahead has
        // a shorter one.
        Outcome::AdapterFault(f) => format!("adapter fault {}: {}", f.kind.name(), f.detail),
        other => format!("{other:?}"),
    }
}

/// Run `seeds` seeds of the two scenarios side by side and compare them; `ends`: the odd
/// handler ends a run (a fault or a throw), so some waited run must have ended so.
fn compare(mode: &str, waited: &str, ahead: &str, seeds: u64, ends: bool) {
    let _one_at_a_time = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let registry = Registry::builtin();
    let waited = inline(waited, &registry);
    let ahead = inline(ahead, &registry);
    let mut runner = Runner::new(&registry);
    let (mut odd, mut trips_waited, mut trips_ahead) = (0, 0, 0);
    let (reruns_before, ahead_before) = (reruns(), sent_ahead());
    for seed in 0..seeds {
        let t = round_trips();
        let w = runner.run_seed(&waited, seed, true);
        trips_waited += round_trips() - t;
        let t = round_trips();
        let a = runner.run_seed(&ahead, seed, true);
        trips_ahead += round_trips() - t;
        assert_eq!(
            outcome(&a.outcome),
            outcome(&w.outcome),
            "{mode} seed {seed}"
        );
        assert_eq!(a.events, w.events, "{mode} seed {seed}");
        assert_eq!(a.trace_hash, w.trace_hash, "{mode} seed {seed}");
        if matches!(w.outcome, Outcome::AdapterFault(_) | Outcome::Panic(_)) {
            odd += 1;
        }
    }
    let (rerun, sent) = (reruns() - reruns_before, sent_ahead() - ahead_before);
    eprintln!(
        "{mode}: {seeds} seeds, {odd} ended by the odd handler, round trips {trips_waited} \
         waited / {trips_ahead} ahead, {sent} events sent ahead, {rerun} seeds re-run"
    );
    // The test means something: events went ahead, some turned out not quiet, and the waited
    // runs met the odd handler where it ends a run.
    assert!(
        sent > 0 && rerun > 0,
        "{mode}: {sent} ahead, {rerun} re-runs"
    );
    assert!(trips_ahead < trips_waited, "{mode}");
    assert_eq!(odd > 0, ends, "{mode}: {odd} runs ended by the odd handler");
}

#[test]
fn events_sent_ahead_give_the_waited_runs_seed_for_seed() {
    let cases: [(&str, u64, &str); 6] = [
        ("calls", 160, ""),
        ("query", 160, ""),
        ("throws", 160, ""),
        ("crash", 160, ""),
        ("garbage", 160, ""),
        ("silent", 40, ", timeout_ms = 300"),
    ];
    for (mode, seeds, bound) in cases {
        let wake = |flag: &str| {
            format!(
                r#"{{ command = ["python3", "tests/data/adapters/ahead.py", "{mode}"{flag}]{bound} }}"#
            )
        };
        let waited = scenario(mode, &wake(""));
        let ahead = scenario(mode, &wake(r#", "--ahead""#));
        compare(
            mode,
            &waited,
            &ahead,
            seeds,
            !matches!(mode, "calls" | "query"),
        );
    }
}

/// The Node adapter's side: its realm abandons a query in an event sent ahead (the module
/// catches that and goes on), and `--wait` gives the waited runs.
#[test]
fn events_sent_ahead_through_node_give_the_waited_runs_seed_for_seed() {
    for mode in ["calls", "query", "throws"] {
        let wake = |flag: &str| {
            format!(
                r#"{{ command = ["node", "adapters/node/adapter.mjs", "tests/data/adapters/node/ahead.ts"{flag}], options = {{ mode = "{mode}" }} }}"#
            )
        };
        let waited = scenario(mode, &wake(r#", "--wait""#));
        let ahead = scenario(mode, &wake(""));
        compare(mode, &waited, &ahead, 200, mode == "throws");
    }
}
