//! `wakesim replay FILE --seed N` (a scenario's seed) or `wakesim replay REGRESSION.toml` (its
//! recorded choices): the timeline, as text, JSON Lines, Mermaid or an HTML page; `--record` keeps the run.

use std::path::{Path, PathBuf};

use clap::ValueEnum;

use super::args::parse_seed;
use crate::engine::regression::{self, Keep, Kept, Regression, Replayed, is_regression};
use crate::engine::{RunResult, Runner, describe};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::report;
use crate::scenario::Scenario;

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
    Mermaid,
    /// One self-contained HTML page: swimlanes, host-state bands, message arrows, violations.
    Html,
}

#[derive(clap::Args)]
pub struct Args {
    file: PathBuf,
    /// The seed, decimal or 0x-hex (not for a regression file).
    #[arg(long, value_parser = parse_seed)]
    seed: Option<u64>,
    /// Also keep the run as a regression file expecting its current verdict: pins a passing
    /// run of a fixed wake logic, or a failing one without shrinking it.
    #[arg(long)]
    record: bool,
    /// Where `--record` writes (default: the scenario's `regressions` directory).
    #[arg(long, requires = "record")]
    out: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// The search the seed ran under (a failure's `reproduce:` line names it when it is not
    /// the default `swarm`).
    #[arg(long, value_parser = crate::sim::search::Search::parse)]
    search: Option<crate::sim::search::Search>,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    let file = args.file.as_path();
    let text =
        crate::io::read_text(file, crate::limits::INPUT_BYTES_MAX).map_err(|source| Error::Io {
            path: file.to_path_buf(),
            source,
        })?;
    let mut runner = Runner::new(registry);
    let (scn, r, stale) = if is_regression(&text) {
        let reg = Regression::parse(file, &text, registry)?;
        runner.prepare(&reg.scenario)?;
        if let Some(seed) = args.seed {
            return Err(Error::Usage(format!(
                "{} is a regression file: it replays its recorded choices, not --seed {seed}",
                file.display()
            )));
        }
        match reg.replay(&mut runner, true) {
            Replayed::Stale { result, why, .. } => (reg.scenario, result, Some(why)),
            Replayed::Run { result, .. } => (reg.scenario, result, None),
        }
    } else {
        let (scn, r) = replay_seed(&mut runner, &args, &text)?;
        (scn, r, None)
    };
    super::print(&match args.format {
        Format::Text => report::text::timeline(&scn, &r),
        Format::Json => report::json::replay(&scn, &r),
        Format::Mermaid => report::mermaid::diagram(&scn, &r),
        Format::Html => report::html::page(&scn, &r),
    })?;
    if let Some(why) = stale {
        eprintln!(
            "note: {} is stale ({why}): the model no longer consumes its choices the same way, so this is seed {} run afresh, not the recorded run",
            file.display(),
            r.seed
        );
    }
    if !r.outcome.is_pass() && !matches!(args.format, Format::Text) {
        eprintln!("{}: {}", report::reproduce(&scn, &r), describe(&r.outcome));
    }
    Ok(if r.outcome.is_pass() { 0 } else { 1 })
}

/// A scenario's seed, kept as a regression with `--record`.
fn replay_seed(runner: &mut Runner<'_>, args: &Args, text: &str) -> Result<(Scenario, RunResult)> {
    let file = args.file.as_path();
    let seed = args.seed.ok_or_else(|| {
        Error::Usage(format!(
            "{} is a scenario: give the seed to replay with --seed N",
            file.display()
        ))
    })?;
    let mut scn = Scenario::parse(file, text, runner.registry())?;
    if let Some(search) = args.search {
        scn.search = search;
    }
    runner.prepare(&scn)?;
    let r = runner.run_seed(&scn, seed, true);
    if args.record {
        let dir = match args.out.clone() {
            Some(d) => d,
            None => regression::default_dir(&scn)?,
        };
        let path = regression::seed_path(file, &dir, seed);
        let kept = record(&scn, seed, &r, &path)?;
        eprint!("{}", kept.describe());
    }
    Ok((scn, r))
}

fn record(scn: &Scenario, seed: u64, r: &RunResult, path: &Path) -> Result<Kept> {
    Keep {
        scenario: &scn.path,
        seed,
        run: r,
        target: None,
        pin: regression::is_witness(scn, r),
        comment: format!(
            "wakesim regression: seed {seed} of {}, recorded by `wakesim replay --record`.",
            scn.path.display()
        ),
        explored: None,
    }
    .write(path)
}
