//! Every output of wakesim: the text timeline and story (for people and snapshots), JSON Lines
//! (typed, versioned by [`json::FORMAT`]), Mermaid, exploration results, `list`, merging shard
//! outputs, and the progress line. The engine hands over values; only this layer formats them.

pub mod colour;
pub mod conform;
pub mod explore;
pub mod html;
pub mod json;
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
    format!("reproduce: wakesim replay {} --seed {seed}", file.display())
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
pub fn reproduce(scn: &Scenario, r: &RunResult) -> String {
    match &r.replay {
        Some(cmd) => format!("reproduce: {cmd}"),
        None => seed_replay_line(scn, r.seed),
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
    /// `run --shard K/N`: which shard this run is, for `merge` to check the set is whole.
    pub shard: Option<(u64, u64)>,
    /// Why the run stopped before its end (Ctrl-C, `--time-budget`, `--fail-fast`), if it did.
    pub stopped: Option<String>,
    /// Scenarios and regressions not started because the run stopped.
    pub not_run: usize,
    /// Seeds the run planned, of which `seeds` ran.
    pub seeds_planned: u64,
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
