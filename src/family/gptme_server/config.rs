//! What a gptme-server scenario may switch on, and its producers and timing.

pub use super::faults::{ServerFault, ServerTimed};
use crate::family::common::Span;
use crate::family::common::faults::FaultSpec;

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
