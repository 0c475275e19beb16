//! Shrinking a failing run (Hypothesis-style, over the recorded choice stream).
//!
//! A run is a function of its choice sequence, so a failing run can be made smaller by editing
//! the sequence and running it again: delete blocks of choices, lower a count and drop the draws
//! it no longer needs, set choices to 0 (the simplest option: no fault, shortest delay, first
//! event in order), lower them, and keep each edit that still breaks the same invariant. A kept run is normalised to the choices it actually consumed,
//! and each kept candidate is strictly smaller (shorter, or equally long and lexicographically
//! smaller), so shrinking terminates. Past the end of an edited sequence every draw is 0.

use super::runner::Runner;
use crate::check::Invariant;
use crate::outcome::{Outcome, RunResult};
use crate::scenario::Scenario;
use crate::sim::choice::Choice;

/// What a shrink produced.
pub struct Shrunk {
    pub invariant: Invariant,
    pub original: RunResult,
    pub minimal: RunResult,
    /// Candidate runs tried.
    pub runs: u64,
}

/// Does this outcome break `invariant`?
fn breaks(outcome: &Outcome, invariant: Invariant) -> bool {
    outcome
        .violations()
        .iter()
        .any(|v| v.invariant == invariant)
}

/// The length that matters: the records up to the violation for an invariant that breaks at an
/// instant (what happens after it is not part of the story), all records for liveness.
fn size(r: &RunResult, invariant: Invariant) -> u64 {
    if invariant.is_liveness() {
        return r.records;
    }
    (r.records_at_violation.iter())
        .find(|(i, _)| *i == invariant)
        .map_or(r.records, |(_, n)| *n)
}

/// The order shrinking descends: a shorter story first (see `size`), then fewer choices, then
/// smaller values. Well-founded, so shrinking terminates.
fn smaller(a: (u64, &[Choice]), b: (u64, &[Choice])) -> bool {
    a.0.cmp(&b.0)
        .then_with(|| a.1.len().cmp(&b.1.len()))
        .then_with(|| a.1.iter().map(|c| c.value).cmp(b.1.iter().map(|c| c.value)))
        .is_lt()
}

/// Shrink the run of `seed` while it keeps breaking `invariant` (by default the first invariant
/// it breaks). `runs_max` bounds the candidate runs tried. Returns None when the seed passes or
/// does not break `invariant`.
pub fn shrink(
    runner: &mut Runner<'_>,
    scn: &Scenario,
    seed: u64,
    invariant: Option<Invariant>,
    runs_max: u64,
) -> Option<Shrunk> {
    let original = runner.run_seed(scn, seed, true);
    let invariant =
        invariant.or_else(|| original.outcome.violations().first().map(|v| v.invariant))?;
    if !breaks(&original.outcome, invariant) {
        return None;
    }
    let mut s = Shrinker {
        runner,
        scn,
        seed,
        invariant,
        runs_max,
        runs: 0,
        best: original.choices.clone(),
        best_size: size(&original, invariant),
    };
    loop {
        let before = s.best.clone();
        s.delete_blocks();
        s.lower_and_drop();
        s.zero_and_lower();
        if s.best == before || s.runs >= runs_max {
            break;
        }
    }
    let minimal = s.runner.run_choices(scn, seed, s.best, true);
    Some(Shrunk {
        invariant,
        original,
        minimal,
        runs: s.runs,
    })
}

/// A shrink in progress: the smallest sequence so far that still breaks the invariant.
struct Shrinker<'a, 'r> {
    runner: &'a mut Runner<'r>,
    scn: &'a Scenario,
    seed: u64,
    invariant: Invariant,
    runs_max: u64,
    runs: u64,
    best: Vec<Choice>,
    best_size: u64,
}

impl Shrinker<'_, '_> {
    /// Run a candidate; when it still breaks the invariant and is smaller, it becomes the best,
    /// normalised to the sequence it consumed.
    fn attempt(&mut self, cand: Vec<Choice>) -> bool {
        if self.runs >= self.runs_max {
            return false;
        }
        self.runs += 1;
        let r = self.runner.run_choices(self.scn, self.seed, cand, false);
        let size_r = size(&r, self.invariant);
        let better = breaks(&r.outcome, self.invariant)
            && smaller((size_r, &r.choices), (self.best_size, &self.best));
        if better {
            self.best_size = size_r;
            self.best = r.choices;
        }
        better
    }

    /// 1. Delete blocks, large to small, from the end (later choices depend on earlier ones).
    fn delete_blocks(&mut self) {
        for k in [16usize, 8, 4, 2, 1] {
            let mut i = self.best.len();
            while i > 0 {
                let start = i.saturating_sub(k);
                let mut cand = self.best.clone();
                cand.drain(start..i);
                i = if self.attempt(cand) {
                    start.min(self.best.len())
                } else {
                    start
                };
            }
        }
    }

    /// 2. Lower a choice and delete what it no longer needs: fewer messages, occurrences or
    ///    turns leave the draws that served them misaligned; removing a block after the
    ///    lowered count realigns the rest.
    fn lower_and_drop(&mut self) {
        let mut i = 0;
        while i < self.best.len() {
            if self.best[i].value > 0 {
                for lower in [0, self.best[i].value - 1] {
                    for k in [1usize, 2, 3, 4, 6, 8, 12, 16] {
                        if i + 1 + k > self.best.len() {
                            break;
                        }
                        let mut cand = self.best.clone();
                        cand[i].value = lower;
                        cand.drain(i + 1..i + 1 + k);
                        if self.attempt(cand) {
                            break;
                        }
                    }
                    if i >= self.best.len() || self.best[i].value <= lower {
                        break;
                    }
                }
            }
            i += 1;
        }
    }

    /// 3. Zero each choice, or else 4. lower it (binary search toward 0).
    fn zero_and_lower(&mut self) {
        let mut i = 0;
        while i < self.best.len() {
            if self.best[i].value > 0 {
                let mut cand = self.best.clone();
                cand[i].value = 0;
                if !self.attempt(cand) {
                    self.lower(i);
                }
            }
            i += 1;
        }
    }

    /// Lower choice `i` by bisection toward 0, keeping each value that still fails.
    fn lower(&mut self, i: usize) {
        let (mut lo, mut hi) = (0, self.best[i].value);
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            let mut cand = self.best.clone();
            cand[i].value = mid;
            if self.attempt(cand) {
                if i >= self.best.len() {
                    break;
                }
                hi = self.best[i].value.min(mid);
            } else {
                lo = mid;
            }
        }
    }
}
