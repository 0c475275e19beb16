//! `wakesim run [PATH..]`: every scenario's seed budget (regression files first: those named
//! and every scenario's saved failures), each expectation judged, one line per file and a
//! summary. A scenario whose expectation a seed does not meet has that seed shrunk and saved in
//! its `regressions` directory (unless `--no-save`), so it runs first from then on. Stops
//! between seeds on Ctrl-C (exit 130), at `--time-budget` or, with `--fail-fast`, at the first
//! expectation not met.

use std::ops::Range;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::args::{ColorChoice, RunFormat as Format, colour, parse_range, seeds_multiplier};
use super::shard::{ShardArg, parse_shard_arg};
use super::sweep::{Control, EXIT_INTERRUPTED, filter, parse_budget};
use crate::engine::determinism::{Determinism, check_determinism};
use crate::engine::findability::findability;
use crate::engine::parallel::{Sweep, run_part_swept};
use crate::engine::regression::{Replayed, save_failure};
use crate::engine::{Extras, Runner, ScenarioReport, Stopped, suite};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::report::progress::Progress;
use crate::report::{Summary, colour::paint, json, junit, text};
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
    /// Run only shard K of N (1-based) of every scenario's seeds, or `auto`: K and N from the
    /// engine's variables (WAKESIM_SHARD, a Kubernetes Indexed Job, GitLab, Slurm, AWS Batch,
    /// CircleCI, Buildkite). `wakesim merge` joins the JSON outputs of all shards into the
    /// report of the whole run.
    #[arg(long, value_parser = parse_shard_arg, value_name = "K/N|auto")]
    shard: Option<ShardArg>,
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
    /// `swarm`): `swarm` (uniform), `boost` or `boost:D` (rare draws boosted at D sites a run),
    /// `guided` (a portfolio of swarm, boosted and pinned seeds), `coverage` (feedback from the
    /// windows and faults earlier seeds of the same block reached) or `anchored` (the same
    /// feedback, replaying a run up to where it reached what was new and redrawing the rest).
    #[arg(long, value_parser = crate::sim::search::Search::parse)]
    search: Option<crate::sim::search::Search>,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    missing_paths(&args.paths)?;
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
    let shard = super::shard::resolve(args.shard)?;
    let identity = super::shard::identity(&suite, multiplier, args.seeds.as_ref())?;
    // A shard's progress covers its scenarios' whole ranges, the seeds other shards own
    // included (`run_part_swept` counts them as they pass).
    let progress = Progress::new(
        &suite.scenarios,
        |scn: &Scenario| (args.seeds.clone()).unwrap_or(0..scn.seeds.saturating_mul(multiplier)),
        eta_log()?,
    );
    // What an adapter, driver or installer child says for the user (`wakesim: ` lines on its
    // stderr: "installing pi 0.99.1 ... done in 41 s") is printed above the progress line.
    let _relay = crate::adapter::relay::Printer::set(progress.printer());
    // Installed before start-up, so a Ctrl-C while adapters and drivers start (installs can
    // take minutes) says what it stops rather than leaving a bare `^C`.
    let control = Control::new(args.time_budget, args.fail_fast)?;
    let starting = std::sync::atomic::AtomicBool::new(true);
    std::thread::scope(|s| -> Result<()> {
        s.spawn(|| stop_during_start_up(&control, &starting));
        let prepared = prepare(registry, &suite, &progress);
        starting.store(false, std::sync::atomic::Ordering::SeqCst);
        prepared
    })?;
    if args.check_determinism {
        warn_determinism_cost(&suite.scenarios);
    }
    let mut runner = Runner::new(registry);
    let threads = match args.threads {
        Some(0) => return Err(Error::Usage("--threads must be at least 1".into())),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let painted = matches!(args.format, Format::Text) && colour(args.color);
    let started = Instant::now();
    // JUnit is one document, written at the end from the run's JSON Lines.
    let junit_lines = std::cell::RefCell::new(String::new());
    let out = |line: String| {
        if matches!(args.format, Format::Junit) {
            junit_lines.borrow_mut().push_str(&(line + "\n"));
            return Ok(());
        }
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
        expected_failing: 0,
        unexpected_seeds: 0,
        shard: shard.map(|s| (s.index, s.count)),
        stopped: None,
        not_run: 0,
        seeds_planned: (0..suite.scenarios.len())
            .map(|i| progress.range(i).end - progress.range(i).start)
            .sum(),
        run: Some(identity),
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
            Format::Json | Format::Junit => json::regression_line(reg, &replayed),
            Format::Text => text::regression_line(reg, &replayed),
        })?;
    }
    for (i, scn) in suite.scenarios.iter().enumerate() {
        let range = progress.range(i);
        if control.stop() {
            sum.not_run += 1;
            progress.skip(i, range.end - range.start);
            if matches!(args.format, Format::Text) {
                out(text::not_run_line(scn))?;
            }
            continue;
        }
        progress.start(i, scn);
        let sweep = Sweep {
            stop: &|| control.stop(),
            progress: &|part| progress.advance(part),
            fail_fast: args.fail_fast,
        };
        let mut rep = run_part_swept(registry, scn, range.clone(), shard, threads, &sweep);
        if let Some(note) = (rep.not_loaded.as_ref()).filter(|_| scn.expect != Expect::AdapterFault)
        {
            // Code that does not load is bad input (exit 2), as an adapter that cannot start is;
            // no verdict, nothing saved.
            progress.finish();
            return Err(Runner::not_loaded(scn, note));
        }
        let ran = rep.seeds.clone();
        progress.skip(i, range.end - ran.end);
        progress.settle(&rep);
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
        if ran.end < range.end {
            unjudged_on_a_prefix(&mut rep, range.end - range.start);
        }
        let diverged = extras.determinism.as_ref();
        sum.seeds += rep.seed_count();
        sum.events += rep.events;
        sum.expected_failing += rep.expected_failing;
        sum.unexpected_seeds += rep.unexpected_seeds;
        if !rep.met || diverged.is_some_and(|d| !d.divergences.is_empty()) {
            sum.unmet += 1;
            control.unmet();
            progress.unmet();
        }
        out(match args.format {
            Format::Json | Format::Junit => json::scenario_line(scn, &rep, &extras),
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
                Format::Json | Format::Junit => eprintln!("{note}"),
                Format::Text => out(note)?,
            }
        }
    }
    progress.finish();
    sum.secs = started.elapsed().as_secs_f64();
    sum.stopped = control.why();
    if let Some(s) = shard.filter(|_| sum.stopped.is_some()) {
        // Said only when the run stopped: the seeds this shard owns, counted.
        sum.seeds_planned = (suite.scenarios.iter().enumerate())
            .map(|(i, scn)| s.owner(&scn.name).count_in(progress.range(i)))
            .sum();
    }
    out(match args.format {
        Format::Json | Format::Junit => json::summary_line(&sum),
        Format::Text => text::summary_line(&sum),
    })?;
    if matches!(args.format, Format::Junit) {
        super::print(&junit::from_jsonl(&junit_lines.borrow())?)?;
    }
    Ok(if control.interrupted() {
        EXIT_INTERRUPTED
    } else if sum.unmet == 0 {
        0
    } else {
        1
    })
}

