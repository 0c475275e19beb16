//! Parallel runs: a scenario's seed range in chunks on scoped threads, merged in seed order so
//! the report does not depend on the number of threads; and the blocks of a sharded run.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::runner::Runner;
use super::verdict::ScenarioReport;
use crate::family::Registry;
use crate::limits::{PARALLEL_CHUNK_MAX, PARALLEL_CHUNK_MIN, PARALLEL_CHUNKS_PER_THREAD};
use crate::scenario::Scenario;

/// Run seeds `range` of a scenario on `threads` threads and judge it. The report is the same
/// whatever the number of threads: each chunk of seeds is reported on its own and the chunks are
/// merged in seed order. `progress` is told how many seeds each finished chunk held.
pub fn run_scenario_parallel(
    registry: &Registry,
    scn: &Scenario,
    range: Range<u64>,
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> ScenarioReport {
    let chunks = chunks(range.clone(), threads.max(1));
    let parts = run_chunks(registry, scn, &chunks, threads.max(1), progress);
    let mut report = merge_in_order(parts, &chunks, range);
    report.judge(&scn.expect, &scn.must_reach);
    report
}

/// The seed range in chunks: several per thread (so threads finish together), within bounds.
fn chunks(range: Range<u64>, threads: usize) -> Vec<Range<u64>> {
    let n = range.end - range.start;
    let chunk = (n / (threads as u64 * PARALLEL_CHUNKS_PER_THREAD))
        .clamp(PARALLEL_CHUNK_MIN, PARALLEL_CHUNK_MAX);
    (0..n.div_ceil(chunk))
        .map(|i| {
            let a = range.start + i * chunk;
            // Saturating: near `u64::MAX` a chunk end would wrap around and skip its seeds.
            a..a.saturating_add(chunk).min(range.end)
        })
        .collect()
}

/// Run the chunks on scoped threads, each thread with its own runner (so its own adapter
/// processes), taking chunks in order. A chunk that ends at an adapter fault stops new chunks
/// from starting (see `Runner::run_range`). Returns each run chunk with its index.
fn run_chunks(
    registry: &Registry,
    scn: &Scenario,
    chunks: &[Range<u64>],
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Vec<(usize, ScenarioReport)> {
    let next = AtomicUsize::new(0);
    let faulted = AtomicBool::new(false);
    let mut parts: Vec<(usize, ScenarioReport)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.min(chunks.len().max(1)))
            .map(|_| {
                s.spawn(|| {
                    let mut runner = Runner::new(registry);
                    let mut done = Vec::new();
                    while !faulted.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(c) = chunks.get(i) else { break };
                        let part = runner.run_range(scn, c.clone());
                        if part.seeds.end < c.end {
                            faulted.store(true, Ordering::Relaxed);
                        }
                        done.push((i, part));
                        progress(c.end - c.start);
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join()
                    .expect("a seed runner thread panicked outside a run")
            })
            .collect()
    });
    parts.sort_by_key(|(i, _)| *i);
    parts
}

/// Merge the chunks' reports in seed order. Chunks are taken in order, so every chunk before a
/// faulted one ran; the report ends at the first adapter fault, whichever thread met it first.
fn merge_in_order(
    parts: Vec<(usize, ScenarioReport)>,
    chunks: &[Range<u64>],
    range: Range<u64>,
) -> ScenarioReport {
    let mut report = ScenarioReport::new(range.start..range.start);
    for (i, p) in parts {
        let cut = p.seeds.end < chunks[i].end;
        report.merge(p);
        if cut {
            return report;
        }
    }
    report.seeds = range;
    report
}

/// The part of `range` that shard `k` of `n` (1-based) runs: contiguous blocks, so merged shard
/// reports are the report of the whole range.
pub fn shard_range(range: Range<u64>, k: u64, n: u64) -> Range<u64> {
    let len = range.end - range.start;
    let at = |i: u64| range.start + (len as u128 * i as u128 / n as u128) as u64;
    at(k - 1)..at(k)
}
