//! What a run records: a timeline of records, each an *observation* that checkers read or a
//! host family's *note* that only narrates.
//!
//! Observations are the same vocabulary for every host (produced, appended, model request,
//! idle, starter, run flag, ...), so one checker serves every family whose invariant is the same.
//! What only one family knows, it declares itself: its narration (a type implementing [`Note`]),
//! its race windows ([`Window`]), the reasons of its documented drops and refusals ([`Reason`])
//! and how its sessions end ([`EndCause`]). This module names none of them.
//!
//! Records are small values with ids, never formatted strings, so tracing stays cheap on the hot
//! path; `report` renders them.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::sim::hash::Encode;
use crate::sim::msg::{MsgId, Payload};
use crate::sim::time::Ms;

mod encode;

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

/// A family's named reason: why it dropped a message on purpose (as the real system documents
/// it; not a violation), or why it refused a wake. `code` is its trace-hash encoding; within a
/// family each reason has its own.
#[derive(Clone, Copy, Debug)]
pub struct Reason {
    pub code: u8,
    pub text: &'static str,
}

impl Reason {
    pub const fn new(code: u8, text: &'static str) -> Reason {
        Reason { code, text }
    }
}

impl PartialEq for Reason {
    fn eq(&self, other: &Reason) -> bool {
        self.code == other.code
    }
}

impl Eq for Reason {}

/// Who tried to start an agent run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Starter {
    /// A prompt (a wake's or a user's) reaching the host's run starter; the number is the
    /// prompt's. (The families' pages name each host's starter: docs/hosts/.)
    Prompt(u32),
    /// A run the host starts directly for a message that asks for one, without a prompt; the
    /// number is the run's.
    Direct(u32),
    /// The host's own continuation of its agent after a retry, compaction or queued message.
    Continue(u32),
}

/// Why a host refused a wake: a wake it accepted earlier still holds the conversation (what
/// NO-SELF-REFUSAL judges), or another reason the family names (its codes start at 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A run that wake `n` started is still on.
    Wake(u32),
    Other(Reason),
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

/// Why a session ended, as its family names it. `voluntary` ends are the session's own choice
/// (ALIVE-WHILE-OWED judges them), the others are imposed from outside.
#[derive(Clone, Copy, Debug)]
pub struct EndCause {
    pub code: u8,
    pub text: &'static str,
    pub voluntary: bool,
}

impl PartialEq for EndCause {
    fn eq(&self, other: &EndCause) -> bool {
        self.code == other.code
    }
}

impl Eq for EndCause {}

/// A named race window: an interleaving wake races live in. Hosts mark each time a run enters
/// one; a scenario can require that its seed budget reaches some (Antithesis "sometimes",
/// FoundationDB's CODE_PROBE), so a budget that never exercises the window fails the gate.
/// Families declare their windows; `code` is the trace-hash encoding and the monitor's index
/// (below `limits::WINDOW_CODES_MAX`).
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub code: u8,
    pub name: &'static str,
    pub describe: &'static str,
}

impl Window {
    pub const fn new(code: u8, name: &'static str, describe: &'static str) -> Window {
        Window {
            code,
            name,
            describe,
        }
    }
}

impl PartialEq for Window {
    fn eq(&self, other: &Window) -> bool {
        self.code == other.code
    }
}

impl Eq for Window {}

/// What a note is to a reader of the timeline and to a diagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The host calls into the wake logic (a handler).
    Handler,
    /// The wake logic calls the host.
    Call,
    Plain,
}

/// How a note fares in a run's *story* (the timeline reduced to what a reader needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InStory {
    Keep,
    Drop,
    /// A handler entry: the wake logic's calls that follow are shown as `[context] call` (no
    /// context: shown bare) until another actor acts; the entry itself is shown if `keep`.
    Enters {
        context: Option<&'static str>,
        keep: bool,
    },
}

/// A host family's narration: records for people, which checkers never see.
pub trait Note: Encode + Clone + fmt::Debug + PartialEq + Send + Sync + 'static {
    /// The tag a narration record has in the trace-hash encoding (version 1 kept the tags the
    /// families' narrations had before it; `record/encode.rs` lists the tags taken).
    const TAG: u64;
    fn render(&self) -> String;
    fn role(&self) -> Role;
    fn in_story(&self) -> InStory;
}

