//! The `wakesim` command: one file per subcommand, each parsing its arguments, calling the
//! engine and printing what `report` renders. Exit 0 when every expectation is met, 1 when one
//! is not, 2 for usage or input errors.

mod args;
mod bench_search;
mod conform;
mod explore;
mod export;
mod list;
mod merge;
mod regressions;
mod replay;
mod run;
mod shard;
mod shrink;
mod sweep;

use std::io::Write;

use clap::{Parser, Subcommand};

pub use args::{SEEDS_MULTIPLIER_ENV, seeds_multiplier};

use crate::error::{Error, Result};
use crate::family::Registry;

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

#[derive(Subcommand)]
enum Cmd {
    /// Run every scenario's seed budget and check its expectation.
    Run(run::Args),
    /// Minimise a failing seed to the smallest run that breaks the same invariant, print it,
    /// and write it as a regression file.
    Shrink(shrink::Args),
    /// Enumerate every run of a small scope: few messages, delays from the boundary set, every
    /// same-instant order, a bounded number of unusual choices per run.
    Explore(explore::Args),
    /// Merge the `--format json` outputs of `run --shard K/N` into one report.
    Merge(merge::Args),
    /// Run one seed of a scenario, or a regression file's recorded choices, and print the
    /// timeline.
    Replay(replay::Args),
    /// List hosts, wake logics, invariants and faults.
    List(list::Args),
    /// Conformance: run a real-host scenario's seeds on the real host and on its model twin (the
    /// family's model host, the same code through the family's adapter), compare the
    /// observation streams, and print the first divergence with both timelines.
    Conform(conform::Args),
    /// List, check or prune the saved failures (regression files) of scenarios.
    Regressions(regressions::Args),
    /// Write a failing real-host run as a project in the host's ecosystem (a Node package whose
    /// `npm test` replays it against the released packages) with a bug report ready to file.
    Export(export::Args),
    /// The rare-bug suite's benchmark: median and p90 seeds to the first expected failure under
    /// each search, over independent campaigns (docs/guide/search.md).
    #[command(hide = true)]
    BenchSearch(bench_search::Args),
}

/// Print to stdout. A reader that went away (`wakesim ... | head`) is not an error; any other
/// failure to write (a full disk, `> /dev/full`) is, with its reason: a report that was lost must
/// not pass as printed.
fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    checked(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
}

fn checked(r: std::io::Result<()>) -> Result<()> {
    match r {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Usage(format!(
            "cannot write the report to stdout: {e}"
        ))),
        _ => Ok(()),
    }
}

/// Was stdout closed when wakesim started? Rust's runtime reopens a closed descriptor 0, 1 or 2
/// on `/dev/null` for reading and writing before `main`, so a closed stdout shows as `/dev/null`
/// open read-write; a shell's `>/dev/null` opens it write-only, which is a choice, not a loss.
#[cfg(unix)]
fn stdout_closed() -> bool {
    let out = std::io::stdout();
    let Ok(flags) = rustix::fs::fcntl_getfl(&out) else {
        return true;
    };
    let rdwr = flags & rustix::fs::OFlags::ACCMODE == rustix::fs::OFlags::RDWR;
    let null = rustix::fs::fstat(&out).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::CharacterDevice
            && rustix::fs::major(st.st_rdev as _) == 1
            && rustix::fs::minor(st.st_rdev as _) == 3
    });
    rdwr && null
}

#[cfg(not(unix))]
fn stdout_closed() -> bool {
    false
}

/// Entry point of the binary; returns the exit code.
pub fn main() -> i32 {
    // A closed stdout (`>&-`) would drop the report without a word: say so and stop.
    if stdout_closed() {
        eprintln!("error: stdout is closed: wakesim has nowhere to write its report");
        return 2;
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let registry = Registry::builtin();
    let result: Result<i32> = match cli.cmd {
        Cmd::Run(a) => run::main(&registry, a),
        Cmd::Merge(a) => merge::main(&registry, a),
        Cmd::Explore(a) => explore::main(&registry, a),
        Cmd::Shrink(a) => shrink::main(&registry, a),
        Cmd::Replay(a) => replay::main(&registry, a),
        Cmd::List(a) => list::main(&registry, a),
        Cmd::Conform(a) => conform::main(&registry, a),
        Cmd::Regressions(a) => regressions::main(&registry, a),
        Cmd::Export(a) => export::main(&registry, a),
        Cmd::BenchSearch(a) => bench_search::main(&registry, a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // Not `eprintln!`, which panics when stderr is closed.
            let _ = writeln!(std::io::stderr(), "error: {e}");
            e.exit_code()
        }
    }
}

/// The command line as clap defines it, for documentation generated from it
/// (`docs/reference/cli.md`, which `tests/docs.rs` regenerates and compares).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}
