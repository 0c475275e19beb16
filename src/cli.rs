//! The `wakesim` command: `run`, `replay`, `list`. Exit 0 when every expectation is met, 1 when
//! one is not, 2 for usage or scenario-file errors.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};

use crate::check::Invariant;
use crate::error::{Error, Result};
use crate::host::HostKind;
use crate::host::pi::config::PiFault;
use crate::report;
use crate::run::{Runner, describe};
use crate::scenario::{Scenario, discover};
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
        } => run(&registry, &paths, seeds, format),
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

fn run(
    registry: &Registry,
    paths: &[PathBuf],
    seeds: Option<std::ops::Range<u64>>,
    format: RunFormat,
) -> Result<i32> {
    let scenarios = load_all(registry, paths)?;
    let multiplier = seeds_multiplier()?;
    let mut runner = Runner::new(registry);
    // An adapter that cannot start is an error of its scenario file (exit 2), found before any
    // scenario runs.
    for scn in &scenarios {
        runner.prepare(scn)?;
    }
    let out = std::io::stdout();
    let mut out = out.lock();
    let started = Instant::now();
    let (mut total_seeds, mut total_events, mut unmet) = (0u64, 0u64, 0usize);
    for scn in &scenarios {
        let range = seeds
            .clone()
            .unwrap_or(0..scn.seeds.saturating_mul(multiplier));
        let rep = runner.run_scenario(scn, range);
        total_seeds += rep.seed_count();
        total_events += rep.events;
        if !rep.met {
            unmet += 1;
        }
        let line = match format {
            RunFormat::Json => report::json::scenario_line(scn, &rep),
            RunFormat::Text => {
                let mark = if rep.met { "✓" } else { "✗" };
                let mut line = format!(
                    "{mark} {} · {} · {} · {} seeds · expect {}",
                    scn.path.display(),
                    scn.host.name(),
                    scn.wake,
                    rep.seed_count(),
                    scn.expect
                );
                match (&rep.first_expected, &rep.first_failure) {
                    (Some(seed), _) => {
                        let counts: Vec<String> =
                            rep.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
                        line += &format!(
                            " · caught at seed {seed} ({} failing: {})",
                            rep.failures,
                            counts.join(", ")
                        );
                    }
                    (None, None) => line += " · no failures",
                    (None, Some(_)) => {}
                }
                if let Some(why) = &rep.why {
                    line += &format!("\n  {why}");
                }
                if let Some((seed, o)) = &rep.unexpected {
                    let _ = o;
                    line += &format!("\n  {}", report::replay_line(&scn.path, *seed));
                }
                line
            }
        };
        let _ = writeln!(out, "{line}");
    }
    let secs = started.elapsed().as_secs_f64();
    match format {
        RunFormat::Json => {
            let _ = writeln!(
                out,
                "{}",
                report::json::summary_line(scenarios.len(), total_seeds, total_events, secs, unmet)
            );
        }
        RunFormat::Text => {
            let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
            let verdict = if unmet == 0 {
                format!("all {} expectations met", scenarios.len())
            } else {
                format!("{unmet} of {} expectations NOT met", scenarios.len())
            };
            let _ = writeln!(
                out,
                "summary: {} scenarios, {total_seeds} seeds, {total_events} events in {secs:.2} s: {:.0} seeds/s, {:.0} events/s · {verdict}",
                scenarios.len(),
                rate(total_seeds),
                rate(total_events),
            );
        }
    }
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
    runner.prepare(&scn)?;
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

fn list(registry: &Registry, format: RunFormat) -> Result<i32> {
    let out = std::io::stdout();
    let mut out = out.lock();
    match format {
        RunFormat::Json => {
            for h in HostKind::ALL {
                let line = serde_json::json!({
                    "type": "host", "name": h.name(), "family": h.family(), "about": h.describe(),
                    "invariants": h.invariants().iter().map(|i| i.name()).collect::<Vec<_>>(),
                });
                let _ = writeln!(out, "{line}");
            }
            for e in registry.pi_entries() {
                let line = serde_json::json!({"type": "wake", "name": e.name, "family": "pi", "about": e.summary});
                let _ = writeln!(out, "{line}");
            }
            for i in Invariant::ALL {
                let line = serde_json::json!({"type": "invariant", "name": i.name(), "about": i.statement()});
                let _ = writeln!(out, "{line}");
            }
            for f in PiFault::ALL {
                let line = serde_json::json!({
                    "type": "fault", "name": f.name(), "family": "pi", "timed": f.is_timed(), "about": f.describe(),
                });
                let _ = writeln!(out, "{line}");
            }
        }
        RunFormat::Text => {
            let _ = writeln!(out, "hosts:");
            for h in HostKind::ALL {
                let _ = writeln!(out, "  {:<24} {}", h.name(), h.describe());
            }
            let _ = writeln!(out, "\nwake logics:");
            for e in registry.pi_entries() {
                let _ = writeln!(out, "  {:<24} {}", e.name, e.summary);
            }
            let _ = writeln!(out, "\ninvariants:");
            for i in Invariant::ALL {
                let _ = writeln!(out, "  {:<24} {}", i.name(), i.statement());
            }
            let _ = writeln!(out, "\nfaults (pi hosts; in [faults] of a scenario):");
            for f in PiFault::ALL {
                let _ = writeln!(out, "  {:<24} {}", f.name(), f.describe());
            }
        }
    }
    Ok(0)
}
