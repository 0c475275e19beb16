//! `wakesim run [PATH..]`: every scenario's seed budget (regression files first: those named
//! and every scenario's saved failures), each expectation judged, one line per file and a
//! summary. A scenario whose expectation a seed does not meet has that seed shrunk and saved in
//! its `regressions` directory (unless `--no-save`), so it runs first from then on. Stops
//! between seeds on Ctrl-C (exit 130), at `--time-budget` or, with `--fail-fast`, at the first
//! expectation not met.

use std::ops::Range;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::args::{ColorChoice, Format, colour, parse_range, parse_shard, seeds_multiplier};
use super::sweep::{Control, EXIT_INTERRUPTED, filter, parse_budget};
use crate::engine::determinism::{Determinism, check_determinism};
use crate::engine::findability::findability;
use crate::engine::parallel::{Sweep, run_scenario_swept, shard_range};
use crate::engine::regression::{Replayed, save_failure};
use crate::engine::{Extras, Runner, Stopped, suite};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::report::progress::Progress;
use crate::report::{Summary, colour::paint, json, text};
use crate::scenario::{Expect, Scenario};

#[derive(clap::Args)]
pub struct Args {
    /// Scenario files or directories (searched recursively for *.toml).
    #[arg(default_value = "scenarios")]
    paths: Vec<PathBuf>,
    /// Run only scenarios whose name or path contains NAME (repeatable), with their regressions.
    #[arg(long, value_name = "NAME")]
    filter: Vec<String>,
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
    /// Start no seed after this much wall-clock time (90s, 5m, 1h). The report is flagged
    /// partial and says how many seeds ran; which ones depends on the machine's speed.
    #[arg(long, value_parser = parse_budget, value_name = "DURATION")]
    time_budget: Option<Duration>,
    /// Stop at the first scenario or regression whose expectation is not met.
    #[arg(long)]
    fail_fast: bool,
    /// Colour the text output: auto honours NO_COLOR, CLICOLOR_FORCE and non-terminals.
    #[arg(long, value_enum, default_value = "auto")]
    color: ColorChoice,
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
    /// How seeds become choice streams, for every scenario (default: each file's `search`, else
    /// `swarm`): `swarm` (uniform), `boost` or `boost:D` (rare draws boosted at D sites a run).
    #[arg(long, value_parser = crate::sim::search::Search::parse)]
    search: Option<crate::sim::search::Search>,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    let mut suite = suite::load(registry, &args.paths)?;
    filter(&mut suite.scenarios, &mut suite.regressions, &args.filter)?;
    if let Some(search) = args.search {
        for scn in &mut suite.scenarios {
            if scn.remote.is_none() {
                scn.search = search;
            }
        }
    }
    let multiplier = seeds_multiplier()?;
    // An adapter that cannot start is an error of its scenario file (exit 2), found before any
    // scenario runs. (Each seed-runner thread starts its own adapter process afterwards; a real
    // host's driver that has only shaken hands is parked when the preparer drops and adopted by
    // the first runner that needs it: `remote::Pool`.)
    let mut preparer = Runner::new(registry);
    for scn in (suite.scenarios.iter()).chain(suite.regressions.iter().map(|r| &r.scenario)) {
        preparer.prepare(scn)?;
    }
    drop(preparer);
    if args.check_determinism {
        warn_determinism_cost(&suite.scenarios);
    }
    let control = Control::new(args.time_budget, args.fail_fast)?;
    let mut runner = Runner::new(registry);
    let threads = match args.threads {
        Some(0) => return Err(Error::Usage("--threads must be at least 1".into())),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let painted = matches!(args.format, Format::Text) && colour(args.color);
    let started = Instant::now();
    let progress = Progress::new(&suite.scenarios, |scn: &Scenario| {
        let r = (args.seeds.clone()).unwrap_or(0..scn.seeds.saturating_mul(multiplier));
        args.shard.map_or(r.clone(), |(k, n)| shard_range(r, k, n))
    });
    let out = |line: String| {
        let line = if painted { paint(&line) } else { line };
        // A report line that cannot be written is an error (exit 2), not a silent loss.
        progress.suspend(|| super::print(&format!("{line}\n")))
    };
    let mut sum = Summary {
        regressions: suite.regressions.len(),
        scenarios: suite.scenarios.len(),
        seeds: 0,
        events: 0,
        secs: 0.0,
        unmet: 0,
        shard: args.shard,
        stopped: None,
        not_run: 0,
        seeds_planned: (0..suite.scenarios.len())
            .map(|i| progress.range(i).end - progress.range(i).start)
            .sum(),
    };
    // Regressions first: a known failure pinned as a choice sequence is the cheapest check.
    for reg in &suite.regressions {
        if control.stop() {
            sum.not_run += 1;
            continue;
        }
        let replayed = reg.replay(&mut runner, false);
        // A stale recording ran as its seed; its judgement is `met` like any other's.
        let (Replayed::Run { met, .. } | Replayed::Stale { met, .. }) = &replayed;
        if !*met {
            sum.unmet += 1;
            control.unmet();
            progress.unmet();
        }
        out(match args.format {
            Format::Json => json::regression_line(reg, &replayed),
            Format::Text => text::regression_line(reg, &replayed),
        })?;
    }
    for (i, scn) in suite.scenarios.iter().enumerate() {
        let range = progress.range(i);
        if control.stop() {
            sum.not_run += 1;
            progress.skip(range.end - range.start);
            if matches!(args.format, Format::Text) {
                out(text::not_run_line(scn))?;
            }
            continue;
        }
        progress.start(i, scn);
        let sweep = Sweep {
            stop: &|| control.stop(),
            progress: &|n, failing| progress.advance(n, failing),
            fail_fast: args.fail_fast,
        };
        let rep = run_scenario_swept(registry, scn, range.clone(), threads, &sweep);
        if let Some(note) = (rep.not_loaded.as_ref()).filter(|_| scn.expect != Expect::AdapterFault)
        {
            // Code that does not load is bad input (exit 2), as an adapter that cannot start is;
            // no verdict, nothing saved.
            progress.finish();
            return Err(Runner::not_loaded(scn, note));
        }
        let ran = rep.seeds.clone();
        progress.skip(range.end - ran.end);
        // Told first, so that a sweep fail-fast cut short says why.
        if !rep.met {
            control.unmet();
        }
        // A stopped run does not start the extras' second sweep either.
        let mut extras = match control.stop() {
            true => Extras::default(),
            false => extras(registry, scn, ran.clone(), threads, &args),
        };
        if ran.end < range.end
            && let Some(why) = control.why()
        {
            extras.stopped = Some(Stopped {
                planned: range.clone(),
                why,
            });
        }
        let diverged = extras.determinism.as_ref();
        sum.seeds += rep.seed_count();
        sum.events += rep.events;
        if !rep.met || diverged.is_some_and(|d| !d.divergences.is_empty()) {
            sum.unmet += 1;
            control.unmet();
            progress.unmet();
        }
        out(match args.format {
            Format::Json => json::scenario_line(scn, &rep, &extras),
            Format::Text => text::scenario_line(scn, &rep, &extras),
        })?;
        // Not after Ctrl-C: shrinking would keep the user waiting.
        let save = !args.no_save && !control.interrupted();
        if let Some(u) = rep.unexpected.as_ref().filter(|_| save) {
            let note = match save_failure(&mut runner, scn, u.seed, true)? {
                None => continue,
                Some(f) => text::saved_line(&f),
            };
            // JSON Lines stay machine-readable: the note goes to stderr there.
            match args.format {
                Format::Json => eprintln!("{note}"),
                Format::Text => out(note)?,
            }
        }
    }
    progress.finish();
    sum.secs = started.elapsed().as_secs_f64();
    sum.stopped = control.why();
    out(match args.format {
        Format::Json => json::summary_line(&sum),
        Format::Text => text::summary_line(&sum),
    })?;
    Ok(if control.interrupted() {
        EXIT_INTERRUPTED
    } else if sum.unmet == 0 {
        0
    } else {
        1
    })
}

/// `--check-determinism` through an adapter runs every seed twice more in another process, each
/// tens of times slower than a built-in wake logic; say so before the wait starts.
fn warn_determinism_cost(scenarios: &[Scenario]) {
    let external: Vec<String> = (scenarios.iter())
        .filter(|s| s.adapter.is_some())
        .map(|s| s.path.display().to_string())
        .collect();
    if !external.is_empty() {
        eprintln!(
            "warning: --check-determinism runs each seed twice more through an adapter process for {} scenario(s) with an external wake logic, tens of times slower per seed than a built-in one (--seeds A..B or --filter bound the cost): {}",
            external.len(),
            external.join(", ")
        );
    }
}

/// What `--findability` and `--check-determinism` add to a scenario's report, over the seeds
/// that ran.
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
        stopped: None,
    }
}
