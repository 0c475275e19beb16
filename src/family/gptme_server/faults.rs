//! The gptme server's faults: what a seed may switch on ([`ServerFault`]), its timed faults as a
//! type of their own ([`ServerTimed`], matched without a default, so a new timed fault does not
//! compile until it is handled here), and how each timed fault acts. Opportunity faults fire
//! where the model reaches them (`fires`): in `request_watch_wake`, at a step's reply, and in the
//! retry's lock gaps (`handle.rs`).

use super::SrvEv;
use super::SrvKernel;
use super::host::ServerHost;
use super::note::{Note, StepOrigin};
use crate::family::common::Core;
use crate::family::common::faults::FaultKind;
use crate::sim::choice::Ratio;
use crate::sim::record::Actor;

/// Faults a seed may switch on for the gptme server (`docs/hosts/gptme.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ServerFault {
    /// The watch tool is loaded: its STEP_PRE hook (`_watch_drain_hook`, priority 940) drains the
    /// conversation's deferred events at every step. It is `disabled_by_default`.
    WatchTool,
    /// The user sends messages: a step on a session (outside work that makes the conversation
    /// busy).
    UserSteps,
    /// A step's tool call awaits confirmation (`pending_tools`) until the user confirms it.
    ToolConfirmation,
    /// A step's reply calls tools that execute (`_executing_tools`), then another step runs.
    ToolCalls,
    /// A slash command owns the conversation (`_active_commands`); `finish_command` retries.
    SlashCommands,
    /// The conversation has a second session (another client) whose steps also make it busy.
    SecondSession,
    /// Persisting the wake message fails (OSError): `request_watch_wake` returns False.
    PersistFailure,
    /// `_start_step_thread` fails after the message was persisted: generating is undone and
    /// `request_watch_wake` still returns True (G-5's residual: persisted but not dispatched).
    DispatchFailure,
    /// A watch event due within a thread start (`thread_ms.max`) fires in the retry's first lock
    /// gap: after `take_queued_watch_events` released `_pending_lock`, before `request_watch_wake`
    /// takes `conversation_lock` (`retry_deferred_watch_wakes`, `session_models.py`). Its
    /// `_deliver` wakes an idle conversation ahead of the taken batch.
    WatchInTakeGap,
    /// A watch event due within a thread start fires in the retry's second lock gap: after
    /// `request_watch_wake` returned, before the refused batch is requeued; refused too, its
    /// `_deliver` appends it behind whatever is queued.
    WatchInWakeGap,
}

impl ServerFault {
    pub const ALL: [ServerFault; 10] = [
        ServerFault::WatchTool,
        ServerFault::UserSteps,
        ServerFault::ToolConfirmation,
        ServerFault::ToolCalls,
        ServerFault::SlashCommands,
        ServerFault::SecondSession,
        ServerFault::PersistFailure,
        ServerFault::DispatchFailure,
        ServerFault::WatchInTakeGap,
        ServerFault::WatchInWakeGap,
    ];
}

impl FaultKind for ServerFault {
    const LIST: &'static [ServerFault] = &ServerFault::ALL;
    type Timed = ServerTimed;

