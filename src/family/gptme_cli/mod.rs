//! The gptme noninteractive CLI host (`docs/hosts/gptme.md`): `gptme -n`'s chat loop
//! with its prompt queue, STEP_PRE and LOOP_CONTINUE hooks by priority with StopPropagation,
//! auto-reply nudges and session completion, model replies that start background jobs or not,
//! jobs that finish at drawn times, the completion queue and the per-conversation condition,
//! `prompt-queue.jsonl` (regular, steer and malformed records, the 100-record cap) with its
//! closed sentinel, `control.jsonl`, subagent reports, another conversation's jobs, teardown
//! reset and SIGTERM.
//!
//! The main thread (the loop, the hooks, the idle wait) and the background threads (each job's
//! reader, another session's drain, the foreign owner, outside writers) interleave at every
//! point where gptme releases a lock or blocks: each is a kernel event, and events due at the
//! same instant are ordered by a choice.
//!
//! - `host.rs`: [`CliHost`], the `World`: the seed's plan, calls into the wake logic, dispatch;
//! - `chat_loop.rs`: the loop and its steps; `hooks.rs`: LOOP_CONTINUE hooks and the suspended
//!   wake hook; `jobs.rs`: background jobs and their readers; `faults.rs`: the faults, how the
//!   timed ones act, resets and the session's end;
//! - `core.rs`: the state and the synchronous operations; `handle.rs`: [`api::Cli`], the handle
//!   a wake logic calls;
//! - `bounds.rs`: the checkers' bounds derived from the scenario's timing (input-heard's poll
//!   period, bounded-latency's idle bound, the host's own wait);
//! - `api.rs`: the public wake-logic API; `note.rs` and `encode.rs`: the narration and its
//!   trace-hash encoding; `vocab.rs`: windows, drops and end causes; `config.rs` and
//!   `sections.rs`: what a scenario configures; `adapter.rs`: the adapter side; `wakes/`: the
//!   built-in variants; `real.rs`: the real gptme 0.35.1 chat loop (`gptme-cli@0.35.1`), run by the Python
//!   adapter's driver under its thread scheduler.

pub mod adapter;
pub mod api;
pub mod bounds;
mod chat_loop;
pub mod config;
pub mod core;
pub mod encode;
pub mod faults;
pub mod handle;
mod hooks;
pub mod host;
mod jobs;
pub mod note;
pub mod real;
pub mod sections;
pub mod vocab;
pub mod wakes;

pub use host::CliHost;

use api::CliWake;
use config::CliConfig;
use core::PROMPTS_MAX;
use faults::CliFault;
use note::Note;

use crate::adapter::SlotRef;
use crate::check::{DerivedBounds, Invariant, InvariantSet, Monitor};
use crate::error::Result;
use crate::family::common::faults::FaultSpec;
use crate::family::{Family, Host, OwnDriver, RealHost, Registry, WireNames};
use crate::input::Cx;
use crate::sim::Kernel;
use crate::sim::msg::MsgInfo;
use crate::sim::record::Window;

/// The conversation under test (A) and the other one in the process (B).
const OWN: u8 = 0;
const OTHER: u8 = 1;

/// FIFO streams (`MsgInfo::source`): each queue delivers in order.
const JOB_STREAM: [u8; 2] = [0, 1];
const PROMPT_STREAM: u8 = 2;
const STEER_STREAM: u8 = 3;
const SUBAGENT_STREAM: u8 = 4;

/// Priorities of the host's own hooks, as gptme 0.35.1 registers them: the subagent completion
/// hook at 50 (`tools/subagent/__init__.py`, "completion"), `auto_reply_hook` at 999
/// (`tools/complete.py`). So after `wait_input` yields to the subagent queues ("hook"),
/// auto-reply runs before the subagent hook delivers them.
const SUBAGENT_PRIORITY: i32 = 50;
const AUTO_REPLY_PRIORITY: i32 = 999;
/// auto_reply completes the session at the third nudge it would send.
const NUDGES_MAX: u8 = 2;
/// A prompt flood writes this many records at once (one more than a wait may take).
const FLOOD_RECORDS: u64 = PROMPTS_MAX as u64 + 1;
/// Bytes a control record adds.
const CONTROL_RECORD_BYTES: u32 = 40;

/// The kernel this host runs on: its events, its narration into the checkers' monitor.
pub type CliKernel = Kernel<CliEv, Monitor<Note>>;

