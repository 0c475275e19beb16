//! Checkers: observers of the trace. They never change the world; each judges one invariant and
//! reports its first violation with the message and the virtual time.
//!
//! The `Monitor` is the `sim::sink::Sink` every run's records go to: it hashes every record into
//! the trace hash, keeps the `Ledger` (what each message went through), feeds the enabled
//! checkers, and stores the timeline when tracing is on. Hosts emit the same observation
//! vocabulary (`sim::record::Ev`), so one checker serves every host whose invariant is the same;
//! a family's notes never reach a checker.

mod alive_while_owed;
mod boundary_flush;
mod exactly_once;
mod fifo;
mod flag_coherence;
mod harness;
mod input_heard;
mod invariant;
mod isolation;
mod latency;
mod ledger;
mod no_deadlock;
mod no_loss;
mod no_self_refusal;
mod no_spin;
mod no_wasted_wake;
mod single_starter;
#[cfg(test)]
mod testkit;
mod tool_pairing;

pub use ledger::{Ledger, MsgLedger};

use crate::limits::WINDOW_CODES_MAX;
use crate::sim::hash::{Encode, TraceHasher};
use crate::sim::msg::{MsgId, MsgInfo, SenderNames};
use crate::sim::record::{Actor, Ev, EvKind, Note, Record, Window};
use crate::sim::sink::Sink;
use crate::sim::time::Ms;

pub use invariant::{CheckParams, DerivedBounds, Invariant, InvariantSet, Violation};

/// What a checker may read besides the record: the messages and the ledger as it stood before
/// the record was applied.
pub struct View<'a> {
    pub messages: &'a [MsgInfo],
    pub ledger: &'a Ledger,
    pub params: &'a CheckParams,
}

