//! What a run records: the messages producers made and a timeline of records.
//!
//! A record is either an *observation* that checkers read (the same vocabulary for every host:
//! produced, appended, model request, idle, starter, run flag, ...) or a host *note* that only
//! narrates (a prompt step, a handler call). Records are small values with ids, never formatted
//! strings, so tracing stays cheap on the hot path; `report` renders them.

use std::hash::{Hash, Hasher};

use crate::kernel::time::Ms;

/// A producer message, numbered from 0 in production order (rendered `m1`, `m2`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MsgId(pub u32);

impl std::fmt::Display for MsgId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "m{}", self.0 + 1)
    }
}

/// What produced a message. Determines its default delivery options on pi.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
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
}

impl MsgKind {
    pub const ALL: [MsgKind; 5] = [
        MsgKind::Completion,
        MsgKind::Notification,
        MsgKind::Orchestrator,
        MsgKind::Watch,
        MsgKind::Job,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MsgKind::Completion => "completion",
            MsgKind::Notification => "notification",
            MsgKind::Orchestrator => "orchestrator",
            MsgKind::Watch => "watch",
            MsgKind::Job => "job",
        }
    }
}

/// One produced message: who sent it, when. FIFO is judged per source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MsgInfo {
    pub id: MsgId,
    pub kind: MsgKind,
    /// Index of the source (subagent `a`, `b`, ... or the orchestrator).
    pub source: u8,
    pub produced_at: Ms,
}

impl MsgInfo {
    pub fn source_name(&self) -> String {
        match self.kind {
            MsgKind::Orchestrator => "orchestrator".to_string(),
            MsgKind::Watch => format!("watch w{}", self.source + 1),
            MsgKind::Job => format!("job #{}", self.source + 1),
            _ => format!("subagent {}", (b'a' + self.source % 26) as char),
        }
    }
}

/// The producer messages an item carries (a wake marker carries none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
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

/// Who acts in a record; the timeline's second column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Actor {
    Producer,
    Wake,
    Host,
    Fault,
    User,
    Check,
}

impl Actor {
    pub fn name(self) -> &'static str {
        match self {
            Actor::Producer => "producer",
            Actor::Wake => "wake",
            Actor::Host => "host",
            Actor::Fault => "fault",
            Actor::User => "user",
            Actor::Check => "check",
        }
    }
}

/// Why a message was dropped on purpose, as the real system documents it. Not a violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// pi: session replacement discards what the old session still held (P-7).
    SessionReplaced,
    /// gptme: the watch storm guard coalesced it into a marker.
    StormCoalesced,
    /// gptme: the watch storm guard auto-cancelled the watch.
    StormCancelled,
    /// gptme: the job was reset or replaced; its late callback is dropped.
    JobReset,
}

impl DropReason {
    pub fn text(self) -> &'static str {
        match self {
            DropReason::SessionReplaced => "session replaced (documented loss, P-7)",
            DropReason::StormCoalesced => "storm guard coalesced it (documented)",
            DropReason::StormCancelled => "storm guard cancelled the watch (documented)",
            DropReason::JobReset => "job reset; late callback dropped (documented)",
        }
    }
}

/// Who tried to start an agent run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Starter {
    /// A `prompt()` (wake or user) reaching `Agent.prompt` at step 12; the number is the prompt's.
    Prompt(u32),
    /// A direct `_runAgentPrompt` from `sendMessage(triggerTurn)`; the number is the run's.
    Direct(u32),
    /// The host's own `agent.continue()` after a retry, compaction or queued message.
    Continue(u32),
}

/// The vocabulary every checker reads, plus host notes for the timeline.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ev {
    /// A producer made a message.
    Produced { msg: MsgId },
    /// The message entered the conversation the model reads.
    Appended { msg: MsgId },
    /// A model request: every appended message so far is in it.
    Request { req: u32, harness: bool },
    /// Deliberately dropped, as the real system documents.
    Dropped { msg: MsgId, reason: DropReason },
    /// The host became idle (nothing running, preparing, compacting or settling) or stopped being.
    Idle { idle: bool },
    /// An attempt to start an agent run; `accepted` is false when `Agent.prompt` rejected it.
    Starter { who: Starter, accepted: bool },
    /// The session-level run flag (`_isAgentRunActive`) was written.
    RunFlag { on: bool },
    /// The agent-core run (`Agent.activeRun`) began or ended.
    AgentRun { on: bool },
    /// `agent_settled` was emitted.
    Settled,
    /// A named race window was reached (coverage mark).
    Mark(Window),
    /// pi narration.
    Pi(crate::host::pi::note::Note),
}

