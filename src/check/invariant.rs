//! The invariants: their names and descriptions, sets of them, a violation, and the parameters
//! the checkers read. The monitor and the checkers (`check/mod.rs` and one file per invariant)
//! judge them.

use std::fmt;

use crate::sim::msg::MsgId;
use crate::sim::time::Ms;

/// The invariants wakesim checks (`docs/hosts/gentle-agents.md`, `docs/invariants.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Invariant {
    NoLoss,
    ExactlyOnce,
    Fifo,
    BoundedLatency,
    SingleStarter,
    FlagCoherence,
    Harness,
    NoSelfRefusal,
    AliveWhileOwed,
    NoSpin,
    Isolation,
    NoDeadlock,
    NoWastedWake,
    InputHeard,
    BoundaryFlush,
    ToolPairing,
}

impl Invariant {
    pub const ALL: [Invariant; 16] = [
        Invariant::NoLoss,
        Invariant::ExactlyOnce,
        Invariant::Fifo,
        Invariant::BoundedLatency,
        Invariant::SingleStarter,
        Invariant::FlagCoherence,
        Invariant::Harness,
        Invariant::NoSelfRefusal,
        Invariant::AliveWhileOwed,
        Invariant::NoSpin,
        Invariant::Isolation,
        Invariant::NoDeadlock,
        Invariant::NoWastedWake,
        Invariant::InputHeard,
        Invariant::BoundaryFlush,
        Invariant::ToolPairing,
    ];

    /// The name used in scenario files, reports and `wakesim list`.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::NoLoss => "no-loss",
            Invariant::ExactlyOnce => "exactly-once",
            Invariant::Fifo => "fifo",
            Invariant::BoundedLatency => "bounded-latency",
            Invariant::SingleStarter => "single-starter",
            Invariant::FlagCoherence => "flag-coherence",
            Invariant::Harness => "harness",
            Invariant::NoSelfRefusal => "no-self-refusal",
            Invariant::AliveWhileOwed => "alive-while-owed",
            Invariant::NoSpin => "no-spin",
            Invariant::Isolation => "isolation",
            Invariant::NoDeadlock => "no-deadlock",
            Invariant::NoWastedWake => "no-wasted-wake",
            Invariant::InputHeard => "input-heard",
            Invariant::BoundaryFlush => "boundary-flush",
            Invariant::ToolPairing => "tool-pairing",
        }
    }

    pub fn statement(self) -> &'static str {
        match self {
            Invariant::NoLoss => {
                "every produced message not dropped by a documented guard reaches a model request"
            }
            Invariant::ExactlyOnce => "no message enters the conversation twice",
            Invariant::Fifo => "messages of one source enter the conversation in production order",
            Invariant::BoundedLatency => {
                "a pending message waits at most latency_ms_max while the host is idle, and rides \
                 one of the next latency_requests_max model requests"
            }
            Invariant::SingleStarter => {
                "never two starters at Agent.prompt: no run is rejected as 'already processing'"
            }
            Invariant::FlagCoherence => {
                "the run flag is true while an agent run is active; agent_settled never fires during one"
            }
            Invariant::Harness => "every model request carries what before_agent_start added",
            Invariant::NoSelfRefusal => {
                "a wake is never refused as busy because of a wake issued earlier in the same drain"
            }
            Invariant::AliveWhileOwed => {
                "a session does not end on its own while it owns a job whose result has not reached \
                 the model, unless a timeout notice for that job was reported"
            }
            Invariant::NoSpin => {
                "the same unchanged outside input interrupts an idle wait at most once"
            }
            Invariant::Isolation => {
                "another conversation's output never enters this one, and its jobs never hold this \
                 session's wait open"
            }
            Invariant::NoDeadlock => {
                "the host never reaches a point where no thread can run again while one is \
                 unfinished (all blocked, or one waiting for a lock whose holder died)"
            }
            Invariant::NoWastedWake => {
                "a run a wake prompt starts delivers a message with its first model request: no \
                 model call for nothing"
            }
            Invariant::InputHeard => {
                "outside input that changes while the session sits in its idle wait (prompt-queue \
                 or steer records, a rewritten control.jsonl, a subagent report) ends the wait \
                 within input_ms_max, the host's poll period"
            }
            Invariant::BoundaryFlush => {
                "a message owed when pi reports a /tree or /compact ended (session_tree, \
                 session_compact) waits at most boundary_ms_max idle after it (judged where a \
                 scenario sets the bound)"
            }
            Invariant::ToolPairing => {
                "no model request's context has another entry between a tool call and its result \
                 (a message the wake logic sent lands after the turn's tool results)"
            }
        }
    }

    pub fn from_name(name: &str) -> Option<Invariant> {
        Invariant::ALL.into_iter().find(|i| i.name() == name)
    }

    /// A liveness invariant breaks at the end of a run (or when a bound is crossed), not at an
    /// instant: a story of its violation is the whole run, and shrinking measures all of it.
    pub fn is_liveness(self) -> bool {
        match self {
            Invariant::NoLoss | Invariant::BoundedLatency | Invariant::BoundaryFlush => true,
            Invariant::ExactlyOnce
            | Invariant::Fifo
            | Invariant::SingleStarter
            | Invariant::FlagCoherence
            | Invariant::Harness
            | Invariant::NoSelfRefusal
            | Invariant::AliveWhileOwed
            | Invariant::NoSpin
            | Invariant::Isolation
            | Invariant::NoDeadlock
            | Invariant::NoWastedWake
            | Invariant::InputHeard
            | Invariant::ToolPairing => false,
        }
    }

    pub(super) const fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A broken invariant: which, when, about which message, and what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub invariant: Invariant,
    pub t: Ms,
    pub msg: Option<MsgId>,
    pub detail: String,
}

