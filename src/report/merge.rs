//! `wakesim merge`: the JSON Lines of shard runs (`run --shard K/N --format json`) read back
//! through their typed lines and folded into the report of the whole run: the fleet's reduce
//! step.
//!
//! The fold is commutative and idempotent: the same shards in any order, or one of them given
//! twice, give the same report byte for byte (timing aside, which sums the shards' seconds).
//! A shard's scenario line covers its scenario's whole seed range, of which it ran the seeds
//! `engine::shard` assigns it; the union of the shards' reports is the report of every seed
//! (counts summed, each "first" seed the least of the shards'). What makes a set of files one
//! run is checked first: each is a whole run's output (a summary line, not stopped), all carry
//! the same run identity (version, seed assignment, multiplier, `--seeds`, the content of every
//! scenario and regression file) and the same shard count, and every shard 1..=N is there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::Summary;
use super::json::{
    RegressionLine, RunJson, RunLine, ScenarioLine, content_hash, regression_line_text,
    scenario_line,
};
use crate::engine::{Extras, ScenarioReport, SeedNote};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::scenario::Scenario;

/// The merged report.
pub struct Merged {
    /// JSON Lines: regressions, scenarios, summary, as `run --format json` writes them.
    pub text: String,
    /// Every expectation met.
    pub met: bool,
    /// Per scenario file (in report order), the seeds whose outcome its expectation does not
    /// allow that the shards found (each shard's first), least first.
    pub failing: Vec<(PathBuf, Vec<u64>)>,
}

/// One shard's output.
struct ShardFile {
    path: PathBuf,
    /// (K, N); (1, 1) for a whole run.
    shard: (u64, u64),
    run: Option<RunJson>,
    scenarios: Vec<ScenarioLine>,
    regressions: Vec<RegressionLine>,
    secs: f64,
    /// Its scenario and regression lines, written again: two outputs of one shard are the same
    /// report when these are equal.
    body: Vec<String>,
}

fn read(f: &Path) -> Result<ShardFile> {
    let text =
        crate::io::read_text(f, crate::limits::REPORT_BYTES_MAX).map_err(|source| Error::Io {
            path: f.to_path_buf(),
            source,
        })?;
    let mut out = ShardFile {
        path: f.to_path_buf(),
        shard: (1, 1),
        run: None,
        scenarios: Vec::new(),
        regressions: Vec::new(),
        secs: 0.0,
        body: Vec::new(),
    };
    let mut summary = false;
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
        if summary {
            return Err(bad(
                "a line after the summary line: two runs in one file".into()
            ));
        }
        match parsed {
            RunLine::Summary(sum) => {
                if let Some(why) = &sum.stopped {
                    return Err(bad(format!(
                        "this run stopped before its end ({why}): merging it would report part \
                         of a run as the whole"
                    )));
                }
                out.shard = sum.shard.map_or((1, 1), |[k, n]| (k, n));
                out.secs = sum.seconds;
                out.run = sum.run;
                summary = true;
            }
            RunLine::Scenario(s) => {
                out.body.push(line.to_string());
                out.scenarios.push(*s);
            }
            RunLine::Regression(r) => {
                out.body.push(line.to_string());
                out.regressions.push(r);
            }
        }
    }
    if !summary {
        return Err(Error::Usage(format!(
            "{}: no summary line: not the whole output of `wakesim run --format json` (an \
             empty or cut-off file)",
            f.display()
        )));
    }
    Ok(out)
}

/// Why two run identities differ, in a phrase: the first field that does.
fn differs(a: &RunJson, b: &RunJson, fa: &Path, fb: &Path) -> String {
    let (fa, fb) = (fa.display(), fb.display());
    if a.version != b.version {
        return format!(
            "wakesim {} wrote {fa}, wakesim {} wrote {fb}",
            a.version, b.version
        );
    }
    if a.scheme != b.scheme {
        return format!(
            "seeds were assigned by {} in {fa}, by {} in {fb}",
            a.scheme, b.scheme
        );
    }
    if a.seeds_multiplier != b.seeds_multiplier {
        return format!(
            "WAKESIM_SEEDS_MULTIPLIER was {} for {fa}, {} for {fb}",
            a.seeds_multiplier, b.seeds_multiplier
        );
    }
    if a.seeds != b.seeds {
        let show = |s: &Option<[u64; 2]>| {
            s.map_or("each scenario's budget".into(), |[x, y]| {
                format!("--seeds {x}..{y}")
            })
        };
        return format!("{fa} ran {}, {fb} ran {}", show(&a.seeds), show(&b.seeds));
    }
    for (file, h) in &a.files {
        match b.files.get(file) {
            None => return format!("{file} is in {fa}'s run but not in {fb}'s"),
            Some(g) if g != h => {
                return format!(
                    "{file} had different contents for {fa} and {fb} (hash {h} vs {g})"
                );
            }
            _ => {}
        }
    }
    match b.files.keys().find(|f| !a.files.contains_key(*f)) {
        Some(file) => format!("{file} is in {fb}'s run but not in {fa}'s"),
        None => format!("run ids {} and {}", a.id, b.id),
    }
}

