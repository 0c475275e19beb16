//! The gptme CLI's own vocabulary in the records: its race windows, documented drops and how
//! its sessions end. Codes are the trace-hash encoding (`sim::hash`, version 1).

use crate::family::common::names::subagent;
use crate::family::common::windows::AT_CONSTANT_BOUNDARY;
use crate::sim::msg::{MsgInfo, MsgKind};
use crate::sim::record::{EndCause, Reason, Window};

/// A job completes between the waiter's drain and its wait (G-8).
pub const NOTIFY_BEFORE_WAIT: Window = Window::new(
    12,
    "notify-before-wait",
    "a job completes between the waiter's drain and its cond.wait",
);
/// Outside input (a prompt, steer, control or subagent record) arrives while the session waits
/// for its jobs (G-7, G-12).
pub const INPUT_DURING_WAIT: Window = Window::new(
    13,
    "input-during-wait",
    "outside input arrives while the session waits for jobs",
);
/// Another drain claims a completion while the session waits (G-9).
pub const CONCURRENT_DRAIN: Window = Window::new(
    14,
    "concurrent-drain",
    "another drain claims a completion during the wait",
);
/// The idle wait reaches GPTME_WATCH_IDLE_MAX.
pub const WAIT_TIMEOUT: Window = Window::new(
    15,
    "wait-timeout",
    "the idle wait reaches GPTME_WATCH_IDLE_MAX",
);
/// A teardown reset while the waiter is inside cond.wait (G-11).
pub const RESET_DURING_WAIT: Window = Window::new(
    16,
    "reset-during-wait",
    "a teardown reset while the waiter is in cond.wait",
);
/// More prompts are queued on disk than one wait may take (100).
pub const PROMPTS_OVER_CAP: Window = Window::new(
    17,
    "prompts-over-cap",
    "more prompts wait on disk than one wait may take (100)",
);
/// control.jsonl is rewritten with new contents of the same size during a wait.
pub const SAME_SIZE_REWRITE: Window = Window::new(
    18,
    "same-size-rewrite",
    "control.jsonl is rewritten with new contents of the same size during a wait",
);

/// Every window a CLI run may mark, by code.
pub const WINDOWS: &[Window] = &[
    AT_CONSTANT_BOUNDARY,
    NOTIFY_BEFORE_WAIT,
    INPUT_DURING_WAIT,
    CONCURRENT_DRAIN,
    WAIT_TIMEOUT,
    RESET_DURING_WAIT,
    PROMPTS_OVER_CAP,
    SAME_SIZE_REWRITE,
];

/// The job was reset or replaced; its late callback is dropped.
pub const JOB_RESET: Reason = Reason::new(3, "job reset; late callback dropped (documented)");
/// A prompt-queue record still on disk when the session ended.
pub const LEFT_ON_DISK: Reason = Reason::new(
    4,
    "left in prompt-queue.jsonl when the session ended (the file outlives the session)",
);
/// SIGTERM's cleanup reset the jobs and ended the session.
pub const TERMINATED: Reason = Reason::new(
    5,
    "the session was terminated (SIGTERM): cleanup killed its jobs and dropped their output (documented)",
);
/// A completion whose wait timed out (reported once), purged by the reset at exit.
pub const TIMED_OUT_AT_EXIT: Reason = Reason::new(
    6,
    "its wait timed out and was reported once; the late completion is purged at exit (documented)",
);
/// Another conversation's completion, purged by the reset at process exit.
pub const OTHER_CONVERSATION: Reason = Reason::new(
    7,
    "another conversation's output, purged when this process exited (not this session's to deliver)",
);
/// A subagent report still queued when the session exited (#3843 waits for shell jobs only).
pub const SUBAGENT_AT_EXIT: Reason = Reason::new(
    8,
    "a subagent report queued when the session exited: #3843 waits for shell jobs only, not subagents (its documented scope)",
);

/// Noninteractive and nothing queued: the chat loop broke out.
pub const QUEUE_EMPTY: EndCause = EndCause {
    code: 0,
    text: "noninteractive and the prompt queue is empty: the loop breaks",
    voluntary: true,
};
/// `SessionCompleteException` (auto-reply after two nudges).
pub const SESSION_COMPLETE: EndCause = EndCause {
    code: 1,
    text: "SessionCompleteException: the session completes",
    voluntary: true,
};
/// SIGTERM: cleanup ran and the process exited.
pub const SIGNAL: EndCause = EndCause {
    code: 2,
    text: "SIGTERM: cleanup runs and the process exits",
    voluntary: false,
};
/// The host's bound on loop iterations ran out.
pub const BOUND: EndCause = EndCause {
    code: 3,
    text: "the loop bound (turns_max) ran out",
    voluntary: false,
};

/// How the gptme CLI's senders are named in timelines and violations: its background jobs by
/// number, the conversation's queue file (regular or steer records), its subagents, and the
/// watches a real gptme's driver may report.
pub fn sender_name(info: &MsgInfo) -> String {
    match info.kind {
        MsgKind::Job => format!("job #{}", u32::from(info.origin) + 1),
        MsgKind::Prompt if info.origin == 0 => "prompt-queue.jsonl".to_string(),
        MsgKind::Prompt => "prompt-queue.jsonl, steer".to_string(),
        MsgKind::Completion | MsgKind::Notification => subagent(info.origin),
        MsgKind::Watch => format!("watch w{}", u32::from(info.origin) + 1),
        MsgKind::Orchestrator => "orchestrator".to_string(),
    }
}
