//! Running seeds: one seed to a `RunResult`, a scenario's seed range to a `ScenarioReport`.
//!
//! A run is a pure function of (scenario, seed): the kernel, the host model and a fresh wake logic
//! are built from the scenario and driven to the end. A wake logic that panics, or runs out of
//! the step or call budget, ends its own run with its own outcome; the next seed runs normally.

use std::cell::RefCell;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use crate::check::{Invariant, InvariantSet, Monitor, Violation};
use crate::external::{AdapterFault, ExternalPi, Pool};
use crate::host::HostKind;
use crate::host::pi::core::BudgetExceeded;
use crate::host::pi::{Gen, PiEv, PiHost};
use crate::kernel::choice::{Choice, Choices, Profile};
use crate::kernel::time::Ms;
use crate::kernel::{End, Kernel, drive};
use crate::scenario::{Expect, Scenario};
use crate::trace::{MsgInfo, Record};
use crate::wake::Registry;

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

    pub fn violations(&self) -> &[Violation] {
        match self {
            Outcome::Fail(v) => v,
            _ => &[],
        }
    }
}

/// Everything one seed produced.
pub struct RunResult {
    pub seed: u64,
    pub outcome: Outcome,
    /// Kernel events processed.
    pub events: u64,
    pub trace_hash: u64,
    pub end: Ms,
    pub faults_on: Vec<&'static str>,
    pub messages: Vec<MsgInfo>,
    /// The timeline, when tracing was asked for.
    pub trace: Vec<Record>,
    pub choices: Vec<Choice>,
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

/// Runs seeds of scenarios, reusing the kernel's allocations between seeds.
pub struct Runner<'r> {
    registry: &'r Registry,
    pi_kernel: Option<Kernel<PiEv>>,
    /// Adapter processes of external wake logics, kept alive across seeds.
    adapters: Pool,
}

impl<'r> Runner<'r> {
    pub fn new(registry: &'r Registry) -> Runner<'r> {
        quiet_panics_in_runs();
        Runner {
            registry,
            pi_kernel: None,
            adapters: Pool::default(),
        }
    }

    /// Start the adapter of an external wake logic and run its first reset, so a command or a
    /// module that cannot start is reported as an error of the scenario (exit 2) before any seed
    /// runs. Built-in wake logics need nothing.
    pub fn prepare(&mut self, scn: &Scenario) -> crate::Result<()> {
        let Some(spec) = &scn.adapter else {
            return Ok(());
        };
        self.adapters.prepare(spec, scn.host).map_err(|f| {
            let (file, line, column) = spec.origin.clone();
            let mut message = format!("the adapter did not start: {f}");
            if !f.stderr_tail.is_empty() {
                message += &format!("; its stderr ends with:\n{}", indent(&f.stderr_tail));
            }
            crate::Error::Scenario {
                file,
                line,
                column,
                key: Some("wake".to_string()),
                message,
            }
        })
    }

    pub fn registry(&self) -> &Registry {
        self.registry
    }

    /// Run one seed of a scenario.
    pub fn run_seed(&mut self, scn: &Scenario, seed: u64, tracing: bool) -> RunResult {
        self.run_with(
            scn,
            seed,
            Choices::random(seed, Profile::default()),
            tracing,
        )
    }

    /// Run a scenario from a recorded choice sequence (replay of a shrunk or enumerated run).
    pub fn run_choices(
        &mut self,
        scn: &Scenario,
        choices: Vec<Choice>,
        tracing: bool,
    ) -> RunResult {
        self.run_with(
            scn,
            0,
            Choices::replay(choices, Profile::default()),
            tracing,
        )
    }

    fn run_with(
        &mut self,
        scn: &Scenario,
        seed: u64,
        choices: Choices,
        tracing: bool,
    ) -> RunResult {
        let wake: Box<dyn crate::host::pi::api::PiWake> = match &scn.adapter {
            Some(spec) => Box::new(ExternalPi::new(
                self.adapters.slot(spec, scn.host),
                spec.constants_ms.clone(),
            )),
            None => self
                .registry
                .pi(&scn.wake)
                .unwrap_or_else(|| {
                    panic!(
                        "scenario {} names unknown wake {}",
                        scn.path.display(),
                        scn.wake
                    )
                })
                .make(),
        };
        let generation = match scn.host {
            HostKind::Pi => Gen::V099,
            HostKind::Pi058 => Gen::V058,
        };
        let enabled = InvariantSet::of(scn.host.invariants());
        let k = self.pi_kernel.get_or_insert_with(|| {
            Kernel::new(
                Choices::random(0, Profile::default()),
                Monitor::new(enabled, scn.check, tracing),
                scn.limits,
            )
        });
        k.reset(scn.limits);
        k.choices = choices;
        k.monitor = Monitor::new(enabled, scn.check, tracing);

        IN_RUN.with(|r| *r.borrow_mut() = true);
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut world = PiHost::new(generation, scn.pi.clone(), wake);
            let end = drive(&mut world, k);
            (end, world.faults_on())
        }));
        IN_RUN.with(|r| *r.borrow_mut() = false);

        let (outcome, faults_on) = match result {
            Ok((End::StepBudget, faults)) => (Outcome::StepBudget { steps: k.steps() }, faults),
            Ok((_, faults)) => {
                let v = k.monitor.violations();
                let outcome = if v.is_empty() {
                    Outcome::Pass
                } else {
                    Outcome::Fail(v.to_vec())
                };
                (outcome, faults)
            }
            Err(payload) => (panic_outcome(payload, k.steps()), Vec::new()),
        };
        RunResult {
            seed,
            outcome,
            events: k.steps(),
            trace_hash: k.monitor.trace_hash(),
            end: k.now(),
            faults_on: faults_on.into_iter().map(|f| f.name()).collect(),
            messages: k.monitor.messages().to_vec(),
            trace: k.monitor.take_trace(),
            choices: k.choices.take_log(),
        }
    }
}

