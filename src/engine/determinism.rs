//! The determinism self-check: every seed run twice, in runners with different allocation
//! histories, must give the same trace.

use std::ops::Range;

use super::runner::Runner;
use crate::family::Registry;
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
/// record that differs.
pub fn check_determinism(registry: &Registry, scn: &Scenario, range: Range<u64>) -> Vec<String> {
    let mut warm = Runner::new(registry);
    let mut out = Vec::new();
    for seed in range {
        let a = Runner::new(registry).run_seed(scn, seed, true);
        let b = warm.run_seed(scn, seed, true);
        if a.trace_hash == b.trace_hash && a.trace == b.trace {
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
