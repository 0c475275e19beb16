//! `wakesim export FILE --seed N --out DIR` (a real-host scenario's seed) or `wakesim export
//! REGRESSION.toml --out DIR` (its recorded choices): writes a project in the host's own
//! ecosystem that reproduces the failing run without wakesim (`engine::export`).

use std::path::PathBuf;

use super::args::parse_seed;
use crate::engine::Runner;
use crate::engine::export::{self, Options};
use crate::engine::regression::{Regression, Replayed, is_regression};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::scenario::Scenario;

#[derive(clap::Args)]
pub struct Args {
    file: PathBuf,
    /// The seed, decimal or 0x-hex (not for a regression file).
    #[arg(long, value_parser = parse_seed)]
    seed: Option<u64>,
    /// The directory to write (new, or empty).
    #[arg(long)]
    out: PathBuf,
    /// A proposed fix: a diff against the installed package, carried by the report as
    /// fix.patch: pi, `patch -p1` inside its node_modules directory (`npm run apply-fix`);
    /// gptme, paths as in its repository, `gptme/...` (`python runtime/apply_fix.py`).
    #[arg(long)]
    patch: Option<PathBuf>,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    let file = args.file.as_path();
    let text =
        crate::io::read_text(file, crate::limits::INPUT_BYTES_MAX).map_err(|source| Error::Io {
            path: file.to_path_buf(),
            source,
        })?;
    let mut runner = Runner::new(registry);
    let done = if is_regression(&text) {
        if let Some(seed) = args.seed {
            return Err(Error::Usage(format!(
                "{} is a regression file: it replays its recorded choices, not --seed {seed}",
                file.display()
            )));
        }
        let reg = Regression::parse(file, &text, registry)?;
        let opts = Options {
            out: &args.out,
            patch: args.patch.as_deref(),
            seed: reg.seed,
            timeline: crate::report::text::timeline,
        };
        export::export(
            &reg.scenario,
            || {
                runner.prepare(&reg.scenario)?;
                Ok(match reg.replay(&mut runner, true) {
                    Replayed::Run { result, .. } => result,
                    Replayed::Stale { why, .. } => {
                        return Err(Error::Usage(format!(
                            "{} is stale ({why}): shrink it again before exporting it",
                            file.display()
                        )));
                    }
                })
            },
            &opts,
        )?
    } else {
        let seed = args.seed.ok_or_else(|| {
            Error::Usage(format!(
                "{} is a scenario: give the seed to export with --seed N",
                file.display()
            ))
        })?;
        let scn = Scenario::parse(file, &text, registry)?;
        let opts = Options {
            out: &args.out,
            patch: args.patch.as_deref(),
            seed,
            timeline: crate::report::text::timeline,
        };
        export::export(
            &scn,
            || {
                runner.prepare(&scn)?;
                Ok(runner.run_seed(&scn, seed, true))
            },
            &opts,
        )?
    };
    let mut s = format!(
        "wrote {} ({} files)\n",
        done.dir.display(),
        done.files.len()
    );
    for (i, t, m) in &done.violations {
        let m = m.map(|m| format!(" (m{})", m + 1)).unwrap_or_default();
        s.push_str(&format!(
            "  judged by the reproducer: {} at {t} ms{m}\n",
            i.name()
        ));
    }
    if !done.unjudged.is_empty() {
        let names: Vec<_> = done.unjudged.iter().map(|i| i.name()).collect();
        s.push_str(&format!(
            "  not judged by the reproducer (wakesim only): {}\n",
            names.join(", ")
        ));
    }
    s.push_str(&format!(
        "run it: see {}/README.md (How to run the test)\n",
        done.dir.display()
    ));
    super::print(&s)?;
    Ok(0)
}