/// The vocabulary every checker reads, plus the family's notes `N` for the timeline. Records
/// of a finished run are kept with their notes type-erased (`Narration`), so every report and
/// the engine handle every family alike.
#[derive(Clone, Debug, PartialEq)]
pub enum Ev<N = Narration> {
    /// A producer made a message.
    Produced { msg: MsgId },
    /// The message entered the conversation the model reads.
    Appended { msg: MsgId },
    /// A model request: every appended message so far is in it.
    Request { req: u32, harness: bool },
    /// Deliberately dropped, as the real system documents.
    Dropped { msg: MsgId, reason: Reason },
    /// The host became idle (nothing running, preparing, compacting or settling) or stopped being.
    Idle { idle: bool },
    /// An attempt to start an agent run; `accepted` is false when the host's run starter
    /// rejected it (another run was active).
    Starter { who: Starter, accepted: bool },
    /// The host's session-level "a run is active" flag was written (docs/hosts/ names each
    /// host's).
    RunFlag { on: bool },
    /// The agent core's own run (below the session's flag) began or ended.
    AgentRun { on: bool },
    /// The host announced that its agent settled: nothing runs and nothing is queued.
    Settled,
    /// A named race window was reached (coverage mark).
    Mark(Window),
    /// The family's narration.
    Note(N),
    /// A delivery pass of the wake logic begins or ends (one call of the host's retry or
    /// delivery routine). Wakes issued inside one pass share its number.
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
    /// run; `shown` is the number users see (a per-conversation job number, say).
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
    /// No thread of the host can ever run again while `threads` are unfinished: every one is
    /// blocked with nothing timed to wake it, or waits for a lock whose holder died. A real host
    /// under a thread scheduler reports it as its run's end; the run cannot go on.
    Deadlock { threads: u32 },
    /// A prompt was sent into the host: by the wake logic (`from_wake`) or by the user.
    /// `Starter::Prompt(prompt)` names it when it reaches the host's run starter. NO-WASTED-WAKE
    /// reads it.
    PromptSent { prompt: u32, from_wake: bool },
    /// Outside input the idle wait polls for changed: records an outside writer added to the
    /// conversation's queue file, a control file written with new contents (of the same size
    /// too), a helper's report. `input` fingerprints it as `InputInterrupt` does. INPUT-HEARD
    /// reads it.
    InputChanged { input: u64 },
    /// The idle wait's hook returned (it yielded what ended the wait, or nothing): the session
    /// is no longer waiting. INPUT-HEARD reads it.
    WaitEnded,
    /// The host reported that a session operation that holds the conversation (a move in the
    /// session's tree, or a compaction, done or failed) ended: the host is free again, and a
    /// wake logic that held content over it can send it now. A cancelled move reports nothing.
    /// BOUNDARY-FLUSH reads it.
    Boundary { tree: bool },
    /// Model request `req` went out with something other than a tool result between a tool
    /// call and its result in its context (`msg`: the producer message that entry carries, if
    /// any): providers that validate message order reject such a history when it is replayed.
    /// TOOL-PAIRING reads it.
    Interleaved { req: u32, msg: Option<MsgId> },
}

/// The kind of an observation, without its fields: what a checker declares it reads
/// (`check::Checker::READS`, a mask of `1 << kind`), so the monitor calls it only for those.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EvKind {
    Produced,
    Appended,
    Request,
    Dropped,
    Idle,
    Starter,
    RunFlag,
    AgentRun,
    Settled,
    Mark,
    Note,
    Pass,
    Wake,
    Work,
    WorkNoticed,
    Waiting,
    InputInterrupt,
    SessionEnd,
    OwnerClaimed,
    Deadlock,
    PromptSent,
    InputChanged,
    WaitEnded,
    Boundary,
    Interleaved,
}

impl<N> Ev<N> {
    /// Narration only: checkers never see it.
    pub fn is_note(&self) -> bool {
        matches!(self, Ev::Note(_))
    }

    /// Its kind.
    #[inline]
    pub fn kind(&self) -> EvKind {
        match self {
            Ev::Produced { .. } => EvKind::Produced,
            Ev::Appended { .. } => EvKind::Appended,
            Ev::Request { .. } => EvKind::Request,
            Ev::Dropped { .. } => EvKind::Dropped,
            Ev::Idle { .. } => EvKind::Idle,
            Ev::Starter { .. } => EvKind::Starter,
            Ev::RunFlag { .. } => EvKind::RunFlag,
            Ev::AgentRun { .. } => EvKind::AgentRun,
            Ev::Settled => EvKind::Settled,
            Ev::Mark(_) => EvKind::Mark,
            Ev::Note(_) => EvKind::Note,
            Ev::Pass { .. } => EvKind::Pass,
            Ev::Wake { .. } => EvKind::Wake,
            Ev::Work { .. } => EvKind::Work,
            Ev::WorkNoticed { .. } => EvKind::WorkNoticed,
            Ev::Waiting { .. } => EvKind::Waiting,
            Ev::InputInterrupt { .. } => EvKind::InputInterrupt,
            Ev::SessionEnd { .. } => EvKind::SessionEnd,
            Ev::OwnerClaimed { .. } => EvKind::OwnerClaimed,
            Ev::Deadlock { .. } => EvKind::Deadlock,
            Ev::PromptSent { .. } => EvKind::PromptSent,
            Ev::InputChanged { .. } => EvKind::InputChanged,
            Ev::WaitEnded => EvKind::WaitEnded,
            Ev::Boundary { .. } => EvKind::Boundary,
            Ev::Interleaved { .. } => EvKind::Interleaved,
        }
    }
}

