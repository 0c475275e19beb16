//! The crate's own scenario's timeline as an insta snapshot in the crate's own snapshot directory
//! (`tests/snapshots/`, beside this file): `wakesim::testing::Check::snapshot` gives the text, this
//! crate's insta asserts it. A changed timeline fails here with insta's diff and is accepted with
//! `cargo insta review` (or `INSTA_UPDATE=always cargo test`), as any insta snapshot.

use wakesim::testing::Check;
use wakesim_downstream::registry;

/// The reserved wake's timeline at seed 0 (a passing scenario's snapshot seed).
#[test]
fn the_reserved_wakes_timeline() {
    let snap = Check::file(&registry(), "scenarios/reserved.toml").snapshot();
    assert_eq!(snap.seed, 0);
    insta::with_settings!({ description => snap.description.clone() }, {
        insta::assert_snapshot!(snap);
    });
}

/// A failing scenario's snapshot is of the first seed that shows its expected failure.
#[test]
fn a_failing_scenario_snapshots_its_first_failure() {
    let text = std::fs::read_to_string("scenarios/naive.toml")
        .expect("the scenario")
        .replace("verdict = \"pass\"", "verdict = \"fail\"\ninvariant = \"single-starter\"\nalso = [\"no-loss\", \"flag-coherence\", \"harness\", \"fifo\", \"bounded-latency\", \"no-wasted-wake\"]");
    let snap = Check::inline(&registry(), "naive-fails.toml", &text)
        .seeds(0..200)
        .snapshot();
    assert!(snap.text.contains("✗ single-starter"), "{snap}");
    insta::assert_snapshot!(snap);
}
