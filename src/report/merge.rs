//! `wakesim merge`: the JSON Lines of shard runs (`run --shard K/N --format json`) read back
//! through their typed lines and folded into the report of the whole run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Summary;
use super::json::{RegressionLine, RunLine, ScenarioLine, regression_line_text, scenario_line};
use crate::engine::{Extras, ScenarioReport};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::scenario::Scenario;

/// The shards' lines, grouped.
#[derive(Default)]
struct Shards {
    /// Scenario files in the order they first appear, with every shard's line.
    order: Vec<String>,
    parts: BTreeMap<String, Vec<ScenarioLine>>,
    /// Every shard replays every regression: one line each is kept.
    regressions: Vec<RegressionLine>,
    secs: f64,
}

/// Read the shard outputs.
fn read(files: &[PathBuf]) -> Result<Shards> {
    let mut shards = Shards::default();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|source| Error::Io {
            path: f.clone(),
            source,
        })?;
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = |m: String| Error::Usage(format!("{}:{}: {m}", f.display(), n + 1));
            let parsed: RunLine = serde_json::from_str(line).map_err(|e| {
                bad(format!(
                    "not a line of `wakesim run --format json` ({e}): expected a `scenario`, \
                     `regression` or `summary` line"
                ))
            })?;
            shards.add(parsed);
        }
    }
    Ok(shards)
}

impl Shards {
    fn add(&mut self, line: RunLine) {
        match line {
            RunLine::Scenario(s) => {
                if !self.parts.contains_key(&s.file) {
                    self.order.push(s.file.clone());
                }
                self.parts.entry(s.file.clone()).or_default().push(*s);
            }
            RunLine::Summary(s) => self.secs += s.seconds,
            RunLine::Regression(r) => {
                if !self.regressions.iter().any(|x| x.file == r.file) {
                    self.regressions.push(r);
                }
            }
        }
    }
}

/// One scenario's shard reports, merged in seed order (they must cover adjacent ranges).
fn merged(file: &str, mut lines: Vec<ScenarioLine>) -> Result<ScenarioReport> {
    lines.sort_by_key(|l| l.seed_range[0]);
    let start = lines[0].seed_range[0];
    let mut merged = ScenarioReport::new(start..start);
    for l in lines {
        let r = l
            .report()
            .map_err(|m| Error::Usage(format!("{file}: {m}")))?;
        if r.seeds.start != merged.seeds.end {
            return Err(Error::Usage(format!(
                "{file}: shard reports do not cover adjacent seed ranges ({}..{} then {}..{})",
                merged.seeds.start, merged.seeds.end, r.seeds.start, r.seeds.end
            )));
        }
        merged.merge(r);
    }
    Ok(merged)
}

/// The merged report as JSON Lines (regressions, scenarios, summary) and whether every
/// expectation was met.
pub fn merge(registry: &Registry, files: &[PathBuf]) -> Result<(String, bool)> {
    let mut shards = read(files)?;
    let mut out = String::new();
    let (mut seeds, mut events, mut unmet) = (0, 0, 0);
    for r in &shards.regressions {
        unmet += usize::from(!r.met);
        out += &regression_line_text(r);
        out.push('\n');
    }
    for file in &shards.order {
        let scn = Scenario::load(Path::new(file), registry)?;
        let mut rep = merged(file, shards.parts.remove(file).expect("grouped"))?;
        rep.judge(&scn.expect, &scn.must_reach);
        seeds += rep.seed_count();
        events += rep.events;
        unmet += usize::from(!rep.met);
        out += &scenario_line(&scn, &rep, &Extras::default());
        out.push('\n');
    }
    out += &super::json::summary_line(&Summary {
        regressions: shards.regressions.len(),
        scenarios: shards.order.len(),
        seeds,
        events,
        secs: shards.secs,
        unmet,
        stopped: None,
        not_run: 0,
        seeds_planned: seeds,
    });
    out.push('\n');
    Ok((out, unmet == 0))
}
