//! `wakesim conform FILE`: a real-host scenario's seeds on the real host and on its model twin,
//! compared observation by observation (`engine::conform`). Exit 0 when every seed matched
//! (strongly, by search, or weakly), 1 when one diverged.

use std::ops::Range;
use std::path::PathBuf;

use super::args::parse_range;
use super::print;
use crate::engine::Runner;
use crate::engine::conform::{RUNS_MAX_DEFAULT, Tally, Verdict, conform_seed, twin};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::report;
use crate::scenario::Scenario;

#[derive(clap::Args)]
pub struct Args {
    file: PathBuf,
    /// Seeds, as A..B (default: the scenario's budget).
    #[arg(long, value_parser = parse_range)]
    seeds: Option<Range<u64>>,
    /// Model runs to search per seed for the real run's stream.
    #[arg(long, default_value_t = RUNS_MAX_DEFAULT)]
    runs_max: u64,
    /// Divergences to print in full (the rest in three lines each).
    #[arg(long, default_value_t = 1)]
    show: usize,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    let file = args.file.as_path();
    let real = Scenario::load(file, registry)?;
    let model = twin(&real).map_err(|m| Error::Usage(format!("{}: {m}", file.display())))?;
    let mut runner = Runner::new(registry);
    runner.prepare(&real)?;
    runner.prepare(&model)?;
    let seeds = args.seeds.unwrap_or(0..real.seeds);
    // Wall-clock time only for the summary line: it decides nothing.
    let started = std::time::Instant::now();
    let mut tally = Tally::default();
    let mut shown = 0;
    for seed in seeds.clone() {
        let v = conform_seed(&mut runner, &real, &model, seed, args.runs_max);
        tally.add(seed, &v);
        if matches!(v, Verdict::Diverged { .. } | Verdict::PlanMismatch { .. }) {
            let text = report::conform::divergence(&real, &model, &v);
            if shown < args.show {
                shown += 1;
                print(&format!("{text}\n"))?;
            } else {
                // Beyond the ones shown in full: the divergence itself, three lines.
                let head: Vec<&str> = text.lines().take(3).collect();
                print(&format!("{}\n", head.join("\n")))?;
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let n = seeds.end - seeds.start;
    print(&format!(
        "{}\n",
        report::conform::summary(&real, &model, n, secs, &tally)
    ))?;
    Ok(if tally.diverged == 0 { 0 } else { 1 })
}