/// `WAKESIM_ETA_LOG=FILE`: the progress line's ETA and what it was estimated from, a line a
/// second, written to FILE (created or truncated) for `scripts/eta-accuracy.py` to judge. Read
/// here, by the command: nothing in a seed's run depends on it.
fn eta_log() -> Result<Option<std::fs::File>> {
    let Some(path) = std::env::var_os("WAKESIM_ETA_LOG").filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let path = PathBuf::from(path);
    match std::fs::File::create(&path) {
        Ok(f) => Ok(Some(f)),
        Err(e) => Err(Error::Usage(format!(
            "WAKESIM_ETA_LOG={}: cannot create the ETA log: {e}",
            path.display()
        ))),
    }
}

/// A path that is not there is a usage error that says what to do; the default, `scenarios/`,
/// missing means `run` was started outside a project with scenarios.
fn missing_paths(paths: &[PathBuf]) -> Result<()> {
    // Not there at all (a symlink that loops or dangles is there: loading names what is wrong).
    let Some(p) = paths.iter().find(|p| std::fs::symlink_metadata(p).is_err()) else {
        return Ok(());
    };
    let here = std::env::current_dir().map_or(".".into(), |d| d.display().to_string());
    Err(Error::Usage(match paths == [PathBuf::from("scenarios")] {
        true => format!(
            "no `scenarios/` directory in {here}: `wakesim run` with no paths runs the scenario files under ./scenarios. Run it from a project that has one, or name scenario files or directories: `wakesim run path/to/scenario.toml` (`wakesim list` shows the hosts and wake logics a scenario can name)"
        ),
        false => format!(
            "`{}`: no such file or directory (in {here}); name scenario files (*.toml) or directories holding them",
            p.display()
        ),
    }))
}

