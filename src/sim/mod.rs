//! The bottom layer: the discrete-event simulation kernel (virtual time, the event queue, the
//! choice stream, a step budget), the records of a run and their hash, and the sink records go
//! to. Host models are `World`s driven by `drive`. Nothing here knows a host family, a checker,
//! a scenario file or a report.

pub mod choice;
pub mod feature;
pub mod hash;
pub mod msg;
pub mod queue;
pub mod record;
pub mod search;
pub mod sink;
pub mod swarm;
pub mod time;

use choice::{Choices, Ratio};
use queue::Queue;
use time::Ms;

use crate::limits::Limits;
use crate::sim::msg::{MsgFrom, MsgId, MsgInfo, MsgKind};
use crate::sim::record::{Actor, Ev};
use sink::Sink;

/// The state every host model shares: clock, queue, choices, and the sink its records go to.
pub struct Kernel<E, S> {
    now: Ms,
    queue: Queue<E>,
    pub choices: Choices,
    pub sink: S,
    steps: u64,
    limits: Limits,
    quiescent: bool,
}

/// Why the event loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// No event left: the world is at rest.
    Quiet,
    /// The quiescent phase ran out of time with events still pending (timers re-arming).
    Horizon,
    /// The step budget ran out.
    StepBudget,
}

impl<E, S: Sink> Kernel<E, S> {
    pub fn new(choices: Choices, sink: S, limits: Limits) -> Kernel<E, S> {
        Kernel {
            now: Ms::ZERO,
            queue: Queue::default(),
            choices,
            sink,
            steps: 0,
            limits,
            quiescent: false,
        }
    }

    /// Prepare for another run with the same allocations.
    pub fn reset(&mut self, limits: Limits) {
        self.now = Ms::ZERO;
        self.queue.clear();
        self.steps = 0;
        self.limits = limits;
        self.quiescent = false;
    }