/// Bounds the checkers judge against; a scenario may override the latency bounds, and a family
/// derives what it can from the scenario's host parameters (`DerivedBounds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckParams {
    pub latency_ms_max: u64,
    pub latency_requests_max: u32,
    /// INPUT-HEARD: how long an idle wait may go on after its outside input changed. Always
    /// derived from the host's poll period (the default is gptme-cli's at its default timing:
    /// the 1 s cap, a 2 ms wake-up, 5 ms of file I/O).
    pub input_ms_max: u64,
    /// ALIVE-WHILE-OWED: how long a wait must have lasted for its timeout notice to excuse the
    /// job it names (the host's documented wait, derived; 0 where the family derives none).
    pub notice_wait_ms_min: u64,
    /// BOUNDARY-FLUSH: how long a message owed when the host reports a /tree or a compaction
    /// done may wait idle after it (`[check] boundary_ms_max`; `None`: not judged).
    pub boundary_ms_max: Option<u64>,
}

impl Default for CheckParams {
    fn default() -> Self {
        CheckParams {
            latency_ms_max: 40_000,
            latency_requests_max: 8,
            input_ms_max: 1_007,
            notice_wait_ms_min: 0,
            boundary_ms_max: None,
        }
    }
}

/// Bounds a family derives from a scenario's host parameters (issue 15, class 1: a bound looser
/// than the host's own wait cannot catch a missed wait, so bounds follow from the documented
/// waits).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivedBounds {
    /// BOUNDED-LATENCY's idle bound when every documented wait is kept: what a scenario that
    /// sets no `latency_ms_max` is judged by.
    pub latency_ms_max: u64,
    /// How `latency_ms_max` is derived (for errors and `list`).
    pub latency_why: String,
    /// The host's own longest wait and its name: a `latency_ms_max` at or above it passes a
    /// wait missed until that wait times out, and is refused.
    pub host_wait_ms: u64,
    pub host_wait: &'static str,
    /// INPUT-HEARD's bound: the host's poll period.
    pub input_ms_max: u64,
    /// ALIVE-WHILE-OWED: the shortest wait whose timeout notice excuses its job.
    pub notice_wait_ms_min: u64,
}

/// A set of invariants, as a bit mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InvariantSet(pub(super) u32);

impl InvariantSet {
    pub const fn of(list: &[Invariant]) -> InvariantSet {
        let mut mask = 0;
        let mut i = 0;
        while i < list.len() {
            mask |= list[i].bit();
            i += 1;
        }
        InvariantSet(mask)
    }

    /// The delivery invariants every host is judged by (NO-LOSS, EXACTLY-ONCE, FIFO,
    /// BOUNDED-LATENCY: the observations are host-agnostic), and `own`, a family's own.
    pub const fn delivery_and(own: &[Invariant]) -> InvariantSet {
        let delivery = InvariantSet::of(&[
            Invariant::NoLoss,
            Invariant::ExactlyOnce,
            Invariant::Fifo,
            Invariant::BoundedLatency,
        ]);
        InvariantSet(delivery.0 | InvariantSet::of(own).0)
    }

    pub fn contains(self, i: Invariant) -> bool {
        self.0 & i.bit() != 0
    }

    /// This set without `i`.
    pub const fn without(self, i: Invariant) -> InvariantSet {
        InvariantSet(self.0 & !i.bit())
    }
    pub fn iter(self) -> impl Iterator<Item = Invariant> {
        Invariant::ALL
            .into_iter()
            .filter(move |i| self.contains(*i))
    }
}
