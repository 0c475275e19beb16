//! The determinism self-check: every seed run twice, in runners with different allocation
//! histories, must give the same trace.

use std::ops::Range;

use super::runner::Runner;
use crate::family::Registry;
use crate::outcome::{Outcome, RunResult};
use crate::scenario::Scenario;
use crate::sim::record::Record;

/// The determinism self-check of a seed range (`run --check-determinism`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Determinism {
    pub seeds_checked: u64,
    /// A sentence per seed whose two runs diverged.
    pub divergences: Vec<String>,
}

/// Run each seed twice, in two runners with different histories, and compare the traces.
/// Returns a sentence per divergent seed naming the first record that differs, or the adapter
/// fault that left one of its runs without a whole trace.
///
/// A built-in wake logic's seed runs in a fresh runner (alone) and in a warm one (after the seeds
/// before it). A scenario whose runs go through a process (an adapter or a real host's driver)
/// would start a process per fresh runner, the dearest thing in the gate (a real pi driver: about
/// 2 s of CPU to start, 10 ms a seed), so there two runners, one process each, take the seeds in
/// opposite orders: every seed runs after a different history on each side (the first seed alone
/// on one side, the last alone on the other), which is what a state kept across seeds breaks.
pub fn check_determinism(registry: &Registry, scn: &Scenario, range: Range<u64>) -> Vec<String> {
    if scn.adapter.is_some() || scn.remote.is_some() {
        return in_two_orders(registry, scn, range);
    }
    let mut warm = Runner::new(registry);
    let mut out = Vec::new();
    for seed in range {
        let a = Runner::new(registry).run_seed(scn, seed, true);
        let b = warm.run_seed(scn, seed, true);
        if let Some(d) = compare(seed, ("fresh", &a), ("warm", &b)) {
            out.push(d);
        }
    }
    out
}

/// Seeds whose traces the process-backed check holds at once (one side's, until compared).
const CHUNK: u64 = 64;

/// The check for a process-backed scenario: one runner takes the seeds in ascending order, the
/// other in descending order, chunk by chunk (both runners, and their processes, live throughout).
fn in_two_orders(registry: &Registry, scn: &Scenario, range: Range<u64>) -> Vec<String> {
    let mut up = Runner::new(registry);
    let mut down = Runner::new(registry);
    let mut out = Vec::new();
    let mut start = range.start;
    while start < range.end {
        let end = range.end.min(start.saturating_add(CHUNK));
        let mut later: Vec<RunResult> = (start..end)
            .rev()
            .map(|seed| down.run_seed(scn, seed, true))
            .collect();
        for seed in start..end {
            let a = up.run_seed(scn, seed, true);
            let b = later.pop().expect("one run per seed");
            if let Some(d) = compare(seed, ("ascending", &a), ("descending", &b)) {
                out.push(d);
            }
        }
        start = end;
    }
    out
}

/// The sentence for a seed whose two runs differ, or `None` when they agree.
fn compare(seed: u64, (an, a): (&str, &RunResult), (bn, b): (&str, &RunResult)) -> Option<String> {
    if a.trace_hash == b.trace_hash && a.trace == b.trace {
        return None;
    }
    // A run whose adapter or driver failed (exited, went silent past its wall-clock bound)
    // has no whole trace to compare: say so, not "nondeterministic" at a truncated trace.
    let fault = [(an, &a.outcome), (bn, &b.outcome)]
        .into_iter()
        .find_map(|(which, o)| match o {
            Outcome::AdapterFault(f) => Some((which, f)),
            _ => None,
        });
    if let Some((which, f)) = fault {
        return Some(format!(
            "seed {seed}: the run in the {which} runner ended in an {f}, so its trace \
             cannot be compared (not a divergence of the model)"
        ));
    }
    let i = a
        .trace
        .iter()
        .zip(&b.trace)
        .position(|(x, y)| x != y)
        .unwrap_or(a.trace.len().min(b.trace.len()));
    let show = |t: &[Record]| {
        t.get(i).map_or("end of trace".to_string(), |r| {
            format!("{} ms {:?}", r.t.0, r.ev)
        })
    };
    Some(format!(
        "seed {seed}: traces diverge at record {i}: {} vs {}",
        show(&a.trace),
        show(&b.trace)
    ))
}
