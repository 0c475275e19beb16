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
    /// A record an outside writer put in the logdir's `prompt-queue.jsonl` (gptme).
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
            _ => format!("subagent {}", (b'a' + self.origin % 26) as char),
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
    /// gptme: a prompt-queue record still on disk when the session ended.
    LeftOnDisk,
    /// gptme: SIGTERM's cleanup reset the jobs and ended the session.
    Terminated,
    /// gptme: a completion whose wait timed out (reported once) purged by the reset at exit.
    TimedOutAtExit,
    /// gptme: another conversation's completion purged by the reset at process exit.
    OtherConversation,
    /// gptme: a subagent report still queued when the session exited (#3843 waits for shell
    /// jobs only).
    SubagentAtExit,
}

impl DropReason {
    pub fn text(self) -> &'static str {
        match self {
            DropReason::SessionReplaced => "session replaced (documented loss, P-7)",
            DropReason::StormCoalesced => "storm guard coalesced it (documented)",
            DropReason::StormCancelled => "storm guard cancelled the watch (documented)",
            DropReason::JobReset => "job reset; late callback dropped (documented)",
            DropReason::LeftOnDisk => {
                "left in prompt-queue.jsonl when the session ended (the file outlives the session)"
            }
            DropReason::Terminated => {
                "the session was terminated (SIGTERM): cleanup killed its jobs and dropped their output (documented)"
            }
            DropReason::TimedOutAtExit => {
                "its wait timed out and was reported once; the late completion is purged at exit (documented)"
            }
            DropReason::OtherConversation => {
                "another conversation's output, purged when this process exited (not this session's to deliver)"
            }
            DropReason::SubagentAtExit => {
                "a subagent report queued when the session exited: #3843 waits for shell jobs only, not subagents (its documented scope)"
            }
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
    // Observations added with the gptme hosts. New variants go last: a variant's position is
    // part of every trace hash.
    /// A delivery pass of the wake logic begins or ends (gptme: one `retry_deferred_watch_wakes`
    /// or `_deliver` call). Wakes issued inside one pass share its number.
    Pass { pass: u32, on: bool },
    /// A wake request: `refused` is `None` when the host accepted it and started a run for it,
    /// or why it refused, naming who held the conversation busy.
    Wake {
        pass: u32,
        wake: u32,
        msgs: Payload,
        refused: Option<Refusal>,
    },
    /// Owned background work of conversation `conv` changed state. `work` identifies it for the
    /// run; `shown` is the number users see (gptme's per-conversation job id, `#shown`).
    Work {
        work: u32,
        shown: u32,
        conv: u8,
        op: WorkOp,
    },
    /// A notice about owned work entered the conversation in place of its result (a wait that
    /// timed out, reported once).
    WorkNoticed { work: u32 },
    /// The session blocked in its idle wait, with the unfinished work of its own and of other
    /// conversations that the wait could be for.
    Waiting { own: u32, foreign: u32 },
    /// An external input interrupted an idle wait; `input` fingerprints it (the file and a hash
    /// of its contents).
    InputInterrupt { input: u64 },
    /// The session ended, and why.
    SessionEnd { cause: EndCause },
    /// Another conversation's owner took its own message (it is delivered there, not here).
    OwnerClaimed { msg: MsgId },
    /// gptme narration.
    Gptme(crate::host::gptme::note::Note),
}

impl Ev {
    /// Narration only: checkers never see it.
    pub fn is_note(&self) -> bool {
        matches!(self, Ev::Pi(_) | Ev::Gptme(_))
    }
}

/// Why a host refused a wake: who held the conversation busy, or what failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// A run that wake `n` started (its generating flag) is still on.
    Wake(u32),
    /// A run the user or the host started is on.
    Run,
    /// A tool call awaits confirmation or executes.
    Tools,
    /// A slash command owns the conversation.
    Command,
    /// Persisting the message failed; nothing was written.
    PersistFailed,
}

impl Refusal {
    pub fn text(self) -> String {
        match self {
            Refusal::Wake(n) => format!("busy: generating, set by wake #{n}"),
            Refusal::Run => "busy: generating (a step the user or a tool call started)".to_string(),
            Refusal::Tools => "busy: a tool call is pending confirmation or executing".to_string(),
            Refusal::Command => "busy: a slash command owns the conversation".to_string(),
            Refusal::PersistFailed => "persisting the message failed (OSError)".to_string(),
        }
    }
}

