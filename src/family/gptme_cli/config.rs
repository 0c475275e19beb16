//! What a gptme-cli scenario may switch on, and its producers and timing.

pub use super::faults::{CliFault, CliTimed};
use super::note::CliReply;
use crate::family::common::Span;
use crate::family::common::faults::FaultSpec;

/// What the model does and what runs in the background.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CliProducers {
    /// The model's first replies, in order (`"job"`, `"tool"`, `"text"`); later replies are drawn.
    pub script: Vec<CliReply>,
    /// Background jobs the drawn replies start, at most.
    pub jobs: Span,
    /// Records an outside prompt write appends.
    pub prompt_records: Span,
}

impl Default for CliProducers {
    fn default() -> Self {
        CliProducers {
            script: Vec::new(),
            jobs: Span::new(1, 2),
            prompt_records: Span::new(1, 3),
        }
    }
}

/// Durations of the CLI's activities (ms) and its bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CliTiming {
    /// One model reply.
    pub model_ms: Span,
    /// A foreground tool call, or starting a background job.
    pub tool_ms: Span,
    /// A background job's run until its process exits.
    pub job_ms: Span,
    /// The reader's drain after the process exits, before `_notify_completion` (at most 1 s).
    pub drain_ms: Span,
    /// `wait_input`'s file reads, outside the lock.
    pub io_ms: Span,
    /// A notified waiter's thread waking up.
    pub wake_ms: Span,
    /// `GPTME_WATCH_IDLE_MAX` (default 1800 s).
    pub idle_max_ms: u64,
    /// Until another conversation's owner claims its completion.
    pub claim_ms: Span,
    /// `GPTME_MAX_STEPS`: steps of one turn.
    pub steps_max: u64,
    /// Iterations of the chat loop before the model stops the session (a simulator bound).
    pub turns_max: u64,
}

impl Default for CliTiming {
    fn default() -> Self {
        CliTiming {
            model_ms: Span::new(200, 6_000),
            tool_ms: Span::new(10, 2_000),
            job_ms: Span::new(100, 60_000),
            drain_ms: Span::new(0, 1_000),
            io_ms: Span::new(0, 5),
            wake_ms: Span::new(0, 2),
            idle_max_ms: 1_800_000,
            claim_ms: Span::new(0, 5_000),
            steps_max: 8,
            turns_max: 400,
        }
    }
}

/// Everything a gptme-cli run is configured by.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CliConfig {
    pub producers: CliProducers,
    pub faults: Vec<(CliFault, FaultSpec)>,
    pub timing: CliTiming,
}
