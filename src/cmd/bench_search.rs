//! `wakesim bench-search [PATH..]`: the rare-bug suite's benchmark (docs/guide/search.md). For
//! each scenario that expects a failure and each search, `--campaigns` independent campaigns
//! (campaign j runs seeds `j * CAP ..`, CAP the cap rounded up to whole coverage blocks, so no two
//! campaigns share a seed or a coverage block) each run until the first seed showing the
//! expected failure, at most `--cap` seeds; it prints the median and p90 seeds to that first
//! failure and how many campaigns found it. A figure, not a test: exit 0 unless a file cannot
//! be read (2).

use std::path::PathBuf;

use crate::engine::Runner;
use crate::engine::suite;
use crate::engine::verdict::allowed;
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::scenario::Scenario;
use crate::sim::search::{COVERAGE_BLOCK, Search};

#[derive(clap::Args)]
pub struct Args {
    /// Scenario files or directories of the suite (a scenario that expects a pass is skipped).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Independent campaigns per scenario and search.
    #[arg(long, default_value_t = 30)]
    campaigns: u64,
    /// The most seeds a campaign runs before it counts as not finding the failure.
    #[arg(long, default_value_t = 20_000)]
    cap: u64,
    /// The searches to compare (repeatable).
    #[arg(long, value_parser = crate::sim::search::Search::parse, default_values = ["swarm", "guided"])]
    search: Vec<Search>,
    /// Threads to spread campaigns over (default: every core). The figures do not depend on it.
    #[arg(long)]
    threads: Option<usize>,
}

/// Seeds to the first expected failure in each campaign (`None`: not within the cap).
fn campaigns(registry: &Registry, scn: &Scenario, args: &Args, threads: usize) -> Vec<Option<u64>> {
    let stride = args.cap.div_ceil(COVERAGE_BLOCK).max(1) * COVERAGE_BLOCK;
    let ids: Vec<u64> = (0..args.campaigns).collect();
    let chunk = ids.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let workers: Vec<_> = ids
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut runner = Runner::new(registry);
                    part.iter()
                        .map(|&j| {
                            let base = j * stride;
                            (0..args.cap).find_map(|i| {
                                let o = runner.run_verdict(scn, base + i).outcome;
                                (!o.is_pass() && allowed(&scn.expect, &o).0).then_some(i + 1)
                            })
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("bench thread"))
            .collect()
    })
}

/// The q-quantile (q in per cent) of campaign results, a campaign that found nothing counting
/// as past the cap: `>CAP` when the quantile falls there.
fn quantile(sorted: &[Option<u64>], q: usize, cap: u64) -> String {
    if sorted.is_empty() {
        return "-".into();
    }
    match sorted[(sorted.len() * q / 100).min(sorted.len() - 1)] {
        Some(n) => n.to_string(),
        None => format!(">{cap}"),
    }
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    if args.campaigns == 0 || args.cap == 0 {
        return Err(Error::Usage(
            "--campaigns and --cap must be at least 1".into(),
        ));
    }
    let suite = suite::load(registry, &args.paths)?;
    let threads = match args.threads {
        Some(0) => return Err(Error::Usage("--threads must be at least 1".into())),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    super::print(&format!(
        "{:<58} {:<9} {:>7} {:>8} {:>8}\n",
        "bug", "search", "found", "median", "p90"
    ))?;
    for scn in &suite.scenarios {
        if matches!(scn.expect, crate::scenario::Expect::Pass) {
            continue;
        }
        let mut medians = Vec::new();
        for &search in &args.search {
            let mut scn = scn.clone();
            if scn.remote.is_none() {
                scn.search = search;
            }
            let mut got = campaigns(registry, &scn, &args, threads);
            // Found first, by seeds; not found last.
            got.sort_by_key(|g| g.unwrap_or(u64::MAX));
            let found = got.iter().filter(|g| g.is_some()).count();
            medians.push(got[got.len() / 2]);
            super::print(&format!(
                "{:<58} {:<9} {:>7} {:>8} {:>8}\n",
                scn.path.display(),
                search.to_string(),
                format!("{found}/{}", args.campaigns),
                quantile(&got, 50, args.cap),
                quantile(&got, 90, args.cap),
            ))?;
        }
        if let (Some(Some(first)), Some(Some(last))) = (medians.first(), medians.last()) {
            if args.search.len() > 1 {
                super::print(&format!(
                    "{:<58} median {} / {} = {:.1}x\n",
                    "",
                    args.search[0],
                    args.search[args.search.len() - 1],
                    *first as f64 / *last as f64
                ))?;
            }
        }
    }
    Ok(0)
}
