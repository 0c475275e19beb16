//! The `wakesim` command: `run`, `replay`, `list`. Exit 0 when every expectation is met, 1 when
//! one is not, 2 for usage or scenario-file errors.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};

use crate::check::Invariant;
use crate::engine::regression::{Regression, Replayed, is_regression};
use crate::engine::run::{Runner, describe, run_scenario_parallel};
use crate::error::{Error, Result};
use crate::family::Family;
use crate::family::HostKind;
use crate::family::Registry;
use crate::family::common::faults::FaultKind;
use crate::family::gptme_cli::config::CliFault;
use crate::family::gptme_server::config::ServerFault;
use crate::family::pi::config::PiFault;
use crate::report;
use crate::scenario::{Scenario, discover};
use crate::sim::record::Window;

/// Print to stdout, ignoring a closed pipe (`wakesim ... | head` must not panic).
macro_rules! out {
    ($($arg:tt)*) => {{
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `out!` with a newline.
macro_rules! outln {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// The environment variable that multiplies every scenario's seed budget (for nightly runs).
pub const SEEDS_MULTIPLIER_ENV: &str = "WAKESIM_SEEDS_MULTIPLIER";

#[derive(Parser)]
#[command(
    name = "wakesim",
    version,
    about = "Deterministic simulation testing for wake races in agent harnesses"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum RunFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum ReplayFormat {
    Text,
    Json,
    Mermaid,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run every scenario's seed budget and check its expectation.
    Run {
        /// Scenario files or directories (searched recursively for *.toml).
        #[arg(default_value = "scenarios")]
        paths: Vec<PathBuf>,
        /// Seeds to run instead of each scenario's budget, as A..B (B excluded).
        #[arg(long, value_parser = parse_range)]
        seeds: Option<std::ops::Range<u64>>,
        #[arg(long, value_enum, default_value = "text")]
        format: RunFormat,
        /// Threads to spread seeds over (default: every core). The report does not depend on it.
        #[arg(long)]
        threads: Option<usize>,
        /// Run only shard K of N (1-based) of every seed range; `wakesim merge` joins the
        /// JSON outputs of all shards into the report of the whole run.
        #[arg(long, value_parser = parse_shard)]
        shard: Option<(u64, u64)>,
        /// Per failing scenario: the failure rate and the median seeds to the first failure.
        #[arg(long)]
        findability: bool,
        /// Run each seed twice and compare traces; name the first divergent event.
        #[arg(long)]
        check_determinism: bool,
    },
    /// Minimise a failing seed to the smallest run that breaks the same invariant, print it,
    /// and write it as a regression file.
    Shrink {
        file: PathBuf,
        #[arg(long, value_parser = parse_seed)]
        seed: u64,
        /// The invariant to keep broken (default: the seed's first).
        #[arg(long)]
        invariant: Option<String>,
        /// Where to write the regression (default: `regressions/` beside the scenario's directory).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Candidate runs to try at most.
        #[arg(long, default_value_t = 20_000)]
        runs_max: u64,
    },
    /// Enumerate every run of a small scope: few messages, delays from the boundary set, every
    /// same-instant order, a bounded number of unusual choices per run.
    Explore {
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
        /// Keep the smallest run showing the expected failure as a regression file.
        #[arg(long)]
        record: bool,
        #[arg(long, value_enum, default_value = "text")]
        format: RunFormat,
    },
    /// Merge the `--format json` outputs of `run --shard K/N` into one report.
    Merge {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run one seed of a scenario, or a regression file's recorded choices, and print the
    /// timeline.
    Replay {
        file: PathBuf,
        /// The seed, decimal or 0x-hex (not for a regression file).
        #[arg(long, value_parser = parse_seed)]
        seed: Option<u64>,
        /// Also keep the run as a regression file expecting its current verdict: pins a passing
        /// run of a fixed wake logic, or a failing one without shrinking it.
        #[arg(long)]
        record: bool,
        /// Where `--record` writes (default: `regressions/` beside the scenario's directory).
        #[arg(long, requires = "record")]
        out: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: ReplayFormat,
    },
    /// List hosts, wake logics, invariants and faults.
    List {
        #[arg(long, value_enum, default_value = "text")]
        format: RunFormat,
    },
}

fn parse_seed(s: &str) -> std::result::Result<u64, String> {
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.map_err(|_| format!("`{s}` is not a seed (a decimal or 0x-hex u64)"))
}

fn parse_shard(s: &str) -> std::result::Result<(u64, u64), String> {
    let err = || format!("`{s}` is not a shard K/N with 1 <= K <= N");
    let (k, n) = s.split_once('/').ok_or_else(err)?;
    let (k, n): (u64, u64) = (k.parse().map_err(|_| err())?, n.parse().map_err(|_| err())?);
    if k == 0 || k > n {
        return Err(err());
    }
    Ok((k, n))
}

fn parse_range(s: &str) -> std::result::Result<std::ops::Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}` is not a range A..B"))?;
    let (a, b) = (parse_seed(a)?, parse_seed(b)?);
    if a >= b {
        return Err(format!("`{s}` is empty: A must be less than B"));
    }
    Ok(a..b)
}

/// The seed-budget multiplier from the environment (1 when unset).
pub fn seeds_multiplier() -> Result<u64> {
    match std::env::var(SEEDS_MULTIPLIER_ENV) {
        Err(_) => Ok(1),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(Error::Usage(format!(
                "{SEEDS_MULTIPLIER_ENV}=`{v}` is not a positive integer"
            ))),
        },
    }
}

/// Entry point of the binary; returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let registry = Registry::builtin();
    let result = match cli.cmd {
        Cmd::Run {
            paths,
            seeds,
            format,
            threads,
            shard,
            findability,
            check_determinism,
        } => run(
            &registry,
            &paths,
            RunOpts {
                seeds,
                format,
                threads: threads
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
                shard,
                findability,
                check_determinism,
            },
        ),
        Cmd::Merge { files } => merge(&registry, &files),
        Cmd::Explore {
            file,
            messages,
            deviations,
            runs_max,
            format,
            record,
        } => explore(
            &registry,
            &file,
            ScopeFlags {
                messages,
                deviations,
                runs_max,
            },
            format,
            record,
        ),
        Cmd::Shrink {
            file,
            seed,
            invariant,
            out,
            runs_max,
        } => shrink(
            &registry,
            &file,
            seed,
            invariant.as_deref(),
            out.as_deref(),
            runs_max,
        ),
        Cmd::Replay {
            file,
            seed,
            format,
            record,
            out,
        } => {
            let record = record.then(|| out.unwrap_or_else(|| regressions_dir(&file)));
            replay(&registry, &file, seed, format, record.as_deref())
        }
        Cmd::List { format } => list(&registry, format),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

/// The scenario and regression files a run covers.
struct Suite {
    regressions: Vec<Regression>,
    scenarios: Vec<Scenario>,
}

/// Load every scenario and regression file under `paths`; report every bad file, not just the
/// first.
fn load_all(registry: &Registry, paths: &[PathBuf]) -> Result<Suite> {
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
        let text = match std::fs::read_to_string(&f) {
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

/// Options of `wakesim run`.
struct RunOpts {
    seeds: Option<std::ops::Range<u64>>,
    format: RunFormat,
    threads: usize,
    shard: Option<(u64, u64)>,
    findability: bool,
    check_determinism: bool,
}

/// The part of `range` that shard `k` of `n` (1-based) runs: contiguous blocks, so merged shard
/// reports are the report of the whole range.
pub fn shard_range(range: std::ops::Range<u64>, k: u64, n: u64) -> std::ops::Range<u64> {
    let len = range.end - range.start;
    let at = |i: u64| range.start + (len as u128 * i as u128 / n as u128) as u64;
    at(k - 1)..at(k)
}

fn run(registry: &Registry, paths: &[PathBuf], opts: RunOpts) -> Result<i32> {
    let Suite {
        regressions,
        scenarios,
    } = load_all(registry, paths)?;
    let multiplier = seeds_multiplier()?;
    // An adapter that cannot start is an error of its scenario file (exit 2), found before any
    // scenario runs. (Each seed-runner thread starts its own adapter process afterwards.)
    {
        let mut preparer = Runner::new(registry);
        for scn in scenarios
            .iter()
            .chain(regressions.iter().map(|r| &r.scenario))
        {
            preparer.prepare(scn)?;
        }
    }
    let out = std::io::stdout();
    let mut out = out.lock();
    let started = Instant::now();
    // Regressions first: a known failure pinned as a choice sequence is the cheapest check.
    let mut regressions_unmet = 0;
    let mut runner = Runner::new(registry);
    for reg in &regressions {
        let replayed = reg.replay(&mut runner, false);
        let line = match opts.format {
            RunFormat::Json => report::json::regression_line(reg, &replayed),
            RunFormat::Text => report::text::regression_line(reg, &replayed),
        };
        if !matches!(replayed, Replayed::Run { met: true, .. }) {
            regressions_unmet += 1;
        }
        let _ = writeln!(out, "{line}");
    }
    let progress = Progress::new(&scenarios, |scn: &Scenario| {
        let r = opts
            .seeds
            .clone()
            .unwrap_or(0..scn.seeds.saturating_mul(multiplier));
        opts.shard.map_or(r.clone(), |(k, n)| shard_range(r, k, n))
    });
    let (mut total_seeds, mut total_events, mut unmet) = (0u64, 0u64, 0usize);
    for (i, scn) in scenarios.iter().enumerate() {
        let range = progress.range(i);
        progress.start(i, scn);
        let rep = run_scenario_parallel(registry, scn, range.clone(), opts.threads, &|n| {
            progress.advance(n)
        });
        total_seeds += rep.seed_count();
        total_events += rep.events;
        let mut met = rep.met;
        let mut extra = Vec::new();
        if opts.findability && matches!(scn.expect, crate::scenario::Expect::Fail { .. }) {
            let f = crate::engine::run::findability(registry, scn, range.clone(), opts.threads);
            extra.push(("findability", f.to_json()));
        }
        if opts.check_determinism {
            let divergences = crate::engine::run::check_determinism(registry, scn, range.clone());
            met &= divergences.is_empty();
            extra.push((
                "determinism",
                serde_json::json!({
                    "seeds_checked": range.end - range.start,
                    "divergences": divergences,
                }),
            ));
        }
        if !met {
            unmet += 1;
        }
        progress.clear();
        let line = match opts.format {
            RunFormat::Json => report::json::scenario_line(scn, &rep, &extra),
            RunFormat::Text => report::text::scenario_line(scn, &rep, &extra),
        };
        let _ = writeln!(out, "{line}");
    }
    let secs = started.elapsed().as_secs_f64();
    let unmet = unmet + regressions_unmet;
    let sum = report::Summary {
        regressions: regressions.len(),
        scenarios: scenarios.len(),
        seeds: total_seeds,
        events: total_events,
        secs,
        unmet,
    };
    let summary = match opts.format {
        RunFormat::Json => report::json::summary_line(&sum),
        RunFormat::Text => report::text::summary_line(&sum),
    };
    let _ = writeln!(out, "{summary}");
    Ok(if unmet == 0 { 0 } else { 1 })
}

/// A one-line progress display on stderr, only when stderr is a terminal.
struct Progress {
    on: bool,
    ranges: Vec<std::ops::Range<u64>>,
    total: u64,
    done: std::sync::atomic::AtomicU64,
    current: std::sync::Mutex<String>,
}

impl Progress {
    fn new(scenarios: &[Scenario], range: impl Fn(&Scenario) -> std::ops::Range<u64>) -> Progress {
        use std::io::IsTerminal;
        let ranges: Vec<_> = scenarios.iter().map(range).collect();
        Progress {
            on: std::io::stderr().is_terminal(),
            total: ranges.iter().map(|r| r.end - r.start).sum(),
            ranges,
            done: Default::default(),
            current: Default::default(),
        }
    }

    fn range(&self, i: usize) -> std::ops::Range<u64> {
        self.ranges[i].clone()
    }

    fn start(&self, i: usize, scn: &Scenario) {
        if self.on {
            *self.current.lock().expect("progress lock") =
                format!("[{}/{}] {}", i + 1, self.ranges.len(), scn.path.display());
            self.advance(0);
        }
    }

    fn advance(&self, n: u64) {
        if !self.on {
            return;
        }
        let done = self.done.fetch_add(n, std::sync::atomic::Ordering::Relaxed) + n;
        let width = 24u64;
        let filled = (done * width / self.total.max(1)) as usize;
        let bar = format!(
            "{}{}",
            "#".repeat(filled),
            ".".repeat(width as usize - filled)
        );
        let current = self.current.lock().expect("progress lock");
        eprint!("\r\x1b[2K{bar} {done}/{} seeds {current}", self.total);
    }

    fn clear(&self) {
        if self.on {
            eprint!("\r\x1b[2K");
        }
    }
}

/// `wakesim merge`: fold the JSON Lines of shard runs into the report of the whole run.
fn merge(registry: &Registry, files: &[PathBuf]) -> Result<i32> {
    let mut order: Vec<String> = Vec::new();
    let mut parts: std::collections::BTreeMap<String, Vec<crate::engine::run::ScenarioReport>> =
        Default::default();
    let mut secs = 0.0;
    // Every shard replays every regression: keep one line each.
    let mut regression_lines: Vec<(String, serde_json::Value)> = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|source| Error::Io {
            path: f.clone(),
            source,
        })?;
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let bad = |m: String| Error::Usage(format!("{}:{}: {m}", f.display(), n + 1));
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
            match v["type"].as_str() {
                Some("scenario") => {
                    let file = v["file"]
                        .as_str()
                        .ok_or_else(|| bad("scenario line without file".into()))?
                        .to_string();
                    let rep = report::json::report_from_line(&v).map_err(bad)?;
                    if !parts.contains_key(&file) {
                        order.push(file.clone());
                    }
                    parts.entry(file).or_default().push(rep);
                }
                Some("summary") => secs += v["seconds"].as_f64().unwrap_or(0.0),
                Some("regression") => {
                    let file = v["file"].as_str().unwrap_or_default().to_string();
                    if !regression_lines.iter().any(|(f, _)| *f == file) {
                        regression_lines.push((file, v));
                    }
                }
                _ => {
                    return Err(bad(
                        "expected a `scenario` or `summary` line of `wakesim run --format json`"
                            .into(),
                    ));
                }
            }
        }
    }
    let out = std::io::stdout();
    let mut out = out.lock();
    let (mut seeds, mut events, mut unmet) = (0, 0, 0);
    for (_, v) in &regression_lines {
        if v["met"] != serde_json::Value::Bool(true) {
            unmet += 1;
        }
        let _ = writeln!(out, "{v}");
    }
    for file in &order {
        let scn = Scenario::load(std::path::Path::new(file), registry)?;
        let mut reps = parts.remove(file).expect("grouped");
        reps.sort_by_key(|r| r.seeds.start);
        let mut merged =
            crate::engine::run::ScenarioReport::new(reps[0].seeds.start..reps[0].seeds.start);
        for r in reps {
            if r.seeds.start != merged.seeds.end {
                return Err(Error::Usage(format!(
                    "{file}: shard reports do not cover adjacent seed ranges ({}..{} then {}..{})",
                    merged.seeds.start, merged.seeds.end, r.seeds.start, r.seeds.end
                )));
            }
            merged.merge(r);
        }
        merged.judge(&scn.expect, &scn.must_reach);
        seeds += merged.seed_count();
        events += merged.events;
        if !merged.met {
            unmet += 1;
        }
        let _ = writeln!(out, "{}", report::json::scenario_line(&scn, &merged, &[]));
    }
    let _ = writeln!(
        out,
        "{}",
        report::json::summary_line(&report::Summary {
            regressions: regression_lines.len(),
            scenarios: order.len(),
            seeds,
            events,
            secs,
            unmet,
        })
    );
    Ok(if unmet == 0 { 0 } else { 1 })
}

fn replay(
    registry: &Registry,
    file: &std::path::Path,
    seed: Option<u64>,
    format: ReplayFormat,
    record: Option<&std::path::Path>,
) -> Result<i32> {
    let text = std::fs::read_to_string(file).map_err(|source| Error::Io {
        path: file.to_path_buf(),
        source,
    })?;
    let mut runner = Runner::new(registry);
    let (scn, r, stale) = if is_regression(&text) {
        let reg = Regression::parse(file, &text, registry)?;
        runner.prepare(&reg.scenario)?;
        if let Some(seed) = seed {
            return Err(Error::Usage(format!(
                "{} is a regression file: it replays its recorded choices, not --seed {seed}",
                file.display()
            )));
        }
        match reg.replay(&mut runner, true) {
            Replayed::Stale { result, why } => (reg.scenario, result, Some(why)),
            Replayed::Run { result, .. } => (reg.scenario, result, None),
        }
    } else {
        let seed = seed.ok_or_else(|| {
            Error::Usage(format!(
                "{} is a scenario: give the seed to replay with --seed N",
                file.display()
            ))
        })?;
        let scn = Scenario::parse(file, &text, registry)?;
        runner.prepare(&scn)?;
        let r = runner.run_seed(&scn, seed, true);
        if let Some(dir) = record {
            let comment = format!(
                "wakesim regression: seed {seed} of {}, recorded by `wakesim replay --record`.",
                file.display()
            );
            let path = write_regression(file, dir, seed, &r, None, &comment)?;
            eprintln!("wrote {}", path.display());
        }
        (scn, r, None)
    };
    let out = match format {
        ReplayFormat::Text => report::text::timeline(&scn, &r),
        ReplayFormat::Json => report::json::replay(&scn, &r),
        ReplayFormat::Mermaid => report::mermaid::diagram(&scn, &r),
    };
    out!("{out}");
    if let Some(why) = stale {
        eprintln!(
            "error: {} is stale: {why}; the model no longer consumes its choices the same way, so this is not the recorded run. Re-shrink: wakesim shrink {} --seed {}",
            file.display(),
            scn.path.display(),
            r.seed
        );
        return Ok(1);
    }
    if !r.outcome.is_pass() && !matches!(format, ReplayFormat::Text) {
        eprintln!("{}: {}", report::reproduce(&scn, &r), describe(&r.outcome));
    }
    Ok(if r.outcome.is_pass() { 0 } else { 1 })
}

/// Scope flags of `wakesim explore`; unset ones come from the scenario.
struct ScopeFlags {
    messages: Option<u64>,
    deviations: Option<usize>,
    runs_max: Option<u64>,
}

/// `wakesim explore`: enumerate a small scope exhaustively.
fn explore(
    registry: &Registry,
    file: &std::path::Path,
    flags: ScopeFlags,
    format: RunFormat,
    record: bool,
) -> Result<i32> {
    use crate::scenario::Expect;
    let scn = Scenario::load(file, registry)?;
    let scope = crate::engine::explore::Scope {
        messages_max: flags.messages.unwrap_or(scn.explore.messages_max),
        deviations_max: flags.deviations.unwrap_or(scn.explore.deviations_max),
        runs_max: flags.runs_max.unwrap_or(scn.explore.runs_max),
    };
    let mut runner = Runner::new(registry);
    runner.prepare(&scn)?;
    let started = Instant::now();
    let ex = crate::engine::explore::explore(&mut runner, &scn, scope);
    let secs = started.elapsed().as_secs_f64();
    let met = match scn.expect {
        Expect::Pass => ex.failing == 0 && ex.exhausted,
        _ => ex.smallest_expected.is_some(),
    };
    let scoped = crate::engine::explore::scoped(&scn, &scope);
    if record && let Some(r) = ex.smallest_expected.as_ref().or(ex.smallest.as_ref()) {
        let dir = regressions_dir(file);
        let stem = file
            .file_stem()
            .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
        let path = dir.join(format!("{stem}-explored.toml"));
        let comment = format!(
            "wakesim regression: the smallest failure `wakesim explore {}` found in {} runs\n(at most {} message(s), {} deviation(s)); delays from the boundary set.",
            file.display(),
            ex.runs,
            scope.messages_max,
            scope.deviations_max
        );
        write_regression_at(&path, file, 0, r, None, &comment, Some(scope.messages_max))?;
        eprintln!("wrote {}", path.display());
    }
    match format {
        RunFormat::Json => {
            let line = serde_json::json!({
                "type": "explore",
                "file": file.display().to_string(),
                "wake": scn.wake,
                "expect": scn.expect.to_string(),
                "scope": {"messages_max": scope.messages_max, "deviations_max": scope.deviations_max, "runs_max": scope.runs_max, "delays": "boundary set"},
                "runs": ex.runs,
                "distinct": ex.distinct,
                "exhausted": ex.exhausted,
                "failing": ex.failing,
                "runs_to_expected_failure": ex.runs_to_expected,
                "failing_runs_by_invariant": ex.by_invariant.iter().map(|(i, n)| (i.name(), *n)).collect::<std::collections::BTreeMap<_, _>>(),
                "smallest_failure": ex.smallest.as_ref().map(|r| serde_json::json!({
                    "invariant": r.outcome.label(), "records": r.records, "detail": describe(&r.outcome),
                })),
                "seconds": (secs * 1000.0).round() / 1000.0,
                "met": met,
            });
            outln!("{line}");
        }
        RunFormat::Text => {
            outln!(
                "explored {} ({}): at most {} message(s), delays from the boundary set, at most {} deviation(s) per run",
                file.display(),
                scn.wake,
                scope.messages_max,
                scope.deviations_max
            );
            outln!(
                "  {} runs ({} distinct) in {secs:.2} s · {}",
                ex.runs,
                ex.distinct,
                if ex.exhausted {
                    "scope exhausted"
                } else {
                    "NOT exhausted: --runs-max reached"
                }
            );
            if ex.failing == 0 {
                outln!("  no run breaks any invariant");
            } else {
                let by: Vec<String> = ex
                    .by_invariant
                    .iter()
                    .map(|(i, n)| format!("{i} {n}"))
                    .collect();
                outln!("  failing runs: {} ({})", ex.failing, by.join(", "));
            }
            let shown = ex.smallest_expected.as_ref().or(ex.smallest.as_ref());
            if let Some(r) = shown {
                let target = match &scn.expect {
                    Expect::Fail { invariant, .. } => Some(*invariant),
                    _ => r.outcome.violations().first().map(|v| v.invariant),
                };
                outln!("  the smallest failure ({} records):", r.records);
                let story = report::text::story(&scoped, r, target);
                for l in story.lines() {
                    if !l.starts_with("reproduce:") {
                        outln!("    {l}");
                    }
                }
            }
            outln!(
                "  expect {}: {}",
                scn.expect,
                if met { "met" } else { "NOT met" }
            );
        }
    }
    Ok(if met { 0 } else { 1 })
}

/// `wakesim shrink`: minimise a failing seed and keep it as a regression file.
fn shrink(
    registry: &Registry,
    file: &std::path::Path,
    seed: u64,
    invariant: Option<&str>,
    out_dir: Option<&std::path::Path>,
    runs_max: u64,
) -> Result<i32> {
    let scn = Scenario::load(file, registry)?;
    let invariant = match invariant {
        None => None,
        Some(name) => Some(Invariant::from_name(name).ok_or_else(|| {
            let names: Vec<_> = Invariant::ALL.iter().map(|i| i.name()).collect();
            Error::Usage(format!(
                "unknown invariant `{name}`, expected one of {}",
                names.join(", ")
            ))
        })?),
    };
    let mut runner = Runner::new(registry);
    runner.prepare(&scn)?;
    let Some(sh) = crate::engine::shrink::shrink(&mut runner, &scn, seed, invariant, runs_max)
    else {
        let r = runner.run_seed(&scn, seed, false);
        return Err(Error::Usage(format!(
            "seed {seed} of {} has nothing to shrink: it {}",
            file.display(),
            match invariant {
                Some(i) if !r.outcome.is_pass() =>
                    format!("does not break {i} ({})", describe(&r.outcome)),
                _ => describe(&r.outcome),
            }
        )));
    };
    let target = Some(sh.invariant);
    let lines = |r: &crate::engine::run::RunResult| {
        report::story(
            scn.host,
            &r.trace,
            &r.messages,
            r.outcome.violations(),
            target,
        )
        .len()
    };
    let dir = out_dir
        .map(PathBuf::from)
        .unwrap_or_else(|| regressions_dir(file));
    let comment = format!(
        "wakesim regression: seed {seed} of {}, shrunk while it breaks {}:\n{} -> {} choices, a story of {} -> {} lines ({} runs tried).\nThe gate replays it exactly; `wakesim replay {}` prints its timeline.",
        file.display(),
        sh.invariant,
        sh.original.choices.len(),
        sh.minimal.choices.len(),
        lines(&sh.original),
        lines(&sh.minimal),
        sh.runs,
        regression_path(file, &dir, seed).display(),
    );
    let path = write_regression(file, &dir, seed, &sh.minimal, Some(sh.invariant), &comment)?;
    let mut minimal = sh.minimal;
    minimal.replay = Some(format!("wakesim replay {}", path.display()));
    out!("{}", report::text::story(&scn, &minimal, target));
    outln!(
        "shrunk seed {seed} while it breaks {}: {} -> {} choices, a story of {} -> {} lines, {} runs tried",
        sh.invariant,
        sh.original.choices.len(),
        minimal.choices.len(),
        lines(&sh.original),
        lines(&minimal),
        sh.runs
    );
    outln!("wrote {}", path.display());
    Ok(0)
}

fn regression_path(file: &std::path::Path, dir: &std::path::Path, seed: u64) -> PathBuf {
    let stem = file
        .file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
    dir.join(format!("{stem}-seed-{seed}.toml"))
}

/// Write `r` as a regression of `file`, expecting what it shows now: a failure of `target` (or
/// of its first invariant) with the others it breaks allowed, or a pass.
fn write_regression(
    file: &std::path::Path,
    dir: &std::path::Path,
    seed: u64,
    r: &crate::engine::run::RunResult,
    target: Option<Invariant>,
    comment: &str,
) -> Result<PathBuf> {
    let path = regression_path(file, dir, seed);
    write_regression_at(&path, file, seed, r, target, comment, None)?;
    Ok(path)
}

/// Write `r` as a regression of `file` at `path`. `explored` records that its choices were
/// drawn by `explore` (delays from the boundary set), with that message cap.
fn write_regression_at(
    path: &std::path::Path,
    file: &std::path::Path,
    seed: u64,
    r: &crate::engine::run::RunResult,
    target: Option<Invariant>,
    comment: &str,
    explored: Option<u64>,
) -> Result<()> {
    use crate::engine::run::Outcome;
    use crate::scenario::Expect;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let expect = match &r.outcome {
        Outcome::Pass => Expect::Pass,
        Outcome::Panic(_) => Expect::Panic,
        Outcome::StepBudget { .. } => Expect::StepBudget,
        Outcome::AdapterFault(_) => Expect::AdapterFault,
        Outcome::Fail(vs) => {
            let invariant = target.unwrap_or(vs[0].invariant);
            Expect::Fail {
                invariant,
                also: vs
                    .iter()
                    .map(|v| v.invariant)
                    .filter(|i| *i != invariant)
                    .collect(),
            }
        }
    };
    let rel = crate::engine::regression::relative(
        path.parent().unwrap_or(std::path::Path::new(".")),
        file,
    );
    let text = Regression::render(&rel, seed, &expect, &r.choices, comment, explored);
    std::fs::write(path, text).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// `scenarios/pi/x.toml` → `scenarios/regressions`: the `regressions` directory beside the
/// scenario's directory.
fn regressions_dir(file: &std::path::Path) -> PathBuf {
    let parent = file.parent().unwrap_or(std::path::Path::new("."));
    parent.parent().unwrap_or(parent).join("regressions")
}

/// One fault of one family, for `list`.
struct FaultRow {
    family: Family,
    name: &'static str,
    timed: bool,
    about: &'static str,
}

fn fault_rows() -> Vec<FaultRow> {
    fn of<F: FaultKind>(family: Family) -> impl Iterator<Item = FaultRow> {
        F::LIST.iter().map(move |f| FaultRow {
            family,
            name: f.name(),
            timed: f.is_timed(),
            about: f.describe(),
        })
    }
    of::<PiFault>(Family::Pi)
        .chain(of::<ServerFault>(Family::GptmeServer))
        .chain(of::<CliFault>(Family::GptmeCli))
        .collect()
}

fn list(registry: &Registry, format: RunFormat) -> Result<i32> {
    let out = std::io::stdout();
    let mut out = out.lock();
    match format {
        RunFormat::Json => {
            for h in HostKind::ALL {
                let line = serde_json::json!({
                    "type": "host", "name": h.name(), "family": h.family().name(), "about": h.describe(),
                    "invariants": h.invariants().iter().map(|i| i.name()).collect::<Vec<_>>(),
                });
                let _ = writeln!(out, "{line}");
            }
            for e in registry.entries() {
                let line = serde_json::json!({"type": "wake", "name": e.name, "family": e.family().name(), "about": e.summary});
                let _ = writeln!(out, "{line}");
            }
            for i in Invariant::ALL {
                let hosts: Vec<&str> = HostKind::ALL
                    .iter()
                    .filter(|h| h.invariants().contains(&i))
                    .map(|h| h.name())
                    .collect();
                let line = serde_json::json!({"type": "invariant", "name": i.name(), "about": i.statement(), "hosts": hosts});
                let _ = writeln!(out, "{line}");
            }
            for f in fault_rows() {
                let line = serde_json::json!({
                    "type": "fault", "name": f.name, "family": f.family.name(), "timed": f.timed, "about": f.about,
                });
                let _ = writeln!(out, "{line}");
            }
            for w in Window::ALL {
                let line =
                    serde_json::json!({"type": "window", "name": w.name(), "about": w.describe()});
                let _ = writeln!(out, "{line}");
            }
        }
        RunFormat::Text => {
            let _ = writeln!(out, "hosts:");
            for h in HostKind::ALL {
                let _ = writeln!(out, "  {:<24} {}", h.name(), h.describe());
            }
            let _ = writeln!(out, "\nwake logics (by host family):");
            for e in registry.entries() {
                let _ = writeln!(
                    out,
                    "  {:<28} {:<13} {}",
                    e.name,
                    e.family().name(),
                    e.summary
                );
            }
            let _ = writeln!(out, "\ninvariants:");
            for i in Invariant::ALL {
                let hosts: Vec<&str> = HostKind::ALL
                    .iter()
                    .filter(|h| h.invariants().contains(&i))
                    .map(|h| h.name())
                    .collect();
                let _ = writeln!(
                    out,
                    "  {:<24} {} [{}]",
                    i.name(),
                    i.statement(),
                    hosts.join(", ")
                );
            }
            let _ = writeln!(out, "\nfaults (by host family; in [faults] of a scenario):");
            for f in fault_rows() {
                let _ = writeln!(out, "  {:<24} {:<13} {}", f.name, f.family.name(), f.about);
            }
            let _ = writeln!(
                out,
                "\nrace windows (coverage marks; in [coverage] must_reach):"
            );
            for w in Window::ALL {
                let _ = writeln!(out, "  {:<28} {}", w.name(), w.describe());
            }
        }
    }
    Ok(0)
}