/// The files are the shards 1..=N of one run, each at least once; one given twice must be the
/// same report. Returns one output per shard, in shard order.
fn one_run(files: Vec<ShardFile>) -> Result<Vec<ShardFile>> {
    let Some(first) = files.first() else {
        return Ok(Vec::new());
    };
    let (first_path, n) = (first.path.clone(), first.shard.1);
    let first_run = first.run.clone();
    for f in &files {
        let (k, m) = f.shard;
        let Some(run) = &f.run else {
            return Err(Error::Usage(format!(
                "{} has no run identity (its summary line has no `run`): it was written by a \
                 wakesim older than this one; run the shards again",
                f.path.display()
            )));
        };
        if let Some(first_run) = &first_run
            && first_run != run
        {
            return Err(Error::Usage(format!(
                "{} and {} are outputs of different runs: {}",
                first_path.display(),
                f.path.display(),
                differs(first_run, run, &first_path, &f.path)
            )));
        }
        if m != n {
            return Err(Error::Usage(format!(
                "{} is shard {k}/{m} but {} is of {n} shards: outputs of different runs",
                f.path.display(),
                first_path.display()
            )));
        }
    }
    let mut by_index: BTreeMap<u64, ShardFile> = BTreeMap::new();
    for f in files {
        let k = f.shard.0;
        match by_index.get(&k) {
            None => {
                by_index.insert(k, f);
            }
            // Idempotent: the same shard twice (a retried job's output) counts once. Its two
            // outputs may differ in their timing only; the quicker one is kept, so the merged
            // seconds do not depend on the order of the files either.
            Some(g) if g.body == f.body => {
                if f.secs < g.secs {
                    by_index.insert(k, f);
                }
            }
            Some(g) => {
                return Err(Error::Usage(format!(
                    "shard {k}/{n} given twice ({} and {}) with different reports: a run that is \
                     not deterministic, or files edited since",
                    g.path.display(),
                    f.path.display()
                )));
            }
        }
    }
    let missing: Vec<String> = (1..=n)
        .filter(|k| !by_index.contains_key(k))
        .map(|k| format!("{k}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(Error::Usage(format!(
            "shard{} {} missing: merging part of a run would report it as the whole",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        )));
    }
    Ok(by_index.into_values().collect())
}

