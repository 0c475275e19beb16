//! The pi host model (`docs/hosts/pi.md`): `AgentSession` of pi 0.99 and, as a second
//! generation, the older 0.58 host of H-5.
//!
//! Every `await` of the real host is a scheduling point: the model schedules its continuation
//! after a drawn delay, and events due at the same instant are ordered by a choice. The
//! synchronous segments (`prompt()` steps 0-2, step 12 taking `nextTurn` and setting the run flag,
//! the `sendCustomMessage` routing table) run atomically inside one event, as they do in JS.
//!
//! - `host.rs`: [`PiHost`], the `World`: the seed's plan, calls into the wake logic, dispatch;
//! - `prompt.rs`: `prompt()` steps 3-12; `run.rs`: an agent run's phases; `listen.rs`: 0.58's
//!   event queue, where run events reach the extensions; `faults.rs`: the faults and how the
//!   timed ones act;
//! - `core.rs`: the state and the synchronous operations (`sendCustomMessage`, `prompt()`
//!   steps 0-2, `_runAgentPrompt` up to `Agent.prompt`); `handle.rs`: [`api::Pi`], the handle a
//!   wake logic calls;
//! - `api.rs`: the public wake-logic API; `note.rs` and `encode.rs`: the narration and its
//!   trace-hash encoding; `vocab.rs`: windows and drops; `config.rs` and `sections.rs`: what a
//!   scenario configures; `adapter.rs`: the adapter side; `wakes/`: the built-in variants;
//!   `real.rs`: the real pi releases (`pi@0.99.1`, `pi@1.6.0`, `pi@0.58.3`) its driver runs.

pub mod adapter;
pub mod api;
pub mod config;
pub mod core;
pub mod encode;
pub mod faults;
pub mod handle;
pub mod host;
mod listen;
pub mod note;
mod prompt;
pub mod real;
mod renew;
mod run;
pub mod sections;
pub mod vocab;
pub mod wakes;

pub use host::PiHost;

use api::PiWake;
use config::PiConfig;
use faults::PiFault;
use note::Note;

use crate::adapter::SlotRef;
use crate::check::{Invariant, InvariantSet, Monitor};
use crate::error::Result;
use crate::family::common::faults::FaultSpec;
use crate::family::{Family, Host, RealHost, Registry, WireNames};
use crate::input::Cx;
use crate::sim::Kernel;
use crate::sim::msg::MsgInfo;
use crate::sim::record::Window;

/// Which pi the model plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gen {
    /// 0.99: `_isAgentRunActive` spans the whole run; `agent_settled`; handlers awaited.
    V099,
    /// 0.58: idle between inner runs, `continue()` on a timer, listeners not awaited.
    V058,
}

/// Which pi release the model plays: its generation, and whether it has pi 1.x's changes to
/// 0.99's `AgentSession` (`_startRun`/`_prepareRun`: the run flag set before the compaction
/// check and `before_agent_start`, which a custom message's run gets too; read from pi 1.6.0's
/// `agent-session.js` against 0.99.1's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    pub generation: Gen,
    /// pi 1.x (`pi-1.6`, the model twin of `pi@1.6.0`); only with [`Gen::V099`].
    pub v16: bool,
}

impl From<Gen> for Version {
    fn from(generation: Gen) -> Version {
        Version {
            generation,
            v16: false,
        }
    }
}

/// The kernel a pi host runs on: its events, its narration into the checkers' monitor.
pub type PiKernel = Kernel<PiEv, Monitor<Note>>;

/// The pi host's scheduled events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PiEv {
    /// The i-th planned producer message arrives at the extension.
    Produce(u32),
    /// A prompt's next step, after its current await.
    Prompt(u32),
    /// A run's next phase.
    Run(u32),
    /// A run event's later handlers: pi awaits each extension handler in turn, so the ones after
    /// the wake logic's (wakesim's probe, which takes the drawn handler delay) start at least one
    /// microtask after the wake logic's handler returned; then the run's next phase.
    Handlers(u32),
    /// 0.58's event queue takes its next step (`listen.rs`).
    Listen,
    /// 0.58's `_runLoop` `finally`: `isStreaming = false`, whoever runs now (`listen.rs`).
    Finally,
    /// A wake-logic timer.
    Timer(u32),
    /// `session_start` of the replacement session.
    SessionStart,
    /// The i-th planned timed fault.
    Timed(u32),
    /// A compaction or summarization started by a fault ends.
    FaultEnd(faults::Busy),
}

