//! Running seeds: one seed to a `RunResult`, a scenario's seed range to a `ScenarioReport`.
//!
//! A run is a pure function of (scenario, seed): the kernel, the host model and a fresh wake logic
//! are built from the scenario and driven to the end. A wake logic that panics, or runs out of
//! the step or call budget, ends its own run with its own outcome; the next seed runs normally.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use crate::adapter::{AdapterFault, Pool};
use crate::check::{Invariant, InvariantSet, Monitor, Violation};
use crate::family::Registry;
use crate::family::gptme_cli::adapter::ExternalCli;
use crate::family::gptme_cli::{CliEv, CliHost};
use crate::family::gptme_server::adapter::ExternalServer;
use crate::family::gptme_server::{ServerHost, SrvEv};
use crate::family::pi::adapter::ExternalPi;
use crate::family::pi::{Gen, PiEv, PiHost};
use crate::family::{HostKind, common::BudgetExceeded};
use crate::scenario::{Expect, HostConfig, Scenario};
use crate::sim::choice::{Choice, Choices, Profile};
use crate::sim::record::{MsgInfo, Record, Window};
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
}

impl RunResult {
    /// Everything a finished run left in its kernel: the monitor's verdict inputs, its trace
    /// and the choices it consumed (taken out of the kernel).
    pub fn from_kernel<E>(seed: u64, outcome: Outcome, mix: Mix, k: &mut Kernel<E>) -> RunResult {
        RunResult {
            seed,
            outcome,
            events: k.steps(),
            records: k.monitor.records(),
            records_at_violation: Invariant::ALL
                .into_iter()
                .filter_map(|i| Some((i, k.monitor.records_at_violation(i)?)))
                .collect(),
            trace_hash: k.monitor.trace_hash(),
            end: k.now(),
            requests: k.monitor.requests(),
            mix,
            marks: k.monitor.marks(),
            stale: stale_description(&k.choices),
            replay: None,
            messages: k.monitor.messages().to_vec(),
            trace: k.monitor.take_trace(),
            choices: k.choices.take_log(),
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

/// Runs seeds of scenarios, reusing each host's kernel allocations between seeds.
pub struct Runner<'r> {
    registry: &'r Registry,
    pi_kernel: Option<Kernel<PiEv>>,
    server_kernel: Option<Kernel<SrvEv>>,
    cli_kernel: Option<Kernel<CliEv>>,
    /// Adapter processes of external wake logics, kept alive across seeds.
    adapters: Pool,
}

impl<'r> Runner<'r> {
    pub fn new(registry: &'r Registry) -> Runner<'r> {
        quiet_panics_in_runs();
        Runner {
            registry,
            pi_kernel: None,
            server_kernel: None,
            cli_kernel: None,
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

    /// Run a scenario from a recorded choice sequence (a shrunk or enumerated run); `seed` only
    /// labels the result. Past the end of `choices` every draw is 0; `RunResult::stale` says
    /// where the sequence stopped fitting the model, if it did.
    pub fn run_choices(
        &mut self,
        scn: &Scenario,
        seed: u64,
        choices: Vec<Choice>,
        tracing: bool,
    ) -> RunResult {
        self.run_profiled(scn, seed, choices, Profile::default(), tracing)
    }

    /// `run_choices` with a delay profile (explore runs draw delays from the boundary set only).
    pub fn run_profiled(
        &mut self,
        scn: &Scenario,
        seed: u64,
        choices: Vec<Choice>,
        profile: Profile,
        tracing: bool,
    ) -> RunResult {
        self.run_with(scn, seed, Choices::replay(choices, profile), tracing)
    }

    fn run_with(
        &mut self,
        scn: &Scenario,
        seed: u64,
        choices: Choices,
        tracing: bool,
    ) -> RunResult {
        let run = RunSpec {
            scn,
            seed,
            choices,
            tracing,
        };
        let entry = || {
            self.registry.get(&scn.wake).unwrap_or_else(|| {
                panic!(
                    "scenario {} names unknown wake {}",
                    scn.path.display(),
                    scn.wake
                )
            })
        };
        match &scn.config {
            HostConfig::Pi(cfg) => {
                let generation = match scn.host {
                    HostKind::Pi058 => Gen::V058,
                    _ => Gen::V099,
                };
                // A wake logic in another language runs in its adapter process.
                let wake: Box<dyn crate::family::pi::api::PiWake> = match &scn.adapter {
                    Some(spec) => Box::new(ExternalPi::new(
                        self.adapters.slot(spec, scn.host),
                        spec.constants_ms.clone(),
                    )),
                    None => entry().make(),
                };
                run.drive(&mut self.pi_kernel, || {
                    PiHost::new(generation, cfg.clone(), wake)
                })
            }
            HostConfig::GptmeServer(cfg) => {
                let wake: Box<dyn crate::family::gptme_server::api::ServerWake> = match &scn.adapter
                {
                    Some(spec) => Box::new(ExternalServer::new(
                        self.adapters.slot(spec, scn.host),
                        spec.constants_ms.clone(),
                    )),
                    None => entry().make_server(),
                };
                run.drive(&mut self.server_kernel, || {
                    ServerHost::new(cfg.clone(), wake)
                })
            }
            HostConfig::GptmeCli(cfg) => {
                let wake: Box<dyn crate::family::gptme_cli::api::CliWake> = match &scn.adapter {
                    Some(spec) => Box::new(ExternalCli::new(
                        self.adapters.slot(spec, scn.host),
                        spec.constants_ms.clone(),
                    )),
                    None => entry().make_cli(),
                };
                run.drive(&mut self.cli_kernel, || CliHost::new(cfg.clone(), wake))
            }
        }
    }
}

/// One run to drive, whatever the host.
struct RunSpec<'s> {
    scn: &'s Scenario,
    seed: u64,
    choices: Choices,
    tracing: bool,
}

impl RunSpec<'_> {
    /// Build the world (host model and a fresh wake logic) and drive it on `slot`'s kernel, made
    /// on first use and reset for every seed. A panic of the wake logic ends the run as an
    /// outcome.
    fn drive<W: World>(
        self,
        slot: &mut Option<Kernel<W::Ev>>,
        make: impl FnOnce() -> W,
    ) -> RunResult {
        let scn = self.scn;
        let enabled = InvariantSet::of(scn.host.invariants());
        let k = slot.get_or_insert_with(|| {
            Kernel::new(
                Choices::random(0, Profile::default()),
                Monitor::new(enabled, scn.check, self.tracing),
                scn.limits,
            )
        });
        k.reset(scn.limits);
        k.choices = self.choices;
        k.monitor = Monitor::new(enabled, scn.check, self.tracing);

        IN_RUN.with(|r| *r.borrow_mut() = true);
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut world = make();
            let end = drive(&mut world, k);
            (end, world.mix())
        }));
        IN_RUN.with(|r| *r.borrow_mut() = false);

        let (outcome, mix) = match result {
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
            Err(payload) => (panic_outcome(payload, k.steps()), Mix::default()),
        };
        RunResult::from_kernel(self.seed, outcome, mix, k)
    }
}

