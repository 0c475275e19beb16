//! What a gptme-server scenario may switch on, and its producers and timing.

use crate::family::common::Span;
use crate::family::common::faults::{FaultKind, FaultSpec};
use crate::sim::choice::Ratio;

/// Faults a seed may switch on for the gptme server (`wake-systems.md` §1.1.2, §1.3).
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
}

impl ServerFault {
    pub const ALL: [ServerFault; 8] = [
        ServerFault::WatchTool,
        ServerFault::UserSteps,
        ServerFault::ToolConfirmation,
        ServerFault::ToolCalls,
        ServerFault::SlashCommands,
        ServerFault::SecondSession,
        ServerFault::PersistFailure,
        ServerFault::DispatchFailure,
    ];
}

impl FaultKind for ServerFault {
    const LIST: &'static [ServerFault] = &ServerFault::ALL;

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
        }
    }

    fn is_timed(self) -> bool {
        matches!(self, ServerFault::UserSteps | ServerFault::SlashCommands)
    }

    fn defaults(self) -> (Ratio, u32) {
        match self {
            ServerFault::WatchTool | ServerFault::SecondSession => (Ratio::ALWAYS, 1),
            ServerFault::UserSteps | ServerFault::SlashCommands => (Ratio::ALWAYS, 3),
            ServerFault::ToolConfirmation => (Ratio::new(1, 3), 3),
            ServerFault::ToolCalls => (Ratio::new(1, 3), 6),
            ServerFault::PersistFailure | ServerFault::DispatchFailure => (Ratio::new(1, 3), 2),
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What produces messages on the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerProducers {
    /// Watch events fired in the run (`run`, `until`, `stream` lines, ...).
    pub events: Span,
    /// Watches armed on the conversation; each event comes from one of them.
    pub watches: u8,
    /// When the first event fires, and the spacing between events (small spacing: a burst).
    pub start_ms: Span,
    pub spacing_ms: Span,
    /// Subagent completions for the conversation (`_completion_queue`).
    pub completions: Span,
    /// When completions arrive: each at a drawn instant in this range.
    pub completion_ms: Span,
}

impl Default for ServerProducers {
    fn default() -> Self {
        ServerProducers {
            events: Span::new(1, 6),
            watches: 2,
            start_ms: Span::new(1, 10_000),
            spacing_ms: Span::new(0, 5_000),
            completions: Span::new(0, 0),
            completion_ms: Span::new(1, 60_000),
        }
    }
}

/// Durations of the server's activities, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerTiming {
    /// A step thread starting after `_start_step_thread`.
    pub thread_ms: Span,
    /// One model reply.
    pub model_ms: Span,
    /// Executing a step's tool calls.
    pub tool_ms: Span,
    /// Until the user confirms a pending tool call.
    pub confirm_ms: Span,
    /// A slash command's duration.
    pub command_ms: Span,
}

impl Default for ServerTiming {
    fn default() -> Self {
        ServerTiming {
            thread_ms: Span::new(0, 20),
            model_ms: Span::new(200, 6_000),
            tool_ms: Span::new(10, 3_000),
            confirm_ms: Span::new(500, 20_000),
            command_ms: Span::new(100, 5_000),
        }
    }
}

/// Everything a gptme-server run is configured by.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerConfig {
    pub producers: ServerProducers,
    pub faults: Vec<(ServerFault, FaultSpec)>,
    pub timing: ServerTiming,
}
