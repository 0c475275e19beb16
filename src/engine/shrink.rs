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
    match invariant {
        Invariant::NoLoss | Invariant::BoundedLatency => r.records,
        _ => r
            .records_at_violation
            .iter()
            .find(|(i, _)| *i == invariant)
            .map_or(r.records, |(_, n)| *n),
    }
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
    let mut best = original.choices.clone();
    let best_size = std::cell::Cell::new(size(&original, invariant));
    let runs = std::cell::Cell::new(0u64);
    // Try a candidate; on success return the normalised sequence it consumed.
    let attempt =
        |runner: &mut Runner<'_>, cand: Vec<Choice>, best: &[Choice]| -> Option<Vec<Choice>> {
            if runs.get() >= runs_max {
                return None;
            }
            runs.set(runs.get() + 1);
            let r = runner.run_choices(scn, seed, cand, false);
            let better = breaks(&r.outcome, invariant)
                && smaller((size(&r, invariant), &r.choices), (best_size.get(), best));
            if better {
                best_size.set(size(&r, invariant));
            }
            better.then_some(r.choices)
        };
    loop {
        let before = best.clone();
        // 1. Delete blocks, large to small, from the end (later choices depend on earlier ones).
        for k in [16usize, 8, 4, 2, 1] {
            let mut i = best.len();
            while i > 0 {
                let start = i.saturating_sub(k);
                let mut cand = best.clone();
                cand.drain(start..i);
                if let Some(c) = attempt(runner, cand, &best) {
                    best = c;
                    i = start.min(best.len());
                } else {
                    i = start;
                }
            }
        }
        // 2. Lower a choice and delete what it no longer needs: fewer messages, occurrences or
        //    turns leave the draws that served them misaligned; removing a block after the
        //    lowered count realigns the rest.
        let mut i = 0;
        while i < best.len() {
            if best[i].value > 0 {
                for lower in [0, best[i].value - 1] {
                    for k in [1usize, 2, 3, 4, 6, 8, 12, 16] {
                        if i + 1 + k > best.len() {
                            break;
                        }
                        let mut cand = best.clone();
                        cand[i].value = lower;
                        cand.drain(i + 1..i + 1 + k);
                        if let Some(c) = attempt(runner, cand, &best) {
                            best = c;
                            break;
                        }
                    }
                    if i >= best.len() || best[i].value <= lower {
                        break;
                    }
                }
            }
            i += 1;
        }
        // 3. Zero, then 4. lower each choice (binary search toward 0).
        let mut i = 0;
        while i < best.len() {
            if best[i].value > 0 {
                let mut cand = best.clone();
                cand[i].value = 0;
                if let Some(c) = attempt(runner, cand, &best) {
                    best = c;
                    i += 1;
                    continue;
                }
                let (mut lo, mut hi) = (0, best[i].value);
                while lo + 1 < hi {
                    let mid = lo + (hi - lo) / 2;
                    let mut cand = best.clone();
                    cand[i].value = mid;
                    match attempt(runner, cand, &best) {
                        Some(c) => {
                            best = c;
                            if i >= best.len() {
                                break;
                            }
                            hi = best[i].value.min(mid);
                        }
                        None => lo = mid,
                    }
                }
            }
            i += 1;
        }
        if best == before || runs.get() >= runs_max {
            break;
        }
    }
    let minimal = runner.run_choices(scn, seed, best, true);
    Some(Shrunk {
        invariant,
        original,
        minimal,
        runs: runs.get(),
    })
}
