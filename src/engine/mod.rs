//! The engine: running seeds ([`runner`]), judging expectations ([`verdict`]), parallel and
//! sharded runs ([`parallel`]), findability, the determinism self-check, exhaustive exploration
//! ([`explore`]), shrinking and regression files, and conformance of a model host with a real
//! one ([`conform`]). It produces values (reports, results,
//! regression texts); `report` renders them and `cmd` prints them.

pub mod conform;
pub mod determinism;
pub mod explore;
pub mod export;
pub mod findability;
mod keep;
pub mod matrix;
pub mod parallel;
pub mod regression;
pub mod runner;
pub mod shard;
pub mod shrink;
pub mod suite;
pub mod verdict;

pub use crate::outcome::{Outcome, RunResult};
pub use runner::Runner;
pub use verdict::{ScenarioReport, SeedNote, Tally, describe, shows_expected, snapshot_seed};

/// What `run --findability` and `run --check-determinism` add to a scenario's report, and
/// whether its sweep stopped early.
#[derive(Clone, Debug, Default)]
pub struct Extras {
    pub findability: Option<findability::Findability>,
    pub determinism: Option<determinism::Determinism>,
    pub stopped: Option<Stopped>,
}

/// A sweep that stopped before the end of its planned seeds (Ctrl-C, `--time-budget`,
/// `--fail-fast`): the report covers a prefix of `planned`.
#[derive(Clone, Debug)]
pub struct Stopped {
    pub planned: std::ops::Range<u64>,
    pub why: String,
}
