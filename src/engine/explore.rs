//! Bounded exhaustive exploration (loom, CHESS): enumerate every choice sequence of a small
//! scope instead of sampling seeds.
//!
//! A run is a function of its choice sequence, so the runs of a scenario form a tree: each
//! choice is a node whose children are its values, value 0 first (the simplest). Exploration
//! walks that tree depth first without keeping it: it replays a prefix, lets every later draw
//! take 0, reads the sequence the run actually consumed, and moves to the next sequence by
//! incrementing the deepest choice that can still grow. Within the scope every sequence is run
//! exactly once.
//!
//! The scope keeps the tree small (the small-scope hypothesis: most wake races need two
//! messages and one or two unusual decisions):
//! - at most `messages_max` producer messages;
//! - delays drawn only from the boundary set (`lo`, `hi`, each constant of the wake logic and
//!   one either side), never uniformly;
//! - at most `deviations_max` choices away from their simplest value per run (as context
//!   bounding counts preemptions), while every same-instant order within that budget is tried;
//! - with `interior` N (`explore --interior N`), every delay also takes N evenly spaced interior
//!   points of its range (outside events' instants take `INSTANT_GRID` of them anyway).
//!
//! So a clean, exhausted scope is no proof beyond it: a run with more messages, more unusual
//! choices, or a delay strictly inside its range off those points is not among the runs.

use std::collections::BTreeSet;

use super::runner::Runner;
use crate::check::Invariant;
use crate::outcome::{Outcome, RunResult};
use crate::scenario::{Expect, Scenario, Scope};
use crate::sim::choice::{Choice, Profile};

/// The result of exploring a scope.
pub struct Explored {
    pub scope: Scope,
    /// Choice sequences run.
    pub runs: u64,
    /// Distinct runs among them (by trace hash).
    pub distinct: u64,
    /// True when every sequence of the scope was run.
    pub exhausted: bool,
    pub failing: u64,
    /// Runs breaking each invariant.
    pub by_invariant: Vec<(Invariant, u64)>,
    /// Failing runs that broke no invariant, by outcome (panic, step-budget, adapter-fault).
    pub by_outcome: Vec<(String, u64)>,
    /// Exploration stopped at a run whose adapter faulted: restarting a crashing or hanging
    /// adapter for every sequence of the scope would take days, and tells nothing new.
    pub stopped_at_fault: bool,
    /// The smallest failing run (fewest trace records), traced, with its choices.
    pub smallest: Option<RunResult>,
    /// The smallest run showing the scenario's expected failure, if it expects one.
    pub smallest_expected: Option<RunResult>,
    /// How many runs it took to first show the expected failure.
    pub runs_to_expected: Option<u64>,
}

/// Enumerate the scope of `scn`.
pub fn explore(runner: &mut Runner<'_>, scn: &Scenario, scope: Scope) -> Explored {
    explore_until(runner, scn, scope, false)
}

/// Enumerate the scope of `scn`; with `stop_when_found`, stop at the first run showing the
/// scenario's expected failure (the gate only needs to know it is in the scope).
pub fn explore_until(
    runner: &mut Runner<'_>,
    scn: &Scenario,
    scope: Scope,
    stop_when_found: bool,
) -> Explored {
    let scn = scn.scoped(scope.messages_max);
    let profile = Profile {
        boundary_only: true,
        interior: scope.interior,
    };
    let mut prefix: Vec<Choice> = Vec::new();
    let mut hashes = BTreeSet::new();
    let mut out = Explored {
        scope,
        runs: 0,
        distinct: 0,
        exhausted: false,
        failing: 0,
        by_invariant: Vec::new(),
        by_outcome: Vec::new(),
        stopped_at_fault: false,
        smallest: None,
        smallest_expected: None,
        runs_to_expected: None,
    };
    while out.runs < scope.runs_max {
        let r = runner.run_profiled(&scn, 0, prefix.clone(), profile, false);
        out.runs += 1;
        hashes.insert(r.trace_hash);
        if out.tally(&r, &scn.expect) && stop_when_found {
            break;
        }
        if matches!(r.outcome, Outcome::AdapterFault(_)) {
            out.stopped_at_fault = true;
            break;
        }
        match next_sequence(r.choices, scope.deviations_max) {
            Some(next) => prefix = next,
            None => {
                out.exhausted = true;
                break;
            }
        }
    }
    out.distinct = hashes.len() as u64;
    out.by_invariant.sort();
    // Re-run the smallest failures traced, for their timelines; not one whose adapter faulted
    // (it would fault again, after another wall-clock bound): its fault says what happened.
    for slot in [&mut out.smallest, &mut out.smallest_expected] {
        if let Some(s) = slot.take_if(|s| !matches!(s.outcome, Outcome::AdapterFault(_))) {
            *slot = Some(runner.run_profiled(&scn, 0, s.choices, profile, true));
        }
    }
    out
}

impl Explored {
    /// Account one run; true when it shows the expected failure.
    fn tally(&mut self, r: &RunResult, expect: &Expect) -> bool {
        if r.outcome.is_pass() {
            return false;
        }
        let size = |r: &RunResult| r.records;
        self.failing += 1;
        if r.outcome.violations().is_empty() {
            let label = r.outcome.label();
            match self.by_outcome.iter_mut().find(|(l, _)| *l == label) {
                Some((_, n)) => *n += 1,
                None => self.by_outcome.push((label, 1)),
            }
        }
        for v in r.outcome.violations() {
            match self
                .by_invariant
                .iter_mut()
                .find(|(i, _)| *i == v.invariant)
            {
                Some((_, n)) => *n += 1,
                None => self.by_invariant.push((v.invariant, 1)),
            }
        }
        if self.smallest.as_ref().is_none_or(|s| size(r) < size(s)) {
            self.smallest = Some(r.clone_untraced());
        }
        if !shows(expect, &r.outcome) {
            return false;
        }
        self.runs_to_expected.get_or_insert(self.runs);
        if self
            .smallest_expected
            .as_ref()
            .is_none_or(|s| size(r) < size(s))
        {
            self.smallest_expected = Some(r.clone_untraced());
        }
        true
    }
}

/// The sequence after `log` (the choices a run consumed): the deepest choice that can still
/// grow within the deviation budget grows by one, and everything after it is dropped (drawn
/// as 0, the simplest). None when every sequence of the scope has been run.
fn next_sequence(log: Vec<Choice>, deviations_max: usize) -> Option<Vec<Choice>> {
    let mut deviations: Vec<usize> = Vec::with_capacity(log.len() + 1);
    let mut d = 0;
    for c in &log {
        deviations.push(d);
        d += usize::from(c.value > 0);
    }
    let i = (0..log.len()).rev().find(|&i| {
        let c = log[i];
        c.value + 1 < c.bound && deviations[i] < deviations_max
    })?;
    let mut next = log;
    next.truncate(i + 1);
    next[i].value += 1;
    Some(next)
}

fn shows(expect: &Expect, outcome: &Outcome) -> bool {
    match expect {
        Expect::Fail { invariant, .. } => outcome
            .violations()
            .iter()
            .any(|v| v.invariant == *invariant),
        Expect::Panic => matches!(outcome, Outcome::Panic(_)),
        Expect::StepBudget => matches!(outcome, Outcome::StepBudget { .. }),
        Expect::AdapterFault => matches!(outcome, Outcome::AdapterFault(_)),
        Expect::Pass => false,
    }
}
