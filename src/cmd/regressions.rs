//! `wakesim regressions [list|check|prune] [PATH..]`: the saved failures and witnesses of the
//! scenarios under some paths (every regression file found there, and each scenario's
//! `regressions` directory).
//!
//! `list` names each with its scenario, seed and what it must show; `check` replays each as
//! `run` does (exit 1 when one is not met); `prune` deletes the ones that can no longer be
//! replayed as recorded: a stale recording, or one whose scenario file is gone. A met or unmet
//! saved failure is never pruned: it is what keeps a fixed bug fixed.

use std::path::{Path, PathBuf};

use crate::engine::regression::{Regression, Replayed, is_regression};
use crate::engine::{Runner, suite};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::report::text;
use crate::scenario::{Scenario, absolute, discover};

#[derive(Clone, Copy, clap::ValueEnum)]
enum Action {
    List,
    Check,
    Prune,
}

#[derive(clap::Args)]
pub struct Args {
    /// What to do with them.
    #[arg(value_enum, default_value = "list")]
    action: Action,
    /// Scenario or regression files, or directories (searched recursively).
    #[arg(default_value = "scenarios")]
    paths: Vec<PathBuf>,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    if let Action::Prune = args.action {
        return prune(registry, &args.paths);
    }
    let suite = suite::load(registry, &args.paths)?;
    let mut runner = Runner::new(registry);
    let mut unmet = 0;
    for reg in &suite.regressions {
        match args.action {
            Action::List => super::print(&format!(
                "{} · {} · seed {} · {} choices · {}\n",
                reg.path.display(),
                reg.scenario.path.display(),
                reg.seed,
                reg.choices.len(),
                match &reg.expect {
                    Some(e) => format!("witness: expect {e}"),
                    None => format!("saved failure: follows expect {}", reg.scenario.expect),
                }
            ))?,
            _ => {
                runner.prepare(&reg.scenario)?;
                let replayed = reg.replay(&mut runner, false);
                let (Replayed::Run { met, .. } | Replayed::Stale { met, .. }) = &replayed;
                unmet += usize::from(!*met);
                super::print(&(text::regression_line(reg, &replayed) + "\n"))?;
            }
        }
    }
    // Temporary files of writes that were killed half-way: never a regression, but named.
    let dirs = (suite.scenarios.iter().map(|s| s.regressions.clone())).chain(
        suite
            .regressions
            .iter()
            .filter_map(|r| r.path.parent().map(Path::to_path_buf)),
    );
    for tmp in leftovers(dirs) {
        super::print(&format!(
            "{}: a temporary file of a write that was killed half-way (not a regression; \
             `wakesim regressions prune` removes it)\n",
            tmp.display()
        ))?;
    }
    super::print(&format!(
        "{} regression(s){}\n",
        suite.regressions.len(),
        match args.action {
            Action::Check => format!(", {unmet} not met"),
            _ => String::new(),
        }
    ))?;
    Ok(if unmet == 0 { 0 } else { 1 })
}

/// Delete the stale regressions and those whose scenario is gone, under `paths`.
fn prune(registry: &Registry, paths: &[PathBuf]) -> Result<i32> {
    let mut files = Vec::new();
    for p in paths {
        for f in discover(p)? {
            let text = read(&f)?;
            if is_regression(&text) {
                files.push(f);
            } else if let Ok(scn) = Scenario::parse(&f, &text, registry)
                && scn.regressions.is_dir()
            {
                // The scenario's own directory may lie outside `paths`.
                files.extend(discover(&scn.regressions)?.into_iter().filter(|r| {
                    r.parent() == Some(scn.regressions.as_path())
                        && read(r).is_ok_and(|t| is_regression(&t))
                }));
            }
        }
    }
    files.sort_by_key(|f| absolute(f));
    files.dedup_by_key(|f| absolute(f));
    let mut dirs: Vec<PathBuf> = Vec::new();
    for p in paths {
        for f in discover(p)? {
            if let Ok(scn) = Scenario::parse(&f, &read(&f)?, registry) {
                dirs.push(scn.regressions);
            }
        }
    }
    dirs.extend(
        files
            .iter()
            .filter_map(|f| f.parent().map(Path::to_path_buf)),
    );
    for tmp in leftovers(dirs.into_iter()) {
        std::fs::remove_file(&tmp).map_err(|source| Error::Io {
            path: tmp.clone(),
            source,
        })?;
        super::print(&format!(
            "removed {} (a temporary file of a write that was killed half-way)\n",
            tmp.display()
        ))?;
    }
    let mut runner = Runner::new(registry);
    let mut removed = 0;
    for f in &files {
        let why = match Regression::parse(f, &read(f)?, registry) {
            Err(Error::Scenario { message, .. }) if message.contains("cannot be read") => {
                Some(message)
            }
            Err(e) => return Err(e),
            Ok(reg) => {
                runner.prepare(&reg.scenario)?;
                match reg.replay(&mut runner, false) {
                    Replayed::Stale { why, .. } => Some(format!("stale: {why}")),
                    Replayed::Run { .. } => None,
                }
            }
        };
        if let Some(why) = why {
            std::fs::remove_file(f).map_err(|source| Error::Io {
                path: f.clone(),
                source,
            })?;
            removed += 1;
            super::print(&format!("removed {} ({why})\n", f.display()))?;
        }
    }
    super::print(&format!(
        "{} regression(s), {removed} removed\n",
        files.len()
    ))?;
    Ok(0)
}

/// The stale temporary files (`io::stale_temps`) in each of `dirs`, once each, in order.
fn leftovers(dirs: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    let dirs: std::collections::BTreeSet<PathBuf> = dirs.map(|d| absolute(&d)).collect();
    dirs.iter()
        .flat_map(|d| crate::io::stale_temps(d))
        .collect()
}

fn read(f: &Path) -> Result<String> {
    std::fs::read_to_string(f).map_err(|source| Error::Io {
        path: f.to_path_buf(),
        source,
    })
}
