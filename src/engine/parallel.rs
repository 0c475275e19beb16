//! Parallel runs: a scenario's seed range in chunks on scoped threads, merged in seed order so
//! the report does not depend on the number of threads; and a shard's part of a range (the
//! seeds `engine::shard` assigns it, run on the same chunks).

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::runner::Runner;
use super::shard::{Owner, Shard};
use super::verdict::ScenarioReport;
use crate::family::Registry;
use crate::limits::{PARALLEL_CHUNK_MAX, PARALLEL_CHUNK_MIN, PARALLEL_CHUNKS_PER_THREAD};
use crate::scenario::Scenario;

/// How a sweep of seeds may stop early, and whom it tells as it goes.
pub struct Sweep<'a> {
    /// Asked before each seed: `true` stops the sweep there (Ctrl-C, a time budget, fail-fast
    /// elsewhere). Seeds already running finish; the report covers a prefix of the range.
    pub stop: &'a (dyn Fn() -> bool + Sync),
    /// Told after each chunk, with the chunk's report: the seeds it covered (`seeds`, other
    /// shards' included), its failing seeds expected and unexpected.
    pub progress: &'a (dyn Fn(&ScenarioReport) + Sync),
    /// Stop at the first seed whose outcome the expectation does not allow.
    pub fail_fast: bool,
}

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
    let sweep = Sweep {
        stop: &|| false,
        progress: &|part| progress(part.seeds.end - part.seeds.start),
        fail_fast: false,
    };
    run_scenario_swept(registry, scn, range, threads, &sweep)
}

/// As [`run_scenario_parallel`], stopping between seeds when `sweep` says so. A stopped sweep's
/// report covers the prefix of `range` that ran (every seed before the first one not run), so it
/// is still thread-independent for the seeds it names, and judged on them.
pub fn run_scenario_swept(
    registry: &Registry,
    scn: &Scenario,
    range: Range<u64>,
    threads: usize,
    sweep: &Sweep<'_>,
) -> ScenarioReport {
    run_part_swept(registry, scn, range, None, threads, sweep)
}

/// As [`run_scenario_swept`], running only the seeds of `range` that `shard` owns (all of them
/// when it is None). The report's `seeds` is the range (or the prefix of it that ran, when
/// stopped) and its `others` counts the seeds left to the other shards.
pub fn run_part_swept(
    registry: &Registry,
    scn: &Scenario,
    range: Range<u64>,
    shard: Option<Shard>,
    threads: usize,
    sweep: &Sweep<'_>,
) -> ScenarioReport {
    let owner = shard.map(|s| s.owner(&scn.name));
    let chunks = chunks(range.clone(), threads.max(1));
    let parts = run_chunks(registry, scn, &chunks, owner, threads.max(1), sweep);
    let mut report = merge_in_order(parts, &chunks, range.clone());
    report.judge(&scn.expect, &scn.must_reach);
    // Stopped (a time budget, Ctrl-C) before its first seed: nothing was judged, so nothing
    // was met.
    // (A shard that owns none of a range it covered ran nothing and was not stopped.)
    if report.seed_count() == 0 && report.seeds.end < range.end {
        report.met = false;
        report.why = Some("stopped before its first seed ran: nothing was judged".into());
    }
    report
}

/// The seed range in chunks: several per thread (so threads finish together), within bounds.
/// Computed on demand, never listed: a range of 10^13 seeds is 2.4 * 10^9 chunks, and memory
/// must not grow with the range.
struct Chunks {
    range: Range<u64>,
    size: u64,
    len: u64,
}

impl Chunks {
    fn get(&self, i: usize) -> Option<Range<u64>> {
        let i = i as u64;
        if i >= self.len {
            return None;
        }
        let a = self.range.start + i * self.size;
        // Saturating: near `u64::MAX` a chunk end would wrap around and skip its seeds.
        Some(a..a.saturating_add(self.size).min(self.range.end))
    }
}

fn chunks(range: Range<u64>, threads: usize) -> Chunks {
    let n = range.end - range.start;
    let size = (n / (threads as u64 * PARALLEL_CHUNKS_PER_THREAD))
        .clamp(PARALLEL_CHUNK_MIN, PARALLEL_CHUNK_MAX);
    Chunks {
        range,
        size,
        len: n.div_ceil(size),
    }
}

/// Run the chunks on scoped threads, each thread with its own runner (so its own adapter
/// processes), taking chunks in order. A chunk that ends early (an adapter fault, see
/// `Runner::run_range`, or a stop) stops new chunks from starting. Returns each run chunk with
/// its index: chunks are taken in increasing order, so the indices are a prefix.
fn run_chunks(
    registry: &Registry,
    scn: &Scenario,
    chunks: &Chunks,
    owner: Option<Owner>,
    threads: usize,
    sweep: &Sweep<'_>,
) -> Vec<(usize, ScenarioReport)> {
    let next = AtomicUsize::new(0);
    let halted = AtomicBool::new(false);
    // With fail-fast, the first chunk (by index) that met an unexpected outcome stops the
    // chunks after it between their seeds; the chunks before it run on, so the report's prefix
    // reaches that outcome.
    let failed_at = AtomicUsize::new(usize::MAX);
    let go = |i: usize, rep: &ScenarioReport| {
        let failed = failed_at.load(Ordering::Relaxed) < i || rep.unexpected.is_some();
        !((sweep.fail_fast && failed) || (sweep.stop)())
    };
    let mut parts: Vec<(usize, ScenarioReport)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..(threads as u64).min(chunks.len.max(1)))
            .map(|_| {
                s.spawn(|| {
                    let mut runner = Runner::new(registry);
                    let mut done = Vec::new();
                    while !halted.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(c) = chunks.get(i) else { break };
                        let part = runner.run_owned_while(scn, c.clone(), owner, &|r| go(i, r));
                        if sweep.fail_fast && part.unexpected.is_some() {
                            failed_at.fetch_min(i, Ordering::Relaxed);
                            halted.store(true, Ordering::Relaxed);
                        }
                        if part.seeds.end < c.end {
                            halted.store(true, Ordering::Relaxed);
                        }
                        // The seeds the chunk covered, its other shards' included: the progress
                        // line's total is the range, so that it ends full.
                        (sweep.progress)(&part);
                        done.push((i, part));
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
/// cut one ran; the report ends at the first chunk cut short (an adapter fault or a stop),
/// whichever thread met it first.
fn merge_in_order(
    parts: Vec<(usize, ScenarioReport)>,
    chunks: &Chunks,
    range: Range<u64>,
) -> ScenarioReport {
    let mut report = ScenarioReport::new(range.start..range.start);
    for (i, p) in parts {
        let cut = chunks.get(i).is_some_and(|c| p.seeds.end < c.end);
        report.merge(p);
        if cut {
            return report;
        }
    }
    report.seeds = range;
    report
}
