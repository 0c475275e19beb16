//! Every output of wakesim: the text timeline and story (for people and snapshots), JSON Lines
//! (typed, versioned by [`json::FORMAT`]), Mermaid, exploration results, `list`, merging shard
//! outputs, and the progress line. The engine hands over values; only this layer formats them.

pub mod colour;
pub mod conform;
pub mod explore;
pub mod html;
pub mod json;
pub mod junit;
pub mod lines;
pub mod list;
pub mod matrix;
pub mod merge;
pub mod mermaid;
pub mod progress;
pub mod text;

pub use lines::{lines, story};

use crate::engine::RunResult;
use crate::scenario::Scenario;
use crate::sim::record::Actor;

/// One rendered line of a timeline.
pub struct Line {
    pub t: u64,
    pub actor: Actor,
    pub text: String,
    pub state: &'static str,
    pub kind: LineKind,
    /// The messages this line made (a producer's line), for diagrams.
    pub produced: Vec<crate::sim::msg::MsgId>,
    /// The messages this line delivered (a model request carrying them for the first time).
    pub delivered: Vec<crate::sim::msg::MsgId>,
}

/// What a line is, for diagrams: a call into the host, a handler call into the wake logic, a
/// violation, or anything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    Call,
    Handler,
    Violation,
    Plain,
}

/// The paste-able line that reproduces a seed.
pub fn replay_line(file: &std::path::Path, seed: u64) -> String {
    format!(
        "reproduce: {} replay {} --seed {seed}",
        invocation(),
        file.display()
    )
}

/// `replay_line` of a scenario's seed, with the scenario's search when it is not swarm (a guided
/// seed is another run than swarm's seed of that number).
pub fn seed_replay_line(scn: &Scenario, seed: u64) -> String {
    if scn.search.is_swarm() {
        replay_line(&scn.path, seed)
    } else {
        format!("{} --search {}", replay_line(&scn.path, seed), scn.search)
    }
}

/// The paste-able line that reproduces a run: its seed, or the regression file it came from.
/// A command recorded as `wakesim ...` is printed as this process was invoked.
pub fn reproduce(scn: &Scenario, r: &RunResult) -> String {
    match &r.replay {
        Some(cmd) => format!("reproduce: {}", as_invoked(cmd)),
        None => seed_replay_line(scn, r.seed),
    }
}

/// `cmd` (`wakesim replay ...`) with `wakesim` replaced by how this process was invoked.
pub fn as_invoked(cmd: &str) -> String {
    match cmd.strip_prefix("wakesim ") {
        Some(rest) => format!("{} {rest}", invocation()),
        None => cmd.to_string(),
    }
}

/// How to run this binary again, as the user ran it, so that a printed command runs as printed:
/// `cargo run --release --` when cargo ran it (`cargo run` leaves `wakesim` uninstalled), the path
/// typed when it was run by a relative path (`./target/release/wakesim`), else `wakesim`.
pub fn invocation() -> &'static str {
    static INVOKED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    INVOKED.get_or_init(|| {
        let argv0 = std::env::args_os().next().unwrap_or_default();
        invocation_of(
            std::path::Path::new(&argv0),
            std::env::var_os("CARGO").map(std::path::PathBuf::from),
            parent_exe(),
        )
    })
}

/// The executable of this process's parent, where the system says (Linux's `/proc`).
fn parent_exe() -> Option<std::path::PathBuf> {
    #[cfg(unix)]
    {
        let ppid = rustix::process::getppid()?;
        std::fs::read_link(format!("/proc/{}/exe", ppid.as_raw_nonzero())).ok()
    }
    #[cfg(not(unix))]
    None
}