/// Named race windows: the interleavings wake races live in. Hosts mark each time a run enters
/// one; a scenario can require that its seed budget reaches some (Antithesis "sometimes",
/// FoundationDB's CODE_PROBE), so a budget that never exercises the window fails the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Window {
    /// pi: the wake logic starts a prompt while another prompt is being prepared.
    WakeWhilePreparing,
    /// pi: two prompts are in their pre-run phase at once.
    ConcurrentPrompts,
    /// pi: a message arrives while a run sits between two inner agent runs.
    MessageBetweenInnerRuns,
    /// pi: a prompt's step-5 check lands while a run is between its last agent_end and settling.
    PromptRacesSettle,
    /// pi: a message arrives while agent_settled handlers run (deferral).
    MessageWhileSettling,
    /// pi: a message arrives while the host compacts without a run.
    MessageWhileCompacting,
    /// pi: the wake logic reads a stale ctx.
    StaleCtx,
    /// pi: a wake prompt ends without a run (claimed at input, auth error, rejected at step 5).
    WakePromptFailed,
    /// A message arrives exactly on one of the wake logic's constants (one either side) after
    /// its previous wake: a reservation or grace period boundary.
    AtConstantBoundary,
}

impl Window {
    pub const ALL: [Window; 9] = [
        Window::WakeWhilePreparing,
        Window::ConcurrentPrompts,
        Window::MessageBetweenInnerRuns,
        Window::PromptRacesSettle,
        Window::MessageWhileSettling,
        Window::MessageWhileCompacting,
        Window::StaleCtx,
        Window::WakePromptFailed,
        Window::AtConstantBoundary,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Window::WakeWhilePreparing => "wake-while-preparing",
            Window::ConcurrentPrompts => "concurrent-prompts",
            Window::MessageBetweenInnerRuns => "message-between-inner-runs",
            Window::PromptRacesSettle => "prompt-races-settle",
            Window::MessageWhileSettling => "message-while-settling",
            Window::MessageWhileCompacting => "message-while-compacting",
            Window::StaleCtx => "stale-ctx",
            Window::WakePromptFailed => "wake-prompt-failed",
            Window::AtConstantBoundary => "at-constant-boundary",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Window::WakeWhilePreparing => {
                "a wake prompt starts while another prompt is being prepared"
            }
            Window::ConcurrentPrompts => "two prompts are in their pre-run phase at once",
            Window::MessageBetweenInnerRuns => {
                "a message arrives between two inner agent runs of one run"
            }
            Window::PromptRacesSettle => {
                "a prompt's step 5 lands between a run's last agent_end and its settling"
            }
            Window::MessageWhileSettling => "a message arrives while agent_settled handlers run",
            Window::MessageWhileCompacting => {
                "a message arrives while the host compacts without a run"
            }
            Window::StaleCtx => "the wake logic reads a stale ctx",
            Window::WakePromptFailed => "a wake prompt ends without a run",
            Window::AtConstantBoundary => {
                "a message arrives a constant of the wake logic (±1 ms) after its last wake"
            }
        }
    }

    pub fn from_name(name: &str) -> Option<Window> {
        Window::ALL.into_iter().find(|w| w.name() == name)
    }
}

/// One line of the timeline.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    pub t: Ms,
    pub actor: Actor,
    /// The host's state label at the time (host-specific code; see the host's `state_name`).
    pub state: u8,
    pub ev: Ev,
}

/// A stable word-at-a-time hash for traces (the std hasher is randomly keyed per process). Every
/// field is hashed at a fixed width, so a trace hash is the same in debug and release and on every
/// 64-bit platform.
#[derive(Clone, Copy)]
pub struct TraceHasher(u64);

impl Default for TraceHasher {
    fn default() -> Self {
        TraceHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl TraceHasher {
    #[inline]
    fn mix(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for TraceHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(w));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.mix(u64::from(i));
    }
    fn write_u16(&mut self, i: u16) {
        self.mix(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.mix(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.mix(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.mix(i as u64);
    }
    fn write_isize(&mut self, i: isize) {
        self.mix(i as u64);
    }
}