/// One seed's outcome, as a report keeps it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SeedNote {
    pub seed: u64,
    /// The outcome's label: the first invariant broken, "panic" or "step-budget".
    pub outcome: String,
    /// A sentence about it.
    pub detail: String,
}

/// The verdict of a scenario over a range of seeds. Reports of adjacent ranges merge into the
/// report of their union (threads, shards), whatever the order they finished in.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScenarioReport {
    pub seeds: Range<u64>,
    pub events: u64,
    pub failures: u64,
    /// Seeds that broke each invariant (or panicked, ran out of steps).
    pub counts: BTreeMap<String, u64>,
    /// Seeds that reached each race window.
    pub windows: BTreeMap<String, u64>,
    pub first_failure: Option<SeedNote>,
    /// The first seed that showed what a failing expectation asks for.
    pub first_expected: Option<u64>,
    /// The first seed whose outcome the expectation does not allow; `detail` says why.
    pub unexpected: Option<SeedNote>,
    pub met: bool,
    /// Why the expectation is not met, in a sentence.
    pub why: Option<String>,
}

impl ScenarioReport {
    pub fn new(seeds: Range<u64>) -> ScenarioReport {
        ScenarioReport {
            seeds,
            events: 0,
            failures: 0,
            counts: BTreeMap::new(),
            windows: BTreeMap::new(),
            first_failure: None,
            first_expected: None,
            unexpected: None,
            met: false,
            why: None,
        }
    }

