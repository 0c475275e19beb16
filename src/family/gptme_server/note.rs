//! The gptme server's narration: the records of a server timeline and how they read.
//! Observations (appends, model requests, wakes) are rendered by `report`.

use crate::family::common::bracketed as payload;
use crate::family::common::conv::ConvId;
use crate::family::common::host_states;
use crate::sim::msg::{MsgId, Payload};
use crate::sim::record::{self, InStory, Refusal, Role};

host_states! {
    /// Server states, as the timeline's last column shows them: idle; a session generating; a tool
    /// call awaiting confirmation or executing; a slash command owning the conversation.
    pub enum ServerState {
        Idle = 0 => "IDLE", Generating = 1 => "GENERATING", Tools = 2 => "TOOLS",
        Command = 3 => "COMMAND",
    }
}

/// Who set a session's `generating` flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepOrigin {
    /// `request_watch_wake` #n reserved the step.
    Wake(u32),
    /// The user sent a message.
    User,
    /// The step thread continues after tool calls.
    AfterTools,
}

/// What `request_watch_wake` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeResult {
    Accepted { session: u8, dispatched: bool },
    Refused(Refusal),
}

/// Why the server called `retry_deferred_watch_wakes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryCause {
    /// A step of session `n` completed.
    StepCompletion(u8),
    FinishCommand,
}

/// How a server step's reply ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    Done,
    ToolNeedsConfirmation,
    ToolCalls,
}

/// One gptme-server narration record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    ServerStart {
        sessions: u8,
        watch_tool: bool,
    },
    /// The watch thread calls `_deliver` (a handler call into the wake logic).
    Deliver {
        cid: ConvId,
        msg: MsgId,
    },
    Retry {
        cid: ConvId,
        cause: RetryCause,
    },
    /// A subagent finished: `notify_completion` wakes its parent through `_notify_server`
    /// (`request_watch_wake` with the completion) and queues it only when that wake is refused.
    NotifyCompletion {
        cid: ConvId,
        msg: MsgId,
    },
    RequestWake {
        cid: ConvId,
        wake: u32,
        payload: Payload,
        result: WakeResult,
    },
    /// A take call removed these from its queue.
    Take {
        call: &'static str,
        payload: Payload,
    },
    Requeue {
        msg: MsgId,
    },
    Defer {
        msg: MsgId,
    },
    PutCompletion {
        msg: MsgId,
    },
    StepStart {
        session: u8,
        origin: StepOrigin,
    },
    /// A STEP_PRE hook appended what it yielded.
    StepPre {
        hook: &'static str,
        payload: Payload,
    },
    Reply {
        session: u8,
        reply: Reply,
    },
    Confirmed {
        session: u8,
    },
    /// The confirmed tool call's thread finished (`start_tool_execution`, not reserved): it
    /// elected a continuation step, or found the conversation busy and started none.
    ToolDone {
        session: u8,
        continued: bool,
    },
    Storm {
        watch: u8,
        cancelled: bool,
    },
    UserMessage {
        session: u8,
    },
    Command {
        finished: bool,
    },
    /// A watch event fires in a lock gap of the retry, after `call` returned.
    LockGap {
        call: &'static str,
        msg: MsgId,
    },
}

/// Why a wake was refused, in words.
pub fn refusal_text(r: &Refusal) -> String {
    match r {
        Refusal::Wake(n) => format!("busy: generating, set by wake #{n}"),
        Refusal::Other(reason) => reason.text.to_string(),
    }
}

impl record::Note for Note {
    const TAG: u64 = 19;

