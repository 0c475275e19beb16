//! The gptme server host (`docs/hosts/gptme.md`): one conversation (logdir A) with one
//! or two sessions, the busy predicate, `request_watch_wake`, step threads that end at drawn
//! times, tool confirmation, slash commands with `finish_command`, the global deferred-delivery
//! queue, the subagent completion queue, STEP_PRE hooks, and the watch storm guards.
//!
//! Every thread interleaving point is a scheduling point: a watch fires (the watch thread's
//! `_fire`), a step thread starts, replies, finishes its tools, a user confirms, a command
//! finishes. What gptme does under its locks runs atomically inside one event.
//!
//! - `host.rs`: [`ServerHost`], the `World`: the seed's plan, delivery passes, dispatch;
//! - `watch.rs`: watches firing through the storm guards, subagent completions; `steps.rs`:
//!   step threads; `faults.rs`: the faults and how the timed ones act;
//! - `core.rs`: the state and the synchronous operations; `handle.rs`: [`api::Server`], the
//!   handle a wake logic calls;
//! - `api.rs`: the public wake-logic API; `note.rs` and `encode.rs`: the narration and its
//!   trace-hash encoding; `vocab.rs`: windows, drops and refusals; `config.rs` and
//!   `sections.rs`: what a scenario configures; `adapter.rs`: the adapter side; `wakes/`: the
//!   built-in variants; `real.rs`: the real gptme 0.35.1 server (`gptme-server@0.35.1`), run by the Python
//!   adapter's driver under its thread scheduler.

pub mod adapter;
pub mod api;
pub mod config;
pub mod core;
pub mod encode;
pub mod faults;
pub mod handle;
pub mod host;
pub mod note;
pub mod real;
pub mod sections;
mod steps;
pub mod vocab;
pub mod wakes;
mod watch;

pub use host::ServerHost;

use api::ServerWake;
use config::ServerConfig;
use faults::ServerFault;
use note::Note;

use crate::adapter::SlotRef;
use crate::check::{Invariant, InvariantSet, Monitor};
use crate::error::Result;
use crate::family::common::conv::ConvId;
use crate::family::common::faults::FaultSpec;
use crate::family::{Family, Host, OwnDriver, RealHost, Registry, WireNames};
use crate::input::Cx;
use crate::sim::Kernel;
use crate::sim::msg::MsgInfo;
use crate::sim::record::Window;

/// The conversation under test; the only one the server model runs.
const CONV: ConvId = ConvId(0);

/// FIFO streams of logdir A (`MsgInfo::source`): its deferred watch events and its subagent
/// completions are each delivered in order.
const WATCH_STREAM: u8 = 0;
const COMPLETION_STREAM: u8 = 1;

/// The kernel this host runs on: its events, its narration into the checkers' monitor.
pub type SrvKernel = Kernel<SrvEv, Monitor<Note>>;

/// The server's scheduled events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrvEv {
    /// The i-th planned watch event fires.
    Fire(u32),
    /// The i-th planned subagent completion arrives.
    Completion(u32),
    /// A step thread's next phase.
    Step(u32),
    /// The user confirms the pending tool call of a step.
    Confirm(u32),
    /// The i-th planned timed fault.
    Timed(u32),
    /// The slash command finishes (`finish_command`).
    CommandEnd,
}

/// The gptme-server family: gptme's server, its wake logic written against [`ServerWake`].
pub struct ServerFamily;

impl Family for ServerFamily {
    const NAME: &'static str = "gptme-server";
    const HOSTS: &'static [(Host, ())] = &[(
        // Conversations with sessions, `request_watch_wake`, the deferred watch queue and its
        // retry (`gptme/server/session_models.py` @0b19447c, `gptme/tools/watch.py`).
        Host {
            name: "gptme-server",
            version_label: "gptme-server@0b19447c",
            describe: "gptme server: busy predicate over sessions, request_watch_wake sets generating before it returns, step threads, deferred watch queue, storm guards",
        },
        (),
    )];
    /// `docs/hosts/gptme.md`, `docs/invariants.md`; NO-DEADLOCK, which only a real gptme under the thread
    /// scheduler can break (the model cannot block).
    const INVARIANTS: InvariantSet =
        InvariantSet::delivery_and(&[Invariant::NoSelfRefusal, Invariant::NoDeadlock]);
    const WINDOWS: &'static [Window] = vocab::WINDOWS;
    const STATES: &'static [&'static str] = note::STATES;
    const COMPACT_RUNS: bool = true;

    type Variant = ();
    type Fault = ServerFault;
    type Note = Note;
    type Config = ServerConfig;
    type Producers = sections::RawServerProducers;
    type Timing = sections::RawServerTiming;
    type Call = adapter::ServerCall;
    type Wake = dyn ServerWake;
    type World = ServerHost;

    fn config(
        cx: Cx<'_>,
        producers: sections::RawServerProducers,
        timing: sections::RawServerTiming,
        faults: Vec<(ServerFault, FaultSpec)>,
    ) -> Result<ServerConfig> {
        Ok(ServerConfig {
            producers: producers.read(cx)?,
            faults,
            timing: timing.read(),
        })
    }

    fn faults_of(config: &ServerConfig) -> &[(ServerFault, FaultSpec)] {
        &config.faults
    }

    fn scope(config: &mut ServerConfig, messages_max: u64) {
        config.producers.events.cap(messages_max);
        config.producers.completions.cap(messages_max);
    }

    fn world(_: (), config: &ServerConfig, wake: Box<dyn ServerWake>) -> ServerHost {
        ServerHost::new(config.clone(), wake)
    }

    fn renew(world: &mut ServerHost, _: (), config: &ServerConfig, wake: Box<dyn ServerWake>) {
        world.renew(config, wake);
    }

    fn external(slot: SlotRef, constants_ms: Vec<u64>) -> Box<dyn ServerWake> {
        Box::new(adapter::ExternalServer::new(slot, constants_ms))
    }

    fn sender_name(info: &MsgInfo) -> String {
        vocab::sender_name(info)
    }

    fn builtin_wakes(registry: &mut Registry) {
        wakes::register(registry);
    }

    const REAL_HOSTS: &'static [RealHost] = real::REAL_HOSTS;
    const WIRE: WireNames = real::WIRE;
    const OWN_DRIVER: Option<OwnDriver> = Some(real::DRIVER);
    const PLAN_LABELS: &'static [&'static str] = real::PLAN_LABELS;
    const UNMODELLED: &'static [Window] = vocab::UNMODELLED;

    fn real_sections(config: &ServerConfig) -> serde_json::Value {
        real::sections(config)
    }

    fn twin(wake: &serde_json::Value) -> std::result::Result<crate::family::Twin, String> {
        real::twin(wake)
    }
}

impl Registry {
    /// Add (or replace) a gptme-server wake logic under `name`.
    pub fn with_gptme_server(
        self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<dyn ServerWake> + Send + Sync + 'static,
    ) -> Registry {
        self.with::<ServerFamily>(name, summary, make)
    }
}
