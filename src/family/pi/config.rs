//! What a pi scenario may switch on, and the per-seed plan drawn from it.

pub use super::faults::PiFault;
pub use crate::family::common::Span;
pub use crate::family::common::faults::FaultSpec;
use crate::sim::msg::MsgKind;

/// Producer messages of a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Producers {
    pub messages: Span,
    pub start_ms: Span,
    pub spacing_ms: Span,
    pub kinds: Vec<MsgKind>,
    /// Number of subagents sending completions and notifications.
    pub subagents: u8,
}

impl Default for Producers {
    fn default() -> Self {
        Producers {
            messages: Span::new(1, 4),
            start_ms: Span::new(1, 10_000),
            spacing_ms: Span::new(0, 20_000),
            kinds: vec![
                MsgKind::Completion,
                MsgKind::Notification,
                MsgKind::Orchestrator,
            ],
            subagents: 2,
        }
    }
}

/// Durations of the host's await points and activities, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PiTiming {
    /// Each await inside `prompt()` (input handlers, auth, compaction check, images).
    pub step_ms: Span,
    /// Awaiting extension handlers of run events.
    pub handler_ms: Span,
    /// One model request (streaming the assistant message).
    pub model_ms: Span,
    /// Executing the tool calls of one turn.
    pub tool_ms: Span,
    /// Tool-calling turns per inner run before the final turn.
    pub tool_turns: Span,
    pub compaction_ms: Span,
    /// pi's retry settings: `min` is `baseDelayMs`, `max` is `maxAgentDelayMs` (the cap on
    /// 0.99 and later); the backoff is computed, not drawn (`run::backoff`).
    pub retry_ms: Span,
    /// The user's prompts: first at a drawn instant, spacing between them.
    pub user_delay_ms: Span,
}

impl Default for PiTiming {
    fn default() -> Self {
        PiTiming {
            step_ms: Span::new(0, 40),
            handler_ms: Span::new(0, 5),
            model_ms: Span::new(200, 6_000),
            tool_ms: Span::new(10, 3_000),
            tool_turns: Span::new(0, 2),
            compaction_ms: Span::new(500, 20_000),
            retry_ms: Span::new(1_000, 8_000),
            user_delay_ms: Span::new(0, 30_000),
        }
    }
}

/// Everything a pi run is configured by.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PiConfig {
    pub producers: Producers,
    pub faults: Vec<(PiFault, FaultSpec)>,
    pub timing: PiTiming,
}
