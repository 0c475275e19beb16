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
    /// Each file and the shard (K, N) its summary line names (1/1 for a whole run).
    shards: Vec<(PathBuf, (u64, u64))>,
}

/// Read the shard outputs.
fn read(files: &[PathBuf]) -> Result<Shards> {
    let mut shards = Shards::default();
    for f in files {
        let text = crate::io::read_text(f, crate::limits::REPORT_BYTES_MAX).map_err(|source| {
            Error::Io {
                path: f.clone(),
                source,
            }
        })?;
        let mut shard = None;
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
            if shard.is_some() {
                return Err(bad(
                    "a line after the summary line: two runs in one file".into()
                ));
            }
            if let RunLine::Summary(sum) = &parsed {
                if let Some(why) = &sum.stopped {
                    return Err(bad(format!(
                        "this run stopped before its end ({why}): merging it would report part \
                         of a run as the whole"
                    )));
                }
                shard = Some(sum.shard.map_or((1, 1), |[k, n]| (k, n)));
            }
            shards.add(parsed);
        }
        let shard = shard.ok_or_else(|| {
            Error::Usage(format!(
                "{}: no summary line: not the whole output of `wakesim run --format json` (an \
                 empty or cut-off file)",
                f.display()
            ))
        })?;
        shards.shards.push((f.clone(), shard));
    }
    shards.whole()?;
    Ok(shards)
}

impl Shards {
    /// The files are the shards 1..=N of one run, each once: a partial set would be reported
    /// as the whole run.
    fn whole(&self) -> Result<()> {
        let Some((first, (_, n))) = self.shards.first() else {
            return Ok(());
        };
        let mut seen: BTreeMap<u64, &PathBuf> = BTreeMap::new();
        for (f, (k, m)) in &self.shards {
            if m != n {
                return Err(Error::Usage(format!(
                    "{} is shard {k}/{m} but {} is of {n} shards: outputs of different runs",
                    f.display(),
                    first.display()
                )));
            }
            if let Some(g) = seen.insert(*k, f) {
                return Err(Error::Usage(format!(
                    "shard {k}/{n} given twice ({} and {})",
                    g.display(),
                    f.display()
                )));
            }
        }
        let missing: Vec<String> = (1..=*n)
            .filter(|k| !seen.contains_key(k))
            .map(|k| format!("{k}/{n}"))
            .collect();
        if !missing.is_empty() {
            return Err(Error::Usage(format!(
                "shard{} {} missing: merging part of a run would report it as the whole",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            )));
        }
        Ok(())
    }

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
        shard: None,
        stopped: None,
        not_run: 0,
        seeds_planned: seeds,
    });
    out.push('\n');
    Ok((out, unmet == 0))
}
