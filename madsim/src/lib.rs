//! # wakesim's madsim lane
//!
//! Rust agent harnesses write their wake logic as async code on tokio: a coordinator task fed by
//! a channel of host events, timers for a reservation's expiry, calls into the host between
//! awaits. This lane runs such code, written against `tokio`'s API and unchanged, inside a
//! [madsim](https://docs.rs/madsim) runtime seeded from the wakesim seed, against wakesim's pi
//! host model, judged by wakesim's checkers and reported with wakesim's timelines.
//!
//! The kernel lane (the `wakesim` crate) owns every choice of a run, which is what lets it replay
//! a recorded choice sequence, shrink it and enumerate small scopes. Here the interleaving of the
//! wake logic's tasks with the host is madsim's: seeded and deterministic, but not a recorded
//! choice sequence, so this lane replays by seed only and cannot shrink or enumerate.
//!
//! ## Map
//! - [`bridge`]: the host model inside madsim: [`bridge::Event`] and [`bridge::Events`] (what the
//!   host tells the wake logic), [`bridge::Host`] (how the wake logic calls the host: the same
//!   `Pi` handle the kernel lane's handlers get), and the driver that runs the host's events on
//!   madsim's clock.
//! - [`wake`]: the async wake logics ([`wake::AsyncWake`]): `madsim.is-idle` (buggy, no
//!   reservation), `madsim.reservation-timer` (the reference design, its reservation expiring
//!   on a real timer) and `madsim.reservation-stale-view` (the same, deciding on a stale view).
//! - [`run`]: [`run::Lane`], which loads scenario files naming those logics, runs seeds and judges
//!   expectations with wakesim's own code; [`run::replay_line`].
//!
//! ## Plugging in async wake logic
//! A wake logic is a root task over [`bridge::Host`] and [`bridge::Events`], named by an
//! [`wake::AsyncWake`] that scenario files refer to:
//!
//! ```
//! use std::path::Path;
//! use wakesim::family::pi::api::{CustomMessage, SendOptions};
//! use wakesim::scenario::Scenario;
//! use wakesim_madsim::bridge::{Event, Events, Host};
//! use wakesim_madsim::run::Lane;
//! use wakesim_madsim::wake::AsyncWake;
//!
//! /// G0 as a coordinator task: steer everything, idle or not.
//! async fn steer_everything(host: Host, mut events: Events) {
//!     while let Some(ev) = events.recv().await {
//!         if let Event::Message(m) = ev {
//!             let msg = CustomMessage::carrying(m.id);
//!             host.call(move |pi| pi.send_message(msg, SendOptions::steer())).await;
//!         }
//!     }
//! }
//!
//! let lane = Lane::builtin().with(AsyncWake {
//!     name: "my.steer-everything",
//!     summary: "G0: sendMessage(steer, triggerTurn) as is",
//!     constants_ms: &[],
//!     kernel_counterpart: "pi.raw-trigger-turn",
//!     start: |host, events| Box::pin(steer_everything(host, events)),
//! });
//! let text = r#"
//! name = "G0 as a task"
//! host = "pi"
//! wake = "my.steer-everything"
//! seeds = 20
//! snapshot_seed = 0
//! [expect]
//! verdict = "fail"
//! invariant = "harness"
//! also = ["single-starter", "flag-coherence", "no-loss", "bounded-latency", "fifo"]
//! "#;
//! let names: Vec<&str> = lane.wakes().iter().map(|w| w.name).collect();
//! let scn = Scenario::parse_for(Path::new("inline.toml"), text, &names).unwrap();
//! // An idle host runs a steered message directly, without before_agent_start (P-1).
//! assert!(lane.run_scenario(&scn, 0..20).met);
//! ```
//!
//! ## The guard
//! Everything here needs `--cfg madsim` (set in `.cargo/config.toml`). Without it madsim compiles
//! its real-runtime half and this lane would silently test nothing, so the build fails instead.

#[cfg(not(madsim))]
compile_error!(
    "wakesim-madsim must be compiled with `--cfg madsim`: .cargo/config.toml sets it, but a \
     RUSTFLAGS in the environment replaces that setting (add `--cfg madsim` to it, or run \
     `cargo test -p wakesim` for the kernel lane alone)"
);

pub mod bridge;
pub mod run;
pub mod wake;