    fn render(&self) -> String {
        match self {
            Note::ServerStart {
                sessions,
                watch_tool,
            } => format!(
                "conversation A: {} session{}; watch tool {}",
                sessions,
                if *sessions == 1 { "" } else { "s" },
                if *watch_tool {
                    "loaded (STEP_PRE drains deferred events)"
                } else {
                    "not loaded"
                }
            ),
            Note::Deliver { cid, msg } => format!("_deliver({msg}) for conversation {cid}"),
            Note::NotifyCompletion { cid, msg } => {
                format!("notify_completion({msg}): _notify_server wakes conversation {cid}")
            }
            Note::Retry { cid, cause } => {
                format!("retry_deferred_watch_wakes({cid}): {}", cause.text())
            }
            Note::RequestWake {
                cid,
                wake,
                payload: p,
                result,
            } => {
                let call = format!("request_watch_wake({cid}, {}) = wake #{wake}", payload(p));
                format!("{call} → {}", result.text())
            }
            Note::Take { call, payload: p } => {
                format!("{call} → {} (removed from the queue)", payload(p))
            }
            Note::Requeue { msg } => format!("requeue_watch_event({msg}): back at the head"),
            Note::Defer { msg } => format!("{msg} deferred: appended to _pending_deliveries"),
            Note::PutCompletion { msg } => {
                format!("_completion_queue.put({msg}): at the tail")
            }
            Note::StepStart { session, origin } => {
                format!("S{session} step starts ({})", origin.text())
            }
            Note::StepPre { hook, payload: p } => {
                format!("STEP_PRE {hook} appends {}", payload(p))
            }
            Note::Reply { session, reply } => format!("S{session} reply: {}", reply.text()),
            Note::Confirmed { session } => {
                format!("confirms S{session}'s tool call: its tool thread starts")
            }
            Note::ToolDone {
                session,
                continued: true,
            } => format!("S{session}'s confirmed tool ran; conversation free: a step continues"),
            Note::ToolDone {
                session,
                continued: false,
            } => format!(
                "S{session}'s confirmed tool ran; conversation busy: no continuation step (the output waits in the log)"
            ),
            Note::Storm { watch, cancelled } => {
                let w = watch + 1;
                if *cancelled {
                    format!("w{w}: storm guard auto-cancels the watch (>200 events in 5 min)")
                } else {
                    format!("w{w}: storm guard coalesces (20+ events in 20 s): marker recorded")
                }
            }
            Note::UserMessage { session } => format!("sends a message on S{session}"),
            Note::Command { finished: false } => {
                "runs a slash command: it owns the conversation".to_string()
            }
            Note::Command { finished: true } => "finish_command".to_string(),
            Note::LockGap { call, msg } => {
                format!("{msg}'s watch fires in the retry's lock gap, after {call} returned")
            }
        }
    }

    fn role(&self) -> Role {
        match self {
            Note::Deliver { .. } | Note::Retry { .. } | Note::NotifyCompletion { .. } => {
                Role::Handler
            }
            Note::RequestWake { .. }
            | Note::Take { .. }
            | Note::Requeue { .. }
            | Note::Defer { .. }
            | Note::PutCompletion { .. } => Role::Call,
            _ => Role::Plain,
        }
    }

    fn in_story(&self) -> InStory {
        InStory::Keep
    }
}

impl RetryCause {
    fn text(&self) -> String {
        match self {
            RetryCause::StepCompletion(s) => format!("S{s}'s step completed"),
            RetryCause::FinishCommand => "finish_command".to_string(),
        }
    }
}

impl WakeResult {
    fn text(&self) -> String {
        match self {
            WakeResult::Accepted {
                session,
                dispatched: true,
            } => format!("True: persisted; S{session} generating; step thread starts"),
            WakeResult::Accepted {
                session,
                dispatched: false,
            } => format!(
                "True: persisted, but S{session}'s step thread failed to start (generating undone)"
            ),
            WakeResult::Refused(r) => format!("False ({})", refusal_text(r)),
        }
    }
}

impl StepOrigin {
    fn text(&self) -> String {
        match self {
            StepOrigin::Wake(n) => format!("woken by wake #{n}"),
            StepOrigin::User => "the user's message".to_string(),
            StepOrigin::AfterTools => "after tool calls".to_string(),
        }
    }
}

impl Reply {
    fn text(&self) -> &'static str {
        match self {
            Reply::Done => "no tool call; step completes, generating off",
            Reply::ToolNeedsConfirmation => {
                "a tool call awaits confirmation; step ends, generating off, pending_tools on"
            }
            Reply::ToolCalls => "tool calls execute",
        }
    }
}
