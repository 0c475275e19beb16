//! The adapters' figures: seeds per second through the Node and the Python adapter on the pi
//! scenarios (`scenarios/external/{node,python}-g*`), round trips per second (lines the
//! simulator writes and waits on; events sent ahead of their answers, `adapter::speculate`, are
//! counted apart with the seeds re-run after a mispredict), and the per-seed startup alone (`reset` and its `ready`,
//! which reloads the user's module).
//!
//! ```sh
//! cargo bench --bench adapters
//! ```
//!
//! Needs `node` (with `npm ci` done in `adapters/node`, which the adapter does on first use)
//! and `python3`. Figures only, never asserted: machines are shared and noisy.

use std::path::Path;

use divan::Bencher;
use divan::counter::ItemsCount;
use wakesim::adapter::{Peer, Pool, slot, speculate};
use wakesim::engine::Runner;
use wakesim::family::Registry;
use wakesim::scenario::{Scenario, discover};

/// The allocator the `wakesim` binary runs with (`src/main.rs`), so these figures are the CLI's.
#[global_allocator]
static ALLOCATOR: mialloc::Mimalloc = mialloc::Mimalloc;

#[path = "../src/mialloc.rs"]
mod mialloc;

fn main() {
    divan::main();
}

/// Seeds each external scenario runs per sample.
const SEEDS: u64 = 20;

/// The pi scenarios through `lang`'s adapter (`node` or `python`).
fn pi_scenarios(registry: &Registry, lang: &str) -> Vec<Scenario> {
    discover(Path::new("scenarios/external"))
        .expect("scenarios/external is readable")
        .into_iter()
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with(&format!("{lang}-g"))
        })
        .map(|p| Scenario::load(&p, registry).expect("the scenario loads"))
        .filter(|s| s.host.family().name() == "pi")
        .collect()
}

/// A runner with every scenario's adapter started (its first `reset` done).
fn prepared<'r>(registry: &'r Registry, scns: &[Scenario]) -> Runner<'r> {
    let mut runner = Runner::new(registry);
    for scn in scns {
        if let Err(e) = runner.prepare(scn) {
            panic!("the adapter of {} cannot start: {e}", scn.path.display());
        }
    }
    runner
}

/// Seeds `0..SEEDS` of every scenario; the events run.
fn run_all(runner: &mut Runner<'_>, scns: &[Scenario]) -> u64 {
    scns.iter()
        .map(|scn| runner.run_range(scn, 0..SEEDS).events)
        .sum()
}

/// Seeds per second through the adapter, every pi scenario of that language, seeds `0..20`:
/// the figure the README quotes against the 5,000 (Node) and 3,000 (Python) targets.
#[divan::bench(args = ["node", "python"], sample_count = 3, sample_size = 1)]
fn seeds(bencher: Bencher, lang: &str) {
    let registry = Registry::builtin();
    let scns = pi_scenarios(&registry, lang);
    let mut runner = prepared(&registry, &scns);
    run_all(&mut runner, &scns);
    bencher
        .counter(ItemsCount::new(SEEDS * scns.len() as u64))
        .bench_local(|| run_all(&mut runner, &scns));
}

/// Round trips per second: the same runs, counted in the times the simulator, having written,
/// waits for the adapter (a `reset` with the run's first event behind it is one; an event and
/// its calls up to `done` is one; a query and its answer is one). The round trips a seed makes
/// go to stderr.
#[divan::bench(args = ["node", "python"], sample_count = 3, sample_size = 1)]
fn round_trips(bencher: Bencher, lang: &str) {
    let registry = Registry::builtin();
    let scns = pi_scenarios(&registry, lang);
    let mut runner = prepared(&registry, &scns);
    let (trips, lines) = (slot::round_trips(), slot::lines_sent());
    let (ahead, reruns) = (speculate::sent_ahead(), speculate::reruns());
    run_all(&mut runner, &scns);
    let (trips, lines) = (slot::round_trips() - trips, slot::lines_sent() - lines);
    let (ahead, reruns) = (
        speculate::sent_ahead() - ahead,
        speculate::reruns() - reruns,
    );
    let seeds = SEEDS * scns.len() as u64;
    eprintln!(
        "adapters/{lang}: {:.2} round trips, {:.2} lines written and {:.2} events sent ahead a seed, \
         {reruns} seeds re-run after a mispredict ({} scenarios, {seeds} seeds)",
        trips as f64 / seeds as f64,
        lines as f64 / seeds as f64,
        ahead as f64 / seeds as f64,
        scns.len()
    );
    bencher
        .counter(ItemsCount::new(trips))
        .bench_local(|| run_all(&mut runner, &scns));
}

/// Resets per second: the per-seed startup alone (the module reloaded, its `ready` read), on
/// the G2 module of each language.
#[divan::bench(args = ["node", "python"], sample_count = 5, sample_size = 20)]
fn reset(bencher: Bencher, lang: &str) {
    let registry = Registry::builtin();
    let file = format!("scenarios/external/{lang}-g2-two-wakes-during-preparation.toml");
    let scn = Scenario::load(Path::new(&file), &registry).expect("the scenario loads");
    let spec = scn.adapter.clone().expect("an external scenario");
    let peer = Peer {
        family: scn.host.family().name(),
        version: scn.host.version_label(),
    };
    let mut pool = Pool::default();
    pool.prepare(&spec, peer).expect("the adapter starts");
    let slot = pool.slot(&spec, peer);
    bencher.counter(ItemsCount::new(1u64)).bench_local(|| {
        slot.borrow_mut().reset().expect("the adapter resets");
    });
}
