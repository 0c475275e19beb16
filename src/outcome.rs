//! Driving one world to its end and what the run produced: the [`Outcome`] of a seed and its
//! [`RunResult`]. A wake logic that panics, runs out of its call budget, or whose adapter fails
//! ends its own run with its own outcome; the next seed runs normally.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use crate::adapter::AdapterFault;
use crate::check::{CheckParams, Invariant, InvariantSet, Monitor, Recording, Violation};
use crate::limits::{BudgetExceeded, Limits};
use crate::sim::choice::{Choice, Choices, Profile};
use crate::sim::msg::{MsgInfo, SenderNames};
use crate::sim::record::{Note, Record, Window};
use crate::sim::sink::Sink;
use crate::sim::swarm::Mix;
use crate::sim::time::Ms;
use crate::sim::{End, Kernel, World, drive};

/// How one seed ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// Invariants broken, first violation of each, ordered by time.
    Fail(Vec<Violation>),
    /// The wake logic panicked; the message.
    Panic(String),
    /// The run used up its step budget (or a handler its call budget).
    StepBudget {
        steps: u64,
    },
    /// The adapter process of an external wake logic failed: it exited, wrote something that is
    /// not the protocol, or stayed silent past its wall-clock bound. Not an invariant violation.
    AdapterFault(AdapterFault),
}

impl Outcome {
    pub fn is_pass(&self) -> bool {
        matches!(self, Outcome::Pass)
    }

    /// A short label: the first invariant broken, "panic" or "step-budget".
    pub fn label(&self) -> String {
        match self {
            Outcome::Pass => "pass".to_string(),
            Outcome::Fail(v) => v[0].invariant.name().to_string(),
            Outcome::Panic(_) => "panic".to_string(),
            Outcome::StepBudget { .. } => "step-budget".to_string(),
            Outcome::AdapterFault(_) => "adapter-fault".to_string(),
        }
    }

    /// Did the code under test not load (an adapter fault of kind `load`)?
    pub fn is_load_fault(&self) -> bool {
        matches!(self, Outcome::AdapterFault(f) if f.kind == crate::adapter::FaultKind::Load)
    }

    pub fn violations(&self) -> &[Violation] {
        match self {
            Outcome::Fail(v) => v,
            _ => &[],
        }
    }
}

/// Everything one seed produced.
#[derive(Clone)]
pub struct RunResult {
    pub seed: u64,
    pub outcome: Outcome,
    /// Kernel events processed.
    pub events: u64,
    /// Trace records made, in all and when each broken invariant first broke.
    pub records: u64,
    pub records_at_violation: Vec<(Invariant, u64)>,
    pub trace_hash: u64,
    pub end: Ms,
    /// Model requests the run made.
    pub requests: u32,
    /// The faults and producers this seed switched on.
    pub mix: Mix,
    /// The race windows the run reached, with how often.
    pub marks: Vec<(Window, u32)>,
    /// The command that reproduces this run, when it is not `wakesim replay SCENARIO --seed N`
    /// (a regression file replays its recorded choices).
    pub replay: Option<String>,
    /// For a run from recorded choices: where the sequence stopped fitting the model (a choice
    /// drawn with another bound or at another site, choices left unread, or draws past the end).
    pub stale: Option<String>,
    pub messages: Vec<MsgInfo>,
    /// The timeline, when tracing was asked for.
    pub trace: Vec<Record>,
    pub choices: Vec<Choice>,
    /// Under a feedback search: each race window reached, with the length of `choices` then.
    pub marks_at: Vec<(u8, u32)>,
}

impl RunResult {
    /// Everything a finished run left in its kernel: the monitor's verdict inputs, its trace
    /// and the choices it consumed (taken out of the kernel).
    pub fn from_kernel<E, N: Note>(
        seed: u64,
        outcome: Outcome,
        mix: Mix,
        k: &mut Kernel<E, Monitor<N>>,
    ) -> RunResult {
        RunResult {
            seed,
            outcome,
            events: k.steps(),
            records: k.sink.records(),
            // An invariant has a record count only once it broke.
            records_at_violation: if k.sink.violations().is_empty() {
                Vec::new()
            } else {
                Invariant::ALL
                    .into_iter()
                    .filter_map(|i| Some((i, k.sink.records_at_violation(i)?)))
                    .collect()
            },
            trace_hash: k.sink.trace_hash(),
            end: k.now(),
            requests: k.sink.requests(),
            mix,
            marks: k.sink.marks(),
            stale: stale_description(&k.choices),
            replay: None,
            // A run that keeps only its verdict is never shown: its messages stay behind.
            messages: match k.sink.keeps() {
                Recording::Verdict => Vec::new(),
                Recording::Hash | Recording::Trace => k.sink.messages().to_vec(),
            },
            trace: k.sink.take_trace(),
            choices: k.choices.take_log(),
            marks_at: k.choices.take_marks(),
        }
    }

    /// A copy without the timeline (cheap to keep while exploring).
    pub fn clone_untraced(&self) -> RunResult {
        RunResult {
            trace: Vec::new(),
            messages: Vec::new(),
            seed: self.seed,
            outcome: self.outcome.clone(),
            events: self.events,
            records: self.records,
            records_at_violation: self.records_at_violation.clone(),
            trace_hash: self.trace_hash,
            end: self.end,
            requests: self.requests,
            mix: self.mix.clone(),
            marks: self.marks.clone(),
            replay: self.replay.clone(),
            stale: self.stale.clone(),
            choices: self.choices.clone(),
            marks_at: self.marks_at.clone(),
        }
    }
}

