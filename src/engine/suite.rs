//! A suite: every scenario and regression file under some paths, loaded and validated, and the
//! saved failures of every scenario in it (its `regressions` directory), so that they run first
//! whenever their scenario runs, also when the scenario file alone is named.

use std::path::PathBuf;

use super::regression::{Regression, is_regression, of_scenario};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::scenario::{Scenario, absolute, discover};

/// The scenario and regression files a run covers.
pub struct Suite {
    pub regressions: Vec<Regression>,
    pub scenarios: Vec<Scenario>,
}

/// Load every scenario and regression file under `paths`; report every bad file, not just the
/// first.
pub fn load(registry: &Registry, paths: &[PathBuf]) -> Result<Suite> {
    let mut files = Vec::new();
    for p in paths {
        files.extend(discover(p)?);
    }
    if files.is_empty() {
        return Err(Error::Usage("no scenario files (*.toml) found".to_string()));
    }
    let mut suite = Suite {
        regressions: Vec::new(),
        scenarios: Vec::new(),
    };
    let mut errors = Vec::new();
    for f in files {
        let text = match crate::io::read_text(&f, crate::limits::INPUT_BYTES_MAX) {
            Ok(t) => t,
            Err(source) => {
                errors.push(Error::Io { path: f, source });
                continue;
            }
        };
        if is_regression(&text) {
            match Regression::parse(&f, &text, registry) {
                Ok(r) => suite.regressions.push(r),
                Err(e) => errors.push(e),
            }
        } else {
            match Scenario::parse(&f, &text, registry) {
                Ok(s) => suite.scenarios.push(s),
                Err(e) => errors.push(e),
            }
        }
    }
    // Each scenario's saved failures, once each (a regression may be named or found under a
    // directory too), in path order.
    let mut seen: std::collections::BTreeSet<PathBuf> = suite
        .regressions
        .iter()
        .map(|r| absolute(&r.path))
        .collect();
    for scn in &suite.scenarios {
        match of_scenario(scn, registry) {
            Ok(regs) => {
                for r in regs {
                    if seen.insert(absolute(&r.path)) {
                        suite.regressions.push(r);
                    }
                }
            }
            Err(e) => errors.push(e),
        }
    }
    suite.regressions.sort_by(|a, b| a.path.cmp(&b.path));
    match errors.len() {
        0 => Ok(suite),
        1 => Err(errors.remove(0)),
        _ => {
            let last = errors.pop().expect("non-empty");
            for e in errors {
                eprintln!("error: {e}");
            }
            Err(last)
        }
    }
}