    pub fn seed_count(&self) -> u64 {
        self.seeds.end - self.seeds.start
    }

    /// Account one seed's run; seeds must come in increasing order.
    pub fn add(&mut self, r: &RunResult, expect: &Expect) {
        self.events += r.events;
        for (w, _) in &r.marks {
            *self.windows.entry(w.name().to_string()).or_default() += 1;
        }
        let outcome = &r.outcome;
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
            self.first_failure = Some(SeedNote {
                seed: r.seed,
                outcome: outcome.label(),
                detail: describe(outcome),
            });
        }
        let (expected, allowed) = allowed(expect, outcome);
        if expected && self.first_expected.is_none() {
            self.first_expected = Some(r.seed);
        }
        if !allowed && self.unexpected.is_none() {
            self.unexpected = Some(SeedNote {
                seed: r.seed,
                outcome: outcome.label(),
                detail: unexpected_why(r.seed, outcome, expect),
            });
        }
    }

    /// A scripted scenario fixes the number of model requests every seed makes
    /// (`[expect] requests`): another count is an outcome the expectation does not allow.
    pub fn check_requests(&mut self, r: &RunResult, requests: Option<u32>) {
        let Some(n) = requests else { return };
        if r.requests != n && self.unexpected.is_none() {
            self.unexpected = Some(SeedNote {
                seed: r.seed,
                outcome: "requests".to_string(),
                detail: format!(
                    "seed {} made {} model requests; the scenario expects exactly {n}",
                    r.seed, r.requests
                ),
            });
        }
    }

    /// Fold in the report of the adjacent range that follows this one.
    pub fn merge(&mut self, later: ScenarioReport) {
        debug_assert_eq!(
            self.seeds.end, later.seeds.start,
            "merge adjacent ranges in order"
        );
        self.seeds = self.seeds.start..later.seeds.end;
        self.events += later.events;
        self.failures += later.failures;
        for (k, v) in later.counts {
            *self.counts.entry(k).or_default() += v;
        }
        for (k, v) in later.windows {
            *self.windows.entry(k).or_default() += v;
        }
        self.first_failure = self.first_failure.take().or(later.first_failure);
        self.first_expected = self.first_expected.or(later.first_expected);
        self.unexpected = self.unexpected.take().or(later.unexpected);
    }

    /// Decide whether the expectation and the required race windows are met.
    pub fn judge(&mut self, expect: &Expect, must_reach: &[Window]) {
        let unreached: Vec<&str> = must_reach
            .iter()
            .map(|w| w.name())
            .filter(|w| !self.windows.contains_key(*w))
            .collect();
        let shown = match expect {
            Expect::Pass => true,
            _ => self.first_expected.is_some(),
        };
        self.met = self.unexpected.is_none() && shown && unreached.is_empty();
        self.why = if self.met {
            None
        } else if let Some(u) = &self.unexpected {
            Some(u.detail.clone())
        } else if !shown {
            Some(format!(
                "no seed in {}..{} showed {expect}",
                self.seeds.start, self.seeds.end
            ))
        } else {
            Some(format!(
                "no seed in {}..{} reached the race window{} {} (coverage.must_reach)",
                self.seeds.start,
                self.seeds.end,
                if unreached.len() == 1 { "" } else { "s" },
                unreached.join(", ")
            ))
        };
    }
}

