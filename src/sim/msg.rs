//! Producer messages: their ids, kinds and streams, and the payloads that carry them.

use crate::sim::hash::{Encode, TraceHasher};
use crate::sim::time::Ms;

/// A producer message, numbered from 0 in production order (rendered `m1`, `m2`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MsgId(pub u32);

impl std::fmt::Display for MsgId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "m{}", self.0 + 1)
    }
}

/// What produced a message. Determines its default delivery options on pi.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum MsgKind {
    /// A background subagent finished (gentle: `settleCompletion`).
    Completion,
    /// A subagent notification or query (gentle: `onNotification`/`onQuery`).
    Notification,
    /// An incoming orchestrator session message (gentle: delivered as followUp).
    Orchestrator,
    /// A watch firing (gptme: `_fire`).
    Watch,
    /// A background job finishing (gptme: `_notify_completion`).
    Job,
    /// A record an outside writer put in the conversation's queue file (gptme's prompt queue).
    Prompt,
}

impl MsgKind {
    pub const ALL: [MsgKind; 6] = [
        MsgKind::Completion,
        MsgKind::Notification,
        MsgKind::Orchestrator,
        MsgKind::Watch,
        MsgKind::Job,
        MsgKind::Prompt,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MsgKind::Completion => "completion",
            MsgKind::Notification => "notification",
            MsgKind::Orchestrator => "orchestrator",
            MsgKind::Watch => "watch",
            MsgKind::Job => "job",
            MsgKind::Prompt => "prompt",
        }
    }
}

/// One produced message: who sent it, when, and the stream whose order FIFO judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgInfo {
    pub id: MsgId,
    pub kind: MsgKind,
    /// The FIFO stream: messages of one source enter the conversation in production order. On
    /// pi the sender itself (subagent `a`, `b`, ... or the orchestrator); on gptme a queue of one
    /// logdir (its deferred watch events, its subagent completions, its job completions, ...).
    pub source: u8,
    /// Who sent it, for its name: the subagent, watch, job or queue file (on pi, `source`).
    pub origin: u8,
    /// The conversation it belongs to: 0 is the one under test, others are foreign.
    pub conv: u8,
    /// The stream's name when it is not the sender (gptme's per-logdir queues).
    pub stream: Option<&'static str>,
    pub produced_at: Ms,
}

/// Who a new message is from: everything of its `MsgInfo` but the id and the time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgFrom {
    pub kind: MsgKind,
    pub source: u8,
    pub origin: u8,
    pub conv: u8,
    pub stream: Option<&'static str>,
}

impl MsgFrom {
    /// A sender that is its own FIFO stream, in the conversation under test (pi).
    pub fn sender(kind: MsgKind, source: u8) -> MsgFrom {
        MsgFrom {
            kind,
            source,
            origin: source,
            conv: 0,
            stream: None,
        }
    }
}

impl MsgInfo {
    pub fn source_name(&self) -> String {
        let who = match self.kind {
            MsgKind::Orchestrator => "orchestrator".to_string(),
            MsgKind::Watch => format!("watch w{}", self.origin + 1),
            MsgKind::Job => format!("job #{}", self.origin + 1),
            MsgKind::Prompt if self.origin == 0 => "prompt-queue.jsonl".to_string(),
            MsgKind::Prompt => "prompt-queue.jsonl, steer".to_string(),
            MsgKind::Completion | MsgKind::Notification => {
                format!("subagent {}", (b'a' + self.origin % 26) as char)
            }
        };
        match self.conv {
            0 => who,
            c => format!("{who} of conversation {}", conv_name(c)),
        }
    }

    /// The FIFO stream this message belongs to, for reports.
    pub fn stream_name(&self) -> String {
        match self.stream {
            Some(s) => s.to_string(),
            None => self.source_name(),
        }
    }
}

/// Ids as a list, runs of three or more consecutive ids shortened: `m1 m2`, `m4–m104 m200`.
pub fn id_list(ids: &[MsgId]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i + 1;
        while j < ids.len() && ids[j].0 == ids[j - 1].0 + 1 {
            j += 1;
        }
        if j - i >= 3 {
            parts.push(format!("{}–{}", ids[i], ids[j - 1]));
        } else {
            parts.extend(ids[i..j].iter().map(|m| m.to_string()));
        }
        i = j;
    }
    parts.join(" ")
}

/// Conversations are named A (the one under test), B, C, ...
pub fn conv_name(conv: u8) -> char {
    (b'A' + conv % 26) as char
}

/// The producer messages an item carries (a wake marker carries none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Payload {
    #[default]
    None,
    One(MsgId),
    Many(Box<[MsgId]>),
}

impl Payload {
    pub fn from_slice(ids: &[MsgId]) -> Payload {
        match ids {
            [] => Payload::None,
            [one] => Payload::One(*one),
            many => Payload::Many(many.into()),
        }
    }

    pub fn ids(&self) -> &[MsgId] {
        match self {
            Payload::None => &[],
            Payload::One(id) => std::slice::from_ref(id),
            Payload::Many(ids) => ids,
        }
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, Payload::None)
    }
}

// ---- the trace-hash encoding (see `hash`)

impl Encode for MsgId {
    fn encode(&self, h: &mut TraceHasher) {
        h.u32(self.0);
    }
}

impl Encode for Payload {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            Payload::None => h.tag(0),
            Payload::One(id) => {
                h.tag(1);
                id.encode(h);
            }
            Payload::Many(ids) => {
                h.tag(2);
                ids.encode(h);
            }
        }
    }
}
