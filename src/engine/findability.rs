//! Findability: how often random seeds show a scenario's expected failure, and how many a run
//! needs until the first.

use std::ops::Range;

use super::runner::Runner;
use super::verdict::allowed;
use crate::family::Registry;
use crate::scenario::Scenario;

/// How findable a scenario's expected failure is in random mode.
#[derive(Clone, Debug, PartialEq)]
pub struct Findability {
    pub seeds: u64,
    pub failing: u64,
    /// Seeds a run starting at a random seed needs until the first one showing the failure
    /// (itself included): the median over every starting seed of the range, wrapping around.
    pub median_seeds_to_first: Option<u64>,
    pub p90_seeds_to_first: Option<u64>,
}

/// Which seeds of `range` show the scenario's expected failure.
pub fn expected_hits(
    registry: &Registry,
    scn: &Scenario,
    range: Range<u64>,
    threads: usize,
) -> Vec<bool> {
    let seeds: Vec<u64> = range.collect();
    let chunk = seeds.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let workers: Vec<_> = seeds
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut runner = Runner::new(registry);
                    part.iter()
                        .map(|&seed| {
                            let o = runner.run_verdict(scn, seed).outcome;
                            !o.is_pass() && allowed(&scn.expect, &o).0
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("findability thread"))
            .collect()
    })
}

/// Failure rate and seeds to the first failure over `range`.
pub fn findability(
    registry: &Registry,
    scn: &Scenario,
    range: Range<u64>,
    threads: usize,
) -> Findability {
    let hits = expected_hits(registry, scn, range, threads);
    let n = hits.len();
    let failing = hits.iter().filter(|h| **h).count() as u64;
    let (median, p90) = if failing == 0 {
        (None, None)
    } else {
        // Distance to the next hit, scanning backwards with wrap-around.
        let mut dist = vec![0u64; n];
        let last_hit = hits.iter().rposition(|h| *h).expect("a hit");
        let mut next = last_hit + n; // the first hit after the end, in unwrapped indices
        for i in (0..2 * n).rev() {
            if hits[i % n] {
                next = i;
            }
            if i < n {
                dist[i] = (next - i) as u64 + 1;
            }
        }
        dist.sort_unstable();
        (Some(dist[n / 2]), Some(dist[(n * 9) / 10]))
    };
    Findability {
        seeds: n as u64,
        failing,
        median_seeds_to_first: median,
        p90_seeds_to_first: p90,
    }
}
