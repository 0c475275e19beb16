//! The positive control of the determinism check (issue 15, item 7). The gate runs
//! `check_determinism` on a sample of every scenario's seeds and `run --check-determinism` on
//! request; both pass on every real model (`tests/integration.rs`). That proves nothing unless the
//! check fails where it must, so here a wake logic keeps state across seeds on purpose, in a
//! process-wide counter: the same seed run in a fresh runner and in a warm one then makes
//! different calls, and the check must flag each seed and name the first record that differs.
//!
//! This file holds the only test of its binary, so no other test moves the counter.

use std::sync::atomic::{AtomicU64, Ordering};

use wakesim::family::Registry;
use wakesim::family::pi::api::{CustomMessage, Message, Pi, PiWake, SendOptions, TimerId};
use wakesim::scenario::Scenario;
use wakesim::sim::msg::Payload;

/// Calls of the wake logic in this process, across seeds and runners: the leak under test.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Stores each message and wakes after a delay read from the process-wide counter: a run depends
/// on how many runs came before it in this process, not only on its seed.
struct GlobalCounter;

impl PiWake for GlobalCounter {
    fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message) {
        pi.send_message(CustomMessage::carrying(msg.id), SendOptions::store());
        let n = CALLS.fetch_add(1, Ordering::Relaxed);
        pi.set_timeout(1 + n % 1000);
    }

    fn on_timer(&mut self, pi: &mut Pi<'_>, _timer: TimerId) {
        pi.send_user_message(Payload::None, None);
    }
}

#[test]
fn a_wake_logic_with_state_across_seeds_is_flagged_at_its_first_divergent_record() {
    let registry = Registry::builtin().with_pi(
        "test.global-counter",
        "wakes after a delay read from a process-wide counter",
        || Box::new(GlobalCounter),
    );
    let scn = Scenario::parse(
        std::path::Path::new("inline.toml"),
        r#"
name = "nondeterminism control"
host = "pi"
wake = "test.global-counter"
seeds = 4
snapshot_seed = 0

[producers]
messages = 1
kinds = ["completion"]

[expect]
verdict = "pass"
"#,
        &registry,
    )
    .expect("inline scenario parses");

    let divergences = wakesim::engine::determinism::check_determinism(&registry, &scn, 0..4);
    assert_eq!(
        divergences.len(),
        4,
        "every seed diverges: {divergences:#?}"
    );
    println!("{}", divergences[0]);
    for (seed, d) in divergences.iter().enumerate() {
        assert!(
            d.starts_with(&format!("seed {seed}: traces diverge at record ")),
            "{d}"
        );
        // The first record that differs is the wake logic's own timer, set with a delay that
        // depends on the counter, on both sides: nothing before it differs.
        let sides: Vec<&str> = d.split(" vs ").collect();
        assert_eq!(sides.len(), 2, "{d}");
        for side in &sides {
            assert!(side.contains("Timer") && side.contains("Set"), "{d}");
        }
        assert_ne!(
            sides[0].split_once(" ms ").map(|x| x.1),
            sides[1].split_once(" ms ").map(|x| x.1),
            "{d}"
        );
    }

    // The same logic without the leak (the counter no longer moves between the two runs of a
    // seed) is not flagged: the check compares runs, not logics.
    let calm = Registry::builtin().with_pi("test.calm", "wakes at once", || Box::new(Calm));
    let calm_scn = Scenario {
        wake: "test.calm".to_string(),
        ..scn.clone()
    };
    assert_eq!(
        wakesim::engine::determinism::check_determinism(&calm, &calm_scn, 0..4),
        Vec::<String>::new()
    );
}

struct Calm;

impl PiWake for Calm {
    fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message) {
        pi.send_message(CustomMessage::carrying(msg.id), SendOptions::store());
        pi.set_timeout(1);
    }

    fn on_timer(&mut self, pi: &mut Pi<'_>, _timer: TimerId) {
        pi.send_user_message(Payload::None, None);
    }
}