/// [`invocation`] from its inputs: `argv0` as run, `cargo` the `CARGO` variable cargo sets for
/// what it runs, `parent` the parent process's executable. Cargo ran this binary when its parent
/// is cargo itself (a test binary that runs it inherits `CARGO` too, but is not cargo); the
/// profile is the name of the directory the binary was built in.
pub fn invocation_of(
    argv0: &std::path::Path,
    cargo: Option<std::path::PathBuf>,
    parent: Option<std::path::PathBuf>,
) -> String {
    // Only the wakesim binary itself: the library inside a test binary (run by cargo test, with
    // its own name) prints the plain command, as its snapshots do.
    if argv0.file_stem().is_none_or(|n| n != "wakesim") {
        return "wakesim".to_string();
    }
    let same = |a: &std::path::Path, b: &std::path::Path| {
        a == b || (a.canonicalize().ok()).is_some_and(|a| b.canonicalize().is_ok_and(|b| a == b))
    };
    if let (Some(cargo), Some(parent)) = (&cargo, &parent)
        && same(cargo, parent)
    {
        let profile = argv0.parent().and_then(|d| d.file_name());
        return match profile.and_then(|p| p.to_str()) {
            Some("debug") => "cargo run --".to_string(),
            Some("release") => "cargo run --release --".to_string(),
            Some(p) => format!("cargo run --profile {p} --"),
            None => "cargo run --".to_string(),
        };
    }
    let typed = argv0.to_string_lossy();
    match argv0.is_relative() && typed.contains('/') && !typed.contains(char::is_whitespace) {
        true => typed.into_owned(),
        false => "wakesim".to_string(),
    }
}

/// The totals of a `wakesim run`, for its last line.
#[derive(Clone, Debug)]
pub struct Summary {
    pub regressions: usize,
    pub scenarios: usize,
    pub seeds: u64,
    pub events: u64,
    pub secs: f64,
    pub unmet: usize,
    /// Over the scenarios' seeds that ran: failing seeds whose failure the expectation allows,
    /// and seeds whose outcome it does not allow (`ScenarioReport::expected_failing`,
    /// `ScenarioReport::unexpected_seeds`), as the progress line counts them.
    pub expected_failing: u64,
    pub unexpected_seeds: u64,
    /// `run --shard K/N`: which shard this run is, for `merge` to check the set is whole.
    pub shard: Option<(u64, u64)>,
    /// Why the run stopped before its end (Ctrl-C, `--time-budget`, `--fail-fast`), if it did.
    pub stopped: Option<String>,
    /// Scenarios and regressions not started because the run stopped.
    pub not_run: usize,
    /// Seeds the run planned, of which `seeds` ran.
    pub seeds_planned: u64,
    /// What every shard of the run shares, for `merge` to check.
    pub run: Option<json::RunJson>,
}

impl Summary {
    /// `n` per second of wall clock (0 for a run too short to time).
    pub fn rate(&self, n: u64) -> f64 {
        if self.secs > 0.0 {
            n as f64 / self.secs
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::invocation_of;
    use std::path::{Path, PathBuf};

    /// Cargo's own child gets `cargo run` with its profile; a test binary that inherits `CARGO`
    /// does not; a relative path runs as typed; anything else is `wakesim`.
    #[test]
    fn the_invocation_is_printed_as_it_was_run() {
        let cargo = Some(PathBuf::from("/opt/cargo/bin/cargo"));
        let run = |argv0: &str, parent: &str| {
            invocation_of(Path::new(argv0), cargo.clone(), Some(PathBuf::from(parent)))
        };
        assert_eq!(
            run("/w/target/release/wakesim", "/opt/cargo/bin/cargo"),
            "cargo run --release --"
        );
        assert_eq!(
            run("/w/target/debug/wakesim", "/opt/cargo/bin/cargo"),
            "cargo run --"
        );
        assert_eq!(
            run("/w/target/dist/wakesim", "/opt/cargo/bin/cargo"),
            "cargo run --profile dist --"
        );
        assert_eq!(
            run("/w/target/debug/wakesim", "/w/target/debug/deps/html-1"),
            "wakesim"
        );
        assert_eq!(
            run("./target/release/wakesim", "/bin/bash"),
            "./target/release/wakesim"
        );
        assert_eq!(run("wakesim", "/bin/bash"), "wakesim");
        // The library in a test binary that cargo runs.
        assert_eq!(
            run("/w/target/debug/deps/scenarios-1", "/opt/cargo/bin/cargo"),
            "wakesim"
        );
    }
}
