//! Running the lane: scenario files that name async wake logics, one madsim runtime per seed,
//! and wakesim's own `Outcome`, `RunResult`, expectation logic and reports.

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use wakesim::check::Monitor;
use wakesim::engine::{Outcome, RunResult, ScenarioReport};
use wakesim::family::Family;
use wakesim::family::pi::config::PiConfig;
use wakesim::family::pi::{PiFamily, PiHost};
use wakesim::limits::BudgetExceeded;
use wakesim::scenario::Scenario;
use wakesim::sim::choice::{Choices, Profile};
use wakesim::sim::msg::SenderNames;
use wakesim::sim::swarm::Mix;
use wakesim::sim::{End, Kernel, World};

use crate::bridge::{self, Driven};
use crate::wake::{self, AsyncWake};

/// The command that replays one seed of a lane scenario (paths relative to the repository root,
/// where `cargo` runs).
pub fn replay_line(file: &Path, seed: u64) -> String {
    format!(
        "reproduce: cargo run -p wakesim-madsim --example replay -- {} --seed {seed}",
        file.display()
    )
}

/// The madsim lane: its async wake logics, and running scenarios that name them.
pub struct Lane {
    wakes: Vec<AsyncWake>,
}

impl Default for Lane {
    fn default() -> Self {
        Lane::builtin()
    }
}

impl Lane {
    /// The built-in async wake logics.
    pub fn builtin() -> Lane {
        Lane {
            wakes: wake::builtin(),
        }
    }

    /// Add (or replace) an async wake logic.
    pub fn with(mut self, w: AsyncWake) -> Lane {
        self.wakes.retain(|e| e.name != w.name);
        self.wakes.push(w);
        self
    }

    pub fn wakes(&self) -> &[AsyncWake] {
        &self.wakes
    }

    pub fn wake(&self, name: &str) -> Option<&AsyncWake> {
        self.wakes.iter().find(|w| w.name == name)
    }

    /// Read and validate a scenario file whose `wake` is one of this lane's logics.
    pub fn load(&self, path: &Path) -> wakesim::Result<Scenario> {
        let text = std::fs::read_to_string(path).map_err(|source| wakesim::Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let names: Vec<&str> = self.wakes.iter().map(|w| w.name).collect();
        Scenario::parse_for(path, &text, &names)
    }

    /// Run one seed: a fresh madsim runtime seeded with `seed`, the host's choices seeded with
    /// `seed`, a fresh wake logic. `events` counts kernel events and calls served.
    pub fn run_seed(&self, scn: &Scenario, seed: u64, tracing: bool) -> RunResult {
        let logic = self.wake(&scn.wake).unwrap_or_else(|| {
            panic!(
                "scenario {} names unknown async wake {}",
                scn.path.display(),
                scn.wake
            )
        });
        // `Scenario::parse_for` admits pi hosts only, and a pi host has a pi configuration.
        let (_, generation) = PiFamily::HOSTS[scn.host.index()];
        let config = (scn.config.get::<PiConfig>()).expect("a pi host has a pi configuration");
        let enabled = scn.host.invariants();
        // The timeline names each message's sender in pi's words, as the built-in pi lane does.
        let mut monitor = Monitor::new(enabled, scn.check, tracing);
        monitor.set_sender_names(SenderNames(PiFamily::sender_name));
        let mut k = Kernel::new(
            Choices::random(seed, Profile::default()),
            monitor,
            scn.limits,
        );
        let w = bridge::wire(logic.constants_ms.to_vec());
        let mut world = PiHost::new(generation, config.clone(), Box::new(w.forward));
        let rt = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        let start = logic.start;
        let (host, events, requests, posted, keep) =
            (w.host, w.events, w.requests, w.posted, w.keep);
        let result = catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(async {
                let _keep = keep;
                tokio::spawn(start(host, events));
                bridge::drive(&mut world, &mut k, requests, &posted).await
            })
        }));
        drop(rt);
        let (outcome, calls, mix) = match result {
            Ok(Driven {
                end: End::StepBudget,
                calls,
            }) => (
                Outcome::StepBudget {
                    steps: k.steps() + calls,
                },
                calls,
                world.mix(),
            ),
            Ok(Driven { calls, .. }) => {
                let v = k.sink.violations();
                let outcome = if v.is_empty() {
                    Outcome::Pass
                } else {
                    Outcome::Fail(v.to_vec())
                };
                (outcome, calls, world.mix())
            }
            Err(payload) if payload.is::<BudgetExceeded>() => {
                (Outcome::StepBudget { steps: k.steps() }, 0, Mix::default())
            }
            Err(payload) => (Outcome::Panic(panic_text(&*payload)), 0, Mix::default()),
        };
        let mut r = RunResult::from_kernel(seed, outcome, mix, &mut k);
        // A call the host served is a step of this lane too. (`replay` stays unset: this lane
        // replays by seed, with `replay_line`.)
        r.events += calls;
        r
    }

    /// Run seeds `range` of a scenario and judge its expectation (wakesim's own logic, race
    /// windows required by `coverage.must_reach` included).
    pub fn run_scenario(&self, scn: &Scenario, range: Range<u64>) -> ScenarioReport {
        let mut report = ScenarioReport::new(range.clone());
        for seed in range {
            report.add(&self.run_seed(scn, seed, false), &scn.expect);
        }
        report.judge(&scn.expect, &scn.must_reach);
        report
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
