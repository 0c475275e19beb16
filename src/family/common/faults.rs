//! Faults a seed may switch on, shared by every host model.
//!
//! A host declares its faults as an enum implementing [`FaultKind`]; a scenario's `[faults]`
//! table names them. Per seed, [`Faults::plan`] switches each on in its share of the seeds (with a
//! swarm-drawn rate, see `swarm`), [`Faults::fires`] decides each opportunity of an
//! opportunity-fault, and [`TimedFaults`] schedules the occurrences of timed faults and re-tries
//! one that found the host in a state where it cannot happen.

use std::marker::PhantomData;

use crate::limits::{TIMED_FAULT_ATTEMPTS_MAX, TIMED_FAULT_RETRY_MS};
use crate::sim::Kernel;
use crate::sim::choice::Ratio;
use crate::sim::sink::Sink;
use crate::sim::swarm;
use crate::sim::time::Ms;

/// A family's fault enum. `LIST` holds every variant in declaration order; `index` is the
/// position in it. The timed faults are also a type of their own (`Timed`): the host's
/// dispatcher matches it without a default, so a new timed fault does not compile until the
/// host handles it, and `timed` (an exhaustive match) says which faults they are.
pub trait FaultKind: Copy + Eq + std::fmt::Debug + 'static {
    const LIST: &'static [Self];
    /// The family's timed faults: they happen at drawn instants, as occurrences the host plays.
    type Timed: Copy + std::fmt::Debug + 'static;
    /// The name scenario files use (`snake_case`).
    fn name(self) -> &'static str;
    fn describe(self) -> &'static str;
    /// The timed fault this is, or `None` for one that fires at each opportunity with `rate`.
    fn timed(self) -> Option<Self::Timed>;
    /// Default rate per opportunity and default maximum count per run.
    fn defaults(self) -> (Ratio, u32);
    fn index(self) -> usize;

    fn is_timed(self) -> bool {
        self.timed().is_some()
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::LIST.iter().copied().find(|f| f.name() == name)
    }
}

/// How a scenario switches one fault on: in `share` of the seeds; then each opportunity fires
/// with probability `rate`, at most `max` times (timed faults: up to `max` occurrences).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultSpec {
    pub share: Ratio,
    pub rate: Ratio,
    pub max: u32,
}

/// One fault's state in one seed.
#[derive(Clone, Copy, Debug)]
pub struct FaultState {
    pub on: bool,
    pub spec: FaultSpec,
    pub fired: u32,
}

/// Every fault of a host in one seed.
#[derive(Clone, Debug)]
pub struct Faults<F> {
    states: Vec<FaultState>,
    /// The states before a seed's plan (every fault off, the scenario's specs): what `renew`
    /// restores.
    initial: Vec<FaultState>,
    _kind: PhantomData<F>,
}

impl<F: FaultKind> Faults<F> {
    /// Every fault off, with the scenario's specs (or the defaults, share 0).
    pub fn new(specs: &[(F, FaultSpec)]) -> Faults<F> {
        let states = F::LIST
            .iter()
            .map(|&f| {
                let spec = specs
                    .iter()
                    .find(|(g, _)| *g == f)
                    .map(|(_, s)| *s)
                    .unwrap_or(FaultSpec {
                        share: Ratio::NEVER,
                        rate: f.defaults().0,
                        max: f.defaults().1,
                    });
                FaultState {
                    on: false,
                    spec,
                    fired: 0,
                }
            })
            .collect::<Vec<_>>();
        Faults {
            initial: states.clone(),
            states,
            _kind: PhantomData,
        }
    }

    /// Every fault off again with the specs `new` read, for another seed of the same
    /// configuration (no allocation).
    pub fn renew(&mut self) {
        self.states.clear();
        self.states.extend_from_slice(&self.initial);
    }

    /// Renew a kept world's faults for a run of `cfg`: reset them when `own` is already `cfg`,
    /// else take `cfg` into `own` and build them from its fault list (`specs`).
    pub fn renew_for<C: Clone + PartialEq>(
        &mut self,
        own: &mut C,
        cfg: &C,
        specs: impl Fn(&C) -> &[(F, FaultSpec)],
    ) {
        if *own == *cfg {
            self.renew();
        } else {
            *own = cfg.clone();
            *self = Faults::new(specs(own));
        }
    }

