//! The adapter protocol's messages as types (`docs/protocol.md`, version [`PROTOCOL_VERSION`]).
//!
//! What the simulator writes is serialized from typed values, `type` first. What an adapter
//! writes is read into [`FromAdapter`], one type shared by the three families: every message
//! rejects fields the protocol does not have (`deny_unknown_fields`), so a misspelt field is a
//! protocol fault that names it rather than a field silently ignored. What each message means
//! is its family's business (`family::*::adapter`), and so are the checks on its values that
//! need the run (a ctx handed out, an event put back that was handed out, ...).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this simulator speaks.
pub const PROTOCOL_VERSION: u64 = 1;

// ---- simulator → adapter

/// `{"type":"hello",...}`: the first line to a new process.
#[derive(Serialize)]
#[serde(tag = "type", rename = "hello")]
pub struct Hello<'a> {
    pub protocol: u64,
    /// The family whose API the wake logic is written against.
    pub host: &'a str,
    pub host_version: &'a str,
    pub options: &'a Value,
}

/// `{"type":"reset"}`: start a run.
#[derive(Serialize)]
#[serde(tag = "type", rename = "reset")]
pub struct Reset {}

/// `{"type":"event",...}`: a handler; `E` is the family's event, tagged by `event`.
#[derive(Serialize)]
#[serde(tag = "type", rename = "event")]
pub struct Event<E> {
    #[serde(flatten)]
    pub event: E,
}

/// `{"type":"result","value":...}`: the answer to a query.
#[derive(Serialize)]
#[serde(tag = "type", rename = "result")]
pub struct Answer<T> {
    pub value: T,
}

/// `{"type":"result","error":...}`: a query that failed on the host (pi's stale ctx).
#[derive(Serialize)]
#[serde(tag = "type", rename = "result")]
pub struct Refused<'a> {
    pub error: &'a str,
}

// ---- adapter → simulator

/// Every message an adapter may write, of any family.
#[derive(Deserialize, Debug)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FromAdapter {
    Hello {
        protocol: Option<Value>,
        adapter: Option<String>,
        /// pi: the adapter takes events marked `spec` (answered without blocking on a query, see
        /// `docs/protocol.md`), so the simulator may go on without waiting for their `done`.
        #[serde(default)]
        speculate: Option<bool>,
    },
    Ready {
        events: Vec<String>,
        /// gptme-cli: each hook the module registered, by event.
        #[serde(default)]
        hooks: Option<BTreeMap<String, HookSpec>>,
    },
    /// The handler ended.
    Done {
        /// The module's handler threw (any JSON; shown as text).
        #[serde(default)]
        error: Option<Value>,
        /// pi `input`: `"continue"` or `"handled"`.
        #[serde(default)]
        action: Option<String>,
        /// gptme-cli: what the hook yields, and whether it stops propagation.
        #[serde(default)]
        items: Option<Vec<ItemSpec>>,
        #[serde(default)]
        stop: Option<bool>,
    },
    Error {
        message: Option<String>,
        /// `"load"`: the module under test did not load (a fault of kind `load`).
        #[serde(default)]
        kind: Option<String>,
    },
    // ---- pi calls
    SendMessage {
        #[serde(default)]
        custom_type: Option<String>,
        #[serde(default)]
        carries: Option<Vec<u32>>,
        #[serde(default)]
        deliver_as: Option<String>,
        #[serde(default)]
        trigger_turn: Option<bool>,
    },
    SendUserMessage {
        #[serde(default)]
        carries: Option<Vec<u32>>,
        #[serde(default)]
        deliver_as: Option<String>,
        /// The text the module sent, for the timeline (cut at `USER_MESSAGE_TEXT_BYTES_MAX`);
        /// optional, so an adapter that does not send it still speaks the protocol.
        #[serde(default)]
        text: Option<String>,
    },
    IsIdle {
        ctx: Option<u64>,
        /// The adapter answered from the event's `idle` (`true`, `false` or `"stale_ctx"`).
        #[serde(default)]
        known: Option<Known>,
    },
    SetTimeout {
        timer: u64,
        ms: u64,
    },
    QueueMicrotask {
        timer: u64,
    },
    ClearTimeout {
        timer: u64,
    },
    // ---- gptme-server calls
    RequestWatchWake {
        conversation_id: Option<String>,
        #[serde(default)]
        carries: Option<Vec<u32>>,
    },
    TakeQueuedWatchEvents {
        logdir: Option<String>,
    },
    RequeueWatchEvent {
        logdir: Option<String>,
        #[serde(default)]
        carries: Option<Vec<u32>>,
    },
    QueueWatchEvent {
        logdir: Option<String>,
        #[serde(default)]
        carries: Option<Vec<u32>>,
    },
    TakeQueuedCompletions {
        logdir: Option<String>,
    },
    PutCompletion {
        #[serde(default)]
        carries: Option<Vec<u32>>,
    },
    // ---- gptme-cli calls, and the ends of a blocking hook's segment
    ClaimCompletions {
        conversation_id: Option<String>,
    },
    Jobs {},
    MarkWaitExpired {
        job: Option<u64>,
    },
    TakePrompts {
        max: u64,
    },
    ControlFile {},
    SubagentPending {},
    Unlock {},
    Wait {
        timeout_ms: u64,
    },
}

