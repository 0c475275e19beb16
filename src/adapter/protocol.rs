//! The adapter protocol's messages as types (`docs/protocol.md`, version [`PROTOCOL_VERSION`]).
//!
//! What the simulator writes is serialized from typed values, `type` first. What an adapter
//! writes is read into [`FromAdapter`], one type shared by the three families: every message
//! rejects fields the protocol does not have (`deny_unknown_fields`), so a misspelt field is a
//! protocol fault that names it rather than a field silently ignored. What each message means
//! is its family's business (`family::*::adapter`), and so are the checks on its values that
//! need the run (a ctx handed out, an event put back that was handed out, ...).

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
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

/// Every message an adapter may write: the protocol's frame (`hello`, `ready`, `done`,
/// `error`), the same for every family, or a call of the family whose API the wake logic is
/// written against (`C`, the family's `Family::Call`, declared in its `adapter.rs`). Read by
/// [`parse`]: every message rejects fields the protocol does not have.
#[derive(Debug)]
pub enum FromAdapter<C> {
    Hello {
        protocol: Option<Value>,
        adapter: Option<String>,
        /// The adapter takes events marked `spec` (answered without blocking on a query, see
        /// `docs/protocol.md`), so the simulator may go on without waiting for their `done`.
        speculate: Option<bool>,
    },
    Ready {
        events: Vec<String>,
        /// Each hook the module registered, by event (a family whose API has hooks).
        hooks: Option<BTreeMap<String, HookSpec>>,
    },
    /// The handler ended.
    Done {
        /// The module's handler threw (any JSON; shown as text).
        error: Option<Value>,
        /// What the handler decided, for an event that asks (pi's `input`: `"continue"` or
        /// `"handled"`).
        action: Option<String>,
        /// What a hook yields, and whether it stops propagation (a family whose API has hooks).
        items: Option<Vec<ItemSpec>>,
        stop: Option<bool>,
    },
    Error {
        message: Option<String>,
        /// `"load"`: the module under test did not load (a fault of kind `load`).
        kind: Option<String>,
    },
    /// A call of the family's API.
    Call(C),
}

/// The protocol's frame as read: [`FromAdapter`] without the family's calls.
#[derive(Deserialize, Debug)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Frame {
    Hello {
        protocol: Option<Value>,
        adapter: Option<String>,
        #[serde(default)]
        speculate: Option<bool>,
    },
    Ready {
        events: Vec<String>,
        #[serde(default)]
        hooks: Option<BTreeMap<String, HookSpec>>,
    },
    Done {
        #[serde(default)]
        error: Option<Value>,
        #[serde(default)]
        action: Option<String>,
        #[serde(default)]
        items: Option<Vec<ItemSpec>>,
        #[serde(default)]
        stop: Option<bool>,
    },
    Error {
        message: Option<String>,
        #[serde(default)]
        kind: Option<String>,
    },
}

impl<C> From<Frame> for FromAdapter<C> {
    fn from(f: Frame) -> FromAdapter<C> {
        match f {
            Frame::Hello {
                protocol,
                adapter,
                speculate,
            } => FromAdapter::Hello {
                protocol,
                adapter,
                speculate,
            },
            Frame::Ready { events, hooks } => FromAdapter::Ready { events, hooks },
            Frame::Done {
                error,
                action,
                items,
                stop,
            } => FromAdapter::Done {
                error,
                action,
                items,
                stop,
            },
            Frame::Error { message, kind } => FromAdapter::Error { message, kind },
        }
    }
}

/// A family's adapter calls: an enum read by `type` (`#[serde(tag = "type", rename_all =
/// "snake_case", deny_unknown_fields)]`), declared in the family's `adapter.rs` as its
/// `Family::Call`. The frame and the simulator's own messages are not calls.
pub trait AdapterCall: DeserializeOwned + std::fmt::Debug {
    /// The `type` of every call, so a call of another family (or none) is told from a call of
    /// this one with bad fields.
    const TYPES: &'static [&'static str];
    /// The call's `type`.
    fn name(&self) -> &'static str;
}

/// The calls of a family without an adapter side, or of a moment no call is in turn (the
/// handshake): none.
#[derive(Debug)]
pub enum NoCalls {}

impl<'de> Deserialize<'de> for NoCalls {
    fn deserialize<D: serde::Deserializer<'de>>(_d: D) -> Result<NoCalls, D::Error> {
        Err(serde::de::Error::custom("no call is taken here"))
    }
}

impl AdapterCall for NoCalls {
    const TYPES: &'static [&'static str] = &[];
    fn name(&self) -> &'static str {
        match *self {}
    }
}