/// Start every scenario's adapter or real host's driver before any seed runs: one that cannot
/// start is an error of its scenario file (exit 2). (Each seed-runner thread starts its own
/// adapter process afterwards; a real host's driver that has only shaken hands is parked when
/// the preparer drops and adopted by the first runner that needs it: `remote::Pool`.) A start
/// that takes over a second gets a line saying what it was and how long it took, so that a
/// minutes-long first start (installs, a real host loading) is never silent.
fn prepare(registry: &Registry, suite: &suite::Suite, progress: &Progress) -> Result<()> {
    let mut preparer = Runner::new(registry);
    let all: Vec<&Scenario> = (suite.scenarios.iter())
        .chain(suite.regressions.iter().map(|r| &r.scenario))
        .filter(|s| s.adapter.is_some() || s.remote.is_some())
        .collect();
    for (i, scn) in all.iter().enumerate() {
        let what = match scn.remote {
            Some(_) => format!("the real host {}'s driver", scn.host.version_label()),
            None => format!("the adapter `{}`", scn.wake),
        };
        progress.preparing(format!(
            "starting adapters and drivers [{}/{}]: {what} for {}",
            i + 1,
            all.len(),
            scn.path.display()
        ));
        let t0 = Instant::now();
        preparer.prepare(scn)?;
        let took = t0.elapsed();
        if took >= START_NOTE_AFTER {
            let line = format!(
                "wakesim: started {what} for {} in {:.1} s",
                scn.path.display(),
                took.as_secs_f64()
            );
            progress.suspend(|| eprintln!("{line}"));
        }
    }
    progress.preparing("starting the first scenario".into());
    Ok(())
}

/// A start-up longer than this gets its own line.
const START_NOTE_AFTER: Duration = Duration::from_secs(1);

/// While adapters and drivers start no seed runs, so there is nothing to finish and no summary
/// to print: a Ctrl-C then stops the run at once, saying so (exit 130). The adapters and drivers
/// started so far are in their own process groups and end when their stdin closes with this
/// process.
fn stop_during_start_up(control: &Control, starting: &std::sync::atomic::AtomicBool) {
    use std::sync::atomic::Ordering;
    while starting.load(Ordering::SeqCst) {
        if control.interrupted() {
            eprintln!(
                "wakesim: stopped during start-up (Ctrl-C), before any seed ran; nothing to report (exit {EXIT_INTERRUPTED})"
            );
            std::process::exit(EXIT_INTERRUPTED);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A sweep stopped before its planned end (`--time-budget`, Ctrl-C, `--fail-fast` elsewhere) has
/// run a prefix of its seeds: what it found there is judged (an outcome the expectation does not
/// allow is still unmet), but coverage it has not reached yet (`coverage.must_reach`, or the
/// failure a failing scenario expects) may lie in the seeds it did not run, so it is reported
/// unjudged rather than failed.
fn unjudged_on_a_prefix(rep: &mut ScenarioReport, planned: u64) {
    if rep.met || rep.unexpected.is_some() {
        return;
    }
    rep.met = true;
    rep.why = Some(format!(
        "unjudged: {} of {planned} seeds ran, and {}; the whole seed range judges it",
        rep.seed_count(),
        match rep.why.take() {
            Some(w) => format!("on them {w}"),
            None => "coverage is judged on the whole range".to_string(),
        },
    ));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A stopped sweep's coverage is unjudged, not failed; an unexpected outcome stays unmet.
    #[test]
    fn a_partial_sweep_leaves_coverage_unjudged() {
        let mut rep = ScenarioReport::new(0..40);
        rep.met = false;
        rep.why = Some("no seed in 0..40 reached the race window w (coverage.must_reach)".into());
        unjudged_on_a_prefix(&mut rep, 200);
        assert!(rep.met);
        let why = rep.why.as_deref().unwrap_or_default();
        assert!(why.starts_with("unjudged: 40 of 200 seeds ran"), "{why}");
        let mut bad = ScenarioReport::new(0..40);
        bad.met = false;
        bad.unexpected = Some(crate::engine::SeedNote {
            seed: 3,
            outcome: "fail".into(),
            detail: "seed 3 broke fifo".into(),
        });
        unjudged_on_a_prefix(&mut bad, 200);
        assert!(!bad.met);
    }
}