/// One invariant's observer.
pub trait Checker {
    /// The observations it reads ([`Ev::kind`] bits, [`reads`]); it is not called for others.
    const READS: u32;
    fn invariant(&self) -> Invariant;
    /// Observe one record. Push a violation when the invariant breaks. Implementations are
    /// `#[inline(always)]`: the monitor compiles each into the observer of every kind it reads
    /// (`Monitor::observe_kind`), where the record's kind is known.
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, view: &View<'_>, out: &mut Vec<Violation>);
    /// The run is over at `t` (producers and faults stopped, the host settled): judge liveness.
    fn finish(&mut self, _t: Ms, _view: &View<'_>, _out: &mut Vec<Violation>) {}
    /// Forget the previous run, keeping allocations.
    fn reset(&mut self);
}

/// The [`Checker::READS`] mask of observations of these kinds.
pub const fn reads(kinds: &[EvKind]) -> u32 {
    let mut mask = 0;
    let mut i = 0;
    while i < kinds.len() {
        mask |= 1 << (kinds[i] as u32);
        i += 1;
    }
    mask
}

/// Every checker, statically dispatched (this is on the hot path).
#[derive(Default)]
struct Checkers {
    no_loss: no_loss::NoLoss,
    exactly_once: exactly_once::ExactlyOnce,
    fifo: fifo::Fifo,
    latency: latency::Latency,
    single_starter: single_starter::SingleStarter,
    flag: flag_coherence::FlagCoherence,
    harness: harness::Harness,
    no_self_refusal: no_self_refusal::NoSelfRefusal,
    alive: alive_while_owed::AliveWhileOwed,
    no_spin: no_spin::NoSpin,
    isolation: isolation::Isolation,
    no_deadlock: no_deadlock::NoDeadlock,
    no_wasted_wake: no_wasted_wake::NoWastedWake,
    input_heard: input_heard::InputHeard,
    boundary_flush: boundary_flush::BoundaryFlush,
    tool_pairing: tool_pairing::ToolPairing,
}

/// Run `$call` on every checker of monitor `$m` whose invariant is in `$set` and that reads
/// observations of kind `$kind` (`Some` constant kind: the live readers of an observation; `None`:
/// every live checker, at the end of a run), statically dispatched (this runs for every
/// observation of every run), with `$view` what a checker may read and `$out` where its
/// violations go. A checker that does not read the kind ([`Checker::READS`]) is left out when
/// the monitor is compiled, so an observation tests only its own readers.
///
/// A checker whose invariant broke is not called again: the monitor keeps only the first
/// violation of each invariant, so whatever it would judge later is dropped anyway.
macro_rules! each_checker {
    ($m:expr, $set:expr, $kind:expr, |$c:ident, $view:ident, $out:ident| $call:expr) => {{
        let set: InvariantSet = $set;
        let m = $m;
        let $view = View {
            messages: &m.messages,
            ledger: &m.ledger,
            params: &m.params,
        };
        let $out = &mut m.scratch;
        let cs = &mut m.checkers;
        each_checker!(@one set, $kind, cs.no_loss, $c, $call);
        each_checker!(@one set, $kind, cs.exactly_once, $c, $call);
        each_checker!(@one set, $kind, cs.fifo, $c, $call);
        each_checker!(@one set, $kind, cs.latency, $c, $call);
        each_checker!(@one set, $kind, cs.single_starter, $c, $call);
        each_checker!(@one set, $kind, cs.flag, $c, $call);
        each_checker!(@one set, $kind, cs.harness, $c, $call);
        each_checker!(@one set, $kind, cs.no_self_refusal, $c, $call);
        each_checker!(@one set, $kind, cs.alive, $c, $call);
        each_checker!(@one set, $kind, cs.no_spin, $c, $call);
        each_checker!(@one set, $kind, cs.isolation, $c, $call);
        each_checker!(@one set, $kind, cs.no_deadlock, $c, $call);
        each_checker!(@one set, $kind, cs.no_wasted_wake, $c, $call);
        each_checker!(@one set, $kind, cs.input_heard, $c, $call);
        each_checker!(@one set, $kind, cs.boundary_flush, $c, $call);
        each_checker!(@one set, $kind, cs.tool_pairing, $c, $call);
    }};
    (@one $set:ident, $kind:expr, $field:expr, $c:ident, $call:expr) => {{
        let $c = &mut $field;
        if reads_kind(&*$c, $kind) && $set.contains(Checker::invariant(&*$c)) {
            $call;
        }
    }};
}

/// Whether checker `c` reads observations of kind `kind` (`None`: any kind), a constant where
/// it is used.
#[inline(always)]
const fn reads_kind<C: Checker>(_c: &C, kind: Option<u32>) -> bool {
    match kind {
        Some(k) => C::READS & (1 << k) != 0,
        None => true,
    }
}

/// Call `$m.observe_kind::<K>(t, ev)` for the kind of `$ev`, with `K` that kind (every kind
/// is listed: a new one does not compile until it is).
macro_rules! by_kind {
    ($m:expr, $t:expr, $ev:expr, [$($kind:ident),* $(,)?]) => {
        match $ev.kind() {
            $(EvKind::$kind => $m.observe_kind::<{ EvKind::$kind as u32 }>($t, $ev),)*
        }
    };
}

// `Monitor::marked` has a bit for every window code.
const _: () = assert!(WINDOW_CODES_MAX <= u32::BITS as usize);

// A checker's `READS` names kinds by bit (`1 << EvKind as u32`): every kind fits a `u32`.
const _: () = assert!((EvKind::Interleaved as u32) < u32::BITS);

impl Checkers {
    fn reset(&mut self) {
        self.no_loss.reset();
        self.exactly_once.reset();
        self.fifo.reset();
        self.latency.reset();
        self.single_starter.reset();
        self.flag.reset();
        self.harness.reset();
        self.no_self_refusal.reset();
        self.alive.reset();
        self.no_spin.reset();
        self.isolation.reset();
        self.no_deadlock.reset();
        self.no_wasted_wake.reset();
        self.input_heard.reset();
        self.boundary_flush.reset();
        self.tool_pairing.reset();
    }
}

/// How much of a run the monitor keeps besides its verdict (violations, windows, counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recording {
    /// The verdict only: no trace hash, no narration, no timeline, no choice log. What a bulk
    /// run needs (a failing seed is replayed from its seed). Hosts do not hand it notes
    /// (`Sink::narrating`), so its record count is of observations only.
    Verdict,
    /// The verdict, the trace hash over every record (notes included) and the choice log.
    Hash,
    /// All of `Hash`, and the timeline.
    Trace,
}

impl Recording {
    /// `Trace` when tracing, else `Hash`: what a single run asked for by `tracing` keeps.
    pub fn traced(tracing: bool) -> Recording {
        if tracing {
            Recording::Trace
        } else {
            Recording::Hash
        }
    }

    /// Whether the trace hash (and so every note) is kept.
    pub fn hashes(self) -> bool {
        self != Recording::Verdict
    }
}

