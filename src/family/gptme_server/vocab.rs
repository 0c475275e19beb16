//! The gptme server's own vocabulary in the records: its race windows, documented drops and
//! refusal reasons. Codes are the trace-hash encoding (`sim::hash`, version 1).

use crate::family::common::names::subagent;
use crate::family::common::windows::AT_CONSTANT_BOUNDARY;
use crate::sim::msg::{MsgInfo, MsgKind};
use crate::sim::record::{Reason, Window};

/// A retry drains two or more deferred events at once (G-1's burst).
pub const BURST_DRAINED: Window = Window::new(
    9,
    "burst-drained",
    "a retry drains two or more deferred watch events at once",
);
/// A retry or delivery finds the conversation genuinely busy (G-2, G-4).
pub const WAKE_WHILE_BUSY: Window = Window::new(
    10,
    "wake-while-busy",
    "a wake finds the conversation busy with outside work",
);
/// A watch storm guard coalesces or cancels.
pub const STORM_GUARD: Window = Window::new(
    11,
    "storm-guard",
    "a watch storm guard coalesces or cancels an event",
);

/// The real gptme 0.35.1 only: a watch delivery (or a subagent's notification) wakes the
/// conversation between a step's end (`generating = False` under `step_lock`) and that step's
/// retry of the events deferred before it. The model runs a step's end and its retry as one
/// event, so it cannot have this race (README, "the step-end gap"); `wakesim conform` counts a
/// seed that diverges after it as excluded, not as a divergence.
pub const STEP_END_GAP: Window = Window::new(
    24,
    "step-end-gap",
    "a wake slips between a step's end and its retry of the deferred events (real gptme only)",
);

/// Every window a server run may mark, by code.
pub const WINDOWS: &[Window] = &[
    AT_CONSTANT_BOUNDARY,
    BURST_DRAINED,
    WAKE_WHILE_BUSY,
    STORM_GUARD,
    STEP_END_GAP,
];

/// The windows only the real host has (`Family::UNMODELLED`).
pub const UNMODELLED: &[Window] = &[STEP_END_GAP];

/// The watch storm guard coalesced the event into a marker.
pub const STORM_COALESCED: Reason = Reason::new(1, "storm guard coalesced it (documented)");
/// The watch storm guard auto-cancelled the watch.
pub const STORM_CANCELLED: Reason = Reason::new(2, "storm guard cancelled the watch (documented)");

/// Refused: a run the user or the host started is on.
pub const BUSY_RUN: Reason = Reason::new(
    1,
    "busy: generating (a step the user or a tool call started)",
);
/// Refused: a tool call awaits confirmation or executes.
pub const BUSY_TOOLS: Reason =
    Reason::new(2, "busy: a tool call is pending confirmation or executing");
/// Refused: a slash command owns the conversation.
pub const BUSY_COMMAND: Reason = Reason::new(3, "busy: a slash command owns the conversation");
/// Refused: persisting the message failed; nothing was written.
pub const PERSIST_FAILED: Reason = Reason::new(4, "persisting the message failed (OSError)");

/// How the gptme server's senders are named in timelines and violations: its watches and its
/// subagents, and the words of the other gptme inputs a real gptme's driver may report (jobs,
/// the prompt queue file).
pub fn sender_name(info: &MsgInfo) -> String {
    match info.kind {
        MsgKind::Watch => format!("watch w{}", u32::from(info.origin) + 1),
        MsgKind::Completion | MsgKind::Notification => subagent(info.origin),
        MsgKind::Job => format!("job #{}", u32::from(info.origin) + 1),
        MsgKind::Prompt if info.origin == 0 => "prompt-queue.jsonl".to_string(),
        MsgKind::Prompt => "prompt-queue.jsonl, steer".to_string(),
        MsgKind::Orchestrator => "orchestrator".to_string(),
    }
}