/// The `type`s of the frame.
pub const FRAME_TYPES: [&str; 4] = ["hello", "ready", "done", "error"];

/// The `type`s only the simulator writes (an adapter writing one is out of turn).
pub const SIMULATOR_TYPES: [&str; 3] = ["result", "event", "reset"];

impl<C: AdapterCall> FromAdapter<C> {
    /// The message's `type`.
    pub fn name(&self) -> &'static str {
        match self {
            FromAdapter::Hello { .. } => "hello",
            FromAdapter::Ready { .. } => "ready",
            FromAdapter::Done { .. } => "done",
            FromAdapter::Error { .. } => "error",
            FromAdapter::Call(c) => c.name(),
        }
    }
}

/// Why a line is not a message [`parse`] takes.
#[derive(Debug)]
pub enum ParseError {
    /// Not a JSON object.
    NotJson(serde_json::Error),
    /// A JSON object without a string `type`.
    NoType,
    /// A message of the protocol (the frame, a call of this family, or one the simulator writes)
    /// that does not read as one: `type` and what is wrong.
    Bad(String, String),
    /// A `type` that is none of those: a call the family does not have.
    Unknown(String),
}

/// Read one line the adapter wrote, as a message of the frame or a call of `C`.
pub fn parse<C: AdapterCall>(line: &[u8]) -> Result<FromAdapter<C>, ParseError> {
    let tag = serde_json::from_slice::<Tag>(line).map_err(ParseError::NotJson)?;
    let Some(Value::String(ty)) = tag.ty else {
        return Err(ParseError::NoType);
    };
    if FRAME_TYPES.contains(&ty.as_str()) {
        return (serde_json::from_slice::<Frame>(line).map(FromAdapter::from))
            .map_err(|e| ParseError::Bad(ty, e.to_string()));
    }
    if C::TYPES.contains(&ty.as_str()) {
        return (serde_json::from_slice::<C>(line).map(FromAdapter::Call))
            .map_err(|e| ParseError::Bad(ty, e.to_string()));
    }
    if SIMULATOR_TYPES.contains(&ty.as_str()) {
        let why = "a message only the simulator writes".to_string();
        return Err(ParseError::Bad(ty, why));
    }
    Err(ParseError::Unknown(ty))
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

    /// A family's calls, as a family's `adapter.rs` declares them.
    #[derive(Deserialize, Debug)]
    #[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
    enum TestCall {
        Jobs {},
        IsIdle {
            ctx: Option<u64>,
            #[serde(default)]
            known: Option<Known>,
        },
    }

    impl AdapterCall for TestCall {
        const TYPES: &'static [&'static str] = &["jobs", "is_idle"];
        fn name(&self) -> &'static str {
            match self {
                TestCall::Jobs {} => "jobs",
                TestCall::IsIdle { .. } => "is_idle",
            }
        }
    }

    #[test]
    fn names_cover_every_message_and_a_message_reads_back_by_its_name() {
        let done = parse::<TestCall>(br#"{"type":"done"}"#).expect("done");
        assert_eq!(done.name(), "done");
        let jobs = parse::<TestCall>(br#"{"type":"jobs"}"#).expect("jobs");
        assert_eq!(jobs.name(), "jobs");
        let bad = parse::<TestCall>(br#"{"type":"jobs","x":1}"#);
        assert!(
            matches!(bad, Err(ParseError::Bad(ref t, _)) if t == "jobs"),
            "unknown fields are refused: {bad:?}"
        );
        let known = parse::<TestCall>(br#"{"type":"is_idle","ctx":1,"known":"stale_ctx"}"#)
            .expect("is_idle");
        assert!(matches!(
            known,
            FromAdapter::Call(TestCall::IsIdle {
                ctx: Some(1),
                known: Some(Known::Stale(_)),
            })
        ));
    }

    #[test]
    fn another_familys_call_is_unknown_and_the_simulators_own_out_of_turn() {
        let other = parse::<TestCall>(br#"{"type":"put_completion"}"#);
        assert!(matches!(other, Err(ParseError::Unknown(ref t)) if t == "put_completion"));
        let none = parse::<NoCalls>(br#"{"type":"jobs"}"#);
        assert!(matches!(none, Err(ParseError::Unknown(_))));
        let ours = parse::<TestCall>(br#"{"type":"result","value":1}"#);
        assert!(matches!(ours, Err(ParseError::Bad(ref t, _)) if t == "result"));
        assert!(matches!(parse::<TestCall>(b"{}"), Err(ParseError::NoType)));
        assert!(matches!(
            parse::<TestCall>(b"nope"),
            Err(ParseError::NotJson(_))
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
