//! The determinism self-check: every seed run twice, in runners with different allocation
//! histories, must give the same trace.

use std::ops::Range;

use super::runner::Runner;
use crate::family::Registry;
use crate::outcome::Outcome;
use crate::scenario::Scenario;
use crate::sim::record::Record;

/// The determinism self-check of a seed range (`run --check-determinism`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Determinism {
    pub seeds_checked: u64,
    /// A sentence per seed whose two runs diverged.
    pub divergences: Vec<String>,
}

/// Run each seed twice, in two runners with different allocation histories (the second after
/// other seeds), and compare the traces. Returns a sentence per divergent seed naming the first
/// record that differs, or the adapter fault that left one of its runs without a whole trace.
pub fn check_determinism(registry: &Registry, scn: &Scenario, range: Range<u64>) -> Vec<String> {
    let mut warm = Runner::new(registry);
    let mut out = Vec::new();
    for seed in range {
        let a = Runner::new(registry).run_seed(scn, seed, true);
        let b = warm.run_seed(scn, seed, true);
        if a.trace_hash == b.trace_hash && a.trace == b.trace {
            continue;
        }
        // A run whose adapter or driver failed (exited, went silent past its wall-clock bound)
        // has no whole trace to compare: say so, not "nondeterministic" at a truncated trace.
        let fault = [("fresh", &a.outcome), ("warm", &b.outcome)]
            .into_iter()
            .find_map(|(which, o)| match o {
                Outcome::AdapterFault(f) => Some((which, f)),
                _ => None,
            });
        if let Some((which, f)) = fault {
            out.push(format!(
                "seed {seed}: the run in the {which} runner ended in an {f}, so its trace \
                 cannot be compared (not a divergence of the model)"
            ));
            continue;
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
        out.push(format!(
            "seed {seed}: traces diverge at record {i}: {} vs {}",
            show(&a.trace),
            show(&b.trace)
        ));
    }
    out
}