/// The pi family: pi 0.99's `AgentSession` and the older 0.58 host, their wake logic written
/// against [`PiWake`].
pub struct PiFamily;

impl Family for PiFamily {
    const NAME: &'static str = "pi";
    const HOSTS: &'static [(Host, Version)] = &[
        (
            // pi 0.99 `AgentSession` (earendil-works/pi @014b48bf).
            Host {
                name: "pi",
                version_label: "pi-0.99",
                describe: "pi 0.99 AgentSession: prompt() steps 0-12, run flag spanning inner runs, agent_settled, deferral while settling",
            },
            Version {
                generation: Gen::V099,
                v16: false,
            },
        ),
        (
            // pi 0.58 (badlogic/pi-mono v0.58.3), the older host of H-5.
            Host {
                name: "pi-0.58",
                version_label: "pi-0.58",
                describe: "pi 0.58: isIdle per inner run, continue() on a timer, agent_end listeners not awaited, no agent_settled",
            },
            Version {
                generation: Gen::V058,
                v16: false,
            },
        ),
        (
            // pi 1.6 (`@earendil-works/pi-coding-agent` 1.6.0): 0.99 with `_startRun`.
            Host {
                name: "pi-1.6",
                version_label: "pi-1.6",
                describe: "pi 1.6: 0.99 with _startRun/_prepareRun: the run flag set before the compaction check and before_agent_start, which a custom message's run gets too",
            },
            Version {
                generation: Gen::V099,
                v16: true,
            },
        ),
    ];
    const INVARIANTS: InvariantSet = InvariantSet::delivery_and(&[
        Invariant::SingleStarter,
        Invariant::FlagCoherence,
        Invariant::Harness,
        Invariant::NoWastedWake,
        // Judged only where a scenario sets `[check] boundary_ms_max`.
        Invariant::BoundaryFlush,
        // Only the real pi driver reports a split tool call (it reads each request's context).
        Invariant::ToolPairing,
    ]);
    const WINDOWS: &'static [Window] = vocab::WINDOWS;
    const STATES: &'static [&'static str] = note::STATES;
    const COMPACT_RUNS: bool = false;

    type Variant = Version;
    type Fault = PiFault;
    type Note = Note;
    type Config = PiConfig;
    type Producers = sections::RawProducers;
    type Timing = sections::RawTiming;
    type Call = adapter::PiCall;
    type Wake = dyn PiWake;
    type World = PiHost;

    fn config(
        cx: Cx<'_>,
        producers: sections::RawProducers,
        timing: sections::RawTiming,
        faults: Vec<(PiFault, FaultSpec)>,
    ) -> Result<PiConfig> {
        Ok(PiConfig {
            producers: producers.read(cx)?,
            faults,
            timing: timing.read(cx)?,
        })
    }

    fn faults_of(config: &PiConfig) -> &[(PiFault, FaultSpec)] {
        &config.faults
    }

    fn scope(config: &mut PiConfig, messages_max: u64) {
        config.producers.messages.cap(messages_max);
    }

    fn world(version: Version, config: &PiConfig, wake: Box<dyn PiWake>) -> PiHost {
        PiHost::new(version, config.clone(), wake)
    }

    fn renew(world: &mut PiHost, version: Version, config: &PiConfig, wake: Box<dyn PiWake>) {
        world.renew(version, config, wake);
    }

    fn external(slot: SlotRef, constants_ms: Vec<u64>) -> Box<dyn PiWake> {
        Box::new(adapter::ExternalPi::new(slot, constants_ms))
    }

    fn sender_name(info: &MsgInfo) -> String {
        vocab::sender_name(info)
    }

    fn builtin_wakes(registry: &mut Registry) {
        wakes::register(registry);
    }

    const REAL_HOSTS: &'static [RealHost] = real::REAL_HOSTS;
    const PEERS: Option<&'static str> = Some("hosts/pi/peers");
    const WIRE: WireNames = real::WIRE;
    const PLAN_LABELS: &'static [&'static str] = real::PLAN_LABELS;

    fn real_sections(config: &PiConfig) -> serde_json::Value {
        real::sections(config)
    }

    fn twin(wake: &serde_json::Value) -> std::result::Result<crate::family::Twin, String> {
        real::twin(wake).map(crate::family::Twin::Adapter)
    }
}

impl Registry {
    /// Add (or replace) a pi wake logic under `name`.
    pub fn with_pi(
        self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<dyn PiWake> + Send + Sync + 'static,
    ) -> Registry {
        self.with::<PiFamily>(name, summary, make)
    }
}
