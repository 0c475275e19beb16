//! `wakesim merge SHARD.jsonl..`: the report of a whole run from its shards' JSON Lines (as
//! JSON Lines or JUnit XML), and with `--save-failures` the failing seeds the shards found saved
//! as regressions of their scenarios, at most `--cap` saved failures per scenario: a fleet's
//! findings become a commit.

use std::path::{Path, PathBuf};

use clap::ValueEnum;

use crate::engine::Runner;
use crate::engine::regression::{of_scenario, save_failure};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::report;
use crate::scenario::Scenario;

#[derive(clap::Args)]
pub struct Args {
    /// The `run --format json` outputs of every shard of one run, in any order.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "json")]
    format: MergeFormat,
    /// Shrink and save the failing seeds the shards found (each shard's first per scenario,
    /// least first) in each scenario's `regressions` directory, never over an existing file.
    #[arg(long)]
    save_failures: bool,
    /// With --save-failures: save while a scenario has fewer than N saved failures.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        requires = "save_failures"
    )]
    cap: usize,
}

/// The merged report's format.
#[derive(Clone, Copy, ValueEnum)]
enum MergeFormat {
    Json,
    /// JUnit XML: a test case per scenario and per saved failure.
    Junit,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    if args.cap > crate::limits::SAVE_FAILURES_CAP_MAX {
        return Err(Error::Usage(format!(
            "--cap {} is more than {} saved failures per scenario",
            args.cap,
            crate::limits::SAVE_FAILURES_CAP_MAX
        )));
    }
    let merged = report::merge::merge(registry, &args.files)?;
    match args.format {
        MergeFormat::Json => super::print(&merged.text)?,
        MergeFormat::Junit => super::print(&report::junit::from_jsonl(&merged.text)?)?,
    }
    if args.save_failures {
        let mut runner = Runner::new(registry);
        for (file, seeds) in &merged.failing {
            save(registry, &mut runner, file, seeds, args.cap)?;
        }
    }
    Ok(if merged.met { 0 } else { 1 })
}

/// Save `seeds` of the scenario `file` (least first) while it has fewer than `cap` saved
/// failures. What is saved is said on stderr, as `run --format json` does.
fn save(
    registry: &Registry,
    runner: &mut Runner<'_>,
    file: &Path,
    seeds: &[u64],
    cap: usize,
) -> Result<()> {
    let scn = Scenario::load(file, registry)?;
    let mut have = of_scenario(&scn, registry)?.len();
    for &seed in seeds {
        if have >= cap {
            eprintln!(
                "  {}: {have} saved failure(s), at --cap {cap}: seed {seed} and later not saved",
                file.display()
            );
            break;
        }
        let Some(f) = save_failure(runner, &scn, seed, true)? else {
            continue;
        };
        if matches!(f.saved, Some(crate::engine::regression::Saved::Wrote(_))) {
            have += 1;
        }
        let note = report::text::saved_line(&f);
        eprintln!("{}: seed {seed}: {}", file.display(), note.trim_start());
    }
    Ok(())
}
