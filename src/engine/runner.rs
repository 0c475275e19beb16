//! Running seeds: one seed to a `RunResult`, a scenario's seed range to a `ScenarioReport`.
//!
//! A run is a pure function of (scenario, seed): the kernel, the host model and a fresh wake logic
//! are built from the scenario and driven to the end by the scenario's family (`family::Runs`).
//! The runner keeps one family runner (and so one kernel) per family it meets, and the adapter
//! processes of external wake logics, across seeds. A real host's seeds run through the remote
//! lane instead (`remote`): its driver process plays the host, kept across seeds too, and its
//! runs are judged by the host's family's invariants.

use std::ops::Range;

use super::shard::Owner;
use super::verdict::{ScenarioReport, SeedNote, Tally, indent};
use crate::adapter::{Peer, Pool};
use crate::check::Recording;
use crate::error::{Error, Result};
use crate::family::{HostKind, Job, Registry, Runs, WakeSource};
use crate::outcome::{Drive, Outcome, RunResult};
use crate::remote::{self, RemoteKernel, RemoteWorld};
use crate::scenario::Scenario;
use crate::sim::choice::{Choice, Choices, Profile};
use crate::sim::search::{Guide, coverage_block_start};

/// Runs seeds of scenarios, reusing each host's kernel allocations between seeds.
pub struct Runner<'r> {
    registry: &'r Registry,
    /// Each family's runner met so far, by family name (its kernel is reused across seeds).
    runs: Vec<(&'static str, Box<dyn Runs>)>,
    /// Adapter processes of external wake logics, kept alive across seeds.
    adapters: Pool,
    /// Real hosts' driver processes, kept alive across seeds, and the kernel their runs record on.
    remotes: remote::Pool,
    remote_kernel: Option<RemoteKernel>,
    /// The coverage block last run (`sim::search::Guide`), with the scenario it belongs to and
    /// the next seed it plans: a sweep's next seed continues it instead of replaying the block.
    guide: Option<Box<GuideState>>,
}

/// A coverage block in progress: whose it is and the seed it plans next.
struct GuideState {
    path: std::path::PathBuf,
    wake: String,
    next: u64,
    guide: Guide,
}

impl<'r> Runner<'r> {
    pub fn new(registry: &'r Registry) -> Runner<'r> {
        Runner {
            registry,
            runs: Vec::new(),
            adapters: Pool::default(),
            remotes: remote::Pool::default(),
            remote_kernel: None,
            guide: None,
        }
    }

    /// Start the adapter of an external wake logic and run its first reset (or a real host's
    /// driver and its handshake), so a command or a module that cannot start is reported as an
    /// error of the scenario (exit 2) before any seed runs. Built-in wake logics need nothing.
    pub fn prepare(&mut self, scn: &Scenario) -> Result<()> {
        let (started, origin, what) = match (&scn.adapter, &scn.remote) {
            (Some(spec), _) => (
                self.adapters.prepare(spec, peer(scn.host)),
                &spec.origin,
                "adapter",
            ),
            (None, Some(spec)) => (
                self.remotes.prepare(spec, scn.limits),
                &spec.origin,
                "real host's driver",
            ),
            (None, None) => return Ok(()),
        };
        started.map_err(|f| {
            let (file, line, column) = origin.clone();
            let mut message = format!("the {what} did not start: {f}");
            if !f.stderr_tail.is_empty() {
                message += &format!("; its stderr ends with:\n{}", indent(&f.stderr_tail));
            }
            Error::Scenario {
                file,
                line,
                column,
                key: Some("wake".to_string()),
                message,
            }
        })
    }

    /// The error (exit 2) of a scenario whose code under test did not load at seed `note.seed`:
    /// bad input, named at the scenario's `wake` key, as an adapter that cannot start is.
    pub fn not_loaded(scn: &Scenario, note: &SeedNote) -> Error {
        let origin = match (&scn.adapter, &scn.remote) {
            (Some(spec), _) => spec.origin.clone(),
            (None, Some(spec)) => spec.origin.clone(),
            (None, None) => (scn.path.clone(), 1, 1),
        };
        let (file, line, column) = origin;
        Error::Scenario {
            file,
            line,
            column,
            key: Some("wake".to_string()),
            message: format!(
                "the code under test did not load (seed {}): {}",
                note.seed, note.detail
            ),
        }
    }

    pub fn registry(&self) -> &Registry {
        self.registry
    }

    /// Run one seed of a scenario, keeping its trace hash and choices (and its timeline when
    /// `tracing`).
    pub fn run_seed(&mut self, scn: &Scenario, seed: u64, tracing: bool) -> RunResult {
        self.run_with(scn, seed, None, Recording::traced(tracing))
    }

    /// Run one seed of a scenario for its verdict only (outcome, events, requests, windows):
    /// no trace hash, narration, timeline or choice log. What bulk runs use; a seed's run is the
    /// same as `run_seed`'s, which replays it with everything kept.
    pub fn run_verdict(&mut self, scn: &Scenario, seed: u64) -> RunResult {
        self.run_with(scn, seed, None, Recording::Verdict)
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
        self.run_with(
            scn,
            seed,
            Some(Choices::replay(choices, profile)),
            Recording::traced(tracing),
        )
    }

    fn run_with(
        &mut self,
        scn: &Scenario,
        seed: u64,
        choices: Option<Choices>,
        recording: Recording,
    ) -> RunResult {
        // A seed under a guided search draws from its own stream; under swarm (and on a real
        // host, whose driver reads a uniform stream ahead) it is the kernel's reseeded one.
        if choices.is_none() && scn.search.is_fed_back() && scn.remote.is_none() {
            return self.run_coverage(scn, seed, recording);
        }
        let choices = match choices {
            None if !scn.search.is_swarm() && scn.remote.is_none() => Some(Choices::searched(
                seed,
                scn.search,
                crate::sim::choice::Profile::default(),
            )),
            c => c,
        };
        // A real host: its driver plays the host and the wake logic it loaded.
        if let Some(spec) = &scn.remote {
            let slot = self.remotes.slot(spec, scn.limits);
            let drive = Drive {
                seed,
                choices,
                limits: scn.limits,
                enabled: scn.host.invariants(),
                check: scn.check,
                recording,
                names: scn.host.family().sender_names(),
            };
            return drive.run(&mut self.remote_kernel, || RemoteWorld::new(slot, spec));
        }
        // A wake logic in another language runs in its adapter process.
        let wake = match &scn.adapter {
            Some(spec) => WakeSource::Adapter(
                self.adapters.slot(spec, peer(scn.host)),
                spec.constants_ms.clone(),
            ),
            None => WakeSource::Registered(self.registry.get(&scn.wake).unwrap_or_else(|| {
                panic!(
                    "scenario {} names unknown wake {}",
                    scn.path.display(),
                    scn.wake
                )
            })),
        };
        let family = scn.host.family();
        let runs = match self
            .runs
            .iter()
            .position(|(name, _)| *name == family.name())
        {
            Some(i) => &mut self.runs[i].1,
            None => {
                self.runs.push((family.name(), family.runs()));
                &mut self.runs.last_mut().expect("pushed").1
            }
        };
        runs.run(Job {
            host: scn.host,
            config: &scn.config,
            wake,
            limits: scn.limits,
            check: scn.check,
            seed,
            choices,
            recording,
        })
    }
}

impl Runner<'_> {
    /// Run `seed` under the coverage search: planned from the runs of its block's earlier seeds,
    /// run first when the runner's block in progress is not this scenario's or is past `seed`
    /// (a replay, or the first seed of a thread's chunk), so the run is the same however the
    /// seeds were split.
    fn run_coverage(&mut self, scn: &Scenario, seed: u64, recording: Recording) -> RunResult {
        let start = coverage_block_start(seed);
        let mut st = match self.guide.take() {
            Some(st)
                if st.path == scn.path
                    && st.wake == scn.wake
                    && st.guide.start() == start
                    && st.guide.search() == scn.search
                    && st.next <= seed =>
            {
                st
            }
            _ => Box::new(GuideState {
                path: scn.path.clone(),
                wake: scn.wake.clone(),
                next: start,
                guide: Guide::new(scn.search, start),
            }),
        };
        while st.next < seed {
            let s = st.next;
            let c = st.guide.choices(s);
            let r = self.run_with(scn, s, Some(c), Recording::Verdict);
            st.guide
                .observe(&r.marks, &r.marks_at, &r.mix, r.requests, r.choices);
            st.next += 1;
        }
        let c = st.guide.choices(seed);
        let r = self.run_with(scn, seed, Some(c), recording);
        st.guide
            .observe(&r.marks, &r.marks_at, &r.mix, r.requests, r.choices.clone());
        st.next = seed + 1;
        self.guide = Some(st);
        r
    }
}

