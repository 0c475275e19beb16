//! pi's own vocabulary in the records: its race windows and its documented drop. Codes are the
//! trace-hash encoding (`sim::hash`, version 1).

use crate::family::common::names::subagent;
use crate::family::common::windows::AT_CONSTANT_BOUNDARY;
use crate::sim::msg::{MsgInfo, MsgKind, SenderNames};
use crate::sim::record::{Reason, Window};

/// The wake logic starts a prompt while another prompt is being prepared.
pub const WAKE_WHILE_PREPARING: Window = Window::new(
    0,
    "wake-while-preparing",
    "a wake prompt starts while another prompt is being prepared",
);
/// Two prompts are in their pre-run phase at once.
pub const CONCURRENT_PROMPTS: Window = Window::new(
    1,
    "concurrent-prompts",
    "two prompts are in their pre-run phase at once",
);
/// A message arrives while a run sits between two inner agent runs.
pub const MESSAGE_BETWEEN_INNER_RUNS: Window = Window::new(
    2,
    "message-between-inner-runs",
    "a message arrives between two inner agent runs of one run",
);
/// A prompt's step-5 check lands while a run is between its last agent_end and settling.
pub const PROMPT_RACES_SETTLE: Window = Window::new(
    3,
    "prompt-races-settle",
    "a prompt's step 5 lands between a run's last agent_end and its settling",
);
/// A message arrives while agent_settled handlers run (deferral).
pub const MESSAGE_WHILE_SETTLING: Window = Window::new(
    4,
    "message-while-settling",
    "a message arrives while agent_settled handlers run",
);
/// A message arrives while the host compacts without a run.
pub const MESSAGE_WHILE_COMPACTING: Window = Window::new(
    5,
    "message-while-compacting",
    "a message arrives while the host compacts without a run",
);
/// The wake logic reads a stale ctx.
pub const STALE_CTX: Window = Window::new(6, "stale-ctx", "the wake logic reads a stale ctx");
/// A wake prompt ends without a run (claimed at input, auth error, rejected at step 5).
pub const WAKE_PROMPT_FAILED: Window =
    Window::new(7, "wake-prompt-failed", "a wake prompt ends without a run");

/// Every window a pi run may mark, by code.
pub const WINDOWS: &[Window] = &[
    WAKE_WHILE_PREPARING,
    CONCURRENT_PROMPTS,
    MESSAGE_BETWEEN_INNER_RUNS,
    PROMPT_RACES_SETTLE,
    MESSAGE_WHILE_SETTLING,
    MESSAGE_WHILE_COMPACTING,
    STALE_CTX,
    WAKE_PROMPT_FAILED,
    AT_CONSTANT_BOUNDARY,
];

/// Session replacement discards what the old session still held (P-7).
pub const SESSION_REPLACED: Reason = Reason::new(0, "session replaced (documented loss, P-7)");

/// How pi's senders are named in timelines and violations: its subagents by letter, and the
/// orchestrator. The other kinds come from no pi host (neither the model's producers nor the
/// driver's peers make them); should one appear, it is named plainly rather than in another
/// host's words.
pub fn sender_name(info: &MsgInfo) -> String {
    match info.kind {
        MsgKind::Completion | MsgKind::Notification => subagent(info.origin),
        MsgKind::Orchestrator => "orchestrator".to_string(),
        MsgKind::Watch | MsgKind::Job | MsgKind::Prompt => (SenderNames::PLAIN.0)(info),
    }
}