impl<N: Note> Ev<N> {
    /// The same record with its note type-erased.
    pub fn erase(self) -> Ev {
        self.map_note(Narration::new)
    }
}

impl<N> Ev<N> {
    /// The same record with its note mapped by `f` (an observation is kept as it is): what
    /// replays a kept trace's observations into a monitor of another note type (the checkers'
    /// benchmark in `benches/kernel.rs`).
    pub fn map_note<M>(self, f: impl FnOnce(N) -> M) -> Ev<M> {
        match self {
            Ev::Produced { msg } => Ev::Produced { msg },
            Ev::Appended { msg } => Ev::Appended { msg },
            Ev::Request { req, harness } => Ev::Request { req, harness },
            Ev::Dropped { msg, reason } => Ev::Dropped { msg, reason },
            Ev::Idle { idle } => Ev::Idle { idle },
            Ev::Starter { who, accepted } => Ev::Starter { who, accepted },
            Ev::RunFlag { on } => Ev::RunFlag { on },
            Ev::AgentRun { on } => Ev::AgentRun { on },
            Ev::Settled => Ev::Settled,
            Ev::Mark(w) => Ev::Mark(w),
            Ev::Note(n) => Ev::Note(f(n)),
            Ev::Pass { pass, on } => Ev::Pass { pass, on },
            Ev::Wake {
                pass,
                wake,
                msgs,
                refused,
            } => Ev::Wake {
                pass,
                wake,
                msgs,
                refused,
            },
            Ev::Work {
                work,
                shown,
                conv,
                op,
            } => Ev::Work {
                work,
                shown,
                conv,
                op,
            },
            Ev::WorkNoticed { work } => Ev::WorkNoticed { work },
            Ev::Waiting { own, foreign } => Ev::Waiting { own, foreign },
            Ev::InputInterrupt { input } => Ev::InputInterrupt { input },
            Ev::SessionEnd { cause } => Ev::SessionEnd { cause },
            Ev::OwnerClaimed { msg } => Ev::OwnerClaimed { msg },
            Ev::Deadlock { threads } => Ev::Deadlock { threads },
            Ev::PromptSent { prompt, from_wake } => Ev::PromptSent { prompt, from_wake },
            Ev::InputChanged { input } => Ev::InputChanged { input },
            Ev::WaitEnded => Ev::WaitEnded,
            Ev::Boundary { tree } => Ev::Boundary { tree },
            Ev::Interleaved { req, msg } => Ev::Interleaved { req, msg },
        }
    }
}

/// One line of the timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct Record<N = Narration> {
    pub t: Ms,
    pub actor: Actor,
    /// The host's state label at the time (the family's code; see its `state_name`).
    pub state: u8,
    pub ev: Ev<N>,
}

impl<N: Note> Record<N> {
    /// The same record with its note type-erased.
    pub fn erase(self) -> Record {
        Record {
            t: self.t,
            actor: self.actor,
            state: self.state,
            ev: self.ev.erase(),
        }
    }
}

/// A note of any family, type-erased: what the records of a finished run hold.
#[derive(Clone)]
pub struct Narration(Arc<dyn AnyNote>);

/// What [`Narration`] needs of a note, object-safe.
trait AnyNote: Any + Send + Sync {
    fn render(&self) -> String;
    fn role(&self) -> Role;
    fn in_story(&self) -> InStory;
    fn same(&self, other: &dyn AnyNote) -> bool;
    fn debug(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
    fn as_any(&self) -> &dyn Any;
}

impl<N: Note> AnyNote for N {
    fn render(&self) -> String {
        Note::render(self)
    }
    fn role(&self) -> Role {
        Note::role(self)
    }
    fn in_story(&self) -> InStory {
        Note::in_story(self)
    }
    fn same(&self, other: &dyn AnyNote) -> bool {
        other.as_any().downcast_ref::<N>() == Some(self)
    }
    fn debug(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Narration {
    pub fn new<N: Note>(note: N) -> Narration {
        Narration(Arc::new(note))
    }

    /// The family's note, if it is of type `N`.
    pub fn downcast_ref<N: Note>(&self) -> Option<&N> {
        (*self.0).as_any().downcast_ref()
    }

    pub fn render(&self) -> String {
        self.0.render()
    }

    pub fn role(&self) -> Role {
        self.0.role()
    }

    pub fn in_story(&self) -> InStory {
        self.0.in_story()
    }
}

impl PartialEq for Narration {
    fn eq(&self, other: &Narration) -> bool {
        self.0.same(&*other.0)
    }
}

impl fmt::Debug for Narration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.debug(f)
    }
}