/// The host an adapter process of `host` serves.
fn peer(host: HostKind) -> Peer {
    Peer {
        family: host.family().name(),
        version: host.version_label(),
    }
}

impl Runner<'_> {
    /// Run seeds `range` of a scenario and account them, without judging.
    pub fn run_range(&mut self, scn: &Scenario, range: Range<u64>) -> ScenarioReport {
        self.run_range_while(scn, range, &|_| true)
    }

    /// Run seeds `range` of a scenario and account them while `go` (asked before each seed with
    /// the report so far) says so. A sweep stopped early reports the seeds that ran: its `seeds`
    /// end where it stopped.
    pub fn run_range_while(
        &mut self,
        scn: &Scenario,
        range: Range<u64>,
        go: &dyn Fn(&ScenarioReport) -> bool,
    ) -> ScenarioReport {
        self.run_owned_while(scn, range, None, go)
    }

    /// [`Runner::run_range_while`] over the seeds of `range` that `owner` owns (every seed when
    /// `None`), counting the others in `others`. Stopped or cut short by an adapter fault, the
    /// report's `seeds` ends where the whole run's would.
    pub fn run_owned_while(
        &mut self,
        scn: &Scenario,
        range: Range<u64>,
        owner: Option<Owner>,
        go: &dyn Fn(&ScenarioReport) -> bool,
    ) -> ScenarioReport {
        let mut report = ScenarioReport::new(range.clone());
        let mut tally = Tally::default();
        for seed in range {
            if owner.is_some_and(|o| !o.owns(seed)) {
                report.others += 1;
                continue;
            }
            if !go(&report) {
                report.seeds.end = seed;
                break;
            }
            let r = self.run_verdict(scn, seed);
            report.add_tallied(&r, &scn.expect, &mut tally);
            report.check_requests(&r, scn.requests, &scn.expect);
            if matches!(r.outcome, Outcome::AdapterFault(_)) {
                // A broken adapter is one finding; restarting it for every remaining seed would
                // only repeat it, slowly. The report covers the seeds that ran.
                report.seeds.end = seed + 1;
                break;
            }
        }
        report.fold(tally);
        report
    }

    /// Run seeds `range` of a scenario and judge its expectation.
    pub fn run_scenario(&mut self, scn: &Scenario, range: Range<u64>) -> ScenarioReport {
        let mut report = self.run_range(scn, range);
        report.judge(&scn.expect, &scn.must_reach);
        report
    }
}
