//! The `wakesim` command: `run`, `replay`, `list`. Exit 0 when every expectation is met, 1 when
//! one is not, 2 for usage or scenario-file errors.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};

use crate::check::Invariant;
use crate::error::{Error, Result};
use crate::host::Family;
use crate::host::HostKind;
use crate::host::faults::FaultKind;
use crate::host::gptme::cli::config::CliFault;
use crate::host::gptme::server::config::ServerFault;
use crate::host::pi::config::PiFault;
use crate::report;
use crate::run::{Runner, describe, run_scenario_parallel};
use crate::scenario::{Scenario, discover};
use crate::trace::Window;
use crate::wake::Registry;

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
    /// Merge the `--format json` outputs of `run --shard K/N` into one report.
    Merge {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run one seed of a scenario and print its timeline.
    Replay {
        file: PathBuf,
        /// The seed, decimal or 0x-hex.
        #[arg(long, value_parser = parse_seed)]
        seed: u64,
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
        Cmd::Replay { file, seed, format } => replay(&registry, &file, seed, format),
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

/// Load every scenario under `paths`; report every bad file, not just the first.
fn load_all(registry: &Registry, paths: &[PathBuf]) -> Result<Vec<Scenario>> {
    let mut files = Vec::new();
    for p in paths {
        files.extend(discover(p)?);
    }
    if files.is_empty() {
        return Err(Error::Usage("no scenario files (*.toml) found".to_string()));
    }
    let mut scenarios = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        match Scenario::load(&f, registry) {
            Ok(s) => scenarios.push(s),
            Err(e) => errors.push(e),
        }
    }
    match errors.len() {
        0 => Ok(scenarios),
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
    let scenarios = load_all(registry, paths)?;
    let multiplier = seeds_multiplier()?;
    let out = std::io::stdout();
    let mut out = out.lock();
    let started = Instant::now();
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
            let f = crate::run::findability(registry, scn, range.clone(), opts.threads);
            extra.push(("findability", f.to_json()));
        }
        if opts.check_determinism {
            let divergences = crate::run::check_determinism(registry, scn, range.clone());
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
    let summary = match opts.format {
        RunFormat::Json => {
            report::json::summary_line(scenarios.len(), total_seeds, total_events, secs, unmet)
        }
        RunFormat::Text => {
            report::text::summary_line(scenarios.len(), total_seeds, total_events, secs, unmet)
        }
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
    let mut parts: std::collections::BTreeMap<String, Vec<crate::run::ScenarioReport>> =
        Default::default();
    let mut secs = 0.0;
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
    for file in &order {
        let scn = Scenario::load(std::path::Path::new(file), registry)?;
        let mut reps = parts.remove(file).expect("grouped");
        reps.sort_by_key(|r| r.seeds.start);
        let mut merged = crate::run::ScenarioReport::new(reps[0].seeds.start..reps[0].seeds.start);
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
        report::json::summary_line(order.len(), seeds, events, secs, unmet)
    );
    Ok(if unmet == 0 { 0 } else { 1 })
}

fn replay(
    registry: &Registry,
    file: &std::path::Path,
    seed: u64,
    format: ReplayFormat,
) -> Result<i32> {
    let scn = Scenario::load(file, registry)?;
    let mut runner = Runner::new(registry);
    let r = runner.run_seed(&scn, seed, true);
    let text = match format {
        ReplayFormat::Text => report::text::timeline(&scn, &r),
        ReplayFormat::Json => report::json::replay(&scn, &r),
        ReplayFormat::Mermaid => report::mermaid::diagram(&scn, &r),
    };
    print!("{text}");
    if !r.outcome.is_pass() && !matches!(format, ReplayFormat::Text) {
        eprintln!(
            "{}: {}",
            report::replay_line(&scn.path, seed),
            describe(&r.outcome)
        );
    }
    Ok(if r.outcome.is_pass() { 0 } else { 1 })
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
