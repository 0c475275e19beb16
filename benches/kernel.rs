//! The kernel lane's figures: events per second per scenario directory and per host family
//! (every checker on, one thread), what each checker costs per observation, and the
//! throughput of shrinking and of bounded exploration.
//!
//! ```sh
//! cargo bench --bench kernel
//! ```
//!
//! Divan prints each figure as a throughput (`item/s`): events per second for the runs, records
//! per second for the checkers, candidate runs per second for shrinking and exploring. The
//! README's performance table quotes these lines. Every figure is measured here on the wall
//! clock of a benchmark, never asserted by a test: machines are shared and noisy.
//!
//! Each benchmark does its setup (loading scenario files, recording traces) outside the timed
//! closure, and keeps its sample count small so that `cargo bench` on two cores stays well under
//! five minutes.

use std::path::Path;

use divan::Bencher;
use divan::counter::ItemsCount;
use wakesim::check::{CheckParams, Invariant, InvariantSet, Monitor, Recording};
use wakesim::engine::Runner;
use wakesim::engine::explore::explore;
use wakesim::engine::shrink::shrink;
use wakesim::family::Registry;
use wakesim::family::pi::note::Note as PiNote;
use wakesim::scenario::{Scenario, discover};
use wakesim::sim::msg::MsgInfo;
use wakesim::sim::record::{Ev, Record};
use wakesim::sim::sink::Sink;

/// The allocator the `wakesim` binary runs with (`src/main.rs`), so these figures are the CLI's.
#[global_allocator]
static ALLOCATOR: mialloc::Mimalloc = mialloc::Mimalloc;

#[path = "../src/mialloc.rs"]
mod mialloc;

fn main() {
    divan::main();
}

/// Every scenario file (not regression files) under `dir`.
fn scenarios(registry: &Registry, dir: &str) -> Vec<Scenario> {
    discover(Path::new(dir))
        .expect("the scenario directory is readable")
        .into_iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).expect("readable");
            !wakesim::engine::regression::is_regression(&text)
        })
        .map(|p| Scenario::load(&p, registry).expect("the scenario loads"))
        .collect()
}

/// Run every scenario's seeds `0..seeds(scn)` on one runner (one thread), and return the
/// events run.
fn run_all(runner: &mut Runner<'_>, scns: &[Scenario], seeds: impl Fn(&Scenario) -> u64) -> u64 {
    scns.iter()
        .map(|scn| runner.run_range(scn, 0..seeds(scn)).events)
        .sum()
}

/// `wakesim run DIR --threads 1`: every scenario of the directory with its own seed budget, all
/// of its family's checkers on. The figure the README quotes as the kernel's events/s.
#[divan::bench(args = ["scenarios/pi", "scenarios/gptme"], sample_count = 3, sample_size = 1)]
fn run_dir(bencher: Bencher, dir: &str) {
    let registry = Registry::builtin();
    let scns = scenarios(&registry, dir);
    let mut runner = Runner::new(&registry);
    let events = run_all(&mut runner, &scns, |s| s.seeds);
    bencher
        .counter(ItemsCount::new(events))
        .bench_local(|| run_all(&mut runner, &scns, |s| s.seeds));
}

/// Seeds each scenario contributes to the per-family figure.
const FAMILY_SEEDS: u64 = 500;

/// Events/s per host family: every built-in scenario of the family (pi: `scenarios/pi`; the
/// gptme server and CLI: their files of `scenarios/gptme`), seeds `0..500` each.
#[divan::bench(args = ["pi", "gptme-server", "gptme-cli"], sample_count = 5, sample_size = 1)]
fn family(bencher: Bencher, family: &str) {
    let registry = Registry::builtin();
    let scns: Vec<Scenario> = ["scenarios/pi", "scenarios/gptme"]
        .into_iter()
        .flat_map(|d| scenarios(&registry, d))
        .filter(|s| s.host.family().name() == family)
        .collect();
    assert!(!scns.is_empty(), "no scenario of family {family}");
    let mut runner = Runner::new(&registry);
    let seeds = |s: &Scenario| s.seeds.min(FAMILY_SEEDS);
    let events = run_all(&mut runner, &scns, seeds);
    bencher
        .counter(ItemsCount::new(events))
        .bench_local(|| run_all(&mut runner, &scns, seeds));
}

/// The observations of some recorded runs, without their narration, with the messages each
/// run registered: what a monitor is fed in a run.
struct Recorded {
    runs: Vec<(Vec<Record>, Vec<MsgInfo>)>,
    params: CheckParams,
    observations: u64,
}

