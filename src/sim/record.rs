//! What a run records: the messages producers made and a timeline of records.
//!
//! A record is either an *observation* that checkers read (the same vocabulary for every host:
//! produced, appended, model request, idle, starter, run flag, ...) or a host *note* that only
//! narrates (a prompt step, a handler call). Records are small values with ids, never formatted
//! strings, so tracing stays cheap on the hot path; `report` renders them.

pub use crate::sim::hash::{ENCODING, Encode, TraceHasher};
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

/// Who acts in a record; the timeline's second column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Starter {
    /// A `prompt()` (wake or user) reaching `Agent.prompt` at step 12; the number is the prompt's.
    Prompt(u32),
    /// A direct `_runAgentPrompt` from `sendMessage(triggerTurn)`; the number is the run's.
    Direct(u32),
    /// The host's own `agent.continue()` after a retry, compaction or queued message.
    Continue(u32),
}

/// The vocabulary every checker reads, plus host notes for the timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    Pi(crate::family::pi::note::Note),
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
    Gptme(crate::family::gptme_note::Note),
}

impl Ev {
    /// Narration only: checkers never see it.
    pub fn is_note(&self) -> bool {
        matches!(self, Ev::Pi(_) | Ev::Gptme(_))
    }
}

/// Why a host refused a wake: who held the conversation busy, or what failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkOp {
    Started,
    /// It finished and its completion is the message `msg`.
    Finished(MsgId),
    /// A reset (teardown, SIGTERM, exit) popped it before its completion was queued: killed if
    /// still running; its result will never come.
    Killed,
}

/// Why a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub t: Ms,
    pub actor: Actor,
    /// The host's state label at the time (host-specific code; see the host's `state_name`).
    pub state: u8,
    pub ev: Ev,
}

// ---- the trace-hash encoding (see `hash`): explicit tags, never the variant order

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

impl Encode for Actor {
    fn encode(&self, h: &mut TraceHasher) {
        h.tag(match self {
            Actor::Producer => 0,
            Actor::Wake => 1,
            Actor::Host => 2,
            Actor::Fault => 3,
            Actor::User => 4,
            Actor::Check => 5,
        });
    }
}

impl Encode for DropReason {
    fn encode(&self, h: &mut TraceHasher) {
        h.tag(match self {
            DropReason::SessionReplaced => 0,
            DropReason::StormCoalesced => 1,
            DropReason::StormCancelled => 2,
            DropReason::JobReset => 3,
            DropReason::LeftOnDisk => 4,
            DropReason::Terminated => 5,
            DropReason::TimedOutAtExit => 6,
            DropReason::OtherConversation => 7,
            DropReason::SubagentAtExit => 8,
        });
    }
}

impl Encode for Starter {
    fn encode(&self, h: &mut TraceHasher) {
        let (tag, n) = match *self {
            Starter::Prompt(n) => (0, n),
            Starter::Direct(n) => (1, n),
            Starter::Continue(n) => (2, n),
        };
        h.tag(tag);
        h.u32(n);
    }
}

impl Encode for Refusal {
    fn encode(&self, h: &mut TraceHasher) {
        match *self {
            Refusal::Wake(n) => {
                h.tag(0);
                h.u32(n);
            }
            Refusal::Run => h.tag(1),
            Refusal::Tools => h.tag(2),
            Refusal::Command => h.tag(3),
            Refusal::PersistFailed => h.tag(4),
        }
    }
}

impl Encode for WorkOp {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            WorkOp::Started => h.tag(0),
            WorkOp::Finished(msg) => {
                h.tag(1);
                msg.encode(h);
            }
            WorkOp::Killed => h.tag(2),
        }
    }
}

impl Encode for EndCause {
    fn encode(&self, h: &mut TraceHasher) {
        h.tag(match self {
            EndCause::QueueEmpty => 0,
            EndCause::SessionComplete => 1,
            EndCause::Signal => 2,
            EndCause::Bound => 3,
        });
    }
}

impl Encode for Window {
    fn encode(&self, h: &mut TraceHasher) {
        h.tag(match self {
            Window::WakeWhilePreparing => 0,
            Window::ConcurrentPrompts => 1,
            Window::MessageBetweenInnerRuns => 2,
            Window::PromptRacesSettle => 3,
            Window::MessageWhileSettling => 4,
            Window::MessageWhileCompacting => 5,
            Window::StaleCtx => 6,
            Window::WakePromptFailed => 7,
            Window::AtConstantBoundary => 8,
            Window::BurstDrained => 9,
            Window::WakeWhileBusy => 10,
            Window::StormGuard => 11,
            Window::NotifyBeforeWait => 12,
            Window::InputDuringWait => 13,
            Window::ConcurrentDrain => 14,
            Window::WaitTimeout => 15,
            Window::ResetDuringWait => 16,
            Window::PromptsOverCap => 17,
            Window::SameSizeRewrite => 18,
        });
    }
}

impl Encode for Ev {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            Ev::Produced { msg } => {
                h.tag(0);
                msg.encode(h);
            }
            Ev::Appended { msg } => {
                h.tag(1);
                msg.encode(h);
            }
            Ev::Request { req, harness } => {
                h.tag(2);
                h.u32(*req);
                h.bool(*harness);
            }
            Ev::Dropped { msg, reason } => {
                h.tag(3);
                msg.encode(h);
                reason.encode(h);
            }
            Ev::Idle { idle } => {
                h.tag(4);
                h.bool(*idle);
            }
            Ev::Starter { who, accepted } => {
                h.tag(5);
                who.encode(h);
                h.bool(*accepted);
            }
            Ev::RunFlag { on } => {
                h.tag(6);
                h.bool(*on);
            }
            Ev::AgentRun { on } => {
                h.tag(7);
                h.bool(*on);
            }
            Ev::Settled => h.tag(8),
            Ev::Mark(w) => {
                h.tag(9);
                w.encode(h);
            }
            Ev::Pi(note) => {
                h.tag(10);
                note.encode(h);
            }
            Ev::Pass { pass, on } => {
                h.tag(11);
                h.u32(*pass);
                h.bool(*on);
            }
            Ev::Wake {
                pass,
                wake,
                msgs,
                refused,
            } => {
                h.tag(12);
                h.u32(*pass);
                h.u32(*wake);
                msgs.encode(h);
                h.option(refused.as_ref(), |h, r| r.encode(h));
            }
            Ev::Work {
                work,
                shown,
                conv,
                op,
            } => {
                h.tag(13);
                h.u32(*work);
                h.u32(*shown);
                h.u8(*conv);
                op.encode(h);
            }
            Ev::WorkNoticed { work } => {
                h.tag(14);
                h.u32(*work);
            }
            Ev::Waiting { own, foreign } => {
                h.tag(15);
                h.u32(*own);
                h.u32(*foreign);
            }
            Ev::InputInterrupt { input } => {
                h.tag(16);
                h.u64(*input);
            }
            Ev::SessionEnd { cause } => {
                h.tag(17);
                cause.encode(h);
            }
            Ev::OwnerClaimed { msg } => {
                h.tag(18);
                msg.encode(h);
            }
            Ev::Gptme(note) => {
                h.tag(19);
                note.encode(h);
            }
        }
    }
}

impl Encode for Record {
    fn encode(&self, h: &mut TraceHasher) {
        h.u64(self.t.0);
        self.actor.encode(h);
        h.u8(self.state);
        self.ev.encode(h);
    }
}
