//! What a pi scenario may switch on, and the per-seed plan drawn from it.

pub use crate::family::common::Span;
use crate::family::common::faults::FaultKind;
pub use crate::family::common::faults::FaultSpec;
use crate::sim::choice::Ratio;
use crate::sim::msg::MsgKind;

/// Faults a seed may switch on for the pi hosts (`wake-systems.md` §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PiFault {
    /// An input handler claims a prompt at step 3: no run, no event (P-5).
    InputSwallowsPrompt,
    /// The auth check at step 8 throws (P-5).
    AuthError,
    /// `_checkCompaction` at step 9 compacts: PREP-COMPACT, isIdle false.
    PrePromptCompaction,
    /// A retryable error after an inner run: backoff, then `continue()` (another inner pair).
    Retries,
    /// The before-settle boundary asks for another `continue()`.
    ExtraContinues,
    /// Threshold or overflow compaction after an inner run, then `continue()`.
    CompactionContinue,
    /// `/compact` while idle: COMPACTING without a run (H-6); may fail.
    ManualCompaction,
    /// `/tree` branch summarization: busy without a run; a cancelled one emits no event (P-10).
    TreeSummarization,
    /// `/new`: the session is replaced; the old ctx goes stale (P-7, P-8).
    SessionReplacement,
    /// The user types a prompt (steer while streaming, prompt() otherwise).
    UserPrompts,
}

impl PiFault {
    pub const ALL: [PiFault; 10] = [
        PiFault::InputSwallowsPrompt,
        PiFault::AuthError,
        PiFault::PrePromptCompaction,
        PiFault::Retries,
        PiFault::ExtraContinues,
        PiFault::CompactionContinue,
        PiFault::ManualCompaction,
        PiFault::TreeSummarization,
        PiFault::SessionReplacement,
        PiFault::UserPrompts,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PiFault::InputSwallowsPrompt => "input_swallows_prompt",
            PiFault::AuthError => "auth_error",
            PiFault::PrePromptCompaction => "pre_prompt_compaction",
            PiFault::Retries => "retries",
            PiFault::ExtraContinues => "extra_continues",
            PiFault::CompactionContinue => "compaction_continue",
            PiFault::ManualCompaction => "manual_compaction",
            PiFault::TreeSummarization => "tree_summarization",
            PiFault::SessionReplacement => "session_replacement",
            PiFault::UserPrompts => "user_prompts",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            PiFault::InputSwallowsPrompt => {
                "an input handler claims a prompt at step 3: no run, no event"
            }
            PiFault::AuthError => {
                "the auth check at step 8 throws; the error goes to the error channel"
            }
            PiFault::PrePromptCompaction => {
                "step 9 compacts before the run (PREP-COMPACT, isIdle false)"
            }
            PiFault::Retries => "a retryable error ends an inner run; backoff, then continue()",
            PiFault::ExtraContinues => "the before-settle boundary requests another continue()",
            PiFault::CompactionContinue => "compaction after an inner run, then continue()",
            PiFault::ManualCompaction => "/compact while idle: compacting without a run; may fail",
            PiFault::TreeSummarization => {
                "/tree summarization: busy without a run; cancelled ones emit no event"
            }
            PiFault::SessionReplacement => {
                "/new: session replaced, old ctx stale, old queues dropped"
            }
            PiFault::UserPrompts => {
                "the user submits prompts (steer while streaming; never while another prompt is in flight)"
            }
        }
    }

    pub fn from_name(name: &str) -> Option<PiFault> {
        PiFault::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Timed faults happen at drawn instants; the others fire at each opportunity with `rate`.
    pub fn is_timed(self) -> bool {
        matches!(
            self,
            PiFault::ManualCompaction
                | PiFault::TreeSummarization
                | PiFault::SessionReplacement
                | PiFault::UserPrompts
        )
    }

    /// Default rate per opportunity and default maximum count per run.
    pub fn defaults(self) -> (Ratio, u32) {
        match self {
            PiFault::InputSwallowsPrompt | PiFault::AuthError => (Ratio::new(1, 2), 1),
            PiFault::PrePromptCompaction => (Ratio::new(1, 3), 2),
            PiFault::Retries | PiFault::ExtraContinues => (Ratio::new(1, 3), 3),
            PiFault::CompactionContinue => (Ratio::new(1, 4), 2),
            PiFault::ManualCompaction | PiFault::TreeSummarization => (Ratio::ALWAYS, 2),
            PiFault::SessionReplacement => (Ratio::ALWAYS, 1),
            PiFault::UserPrompts => (Ratio::ALWAYS, 3),
        }
    }
}

impl FaultKind for PiFault {
    const LIST: &'static [PiFault] = &PiFault::ALL;
    fn name(self) -> &'static str {
        PiFault::name(self)
    }
    fn describe(self) -> &'static str {
        PiFault::describe(self)
    }
    fn is_timed(self) -> bool {
        PiFault::is_timed(self)
    }
    fn defaults(self) -> (Ratio, u32) {
        PiFault::defaults(self)
    }
    fn index(self) -> usize {
        self as usize
    }
}

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