    #[inline]
    pub fn now(&self) -> Ms {
        self.now
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// True once producers and faults have stopped.
    #[inline]
    pub fn quiescent(&self) -> bool {
        self.quiescent
    }

    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// How many producer messages the run has made so far: ids below it exist.
    pub fn produced(&self) -> usize {
        self.sink.messages().len()
    }

    /// The time of the next event, if any. With [`Kernel::micro_pending`], [`Kernel::advance_to`],
    /// [`Kernel::pop_event`] and [`Kernel::begin_quiescence`], this lets a driver other than
    /// [`drive`] run the loop one event at a time (the madsim lane, whose clock is madsim's).
    pub fn next_time(&self) -> Option<Ms> {
        self.queue.peek_time()
    }

    /// A microtask is due at the current instant: it runs before anything else may happen, so a
    /// promise chain is never interrupted.
    pub fn micro_pending(&self) -> bool {
        self.queue.micro_pending()
    }

    /// Move the clock forward to `t` (never back), for a driver whose clock lives elsewhere.
    pub fn advance_to(&mut self, t: Ms) {
        self.now = self.now.max(t);
    }

    /// Remove the next event (same-instant order by a choice, as in [`drive`]), move the clock to
    /// its time and count it as a step.
    pub fn pop_event(&mut self) -> Option<E> {
        let (t, ev) = self.queue.pop(&mut self.choices)?;
        self.now = self.now.max(t);
        self.steps += 1;
        Some(ev)
    }

    /// Producers and faults stop from now on (what [`drive`] does when the active phase ends).
    pub fn begin_quiescence(&mut self) {
        self.quiescent = true;
    }

    /// Schedule `ev` after `delay_ms`.
    #[inline]
    pub fn schedule(&mut self, delay_ms: u64, ev: E) {
        self.queue.push(self.now + delay_ms, ev);
    }

    /// Schedule `ev` as a microtask of the current instant: it runs before any event that is not
    /// a microtask (see `Queue`).
    #[inline]
    pub fn schedule_micro(&mut self, ev: E) {
        self.queue.push_micro(self.now, ev);
    }

    /// Continue after an `await` that took `delay_ms`: a microtask when it took no time (no I/O),
    /// an ordinary event otherwise.
    #[inline]
    pub fn resume(&mut self, delay_ms: u64, ev: E) {
        if delay_ms == 0 {
            self.schedule_micro(ev);
        } else {
            self.schedule(delay_ms, ev);
        }
    }

    /// Schedule `ev` at an absolute time (not before now).
    pub fn schedule_at(&mut self, t: Ms, ev: E) {
        self.queue.push(t.max(self.now), ev);
    }

    /// A delay in `lo..=hi`, biased toward the boundary set.
    #[inline]
    pub fn delay(&mut self, lo: u64, hi: u64, label: &'static str) -> u64 {
        self.choices.delay(lo, hi, label)
    }

    /// When an outside event happens in `lo..=hi` (see `Choices::instant`).
    #[inline]
    pub fn instant(&mut self, lo: u64, hi: u64, label: &'static str) -> u64 {
        self.choices.instant(lo, hi, label)
    }

    #[inline]
    pub fn chance(&mut self, ratio: Ratio, label: &'static str) -> bool {
        self.choices.chance(ratio, label)
    }

    #[inline]
    pub fn choose(&mut self, bound: u64, label: &'static str) -> u64 {
        self.choices.choose(bound, label)
    }

    /// Record an event at the current time.
    #[inline(always)]
    pub fn emit(&mut self, actor: Actor, state: u8, ev: Ev<S::Note>) {
        self.sink.emit(self.now, actor, state, ev);
    }

    /// Make a producer message that is its own FIFO stream and record it as produced.
    pub fn produce(&mut self, kind: MsgKind, source: u8, state: u8) -> MsgId {
        self.produce_from(MsgFrom::sender(kind, source), state)
    }

    /// Make a producer message and record it as produced.
    pub fn produce_from(&mut self, from: MsgFrom, state: u8) -> MsgId {
        let id = MsgId(self.sink.messages().len() as u32);
        self.sink.add_message(MsgInfo {
            id,
            kind: from.kind,
            source: from.source,
            origin: from.origin,
            conv: from.conv,
            stream: from.stream,
            produced_at: self.now,
            names: self.sink.sender_names(),
        });
        self.emit(Actor::Producer, state, Ev::Produced { msg: id });
        id
    }
}

/// A host model with its wake logic: the thing the kernel drives.
pub trait World {
    type Ev;
    /// Where the world's records go.
    type Sink: Sink;
    /// Schedule the initial events (producers, faults, session start).
    fn start(&mut self, k: &mut Kernel<Self::Ev, Self::Sink>);
    /// Handle one event at `k.now()`.
    fn step(&mut self, k: &mut Kernel<Self::Ev, Self::Sink>, ev: Self::Ev);
    /// Producers and faults stop; the host settles from here on.
    fn quiesce(&mut self, _k: &mut Kernel<Self::Ev, Self::Sink>) {}
    /// The loop is over; emit what the checkers need to judge the end (e.g. final idleness).
    fn finish(&mut self, _k: &mut Kernel<Self::Ev, Self::Sink>) {}
    /// The faults and producers this seed switched on (valid once `start` ran).
    fn mix(&self) -> crate::sim::swarm::Mix {
        crate::sim::swarm::Mix::default()
    }
}

/// Run the world until it is quiet, the horizon passes, or the step budget runs out.
pub fn drive<W: World>(world: &mut W, k: &mut Kernel<W::Ev, W::Sink>) -> End {
    // The plan's events are ordered once, after `start` (see `Queue::begin_plan`).
    k.queue.begin_plan();
    world.start(k);
    k.queue.end_plan();
    let active_end = Ms(k.limits.active_ms);
    let horizon = active_end + k.limits.quiesce_ms_max;
    let end = loop {
        let Some(next) = k.queue.peek_time() else {
            if !k.quiescent {
                k.quiescent = true;
                k.now = k.now.max(active_end);
                world.quiesce(k);
                continue;
            }
            break End::Quiet;
        };
        if next >= active_end && !k.quiescent {
            k.quiescent = true;
            k.now = active_end.max(k.now);
            world.quiesce(k);
            continue;
        }
        if next > horizon {
            k.now = horizon;
            break End::Horizon;
        }
        if k.steps >= k.limits.steps_max {
            break End::StepBudget;
        }
        let (t, ev) = k.queue.pop(&mut k.choices).expect("peeked");
        assert!(t >= k.now, "time went backwards: {t} before {}", k.now);
        k.now = t;
        k.steps += 1;
        world.step(k, ev);
    };
    assert!(
        k.steps <= k.limits.steps_max,
        "the step budget holds: {} steps of {}",
        k.steps,
        k.limits.steps_max
    );
    world.finish(k);
    if end != End::StepBudget {
        k.sink.finish(k.now);
    }
    end
}
