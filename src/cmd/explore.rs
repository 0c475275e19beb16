//! `wakesim explore FILE`: every run of a small scope; `--record` keeps the smallest failure as
//! a regression file.

use std::path::PathBuf;
use std::time::Instant;

use super::args::Format;
use crate::engine::Runner;
use crate::engine::explore::{Explored, explore};
use crate::engine::regression::{self, Keep};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::limits::{EXPLORE_DEVIATIONS_MAX, EXPLORE_INTERIOR_MAX, EXPLORE_MESSAGES_MAX};
use crate::report::explore::{Exploration, json, text};
use crate::scenario::{Expect, Scenario, Scope};

#[derive(clap::Args)]
pub struct Args {
    file: PathBuf,
    /// Producer messages at most (default: the scenario's `[explore]`, else 2).
    #[arg(long)]
    messages: Option<u64>,
    /// Choices per run away from their simplest value, at most (default: the scenario's
    /// `[explore]`, else 3).
    #[arg(long)]
    deviations: Option<usize>,
    /// Runs at most; beyond it the scope is reported as not exhausted (default 200,000).
    #[arg(long)]
    runs_max: Option<u64>,
    /// Evenly spaced interior points each delay may also take besides its boundary set
    /// (default 0: lo, hi and the wake logic's constants ±1 only).
    #[arg(long)]
    interior: Option<u64>,
    /// Keep the smallest run showing the expected failure as a regression file.
    #[arg(long)]
    record: bool,
    /// Where `--record` writes (default: `regressions/` beside the scenario's directory).
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    let scn = Scenario::load(&args.file, registry)?;
    bounded("--messages", args.messages, 1, EXPLORE_MESSAGES_MAX)?;
    bounded(
        "--deviations",
        args.deviations.map(|d| d as u64),
        0,
        EXPLORE_DEVIATIONS_MAX as u64,
    )?;
    bounded("--runs-max", args.runs_max, 1, u64::MAX)?;
    bounded("--interior", args.interior, 0, EXPLORE_INTERIOR_MAX)?;
    let scope = Scope {
        messages_max: args.messages.unwrap_or(scn.explore.messages_max),
        deviations_max: args.deviations.unwrap_or(scn.explore.deviations_max),
        runs_max: args.runs_max.unwrap_or(scn.explore.runs_max),
        interior: args.interior.unwrap_or(scn.explore.interior),
    };
    let mut runner = Runner::new(registry);
    runner.prepare(&scn)?;
    let started = Instant::now();
    let ex = explore(&mut runner, &scn, scope);
    let secs = started.elapsed().as_secs_f64();
    let met = match scn.expect {
        Expect::Pass => ex.failing == 0 && ex.exhausted,
        // A scope the file declares too small for its bug (`holds_bug = false`) meets its
        // expectation by holding no unexpected failure; finding the bug anyway is met too.
        _ => ex.smallest_expected.is_some() || !scn.explore_holds_bug,
    };
    if args.record {
        record(&args, &scn, &ex)?;
    }
    let e = Exploration {
        file: &args.file,
        scn: &scn,
        ex: &ex,
        secs,
        met,
    };
    super::print(&match args.format {
        Format::Json => json(&e),
        Format::Text => text(&e),
    })?;
    Ok(if met { 0 } else { 1 })
}

/// A scope given on the command line keeps the bounds a scenario's `[explore]` must.
fn bounded(flag: &str, v: Option<u64>, lo: u64, hi: u64) -> Result<()> {
    match v {
        Some(v) if v < lo || v > hi => Err(Error::Usage(format!(
            "{flag} {v} is out of range {lo}..={hi}"
        ))),
        _ => Ok(()),
    }
}

/// Keep the smallest run showing the expected failure (or the smallest failure) as
/// `regressions/<scenario>-explored.toml`.
fn record(args: &Args, scn: &Scenario, ex: &Explored) -> Result<()> {
    let Some(r) = ex.smallest_expected.as_ref().or(ex.smallest.as_ref()) else {
        return Ok(());
    };
    let file = args.file.as_path();
    let stem = file
        .file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
    let dir = match args.out.clone() {
        Some(d) => d,
        None => regression::default_dir(scn)?,
    };
    let path = dir.join(format!("{stem}-explored.toml"));
    let comment = format!(
        "wakesim regression: the smallest failure `wakesim explore {}` found in {} runs\n(at most {} message(s), {} deviation(s)); delays from the boundary set{}.",
        file.display(),
        ex.runs,
        ex.scope.messages_max,
        ex.scope.deviations_max,
        match ex.scope.interior {
            0 => String::new(),
            n => format!(" and {n} interior point(s)"),
        }
    );
    let kept = Keep {
        scenario: file,
        seed: 0,
        run: r,
        target: None,
        pin: regression::is_witness(scn, r),
        comment,
        explored: Some(ex.scope),
    }
    .write(&path)?;
    eprint!("{}", kept.describe());
    Ok(())
}