/// Why an outcome the expectation does not allow breaks it, in a sentence.
fn unexpected_why(seed: u64, outcome: &Outcome, expect: &Expect) -> String {
    if let (Expect::Fail { invariant, also }, Outcome::Fail(vs)) = (expect, outcome)
        && let Some(v) = vs
            .iter()
            .find(|v| v.invariant != *invariant && !also.contains(&v.invariant))
    {
        return format!(
            "seed {seed} also broke {}, which the scenario does not allow, at {} ms: {}",
            v.invariant, v.t.0, v.detail
        );
    }
    format!("seed {seed} {}", describe(outcome))
}

impl Runner<'_> {
    /// Run seeds `range` of a scenario and account them, without judging.
    pub fn run_range(&mut self, scn: &Scenario, range: Range<u64>) -> ScenarioReport {
        let mut report = ScenarioReport::new(range.clone());
        for seed in range {
            let r = self.run_seed(scn, seed, false);
            report.add(&r, &scn.expect);
            report.check_requests(&r, scn.requests);
            if matches!(r.outcome, Outcome::AdapterFault(_)) {
                // A broken adapter is one finding; restarting it for every remaining seed would
                // only repeat it, slowly. The report covers the seeds that ran.
                report.seeds.end = seed + 1;
                break;
            }
        }
        report
    }

    /// Run seeds `range` of a scenario and judge its expectation.
    pub fn run_scenario(&mut self, scn: &Scenario, range: Range<u64>) -> ScenarioReport {
        let mut report = self.run_range(scn, range);
        report.judge(&scn.expect, &scn.must_reach);
        report
    }
}

/// Run seeds `range` of a scenario on `threads` threads and judge it. The report is the same
/// whatever the number of threads: each chunk of seeds is reported on its own and the chunks are
/// merged in seed order. `progress` is told how many seeds each finished chunk held.
pub fn run_scenario_parallel(
    registry: &Registry,
    scn: &Scenario,
    range: Range<u64>,
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> ScenarioReport {
    let n = range.end - range.start;
    let threads = threads.max(1);
    let chunk = (n / (threads as u64 * 8)).clamp(64, 4096);
    let chunks: Vec<Range<u64>> = (0..n.div_ceil(chunk))
        .map(|i| {
            let a = range.start + i * chunk;
            a..(a + chunk).min(range.end)
        })
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    // Set when a chunk ends at an adapter fault: no new chunks start (see `run_range`).
    let faulted = std::sync::atomic::AtomicBool::new(false);
    let mut parts: Vec<(usize, ScenarioReport)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.min(chunks.len().max(1)))
            .map(|_| {
                s.spawn(|| {
                    let mut runner = Runner::new(registry);
                    let mut done = Vec::new();
                    loop {
                        if faulted.load(std::sync::atomic::Ordering::Relaxed) {
                            break;
                        }
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(c) = chunks.get(i) else { break };
                        let part = runner.run_range(scn, c.clone());
                        if part.seeds.end < c.end {
                            faulted.store(true, std::sync::atomic::Ordering::Relaxed);
                        }
                        done.push((i, part));
                        progress(c.end - c.start);
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join()
                    .expect("a seed runner thread panicked outside a run")
            })
            .collect()
    });
    parts.sort_by_key(|(i, _)| *i);
    let mut report = ScenarioReport::new(range.start..range.start);
    let mut stopped = false;
    for (i, p) in parts {
        // Chunks are taken in order, so every chunk before a faulted one ran; the report ends
        // at the first adapter fault, whichever thread met it first.
        let cut = p.seeds.end < chunks[i].end;
        report.merge(p);
        if cut {
            stopped = true;
            break;
        }
    }
    if !stopped {
        report.seeds = range;
    }
    report.judge(&scn.expect, &scn.must_reach);
    report
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

/// How findable a scenario's expected failure is in random mode.
#[derive(Clone, Debug, PartialEq)]
pub struct Findability {
    pub seeds: u64,
    pub failing: u64,
    /// Seeds a run starting at a random seed needs until the first one showing the failure
    /// (itself included): the median over every starting seed of the range, wrapping around.
    pub median_seeds_to_first: Option<u64>,
    pub p90_seeds_to_first: Option<u64>,
}

impl Findability {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "failing_seeds": self.failing,
            "failure_rate": format!("{}/{}", self.failing, self.seeds),
            "median_seeds_to_first_failure": self.median_seeds_to_first,
            "p90_seeds_to_first_failure": self.p90_seeds_to_first,
        })
    }
}