/// The sink for every record of a run of a family whose narration is `N`: it hashes every
/// record into the trace hash, keeps the ledger, feeds the enabled checkers, counts race windows
/// and keeps the timeline when tracing. One monitor serves every seed of a runner (`reset`).
pub struct Monitor<N> {
    recording: Recording,
    trace: Vec<Record<N>>,
    hash: TraceHasher,
    records: u64,
    messages: Vec<MsgInfo>,
    ledger: Ledger,
    checkers: Checkers,
    enabled: InvariantSet,
    /// The enabled invariants not broken yet: the checkers still called.
    live: InvariantSet,
    params: CheckParams,
    violations: Vec<Violation>,
    scratch: Vec<Violation>,
    /// Model requests so far.
    requests: u32,
    /// How often each race window was reached in this run, by its code.
    marks: [Option<(Window, u32)>; WINDOW_CODES_MAX],
    /// Bit `code` set for each window reached: `marks` reads only those slots.
    marked: u32,
    /// For each invariant broken: how many records the run had made when it broke.
    records_at_violation: Vec<(Invariant, u64)>,
    /// The time of the last record: a run's records never go back in time.
    last_t: Ms,
    /// How the run's family names its senders (`Sink::sender_names`).
    names: SenderNames,
}

impl<N: Note> Monitor<N> {
    /// A monitor that keeps the trace hash, and the timeline when `tracing`.
    pub fn new(enabled: InvariantSet, params: CheckParams, tracing: bool) -> Monitor<N> {
        Monitor::recording(enabled, params, Recording::traced(tracing))
    }

    pub fn recording(
        enabled: InvariantSet,
        params: CheckParams,
        recording: Recording,
    ) -> Monitor<N> {
        Monitor {
            recording,
            trace: Vec::new(),
            hash: TraceHasher::default(),
            records: 0,
            messages: Vec::new(),
            ledger: Ledger::default(),
            checkers: Checkers::default(),
            enabled,
            live: enabled,
            params,
            violations: Vec::new(),
            scratch: Vec::new(),
            requests: 0,
            marks: [None; WINDOW_CODES_MAX],
            marked: 0,
            records_at_violation: Vec::new(),
            last_t: Ms::ZERO,
            names: SenderNames::PLAIN,
        }
    }

    /// Name the senders of the messages produced from here on as `names` says: a family's run
    /// sets its family's (`outcome::Drive::names`) before it starts.
    pub fn set_sender_names(&mut self, names: SenderNames) {
        self.names = names;
    }

    /// Prepare for another run, keeping every allocation.
    pub fn reset(&mut self, enabled: InvariantSet, params: CheckParams, recording: Recording) {
        self.recording = recording;
        self.trace.clear();
        self.hash = TraceHasher::default();
        self.records = 0;
        self.messages.clear();
        self.ledger.clear();
        self.checkers.reset();
        self.enabled = enabled;
        self.live = enabled;
        self.params = params;
        self.violations.clear();
        self.scratch.clear();
        self.requests = 0;
        while self.marked != 0 {
            self.marks[self.marked.trailing_zeros() as usize] = None;
            self.marked &= self.marked - 1;
        }
        self.records_at_violation.clear();
        self.last_t = Ms::ZERO;
    }

    pub fn params(&self) -> &CheckParams {
        &self.params
    }

    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// What this monitor keeps besides the verdict.
    pub fn keeps(&self) -> Recording {
        self.recording
    }

    /// Count a race window reached.
    fn mark(&mut self, w: Window) {
        assert!(
            usize::from(w.code) < WINDOW_CODES_MAX,
            "window {} has code {} (at most {WINDOW_CODES_MAX})",
            w.name,
            w.code
        );
        let slot = &mut self.marks[usize::from(w.code)];
        match slot {
            Some((_, n)) => *n += 1,
            None => {
                *slot = Some((w, 1));
                self.marked |= 1 << w.code;
            }
        }
    }

    /// Keep only the first violation of each invariant; a broken invariant's checker is not
    /// called again.
    #[inline]
    fn keep_violations(&mut self) {
        if !self.scratch.is_empty() {
            self.keep_new_violations();
        }
    }

    /// `keep_violations` when a checker reported one (rare: out of line).
    #[cold]
    fn keep_new_violations(&mut self) {
        for v in self.scratch.drain(..) {
            if self.live.contains(v.invariant) {
                self.live = self.live.without(v.invariant);
                self.records_at_violation.push((v.invariant, self.records));
                self.violations.push(v);
            }
        }
    }

    /// The race windows this run reached, with how often, by code.
    pub fn marks(&self) -> Vec<(Window, u32)> {
        if self.marked == 0 {
            return Vec::new();
        }
        let mut marks = Vec::with_capacity(self.marked.count_ones() as usize);
        marks.extend(self.marks_iter());
        marks
    }

