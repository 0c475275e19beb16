//! What a gptme-cli scenario may switch on, and its producers and timing.

use super::note::CliReply;
use crate::family::common::Span;
use crate::family::common::faults::{FaultKind, FaultSpec};
use crate::sim::choice::Ratio;

/// Faults a seed may switch on for the gptme CLI (`wake-systems.md` §1.1.1, §1.1.4, §1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CliFault {
    /// The complete tool is loaded (autonomous sessions): `auto_reply_hook` (LOOP_CONTINUE 999)
    /// nudges after a reply without a tool call and completes the session after two nudges.
    AutoReply,
    /// A model reply calls a foreground tool, so another step follows.
    ToolCalls,
    /// An outside writer appends regular records to `prompt-queue.jsonl`.
    PromptWrites,
    /// An outside writer appends steer records.
    SteerWrites,
    /// An outside writer appends a malformed line (it stays on disk and ends no wait).
    MalformedRecords,
    /// An outside writer appends 101 records at once: more than one wait may take.
    PromptFlood,
    /// The parent writes `control.jsonl`, or rewrites it with new contents of the same size;
    /// nothing in this session consumes it.
    ControlWrites,
    /// A stale, non-empty `control.jsonl` is in the logdir from the start (G-7).
    StaleControl,
    /// A subagent of this session reports (completion or progress).
    SubagentReports,
    /// Another conversation in the process starts a background job (G-10).
    ForeignJobs,
    /// When an own job's completion is queued, another drain of this conversation (another
    /// session at STEP_PRE) claims it first (G-9).
    ConcurrentDrain,
    /// `reset_background_jobs(cid)` mid-session: kill, purge, pop and notify (G-11).
    TeardownReset,
    /// SIGTERM: cleanup resets every job and the process exits.
    Sigterm,
}

impl CliFault {
    pub const ALL: [CliFault; 13] = [
        CliFault::AutoReply,
        CliFault::ToolCalls,
        CliFault::PromptWrites,
        CliFault::SteerWrites,
        CliFault::MalformedRecords,
        CliFault::PromptFlood,
        CliFault::ControlWrites,
        CliFault::StaleControl,
        CliFault::SubagentReports,
        CliFault::ForeignJobs,
        CliFault::ConcurrentDrain,
        CliFault::TeardownReset,
        CliFault::Sigterm,
    ];
}

impl FaultKind for CliFault {
    const LIST: &'static [CliFault] = &CliFault::ALL;

    fn name(self) -> &'static str {
        match self {
            CliFault::AutoReply => "auto_reply",
            CliFault::ToolCalls => "tool_calls",
            CliFault::PromptWrites => "prompt_writes",
            CliFault::SteerWrites => "steer_writes",
            CliFault::MalformedRecords => "malformed_records",
            CliFault::PromptFlood => "prompt_flood",
            CliFault::ControlWrites => "control_writes",
            CliFault::StaleControl => "stale_control",
            CliFault::SubagentReports => "subagent_reports",
            CliFault::ForeignJobs => "foreign_jobs",
            CliFault::ConcurrentDrain => "concurrent_drain",
            CliFault::TeardownReset => "teardown_reset",
            CliFault::Sigterm => "sigterm",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            CliFault::AutoReply => {
                "the complete tool is loaded: auto_reply nudges, and completes the session after two nudges"
            }
            CliFault::ToolCalls => "a model reply calls a foreground tool; another step follows",
            CliFault::PromptWrites => "an outside writer appends records to prompt-queue.jsonl",
            CliFault::SteerWrites => "an outside writer appends steer records",
            CliFault::MalformedRecords => "an outside writer appends a malformed line",
            CliFault::PromptFlood => "an outside writer appends 101 records at once",
            CliFault::ControlWrites => {
                "the parent writes control.jsonl or rewrites it with the same size; nothing consumes it"
            }
            CliFault::StaleControl => {
                "a stale non-empty control.jsonl is in the logdir from the start"
            }
            CliFault::SubagentReports => "a subagent of this session reports",
            CliFault::ForeignJobs => "another conversation in the process starts a background job",
            CliFault::ConcurrentDrain => {
                "another drain of this conversation claims a queued completion first"
            }
            CliFault::TeardownReset => {
                "reset_background_jobs(cid) mid-session: kill, purge, pop and notify the condition"
            }
            CliFault::Sigterm => "SIGTERM: cleanup resets every job and the process exits",
        }
    }

    fn is_timed(self) -> bool {
        !matches!(
            self,
            CliFault::AutoReply
                | CliFault::ToolCalls
                | CliFault::StaleControl
                | CliFault::ConcurrentDrain
        )
    }

    fn defaults(self) -> (Ratio, u32) {
        match self {
            CliFault::AutoReply | CliFault::StaleControl => (Ratio::ALWAYS, 1),
            CliFault::ToolCalls => (Ratio::new(1, 3), 4),
            CliFault::ConcurrentDrain => (Ratio::new(1, 2), 2),
            CliFault::PromptFlood | CliFault::TeardownReset | CliFault::Sigterm => {
                (Ratio::ALWAYS, 1)
            }
            _ => (Ratio::ALWAYS, 3),
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

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