/// What happened to a piece of owned background work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkOp {
    Started,
    /// It finished and its completion is the message `msg`.
    Finished(MsgId),
    /// A reset (teardown, SIGTERM, exit) popped it before its completion was queued: killed if
    /// still running; its result will never come.
    Killed,
}

/// Why a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EndCause {
    /// Noninteractive and nothing queued: the chat loop broke out.
    QueueEmpty,
    /// `SessionCompleteException` (auto-reply after two nudges).
    SessionComplete,
    /// SIGTERM: cleanup ran and the process exited.
    Signal,
    /// The host's bound on loop iterations ran out.
    Bound,
}

impl EndCause {
    pub fn text(self) -> &'static str {
        match self {
            EndCause::QueueEmpty => "noninteractive and the prompt queue is empty: the loop breaks",
            EndCause::SessionComplete => "SessionCompleteException: the session completes",
            EndCause::Signal => "SIGTERM: cleanup runs and the process exits",
            EndCause::Bound => "the loop bound (turns_max) ran out",
        }
    }

    /// An end the session chose, rather than one imposed on it from outside.
    pub fn voluntary(self) -> bool {
        matches!(self, EndCause::QueueEmpty | EndCause::SessionComplete)
    }
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
    /// gptme server: a retry drains two or more deferred events at once (G-1's burst).
    BurstDrained,
    /// gptme server: a retry or delivery finds the conversation genuinely busy (G-2, G-4).
    WakeWhileBusy,
    /// gptme server: a watch storm guard coalesces or cancels.
    StormGuard,
    /// gptme CLI: a job completes between the waiter's drain and its wait (G-8).
    NotifyBeforeWait,
    /// gptme CLI: outside input (a prompt, steer, control or subagent record) arrives while the
    /// session waits for its jobs (G-7, G-12).
    InputDuringWait,
    /// gptme CLI: another drain claims a completion while the session waits (G-9).
    ConcurrentDrain,
    /// gptme CLI: the idle wait reaches GPTME_WATCH_IDLE_MAX.
    WaitTimeout,
    /// gptme CLI: a teardown reset while the waiter is inside cond.wait (G-11).
    ResetDuringWait,
    /// gptme CLI: more prompts are queued on disk than one wait may take (100).
    PromptsOverCap,
    /// gptme CLI: control.jsonl is rewritten with new contents of the same size during a wait.
    SameSizeRewrite,
}

impl Window {
    pub const ALL: [Window; 19] = [
        Window::WakeWhilePreparing,
        Window::ConcurrentPrompts,
        Window::MessageBetweenInnerRuns,
        Window::PromptRacesSettle,
        Window::MessageWhileSettling,
        Window::MessageWhileCompacting,
        Window::StaleCtx,
        Window::WakePromptFailed,
        Window::AtConstantBoundary,
        Window::BurstDrained,
        Window::WakeWhileBusy,
        Window::StormGuard,
        Window::NotifyBeforeWait,
        Window::InputDuringWait,
        Window::ConcurrentDrain,
        Window::WaitTimeout,
        Window::ResetDuringWait,
        Window::PromptsOverCap,
        Window::SameSizeRewrite,
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
            Window::BurstDrained => "burst-drained",
            Window::WakeWhileBusy => "wake-while-busy",
            Window::StormGuard => "storm-guard",
            Window::NotifyBeforeWait => "notify-before-wait",
            Window::InputDuringWait => "input-during-wait",
            Window::ConcurrentDrain => "concurrent-drain",
            Window::WaitTimeout => "wait-timeout",
            Window::ResetDuringWait => "reset-during-wait",
            Window::PromptsOverCap => "prompts-over-cap",
            Window::SameSizeRewrite => "same-size-rewrite",
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
            Window::BurstDrained => "a retry drains two or more deferred watch events at once",
            Window::WakeWhileBusy => "a wake finds the conversation busy with outside work",
            Window::StormGuard => "a watch storm guard coalesces or cancels an event",
            Window::NotifyBeforeWait => {
                "a job completes between the waiter's drain and its cond.wait"
            }
            Window::InputDuringWait => "outside input arrives while the session waits for jobs",
            Window::ConcurrentDrain => "another drain claims a completion during the wait",
            Window::WaitTimeout => "the idle wait reaches GPTME_WATCH_IDLE_MAX",
            Window::ResetDuringWait => "a teardown reset while the waiter is in cond.wait",
            Window::PromptsOverCap => "more prompts wait on disk than one wait may take (100)",
            Window::SameSizeRewrite => {
                "control.jsonl is rewritten with new contents of the same size during a wait"
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
