//! `wakesim shrink FILE --seed N`: the smallest run that still breaks the same invariant,
//! printed as a story and kept as a regression file.

use std::path::PathBuf;

use super::args::parse_seed;
use crate::check::Invariant;
use crate::engine::regression::{self, Keep};
use crate::engine::shrink::shrink;
use crate::engine::{RunResult, Runner, describe};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::report;
use crate::scenario::Scenario;

#[derive(clap::Args)]
pub struct Args {
    file: PathBuf,
    #[arg(long, value_parser = parse_seed)]
    seed: u64,
    /// The invariant to keep broken (default: the seed's first).
    #[arg(long)]
    invariant: Option<String>,
    /// Where to write the regression (default: the scenario's `regressions` directory, which
    /// its runs read). An existing file is never overwritten.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Candidate runs to try at most.
    #[arg(long, default_value_t = 20_000)]
    runs_max: u64,
    /// The search the seed ran under (as its `reproduce:` line names it).
    #[arg(long, value_parser = crate::sim::search::Search::parse)]
    search: Option<crate::sim::search::Search>,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    let (file, seed) = (args.file.as_path(), args.seed);
    let mut scn = Scenario::load(file, registry)?;
    if let Some(search) = args.search {
        scn.search = search;
    }
    let invariant = args.invariant.as_deref().map(invariant).transpose()?;
    let mut runner = Runner::new(registry);
    runner.prepare(&scn)?;
    let Some(sh) = shrink(&mut runner, &scn, seed, invariant, args.runs_max) else {
        return Err(nothing_to_shrink(&mut runner, &scn, seed, invariant));
    };
    let target = Some(sh.invariant);
    let lines = |r: &RunResult| {
        report::story(
            scn.host,
            &r.trace,
            &r.messages,
            r.outcome.violations(),
            target,
        )
        .len()
    };
    let dir = match args.out.clone() {
        Some(d) => d,
        None => regression::default_dir(&scn)?,
    };
    let path = regression::seed_path(file, &dir, seed);
    // A failure the scenario expects is kept as a witness of it (its expectation pinned); any
    // other failure follows the scenario's expectation, so it passes once the bug is fixed.
    let pin = regression::is_witness(&scn, &sh.original);
    let sizes = format!(
        "{} -> {} choices, a story of {} -> {} lines",
        sh.original.choices.len(),
        sh.minimal.choices.len(),
        lines(&sh.original),
        lines(&sh.minimal),
    );
    let comment = format!(
        "wakesim regression: seed {seed} of {}, shrunk while it breaks {}:\n{sizes} ({} runs tried).\n{} `wakesim replay` of this file prints its timeline.",
        file.display(),
        sh.invariant,
        sh.runs,
        if pin {
            "A witness of the scenario's expected failure: it must keep showing it."
        } else {
            "It runs first whenever its scenario runs and must meet the scenario's current\nexpectation: it fails until the bug is fixed."
        },
    );
    let kept = Keep {
        scenario: file,
        seed,
        run: &sh.minimal,
        target,
        pin,
        comment,
        explored: None,
    }
    .write(&path)?;
    let path = kept.path.clone();
    let mut minimal = sh.minimal;
    minimal.replay = Some(format!("wakesim replay {}", path.display()));
    super::print(&report::text::story(&scn, &minimal, target))?;
    super::print(&format!(
        "shrunk seed {seed} while it breaks {}: {sizes}, {} runs tried\n{}",
        sh.invariant,
        sh.runs,
        kept.describe()
    ))?;
    Ok(0)
}

/// `--invariant NAME`.
fn invariant(name: &str) -> Result<Invariant> {
    Invariant::from_name(name).ok_or_else(|| {
        let names: Vec<_> = Invariant::ALL.iter().map(|i| i.name()).collect();
        Error::Usage(format!(
            "unknown invariant `{name}`, expected one of {}",
            names.join(", ")
        ))
    })
}

/// Why a seed has nothing to shrink: it passes, or does not break the invariant asked for.
fn nothing_to_shrink(
    runner: &mut Runner<'_>,
    scn: &Scenario,
    seed: u64,
    invariant: Option<Invariant>,
) -> Error {
    let r = runner.run_seed(scn, seed, false);
    let what = match invariant {
        Some(i) if !r.outcome.is_pass() => {
            format!("does not break {i} ({})", describe(&r.outcome))
        }
        _ => describe(&r.outcome),
    };
    Error::Usage(format!(
        "seed {seed} of {} has nothing to shrink: it {what}",
        scn.path.display()
    ))
}