/// The verdict of a scenario over a range of seeds.
#[derive(Clone, Debug)]
pub struct ScenarioReport {
    pub seeds: Range<u64>,
    pub events: u64,
    pub failures: u64,
    /// Seeds that broke each invariant (or panicked, ran out of steps).
    pub counts: std::collections::BTreeMap<String, u64>,
    pub first_failure: Option<(u64, Outcome)>,
    /// The first seed whose outcome the expectation does not allow.
    pub unexpected: Option<(u64, Outcome)>,
    /// The first seed that showed what a failing expectation asks for.
    pub first_expected: Option<u64>,
    pub met: bool,
    /// Why the expectation is not met, in a sentence.
    pub why: Option<String>,
}

impl ScenarioReport {
    fn new(_scn: &Scenario, seeds: Range<u64>) -> ScenarioReport {
        ScenarioReport {
            seeds,
            events: 0,
            failures: 0,
            counts: Default::default(),
            first_failure: None,
            unexpected: None,
            first_expected: None,
            met: false,
            why: None,
        }
    }

    pub fn seed_count(&self) -> u64 {
        self.seeds.end - self.seeds.start
    }

    fn add(&mut self, seed: u64, outcome: &Outcome, events: u64) {
        self.events += events;
        if outcome.is_pass() {
            return;
        }
        self.failures += 1;
        match outcome {
            Outcome::Fail(vs) => {
                for v in vs {
                    *self
                        .counts
                        .entry(v.invariant.name().to_string())
                        .or_default() += 1;
                }
            }
            other => *self.counts.entry(other.label()).or_default() += 1,
        }
        if self.first_failure.is_none() {
            self.first_failure = Some((seed, outcome.clone()));
        }
    }

    /// Record what `expect` says about one failing outcome.
    fn judge_outcome(&mut self, seed: u64, outcome: &Outcome, expect: &Expect) {
        let (expected, allowed) = allowed(expect, outcome);
        if expected && self.first_expected.is_none() {
            self.first_expected = Some(seed);
        }
        if !allowed && self.unexpected.is_none() {
            self.unexpected = Some((seed, outcome.clone()));
        }
    }

