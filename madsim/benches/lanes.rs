//! The madsim lane against the kernel lane, side by side in one run: seeds per second of every
//! scenario of `madsim/scenarios/`, on madsim (the async logic as madsim tasks) and on the
//! kernel (its kernel-lane counterpart of the same design, same host, plan, faults and seeds).
//!
//! ```sh
//! cargo bench -p wakesim-madsim --bench lanes
//! ```
//!
//! The README's madsim-vs-kernel table divides the `kernel` line of a scenario by its `madsim`
//! line. A figure, never asserted: machines are shared and noisy. (`examples/seeds_per_s.rs`
//! prints the same comparison for one file without a benchmark harness.)

use std::path::Path;

use divan::Bencher;
use divan::counter::ItemsCount;
use wakesim::engine::Runner;
use wakesim::family::Registry;
use wakesim::scenario::Scenario;
use wakesim_madsim::run::Lane;

fn main() {
    divan::main();
}

const SCENARIOS: [&str; 5] = [
    "is-idle-two-wakes-during-preparation",
    "reservation-stale-view-races-a-user-prompt",
    "reservation-timer-failed-wake-rewakes",
    "reservation-timer-passes-with-faults",
    "reservation-timer-user-prompt-at-the-same-instant",
];

/// Seeds per sample on the madsim lane; the kernel lane runs ten times as many per sample so
/// both samples take a comparable time.
const MADSIM_SEEDS: u64 = 1_000;
const KERNEL_SEEDS: u64 = 10_000;

fn load(lane: &Lane, name: &str) -> Scenario {
    // `cargo bench -p wakesim-madsim` runs in the member's directory.
    let path = Path::new("scenarios").join(format!("{name}.toml"));
    lane.load(&path).expect("the scenario loads")
}

/// Seeds per second on the madsim lane.
#[divan::bench(args = SCENARIOS, sample_count = 3, sample_size = 1)]
fn madsim(bencher: Bencher, name: &str) {
    let lane = Lane::builtin();
    let scn = load(&lane, name);
    bencher
        .counter(ItemsCount::new(MADSIM_SEEDS))
        .bench_local(|| lane.run_scenario(&scn, 0..MADSIM_SEEDS).events);
}

/// Seeds per second on the kernel lane, the same scenario with the async logic's kernel-lane
/// counterpart.
#[divan::bench(args = SCENARIOS, sample_count = 3, sample_size = 1)]
fn kernel(bencher: Bencher, name: &str) {
    let lane = Lane::builtin();
    let scn = load(&lane, name);
    let counterpart = lane.wake(&scn.wake).expect("loaded").kernel_counterpart;
    let registry = Registry::builtin();
    let kscn = Scenario {
        wake: counterpart.to_string(),
        ..scn.clone()
    };
    let mut runner = Runner::new(&registry);
    bencher
        .counter(ItemsCount::new(KERNEL_SEEDS))
        .bench_local(|| runner.run_scenario(&kscn, 0..KERNEL_SEEDS).events);
}