    /// The race windows this run reached, with how often, by code (no allocation).
    pub fn marks_iter(&self) -> impl Iterator<Item = (Window, u32)> + '_ {
        let mut bits = self.marked;
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let code = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            self.marks[code]
        })
    }

    /// Model requests the run made.
    pub fn requests(&self) -> u32 {
        self.requests
    }

    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    pub fn trace(&self) -> &[Record<N>] {
        &self.trace
    }

    /// The timeline, its notes type-erased (what a finished run keeps).
    pub fn take_trace(&mut self) -> Vec<Record> {
        if self.trace.is_empty() {
            return Vec::new();
        }
        std::mem::take(&mut self.trace)
            .into_iter()
            .map(Record::erase)
            .collect()
    }

    /// The trace hash; 0 for a run that kept only its verdict.
    pub fn trace_hash(&self) -> u64 {
        if self.recording.hashes() {
            self.hash.finish()
        } else {
            0
        }
    }

    pub fn records(&self) -> u64 {
        self.records
    }

    /// How many records the run had made when `invariant` first broke.
    pub fn records_at_violation(&self, invariant: Invariant) -> Option<u64> {
        self.records_at_violation
            .iter()
            .find(|(i, _)| *i == invariant)
            .map(|(_, n)| *n)
    }

    /// Let the live checkers that read `ev` judge it, then apply it to the ledger: the observer
    /// of its kind. Inlined where records are built, so a record of a known kind calls its own
    /// observer directly.
    #[inline(always)]
    fn observe(&mut self, t: Ms, ev: &Ev<N>) {
        by_kind!(
            self,
            t,
            ev,
            [
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
            ]
        )
    }

    /// `emit` for a run that keeps its trace hash (and its timeline): out of line, so that the
    /// verdict's path inlines small.
    #[inline(never)]
    fn emit_kept(&mut self, t: Ms, actor: Actor, state: u8, ev: Ev<N>) {
        let record = Record {
            t,
            actor,
            state,
            ev,
        };
        record.encode(&mut self.hash);
        match record.ev {
            Ev::Note(_) => {}
            Ev::Mark(w) => self.mark(w),
            ref ev => self.observe(t, ev),
        }
        if self.recording == Recording::Trace {
            self.trace.push(record);
        }
    }

    /// `observe` for a record of kind `K`: only the checkers that read `K` are compiled in, each
    /// called while its invariant holds.
    #[inline(never)]
    fn observe_kind<const K: u32>(&mut self, t: Ms, ev: &Ev<N>) {
        // What `observe` matched; said here too, so the readers inlined below are compiled for
        // a record of this kind only (6 instructions fewer per event of `run scenarios/gptme`
        // than without it).
        assert_eq!(ev.kind() as u32, K, "an observation of another kind");
        if K == EvKind::Request as u32 {
            self.requests += 1;
        }
        each_checker!(&mut *self, self.live, Some(K), |c, view, out| c
            .observe(t, ev, &view, out));
        if LEDGER_READS & (1 << K) != 0 {
            self.ledger.apply(t, ev, &self.messages);
        }
        self.keep_violations();
    }
}

/// The observations the ledger reads.
const LEDGER_READS: u32 = reads(&[
    EvKind::Produced,
    EvKind::Appended,
    EvKind::Request,
    EvKind::Dropped,
    EvKind::OwnerClaimed,
]);

impl<N: Note> Sink for Monitor<N> {
    type Note = N;

    /// Record one event: hash it, let the checkers judge it, keep it if tracing. Inlined into
    /// every emitting call site: the record is then matched where it was built, and a run that
    /// keeps only its verdict calls the observer of the record's kind directly.
    #[inline(always)]
    fn emit(&mut self, t: Ms, actor: Actor, state: u8, ev: Ev<N>) {
        assert!(
            t >= self.last_t,
            "a record at {t} after one at {}",
            self.last_t
        );
        self.last_t = t;
        self.records += 1;
        if self.recording == Recording::Verdict {
            match ev {
                Ev::Note(_) => {}
                Ev::Mark(w) => self.mark(w),
                ref ev => self.observe(t, ev),
            }
            return;
        }
        self.emit_kept(t, actor, state, ev);
    }

    fn narrating(&self) -> bool {
        self.recording != Recording::Verdict
    }

    fn add_message(&mut self, info: MsgInfo) {
        assert_eq!(
            info.id.0 as usize,
            self.messages.len(),
            "messages are registered in id order"
        );
        self.messages.push(info);
    }

    fn sender_names(&self) -> SenderNames {
        self.names
    }

    fn messages(&self) -> &[MsgInfo] {
        &self.messages
    }

    fn owed(&self) -> &[MsgId] {
        self.ledger.owed()
    }

    /// End of run at `t`: the liveness checkers judge what is still owed.
    fn finish(&mut self, t: Ms) {
        each_checker!(&mut *self, self.live, None, |c, view, out| c
            .finish(t, &view, out));
        self.keep_violations();
        self.violations.sort_by_key(|v| (v.t, v.invariant));
    }
}
