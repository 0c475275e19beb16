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
//! ## Map
//! - [`kernel`]: virtual time, the event queue, the recorded choice stream, the step budget.
//! - [`trace`]: the records of a run: observations for checkers, notes for people.
//! - [`check`]: the invariants and their checkers (observers only).
//! - [`host`]: host models. [`host::pi`] plays pi's `AgentSession` (0.99) and the 0.58 host;
//!   [`host::pi::api`] is the wake-logic API a pi extension sees. [`host::gptme::server`] plays
//!   gptme's server (`request_watch_wake`, the deferred watch queue), [`host::gptme::cli`] its
//!   noninteractive chat loop with background jobs; each has its `api` module.
//! - [`wake`]: the built-in wake logics (buggy and fixed) and the [`wake::Registry`] users extend.
//! - [`external`]: wake logic in another language, run in an adapter process over the JSON Lines
//!   protocol of `docs/protocol.md` (Node and Python reference adapters under `adapters/`).
//! - [`scenario`]: scenario files (TOML) and their validation.
//! - [`swarm`]: the per-seed mix of faults and producers (swarm testing).
//! - [`run`]: running seeds and judging a scenario's expectation.
//! - [`explore`]: exhaustive enumeration of a small scope.
//! - [`shrink`] and [`regression`]: minimising a failing run and keeping it as a regression file.
//! - [`report`]: the text timeline, JSON Lines and Mermaid.
//! - [`cli`]: the `wakesim` command.
//!
//! ## Plugging in a wake logic
//! Implement [`host::pi::api::PiWake`], register it with [`wake::Registry::with_pi`], and run
//! scenario files that name it; see `examples/custom_wake.rs`. For gptme, implement
//! [`host::gptme::server::api::ServerWake`] or [`host::gptme::cli::api::CliWake`] and register it
//! with [`wake::Registry::with_gptme_server`] or [`wake::Registry::with_gptme_cli`].
//! Or keep the logic in its own language and name its adapter in the scenario:
//! `wake = { command = ["node", ...] }`.

pub mod adapter;
pub mod check;
pub mod cmd;
pub mod engine;
pub mod error;
pub mod family;
pub mod input;
pub mod limits;
pub mod outcome;
pub mod report;
pub mod scenario;
pub mod sim;

pub use error::{Error, Result};