/// Which seeds of `range` show the scenario's expected failure.
pub fn expected_hits(
    registry: &Registry,
    scn: &Scenario,
    range: Range<u64>,
    threads: usize,
) -> Vec<bool> {
    let seeds: Vec<u64> = range.collect();
    let chunk = seeds.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let workers: Vec<_> = seeds
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut runner = Runner::new(registry);
                    part.iter()
                        .map(|&seed| {
                            let o = runner.run_seed(scn, seed, false).outcome;
                            !o.is_pass() && allowed(&scn.expect, &o).0
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("findability thread"))
            .collect()
    })
}

/// Failure rate and seeds to the first failure over `range`.
pub fn findability(
    registry: &Registry,
    scn: &Scenario,
    range: Range<u64>,
    threads: usize,
) -> Findability {
    let hits = expected_hits(registry, scn, range, threads);
    let n = hits.len();
    let failing = hits.iter().filter(|h| **h).count() as u64;
    let (median, p90) = if failing == 0 {
        (None, None)
    } else {
        // Distance to the next hit, scanning backwards with wrap-around.
        let mut dist = vec![0u64; n];
        let last_hit = hits.iter().rposition(|h| *h).expect("a hit");
        let mut next = last_hit + n; // the first hit after the end, in unwrapped indices
        for i in (0..2 * n).rev() {
            if hits[i % n] {
                next = i;
            }
            if i < n {
                dist[i] = (next - i) as u64 + 1;
            }
        }
        dist.sort_unstable();
        (Some(dist[n / 2]), Some(dist[(n * 9) / 10]))
    };
    Findability {
        seeds: n as u64,
        failing,
        median_seeds_to_first: median,
        p90_seeds_to_first: p90,
    }
}

/// Run each seed twice, in two runners with different allocation histories (the second after
/// other seeds), and compare the traces. Returns a sentence per divergent seed naming the first
/// record that differs.
pub fn check_determinism(registry: &Registry, scn: &Scenario, range: Range<u64>) -> Vec<String> {
    let mut warm = Runner::new(registry);
    let mut out = Vec::new();
    for seed in range {
        let a = Runner::new(registry).run_seed(scn, seed, true);
        let b = warm.run_seed(scn, seed, true);
        if a.trace_hash == b.trace_hash && a.trace == b.trace {
            continue;
        }
        let i = a
            .trace
            .iter()
            .zip(&b.trace)
            .position(|(x, y)| x != y)
            .unwrap_or(a.trace.len().min(b.trace.len()));
        let show = |t: &[Record]| {
            t.get(i).map_or("end of trace".to_string(), |r| {
                format!("{} ms {:?}", r.t.0, r.ev)
            })
        };
        out.push(format!(
            "seed {seed}: traces diverge at record {i}: {} vs {}",
            show(&a.trace),
            show(&b.trace)
        ));
    }
    out
}

fn stale_description(c: &Choices) -> Option<String> {
    if let Some(d) = c.divergence() {
        return Some(format!(
            "choice {} ({}) is now drawn with bound {}, recorded with bound {}",
            d.index, d.label, d.bound, d.recorded_bound
        ));
    }
    c.replay_mismatch()
        .map(|(unread, extra)| match (unread, extra) {
            (0, n) => format!("the run drew {n} choice(s) past the end of the recorded sequence"),
            (n, 0) => format!("the run ended with {n} recorded choice(s) unread"),
            (n, m) => format!("{n} recorded choice(s) unread and {m} drawn past the end"),
        })
}