    /// Switch faults on for this seed, each with a swarm-drawn rate, in declaration order.
    pub fn plan<E, S: Sink>(&mut self, k: &mut Kernel<E, S>) {
        for st in &mut self.states {
            if let Some(rate) = swarm::draw_fault(&mut k.choices, st.spec.share, st.spec.rate) {
                st.on = true;
                st.spec.rate = rate;
            }
        }
    }

    pub fn state(&self, f: F) -> FaultState {
        self.states[f.index()]
    }

    pub fn on(&self, f: F) -> bool {
        self.states[f.index()].on
    }

    /// Does this fault fire at this opportunity? Draws only when the fault is on for the seed,
    /// has fired fewer than `max` times, and producers and faults still act.
    pub fn fires<E, S: Sink>(&mut self, k: &mut Kernel<E, S>, f: F) -> bool {
        let st = &mut self.states[f.index()];
        if !st.on || st.fired >= st.spec.max || k.quiescent() {
            return false;
        }
        if k.chance(st.spec.rate, f.name()) {
            st.fired += 1;
            true
        } else {
            false
        }
    }

    /// The opportunity faults on in this seed with how often each fired, for the run's `Mix`
    /// (coverage). Timed faults are not counted here: their occurrences are drawn when on.
    pub fn fired(&self) -> Vec<(&'static str, u32)> {
        F::LIST
            .iter()
            .zip(&self.states)
            .filter(|(f, st)| st.on && !f.is_timed())
            .map(|(f, st)| (f.name(), st.fired))
            .collect()
    }

    /// The faults on in this seed with their drawn rates, for the run's `Mix`.
    pub fn mix(&self) -> Vec<(&'static str, Ratio)> {
        F::LIST
            .iter()
            .zip(&self.states)
            .filter(|(_, st)| st.on)
            .map(|(f, st)| (f.name(), st.spec.rate))
            .collect()
    }
}

/// One planned occurrence of a timed fault.
#[derive(Clone, Copy, Debug)]
struct Occurrence<T> {
    fault: T,
    attempts: u32,
}

/// The occurrences of timed faults in one seed. Each is an event `ev(i)` of the host.
#[derive(Clone, Debug)]
pub struct TimedFaults<F: FaultKind> {
    list: Vec<Occurrence<F::Timed>>,
}

impl<F: FaultKind> Default for TimedFaults<F> {
    fn default() -> Self {
        TimedFaults { list: Vec::new() }
    }
}

impl<F: FaultKind> TimedFaults<F> {
    /// No occurrence planned, for another seed (keeping the allocation).
    pub fn renew(&mut self) {
        self.list.clear();
    }

    /// Draw the occurrences of every timed fault that is on (1 to `max` each, at instants in the
    /// active phase) and schedule them as `ev(i)`.
    pub fn plan<E, S: Sink>(
        &mut self,
        faults: &Faults<F>,
        k: &mut Kernel<E, S>,
        ev: impl Fn(u32) -> E,
    ) {
        let active = k.limits().active_ms;
        for &f in F::LIST {
            let Some(timed) = f.timed() else { continue };
            let st = faults.state(f);
            if !st.on || st.spec.max == 0 {
                continue;
            }
            let count = 1 + k.choose(u64::from(st.spec.max), "occurrences");
            for _ in 0..count {
                let at = k.instant(1, active.saturating_sub(1).max(1), "fault time");
                k.schedule_at(Ms(at), ev(self.list.len() as u32));
                self.list.push(Occurrence {
                    fault: timed,
                    attempts: 0,
                });
            }
        }
    }

    pub fn fault(&self, i: u32) -> F::Timed {
        self.list[i as usize].fault
    }

    /// Try occurrence `i` again later: the host was not in a state where it can happen.
    pub fn retry<E, S: Sink>(&mut self, k: &mut Kernel<E, S>, i: u32, ev: E) {
        let t = &mut self.list[i as usize];
        t.attempts += 1;
        if t.attempts < TIMED_FAULT_ATTEMPTS_MAX {
            k.schedule(TIMED_FAULT_RETRY_MS, ev);
        }
    }
}