    fn judge(&mut self, expect: &Expect) {
        self.met = match expect {
            Expect::Pass => self.unexpected.is_none(),
            _ => self.unexpected.is_none() && self.first_expected.is_some(),
        };
        if !self.met {
            self.why = Some(match (&self.unexpected, expect) {
                (Some((seed, o)), Expect::Fail { invariant, also })
                    if matches!(o, Outcome::Fail(_)) =>
                {
                    let v = o
                        .violations()
                        .iter()
                        .find(|v| v.invariant != *invariant && !also.contains(&v.invariant))
                        .expect("an unexpected outcome breaks a disallowed invariant");
                    format!(
                        "seed {seed} also broke {}, which the scenario does not allow, at {} ms: {}",
                        v.invariant, v.t.0, v.detail
                    )
                }
                (Some((seed, o)), _) => format!("seed {seed} {}", describe(o)),
                (None, e) => format!(
                    "no seed in {}..{} showed {e}",
                    self.seeds.start, self.seeds.end
                ),
            });
        }
    }
}

/// A sentence about a failing outcome.
pub fn describe(o: &Outcome) -> String {
    match o {
        Outcome::Pass => "passed".to_string(),
        Outcome::Fail(v) => format!(
            "broke {} at {} ms: {}",
            v[0].invariant, v[0].t.0, v[0].detail
        ),
        Outcome::Panic(m) => format!("panicked: {m}"),
        Outcome::StepBudget { steps } => format!("ran out of its step budget after {steps} events"),
        Outcome::AdapterFault(f) => {
            let mut s = format!("ended with an {f}");
            if !f.stderr_tail.is_empty() {
                s += &format!("; its stderr ends with:\n{}", indent(&f.stderr_tail));
            }
            s
        }
    }
}

/// Indent every line of `text` by four spaces.
pub fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Does `outcome` show what `expect` asks for, and is it allowed at all?
fn allowed(expect: &Expect, outcome: &Outcome) -> (bool, bool) {
    match (expect, outcome) {
        (_, Outcome::Pass) => (false, true),
        (Expect::Fail { invariant, also }, Outcome::Fail(vs)) => {
            let expected = vs.iter().any(|v| v.invariant == *invariant);
            let ok = vs
                .iter()
                .all(|v| v.invariant == *invariant || also.contains(&v.invariant));
            (expected, ok)
        }
        (Expect::Panic, Outcome::Panic(_)) => (true, true),
        (Expect::StepBudget, Outcome::StepBudget { .. }) => (true, true),
        (Expect::AdapterFault, Outcome::AdapterFault(_)) => (true, true),
        _ => (false, false),
    }
}

impl Runner<'_> {
    /// Run seeds `range` of a scenario and judge its expectation: it needs both the first seed
    /// that shows the expected failure and the first seed whose outcome is not allowed.
    pub fn run_scenario(&mut self, scn: &Scenario, range: Range<u64>) -> ScenarioReport {
        let mut report = ScenarioReport::new(scn, range.clone());
        for seed in range {
            let r = self.run_seed(scn, seed, false);
            report.add(seed, &r.outcome, r.events);
            if !r.outcome.is_pass() {
                report.judge_outcome(seed, &r.outcome, &scn.expect);
            }
            if matches!(r.outcome, Outcome::AdapterFault(_)) {
                // A broken adapter is one finding; restarting it for every remaining seed would
                // only repeat it, slowly. The report counts the seeds that ran.
                report.seeds.end = seed + 1;
                break;
            }
        }
        report.judge(&scn.expect);
        report
    }
}

/// Does a single outcome show the scenario's expected failure (for snapshot seeds)?
pub fn shows_expected(expect: &Expect, outcome: &Outcome) -> bool {
    match expect {
        Expect::Pass => outcome.is_pass(),
        _ => allowed(expect, outcome) == (true, true),
    }
}

/// The invariants of an outcome, for JSON.
pub fn invariants_of(outcome: &Outcome) -> Vec<Invariant> {
    outcome.violations().iter().map(|v| v.invariant).collect()
}