    fn name(self) -> &'static str {
        match self {
            ServerFault::WatchTool => "watch_tool",
            ServerFault::UserSteps => "user_steps",
            ServerFault::ToolConfirmation => "tool_confirmation",
            ServerFault::ToolCalls => "tool_calls",
            ServerFault::SlashCommands => "slash_commands",
            ServerFault::SecondSession => "second_session",
            ServerFault::PersistFailure => "persist_failure",
            ServerFault::DispatchFailure => "dispatch_failure",
            ServerFault::WatchInTakeGap => "watch_in_take_gap",
            ServerFault::WatchInWakeGap => "watch_in_wake_gap",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            ServerFault::WatchTool => {
                "the watch tool is loaded: STEP_PRE drains the deferred watch events at every step"
            }
            ServerFault::UserSteps => "the user sends messages: steps the wake logic did not start",
            ServerFault::ToolConfirmation => {
                "a step's tool call awaits confirmation (pending_tools) until the user confirms"
            }
            ServerFault::ToolCalls => {
                "a step's reply calls tools that execute, then another step runs"
            }
            ServerFault::SlashCommands => {
                "a slash command owns the conversation; finish_command retries deferred wakes"
            }
            ServerFault::SecondSession => "a second session on the conversation runs its own steps",
            ServerFault::PersistFailure => {
                "persisting a wake message fails: request_watch_wake returns False"
            }
            ServerFault::DispatchFailure => {
                "the step thread fails to start after persisting: request_watch_wake returns True (G-5 residual)"
            }
            ServerFault::WatchInTakeGap => {
                "a watch event due within a thread start fires between the retry's take and its wake (no lock held)"
            }
            ServerFault::WatchInWakeGap => {
                "a watch event due within a thread start fires after the retry's wake returns, before the requeue"
            }
        }
    }

    fn timed(self) -> Option<ServerTimed> {
        match self {
            ServerFault::UserSteps => Some(ServerTimed::UserSteps),
            ServerFault::SlashCommands => Some(ServerTimed::SlashCommands),
            ServerFault::WatchTool
            | ServerFault::ToolConfirmation
            | ServerFault::ToolCalls
            | ServerFault::SecondSession
            | ServerFault::PersistFailure
            | ServerFault::DispatchFailure
            | ServerFault::WatchInTakeGap
            | ServerFault::WatchInWakeGap => None,
        }
    }

    fn defaults(self) -> (Ratio, u32) {
        match self {
            ServerFault::WatchTool | ServerFault::SecondSession => (Ratio::ALWAYS, 1),
            ServerFault::UserSteps | ServerFault::SlashCommands => (Ratio::ALWAYS, 3),
            ServerFault::ToolConfirmation => (Ratio::new(1, 3), 3),
            ServerFault::ToolCalls => (Ratio::new(1, 3), 6),
            ServerFault::PersistFailure | ServerFault::DispatchFailure => (Ratio::new(1, 3), 2),
            ServerFault::WatchInTakeGap | ServerFault::WatchInWakeGap => (Ratio::new(1, 2), 3),
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The server's timed faults: what happens at drawn instants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerTimed {
    UserSteps,
    SlashCommands,
}

impl ServerHost {
    /// Occurrence `i` of a timed fault is due.
    pub(super) fn timed_fault(&mut self, k: &mut SrvKernel, i: u32) {
        if k.quiescent() {
            return;
        }
        match self.timed.fault(i) {
            ServerTimed::UserSteps => {
                let n = self.core.sessions.len() as u64;
                let session = k.choose(n, "session") as usize;
                // The /step route (gptme 0.35.1, `api_v2_sessions.py`) answers 409 while any
                // session of the conversation generates or a command owns it; a tool call
                // pending confirmation does not hold it off. (The model held a user step back
                // while tools were pending or executing, and let it in during a command:
                // `wakesim conform` against the real route showed both.)
                let generating = self.core.sessions.iter().any(|s| s.generating.is_some());
                if generating || self.core.command {
                    return self.timed.retry(k, i, SrvEv::Timed(i));
                }
                self.core.sessions[session].generating = Some(StepOrigin::User);
                self.core.sessions[session].last_activity = k.now();
                self.core.note(
                    k,
                    Actor::User,
                    Note::UserMessage {
                        session: session as u8 + 1,
                    },
                );
                self.core.start_step(k, session);
            }
            ServerTimed::SlashCommands => {
                if self.core.command {
                    return self.timed.retry(k, i, SrvEv::Timed(i));
                }
                self.core.command = true;
                self.core
                    .note(k, Actor::User, Note::Command { finished: false });
                let d = self.core.cfg.timing.command_ms.delay(k, "command");
                k.schedule(d, SrvEv::CommandEnd);
            }
        }
    }
}