thread_local! {
    static IN_RUN: RefCell<bool> = const { RefCell::new(false) };
}

/// Keep panics of wake logics inside a run out of stderr: they become outcomes. Panics elsewhere
/// go to the previous hook as usual.
fn quiet_panics_in_runs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_RUN.with(|r| *r.borrow()) {
                previous(info);
            }
        }));
    });
}

/// What a caught panic means: a wake-logic panic, a budget, or an adapter fault.
fn panic_outcome(payload: Box<dyn std::any::Any + Send>, steps: u64) -> Outcome {
    if payload.is::<BudgetExceeded>() {
        return Outcome::StepBudget { steps };
    }
    match payload.downcast::<AdapterFault>() {
        Ok(f) => Outcome::AdapterFault(*f),
        Err(payload) => Outcome::Panic(if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "non-string panic payload".to_string()
        }),
    }
}

/// One run to drive: its seed (a label for a run from recorded choices), its choice stream,
/// its limits and checks, and what to keep besides the verdict.
pub struct Drive {
    pub seed: u64,
    /// A recorded choice stream, or `None` for the seed's own random stream (drawn on the
    /// kernel's reused `Choices`).
    pub choices: Option<Choices>,
    pub limits: Limits,
    pub enabled: InvariantSet,
    pub check: CheckParams,
    pub recording: Recording,
    /// How the run's family names its senders (`Family::sender_name`).
    pub names: SenderNames,
}

impl Drive {
    /// Build the world (host model and a fresh wake logic) and drive it on `slot`'s kernel, made
    /// on first use and reset for every seed (its queue, choice stream and monitor keep their
    /// allocations). A panic of the wake logic ends the run as an outcome.
    pub fn run<W, N>(
        self,
        slot: &mut Option<Kernel<W::Ev, Monitor<N>>>,
        make: impl FnOnce() -> W,
    ) -> RunResult
    where
        W: World<Sink = Monitor<N>>,
        N: Note,
    {
        let mut world = None;
        self.run_in(slot, &mut world, |w| {
            *w = Some(make());
        })
    }

    /// `run`, on a world kept in `world` across seeds: `renew` makes it this run's world (it
    /// builds one when there is none, or resets the one there, keeping its allocations). A
    /// world left by a run that panicked is renewed like any other: `renew` sets every field.
    pub fn run_in<W, N>(
        self,
        slot: &mut Option<Kernel<W::Ev, Monitor<N>>>,
        world: &mut Option<W>,
        renew: impl FnOnce(&mut Option<W>),
    ) -> RunResult
    where
        W: World<Sink = Monitor<N>>,
        N: Note,
    {
        quiet_panics_in_runs();
        let k = slot.get_or_insert_with(|| {
            Kernel::new(
                Choices::random(0, Profile::default()),
                Monitor::recording(self.enabled, self.check, self.recording),
                self.limits,
            )
        });
        k.reset(self.limits);
        match self.choices {
            Some(choices) => k.choices = choices,
            None => k.choices.reseed(self.seed),
        }
        k.choices.set_logging(self.recording.hashes());
        k.sink.reset(self.enabled, self.check, self.recording);
        k.sink.set_sender_names(self.names);

        IN_RUN.with(|r| *r.borrow_mut() = true);
        let result = catch_unwind(AssertUnwindSafe(|| {
            renew(world);
            let world = world.as_mut().expect("renew leaves a world");
            let end = drive(world, k);
            (end, world.mix())
        }));
        IN_RUN.with(|r| *r.borrow_mut() = false);

        let (outcome, mix) = match result {
            Ok((End::StepBudget, faults)) => (Outcome::StepBudget { steps: k.steps() }, faults),
            Ok((_, faults)) => {
                let v = k.sink.violations();
                let outcome = if v.is_empty() {
                    Outcome::Pass
                } else {
                    Outcome::Fail(v.to_vec())
                };
                (outcome, faults)
            }
            Err(payload) => (panic_outcome(payload, k.steps()), Mix::default()),
        };
        RunResult::from_kernel(self.seed, outcome, mix, k)
    }
}

fn stale_description(c: &Choices) -> Option<String> {
    if let Some(d) = c.divergence() {
        // Name what changed: the site, the bound or both (a same-bound draw at another site is
        // as stale as a new bound).
        let now = format!("`{}` with bound {}", d.label, d.bound);
        let changed = match (d.label == d.recorded_label, d.bound == d.recorded_bound) {
            (true, _) => format!(
                "choice {} ({}) is now drawn with bound {}, recorded with bound {}",
                d.index, d.label, d.bound, d.recorded_bound
            ),
            (false, true) => format!(
                "choice {} is now drawn at {now}, recorded at `{}` (same bound)",
                d.index, d.recorded_label
            ),
            (false, false) => format!(
                "choice {} is now drawn at {now}, recorded at `{}` with bound {}",
                d.index, d.recorded_label, d.recorded_bound
            ),
        };
        return Some(changed);
    }
    c.replay_mismatch()
        .map(|(unread, extra)| match (unread, extra) {
            (0, n) => format!("the run drew {n} choice(s) past the end of the recorded sequence"),
            (n, 0) => format!("the run ended with {n} recorded choice(s) unread"),
            (n, m) => format!("{n} recorded choice(s) unread and {m} drawn past the end"),
        })
}
