//! `wakesim run [PATH..]`: every scenario's seed budget (regression files first: those named
//! and every scenario's saved failures), each expectation judged, one line per file and a
//! summary. A scenario whose expectation a seed does not meet has that seed shrunk and saved in
//! its `regressions` directory (unless `--no-save`), so it runs first from then on.

use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use super::args::{Format, parse_range, parse_shard, seeds_multiplier};
use crate::engine::determinism::{Determinism, check_determinism};
use crate::engine::findability::findability;
use crate::engine::parallel::{run_scenario_parallel, shard_range};
use crate::engine::regression::{Replayed, save_failure};
use crate::engine::{Extras, Runner, suite};
use crate::error::Result;
use crate::family::Registry;
use crate::report::progress::Progress;
use crate::report::{Summary, json, text};
use crate::scenario::{Expect, Scenario};

#[derive(clap::Args)]
pub struct Args {
    /// Scenario files or directories (searched recursively for *.toml).
    #[arg(default_value = "scenarios")]
    paths: Vec<PathBuf>,
    /// Seeds to run instead of each scenario's budget, as A..B (B excluded).
    #[arg(long, value_parser = parse_range)]
    seeds: Option<Range<u64>>,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Threads to spread seeds over (default: every core). The report does not depend on it.
    #[arg(long)]
    threads: Option<usize>,
    /// Run only shard K of N (1-based) of every seed range; `wakesim merge` joins the
    /// JSON outputs of all shards into the report of the whole run.
    #[arg(long, value_parser = parse_shard)]
    shard: Option<(u64, u64)>,
    /// Per failing scenario: the failure rate and the median seeds to the first failure.
    #[arg(long)]
    findability: bool,
    /// Run each seed twice and compare traces; name the first divergent event.
    #[arg(long)]
    check_determinism: bool,
    /// Do not shrink and save a failure the expectation does not allow (by default it is saved
    /// in the scenario's `regressions` directory, never over an existing file).
    #[arg(long)]
    no_save: bool,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    let suite = suite::load(registry, &args.paths)?;
    let multiplier = seeds_multiplier()?;
    // An adapter that cannot start is an error of its scenario file (exit 2), found before any
    // scenario runs. (Each seed-runner thread starts its own adapter process afterwards.)
    let mut preparer = Runner::new(registry);
    for scn in (suite.scenarios.iter()).chain(suite.regressions.iter().map(|r| &r.scenario)) {
        preparer.prepare(scn)?;
    }
    drop(preparer);
    let mut runner = Runner::new(registry);
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let out = std::io::stdout();
    let mut out = out.lock();
    let started = Instant::now();
    let mut sum = Summary {
        regressions: suite.regressions.len(),
        scenarios: suite.scenarios.len(),
        seeds: 0,
        events: 0,
        secs: 0.0,
        unmet: 0,
    };
    // Regressions first: a known failure pinned as a choice sequence is the cheapest check.
    for reg in &suite.regressions {
        let replayed = reg.replay(&mut runner, false);
        let met = match &replayed {
            Replayed::Run { met, .. } | Replayed::Stale { met, .. } => *met,
        };
        sum.unmet += usize::from(!met);
        let line = match args.format {
            Format::Json => json::regression_line(reg, &replayed),
            Format::Text => text::regression_line(reg, &replayed),
        };
        let _ = writeln!(out, "{line}");
    }
    let progress = Progress::new(&suite.scenarios, |scn: &Scenario| {
        let r = (args.seeds.clone()).unwrap_or(0..scn.seeds.saturating_mul(multiplier));
        args.shard.map_or(r.clone(), |(k, n)| shard_range(r, k, n))
    });
    for (i, scn) in suite.scenarios.iter().enumerate() {
        let range = progress.range(i);
        progress.start(i, scn);
        let rep = run_scenario_parallel(registry, scn, range.clone(), threads, &|n| {
            progress.advance(n)
        });
        let extras = extras(registry, scn, range, threads, &args);
        let diverged = extras.determinism.as_ref();
        sum.seeds += rep.seed_count();
        sum.events += rep.events;
        sum.unmet += usize::from(!rep.met || diverged.is_some_and(|d| !d.divergences.is_empty()));
        progress.clear();
        let line = match args.format {
            Format::Json => json::scenario_line(scn, &rep, &extras),
            Format::Text => text::scenario_line(scn, &rep, &extras),
        };
        let _ = writeln!(out, "{line}");
        if let Some(u) = rep.unexpected.as_ref().filter(|_| !args.no_save) {
            let note = match save_failure(&mut runner, scn, u.seed, true)? {
                None => continue,
                Some(f) => text::saved_line(&f),
            };
            // JSON Lines stay machine-readable: the note goes to stderr there.
            match args.format {
                Format::Json => eprintln!("{note}"),
                Format::Text => {
                    let _ = writeln!(out, "{note}");
                }
            }
        }
    }
    sum.secs = started.elapsed().as_secs_f64();
    let summary = match args.format {
        Format::Json => json::summary_line(&sum),
        Format::Text => text::summary_line(&sum),
    };
    let _ = writeln!(out, "{summary}");
    Ok(if sum.unmet == 0 { 0 } else { 1 })
}

/// What `--findability` and `--check-determinism` add to a scenario's report.
fn extras(
    registry: &Registry,
    scn: &Scenario,
    range: Range<u64>,
    threads: usize,
    args: &Args,
) -> Extras {
    let fails = matches!(scn.expect, Expect::Fail { .. });
    Extras {
        findability: (args.findability && fails)
            .then(|| findability(registry, scn, range.clone(), threads)),
        determinism: args.check_determinism.then(|| Determinism {
            seeds_checked: range.end - range.start,
            divergences: check_determinism(registry, scn, range),
        }),
    }
}