/// Record seeds `0..200` of each scenario of each family's most checked files: pi's faulty
/// gentle pass, the gptme server's subagent reorder and the CLI's faulty pass.
fn recorded() -> Recorded {
    let registry = Registry::builtin();
    let mut runner = Runner::new(&registry);
    let mut runs = Vec::new();
    let mut params = None;
    for file in [
        "scenarios/pi/g4-passes-with-faults.toml",
        "scenarios/gptme/w2-subagent-completions-reordered.toml",
        "scenarios/gptme/b1-passes-with-faults.toml",
    ] {
        let scn = Scenario::load(Path::new(file), &registry).expect("the scenario loads");
        params.get_or_insert(scn.check);
        for seed in 0..200 {
            let r = runner.run_seed(&scn, seed, true);
            runs.push((r.trace, r.messages));
        }
    }
    let observations = runs
        .iter()
        .flat_map(|(trace, _)| trace)
        .filter(|r| !r.ev.is_note())
        .count() as u64;
    Recorded {
        runs,
        params: params.expect("a scenario"),
        observations,
    }
}

/// Feed every recorded run to one monitor (reset per run) checking `enabled`, as a run feeds it:
/// each message registered before its `Produced`, the run finished at its last record.
fn feed(monitor: &mut Monitor<PiNote>, rec: &Recorded, enabled: InvariantSet) -> usize {
    let mut violations = 0;
    for (trace, messages) in &rec.runs {
        monitor.reset(enabled, rec.params, Recording::Verdict);
        let mut end = wakesim::sim::time::Ms::ZERO;
        for r in trace {
            if r.ev.is_note() {
                continue;
            }
            if let Ev::Produced { msg } = r.ev {
                monitor.add_message(messages[msg.0 as usize]);
            }
            let ev: Ev<PiNote> = r.ev.clone().map_note(|_| unreachable!("notes are skipped"));
            monitor.emit(r.t, r.actor, r.state, ev);
            end = r.t;
        }
        monitor.finish(end);
        violations += monitor.violations().len();
    }
    violations
}

/// The monitor alone (ledger, window counts, no checker), then each checker alone, then every
/// checker: a checker's cost per observation is its line's time less `none`'s.
#[divan::bench(
    args = ["none", "no-loss", "exactly-once", "fifo", "bounded-latency", "single-starter",
            "flag-coherence", "harness", "no-self-refusal", "alive-while-owed", "no-spin",
            "isolation", "all"],
    sample_count = 10,
    sample_size = 1,
)]
fn checker(bencher: Bencher, which: &str) {
    let enabled = match which {
        "none" => InvariantSet::of(&[]),
        "all" => InvariantSet::of(&Invariant::ALL),
        name => InvariantSet::of(&[Invariant::from_name(name).expect("an invariant's name")]),
    };
    let rec = recorded();
    let mut monitor = Monitor::<PiNote>::recording(enabled, rec.params, Recording::Verdict);
    bencher
        .counter(ItemsCount::new(rec.observations))
        .bench_local(|| feed(&mut monitor, &rec, enabled));
}

/// Candidate runs per second while shrinking a failing seed to its minimal run (pi's G3
/// stranding a message after a failed wake, seed 0), every candidate traced.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn shrink_runs(bencher: Bencher) {
    let registry = Registry::builtin();
    let scn = Scenario::load(
        Path::new("scenarios/pi/g3-failed-wake-strands.toml"),
        &registry,
    )
    .expect("the scenario loads");
    let mut runner = Runner::new(&registry);
    let runs = shrink(&mut runner, &scn, 0, None, 20_000)
        .expect("seed 0 fails")
        .runs;
    bencher
        .counter(ItemsCount::new(runs))
        .bench_local(|| shrink(&mut runner, &scn, 0, None, 20_000).map(|s| s.runs));
}

/// Enumerated runs per second while exploring a scenario's scope exhaustively (pi's G4 passing
/// with faults: its scope is clean, so every sequence of it runs).
#[divan::bench(sample_count = 3, sample_size = 1)]
fn explore_runs(bencher: Bencher) {
    let registry = Registry::builtin();
    let scn = Scenario::load(Path::new("scenarios/pi/g4-fixed-passes.toml"), &registry)
        .expect("the scenario loads");
    let mut runner = Runner::new(&registry);
    let runs = explore(&mut runner, &scn, scn.explore).runs;
    bencher
        .counter(ItemsCount::new(runs))
        .bench_local(|| explore(&mut runner, &scn, scn.explore).runs);
}