/// The CLI's scheduled events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CliEv {
    /// The chat loop's next iteration.
    Loop,
    /// Nothing was queued: the loop touches its closed sentinel.
    Close,
    /// A model reply arrives.
    Reply,
    /// A tool call finished; the next step runs.
    ToolDone,
    /// A suspended LOOP_CONTINUE hook resumes (its suspension number, and why).
    Resume(u32, ResumeKind),
    /// A job's process exits.
    JobExit(u32),
    /// A job's reader calls `_notify_completion`.
    Notify(u32),
    /// Conversation B's owner claims its job's completion.
    OwnerClaim(u32),
    /// Another session of A drains A's completions.
    ConcurrentDrain,
    /// The i-th planned timed fault.
    Timed(u32),
}

/// Why a suspended hook resumes (the kernel's copy of `api::Resume`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumeKind {
    Io,
    Notified,
    TimedOut,
}

/// The gptme-cli family: gptme's noninteractive chat loop, its wake logic written against
/// [`CliWake`].
pub struct CliFamily;

impl Family for CliFamily {
    const NAME: &'static str = "gptme-cli";
    const HOSTS: &'static [(Host, ())] = &[(
        // The noninteractive CLI chat loop with background jobs (`gptme/chat.py`,
        // `gptme/tools/shell_background.py` as of PR #3843).
        Host {
            name: "gptme-cli",
            version_label: "gptme-cli -n (#3843)",
            describe: "gptme -n chat loop: prompt queue, STEP_PRE/LOOP_CONTINUE hooks by priority, background jobs, completion queue and condition, prompt-queue and control files",
        },
        (),
    )];
    const INVARIANTS: InvariantSet = InvariantSet::delivery_and(&[
        Invariant::AliveWhileOwed,
        Invariant::NoSpin,
        Invariant::Isolation,
        // Only a real gptme under the thread scheduler can deadlock; the model cannot.
        Invariant::NoDeadlock,
        // The model reports input changes and wait ends; the real gptme's driver does not yet,
        // so it never fires there.
        Invariant::InputHeard,
    ]);
    const WINDOWS: &'static [Window] = vocab::WINDOWS;
    const STATES: &'static [&'static str] = note::STATES;
    const COMPACT_RUNS: bool = true;

    type Variant = ();
    type Fault = CliFault;
    type Note = Note;
    type Config = CliConfig;
    type Producers = sections::RawCliProducers;
    type Timing = sections::RawCliTiming;
    type Call = adapter::CliCall;
    type Wake = dyn CliWake;
    type World = CliHost;

    fn config(
        cx: Cx<'_>,
        producers: sections::RawCliProducers,
        timing: sections::RawCliTiming,
        faults: Vec<(CliFault, FaultSpec)>,
    ) -> Result<CliConfig> {
        Ok(CliConfig {
            producers: producers.read(cx)?,
            faults,
            timing: timing.read(cx)?,
        })
    }

    fn faults_of(config: &CliConfig) -> &[(CliFault, FaultSpec)] {
        &config.faults
    }

    fn scope(config: &mut CliConfig, messages_max: u64) {
        config.producers.jobs.cap(messages_max);
        config.producers.prompt_records.cap(messages_max);
    }

    fn world(_: (), config: &CliConfig, wake: Box<dyn CliWake>) -> CliHost {
        CliHost::new(config.clone(), wake)
    }

    fn renew(world: &mut CliHost, _: (), config: &CliConfig, wake: Box<dyn CliWake>) {
        world.renew(config, wake);
    }

    fn external(slot: SlotRef, constants_ms: Vec<u64>) -> Box<dyn CliWake> {
        Box::new(adapter::ExternalCli::new(slot, constants_ms))
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

    fn real_sections(config: &CliConfig) -> serde_json::Value {
        real::sections(config)
    }

    fn derived_bounds(config: &CliConfig) -> Option<DerivedBounds> {
        Some(bounds::derived(config))
    }

    fn twin(wake: &serde_json::Value) -> std::result::Result<crate::family::Twin, String> {
        real::twin(wake)
    }
}

impl Registry {
    /// Add (or replace) a gptme-cli wake logic under `name`.
    pub fn with_gptme_cli(
        self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<dyn CliWake> + Send + Sync + 'static,
    ) -> Registry {
        self.with::<CliFamily>(name, summary, make)
    }
}