/// Every `type` of the protocol: the messages of [`FromAdapter`] and the simulator's own (an
/// adapter writing one of those is out of turn). A message whose type is none of these is a call
/// the host does not have.
pub const MESSAGE_TYPES: [&str; 27] = [
    "hello",
    "ready",
    "done",
    "error",
    "send_message",
    "send_user_message",
    "is_idle",
    "set_timeout",
    "queue_microtask",
    "clear_timeout",
    "request_watch_wake",
    "take_queued_watch_events",
    "requeue_watch_event",
    "queue_watch_event",
    "take_queued_completions",
    "put_completion",
    "claim_completions",
    "jobs",
    "mark_wait_expired",
    "take_prompts",
    "control_file",
    "subagent_pending",
    "unlock",
    "wait",
    "result",
    "event",
    "reset",
];

impl FromAdapter {
    /// The message's `type`.
    pub fn name(&self) -> &'static str {
        match self {
            FromAdapter::Hello { .. } => "hello",
            FromAdapter::Ready { .. } => "ready",
            FromAdapter::Done { .. } => "done",
            FromAdapter::Error { .. } => "error",
            FromAdapter::SendMessage { .. } => "send_message",
            FromAdapter::SendUserMessage { .. } => "send_user_message",
            FromAdapter::IsIdle { .. } => "is_idle",
            FromAdapter::SetTimeout { .. } => "set_timeout",
            FromAdapter::QueueMicrotask { .. } => "queue_microtask",
            FromAdapter::ClearTimeout { .. } => "clear_timeout",
            FromAdapter::RequestWatchWake { .. } => "request_watch_wake",
            FromAdapter::TakeQueuedWatchEvents { .. } => "take_queued_watch_events",
            FromAdapter::RequeueWatchEvent { .. } => "requeue_watch_event",
            FromAdapter::QueueWatchEvent { .. } => "queue_watch_event",
            FromAdapter::TakeQueuedCompletions { .. } => "take_queued_completions",
            FromAdapter::PutCompletion { .. } => "put_completion",
            FromAdapter::ClaimCompletions { .. } => "claim_completions",
            FromAdapter::Jobs {} => "jobs",
            FromAdapter::MarkWaitExpired { .. } => "mark_wait_expired",
            FromAdapter::TakePrompts { .. } => "take_prompts",
            FromAdapter::ControlFile {} => "control_file",
            FromAdapter::SubagentPending {} => "subagent_pending",
            FromAdapter::Unlock {} => "unlock",
            FromAdapter::Wait { .. } => "wait",
        }
    }
}

/// What `is_idle`'s `known` says.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(untagged)]
pub enum Known {
    Idle(bool),
    /// `"stale_ctx"` (any other string is a wrong answer).
    Stale(StaleCtx),
}

/// The string `"stale_ctx"`.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaleCtx {
    #[serde(rename = "stale_ctx")]
    StaleCtx,
}

/// A gptme-cli hook as `ready` names it.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    pub name: Option<String>,
    pub priority: Option<i64>,
}

/// A gptme-cli item as `done` names it: content carrying producer messages, or a notice.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct ItemSpec {
    #[serde(default)]
    pub carries: Option<Vec<u32>>,
    #[serde(default)]
    pub notice: Option<String>,
}

/// Just a message's `type`, to tell an unknown call from a known message with bad fields.
#[derive(Deserialize)]
pub struct Tag {
    #[serde(rename = "type")]
    pub ty: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cover_every_message_and_a_message_reads_back_by_its_name() {
        let done: FromAdapter = serde_json::from_str(r#"{"type":"done"}"#).expect("done");
        assert_eq!(done.name(), "done");
        let jobs: FromAdapter = serde_json::from_str(r#"{"type":"jobs"}"#).expect("jobs");
        assert!(MESSAGE_TYPES.contains(&jobs.name()));
        let bad = serde_json::from_str::<FromAdapter>(r#"{"type":"jobs","x":1}"#);
        assert!(bad.is_err(), "unknown fields are refused");
        let known: FromAdapter =
            serde_json::from_str(r#"{"type":"is_idle","ctx":1,"known":"stale_ctx"}"#)
                .expect("is_idle");
        assert!(matches!(
            known,
            FromAdapter::IsIdle {
                known: Some(Known::Stale(_)),
                ..
            }
        ));
    }

    #[test]
    fn the_simulator_writes_type_first() {
        let line = serde_json::to_string(&Answer { value: true }).expect("answer");
        assert_eq!(line, r#"{"type":"result","value":true}"#);
        let line = serde_json::to_string(&Reset {}).expect("reset");
        assert_eq!(line, r#"{"type":"reset"}"#);
    }
}
