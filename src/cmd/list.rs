//! `wakesim list [PATH..] [--format text|json]`: what wakesim knows (hosts, wake logics,
//! invariants, faults, windows) and the scenarios under the paths (default `scenarios/`, when
//! there is one), with the scenario matrix of the fixed variants over them.

use std::path::PathBuf;

use super::args::Format;
use crate::engine::{matrix, suite};
use crate::error::Result;
use crate::family::Registry;
use crate::report;
use crate::report::list::Listed;
use crate::scenario::absolute;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Scenario files or directories to list (default: `scenarios/` if it exists).
    paths: Vec<PathBuf>,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    let mut out = match args.format {
        Format::Json => report::list::json(registry),
        Format::Text => report::list::text(registry),
    };
    let default = PathBuf::from("scenarios");
    let paths = match (args.paths.is_empty(), default.is_dir()) {
        (false, _) => args.paths,
        (true, true) => vec![default],
        (true, false) => Vec::new(),
    };
    if !paths.is_empty() {
        let suite = suite::load(registry, &paths)?;
        let listed: Vec<Listed<'_>> = (suite.scenarios.iter())
            .map(|scenario| Listed {
                scenario,
                regressions: (suite.regressions.iter())
                    .filter(|r| absolute(&r.scenario.path) == absolute(&scenario.path))
                    .count(),
            })
            .collect();
        out += &match args.format {
            Format::Json => report::list::scenarios_json(&listed),
            Format::Text => report::list::scenarios_text(&listed),
        };
        let rows = matrix::matrix(&suite.scenarios);
        out += &match args.format {
            Format::Json => report::matrix::json(&rows),
            Format::Text => report::matrix::text(&rows),
        };
    }
    super::print(&out)?;
    Ok(0)
}
