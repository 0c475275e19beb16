//! # wakesim
//!
//! Deterministic simulation testing for *wake races*: the bugs that appear when an agent harness
//! must deliver asynchronous events (a subagent finishing, a watch firing, an orchestrator
//! message) into a conversation that is busy, idle, or half-way between.
//!
//! A seeded discrete-event simulator plays the host with every window in which the real host
//! misbehaves (a prompt being prepared, the gap between two inner agent runs, a wake prompt that
//! fails onto the error channel, a compaction without a run, a replaced session); the wake logic
//! under test runs inside it; checkers watch every delivery. The same scenario and seed always
//! give the same run, so a failure is one line to replay.
//!
//! ## Map, layer by layer (`ARCHITECTURE.md`; a module names only lower layers)
//! - [`error`], [`limits`]: the error type; every limit of wakesim.
//! - [`sim`]: the bottom: virtual time, the event queue, the recorded choice stream, the kernel
//!   and its step budget, the records of a run and their versioned hash, the sink records go to.
//! - [`check`]: the invariants, their checkers and the monitor (the sink every run uses);
//!   [`input`]: reading checked TOML; [`adapter`]: the adapter protocol as types, its processes.
//! - [`outcome`]: driving one world to its end: `Outcome`, `RunResult`; [`remote`]: real hosts
//!   (pi's own `AgentSession` from npm) run by a driver process over the remote-host protocol of
//!   `docs/remote-host.md`, judged by the same checkers.
//! - [`family`]: host families, one module each ([`family::pi`], [`family::gptme_server`],
//!   [`family::gptme_cli`]) with its model, wake-logic API, configuration, narration, faults,
//!   adapter side and built-in wake logics; [`family::Registry`], the wake logics a run can name.
//! - [`scenario`]: scenario files and their validation.
//! - [`engine`]: running seeds, judging expectations, parallel runs, findability, determinism,
//!   exhaustive exploration, shrinking, regression files.
//! - [`report`]: every output: the text timeline, typed JSON Lines, Mermaid, `list`, `merge`.
//! - [`cmd`]: the `wakesim` command, one file per subcommand.
//!
//! ## Plugging in a wake logic
//! Implement [`family::pi::api::PiWake`], register it with [`family::Registry::with_pi`], and run
//! scenario files that name it; see `examples/custom_wake.rs`. For gptme, implement
//! [`family::gptme_server::api::ServerWake`] or [`family::gptme_cli::api::CliWake`] and register
//! it with [`family::Registry::with_gptme_server`] or [`family::Registry::with_gptme_cli`].
//! Or keep the logic in its own language and name its adapter in the scenario:
//! `wake = { command = ["node", ...] }`.

pub mod adapter;
pub mod check;
pub mod cmd;
pub mod engine;
pub mod error;
pub mod family;
pub mod input;
pub mod io;
pub mod limits;
pub mod outcome;
pub mod remote;
pub mod report;
pub mod scenario;
pub mod sim;
pub mod testing;

pub use error::{Error, Result};