/// The least-seed one of two notes.
fn least(a: Option<SeedNote>, b: Option<SeedNote>) -> Option<SeedNote> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.seed < a.seed { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// The union of two reports of disjoint seed sets of one range.
fn union(mut a: ScenarioReport, b: ScenarioReport) -> ScenarioReport {
    a.seeds = a.seeds.start.min(b.seeds.start)..a.seeds.end.max(b.seeds.end);
    a.events += b.events;
    a.failures += b.failures;
    a.expected_failing += b.expected_failing;
    a.unexpected_seeds += b.unexpected_seeds;
    for (into, from) in [
        (&mut a.counts, b.counts),
        (&mut a.windows, b.windows),
        (&mut a.faults, b.faults),
        (&mut a.faults_fired, b.faults_fired),
    ] {
        for (k, v) in from {
            *into.entry(k).or_default() += v;
        }
    }
    a.first_failure = least(a.first_failure, b.first_failure);
    a.unexpected = least(a.unexpected, b.unexpected);
    a.not_loaded = least(a.not_loaded, b.not_loaded);
    a.first_expected = match (a.first_expected, b.first_expected) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    a
}

/// One scenario's report from its shards' lines.
fn merged(file: &str, lines: &[&ScenarioLine]) -> Result<ScenarioReport> {
    let mut acc: Option<ScenarioReport> = None;
    let mut ran: u64 = 0;
    for l in lines {
        let r = l
            .report()
            .map_err(|m| Error::Usage(format!("{file}: {m}")))?;
        ran += r.seed_count();
        acc = Some(match acc {
            None => r,
            Some(a) => union(a, r),
        });
    }
    let mut rep = acc.expect("every shard has a line of each scenario");
    let len = rep.seeds.end - rep.seeds.start;
    rep.others = len.checked_sub(ran).ok_or_else(|| {
        Error::Usage(format!(
            "{file}: the shards ran {ran} seeds of a range of {len}: they overlap"
        ))
    })?;
    Ok(rep)
}

/// Merge shard outputs into the report of the whole run.
pub fn merge(registry: &Registry, files: &[PathBuf]) -> Result<Merged> {
    let shards = one_run(files.iter().map(|f| read(f)).collect::<Result<_>>()?)?;
    let first = &shards[0];
    let run = first.run.clone();
    // Scenarios in the first shard's order; every shard must have run the same ones.
    let order: Vec<&str> = first.scenarios.iter().map(|s| s.file.as_str()).collect();
    let want: BTreeSet<&str> = order.iter().copied().collect();
    let mut parts: BTreeMap<&str, Vec<&ScenarioLine>> = BTreeMap::new();
    let mut regressions: BTreeMap<&str, (&RegressionLine, &Path)> = BTreeMap::new();
    for s in &shards {
        let have: BTreeSet<&str> = s.scenarios.iter().map(|l| l.file.as_str()).collect();
        if have != want || have.len() != s.scenarios.len() {
            return Err(Error::Usage(format!(
                "{} and {} report different scenarios: outputs of different runs",
                first.path.display(),
                s.path.display()
            )));
        }
        for l in &s.scenarios {
            parts.entry(l.file.as_str()).or_default().push(l);
        }
        for r in &s.regressions {
            match regressions.get(r.file.as_str()) {
                None => {
                    regressions.insert(r.file.as_str(), (r, s.path.as_path()));
                }
                Some((g, _)) if regression_line_text(g) == regression_line_text(r) => {}
                Some((g, p)) => {
                    return Err(Error::Usage(format!(
                        "{} replayed differently in {} ({}, met: {}) and {} ({}, met: {}): a \
                         replay that is not deterministic",
                        r.file,
                        p.display(),
                        g.outcome,
                        g.met,
                        s.path.display(),
                        r.outcome,
                        r.met
                    )));
                }
            }
        }
    }
    let mut out = String::new();
    let (mut seeds, mut events, mut unmet) = (0, 0, 0);
    let (mut expected_failing, mut unexpected_seeds) = (0, 0);
    // Every shard replays every regression; each is reported once, in the first shard's order.
    let mut reg_order: Vec<&str> = first.regressions.iter().map(|r| r.file.as_str()).collect();
    reg_order.extend(
        (regressions.keys().copied()).filter(|f| !first.regressions.iter().any(|r| r.file == *f)),
    );
    for f in &reg_order {
        let (r, _) = regressions[f];
        unmet += usize::from(!r.met);
        out += &regression_line_text(r);
        out.push('\n');
    }
    let mut failing = Vec::new();
    for file in &order {
        let scn = Scenario::load(Path::new(file), registry)?;
        if let Some(h) = run.as_ref().and_then(|r| r.files.get(*file)) {
            let now = crate::io::read_text(Path::new(file), crate::limits::INPUT_BYTES_MAX)
                .map(|t| content_hash(t.as_bytes()))
                .unwrap_or_default();
            if &now != h {
                return Err(Error::Usage(format!(
                    "{file} has changed since the shards ran it (content hash {h}, now {now}): \
                     judging their seeds by the file as it is now would be wrong; merge in the \
                     checkout the shards ran"
                )));
            }
        }
        let lines = &parts[file];
        let mut rep = merged(file, lines)?;
        rep.judge(&scn.expect, &scn.must_reach);
        let mut bad: Vec<u64> = (lines.iter())
            .filter_map(|l| l.unexpected.as_ref().map(|u| u.seed))
            .collect();
        bad.sort_unstable();
        bad.dedup();
        if !bad.is_empty() {
            failing.push((PathBuf::from(file), bad));
        }
        seeds += rep.seed_count();
        events += rep.events;
        expected_failing += rep.expected_failing;
        unexpected_seeds += rep.unexpected_seeds;
        unmet += usize::from(!rep.met);
        out += &scenario_line(&scn, &rep, &Extras::default());
        out.push('\n');
    }
    out += &super::json::summary_line(&Summary {
        regressions: reg_order.len(),
        scenarios: order.len(),
        seeds,
        events,
        // In shard order, so the sum does not depend on the order of the files.
        secs: shards.iter().map(|s| s.secs).sum(),
        unmet,
        expected_failing,
        unexpected_seeds,
        shard: None,
        stopped: None,
        not_run: 0,
        seeds_planned: seeds,
        run,
    });
    out.push('\n');
    Ok(Merged {
        text: out,
        met: unmet == 0,
        failing,
    })
}
