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

/// What produced a message: the shared vocabulary of kinds (scenarios and drivers name them).
/// A family decides what each kind means on its hosts (its default delivery options, its
/// senders' names: [`SenderNames`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum MsgKind {
    /// A background helper finished its work and reports the result.
    Completion,
    /// A background helper's notification or question, before it finishes.
    Notification,
    /// A message from whoever orchestrates the session from outside.
    Orchestrator,
    /// A watched condition fired.
    Watch,
    /// A background job finished.
    Job,
    /// A record an outside writer put in the conversation's queue file.
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
    /// The FIFO stream: messages of one source enter the conversation in production order.
    /// The sender itself on a host whose senders each deliver in order, or one of the host's
    /// queues, which several senders share (the family's page in docs/hosts/ says which).
    pub source: u8,
    /// Who sent it, for its name (often `source` itself).
    pub origin: u8,
    /// The conversation it belongs to: 0 is the one under test, others are foreign.
    pub conv: u8,
    /// The stream's name when it is not the sender (a queue the host keeps).
    pub stream: Option<&'static str>,
    pub produced_at: Ms,
    /// How its family names senders ([`MsgInfo::source_name`]), carried with the message so a
    /// checker or a report names it in its host's words without knowing the family.
    pub names: SenderNames,
}

/// A family's names for its messages' senders (a helper by letter, a watch by number): a function of
/// the message, without the conversation (which [`MsgInfo::source_name`] adds alike for every
/// family). The family declares it (`Family::sender_name`); the monitor stamps it on every
/// message its run produces (`Sink::sender_names`). It is part of no message's identity: two
/// messages compare equal whatever their namers, and it enters no trace hash.
#[derive(Clone, Copy)]
pub struct SenderNames(pub fn(&MsgInfo) -> String);

impl SenderNames {
    /// The names of a family that declares none of its own: the kind and the sender's number
    /// (`completion 1`). Unit tests of the bottom layers use it; every family declares its own.
    pub const PLAIN: SenderNames = SenderNames(plain_sender);
}

fn plain_sender(info: &MsgInfo) -> String {
    format!("{} {}", info.kind.name(), u32::from(info.origin) + 1)
}

impl PartialEq for SenderNames {
    /// A namer is how a message is shown, not which message it is.
    fn eq(&self, _other: &SenderNames) -> bool {
        true
    }
}

impl Eq for SenderNames {}

impl std::fmt::Debug for SenderNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SenderNames")
    }
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
    /// A sender that is its own FIFO stream, in the conversation under test.
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
    /// Who sent it, in its family's words, and of which conversation when not the one under
    /// test.
    pub fn source_name(&self) -> String {
        let who = (self.names.0)(self);
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
