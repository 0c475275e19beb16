//! What `wakesim explore` prints: the scope, the runs, the failures by invariant, the smallest
//! failure's story and the verdict; as text or as one JSON line.
//!
//! A clean, exhausted scope is reported as what it is: no run *of that scope* breaks an
//! invariant. Both formats state the scope and what lies outside it, and the JSON says
//! `"proof": "scope-only"`: exploration bounds messages, unusual choices and delay points, so it
//! says nothing about a run beyond them (issue 15: a scope called "exhausted" was read as proof,
//! and seed 2,201 then broke bounded-latency).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use super::json::FORMAT;
use crate::engine::describe;
use crate::engine::explore::Explored;
use crate::scenario::{Expect, Scenario, Scope};
use crate::sim::choice::INSTANT_GRID;

/// One exploration, for either format.
pub struct Exploration<'a> {
    pub file: &'a Path,
    pub scn: &'a Scenario,
    pub ex: &'a Explored,
    pub secs: f64,
    pub met: bool,
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "explore")]
struct ExploreLine<'a> {
    format: &'static str,
    file: String,
    wake: &'a str,
    expect: String,
    scope: ScopeJson,
    runs: u64,
    distinct: u64,
    exhausted: bool,
    failing: u64,
    runs_to_expected_failure: Option<u64>,
    failing_runs_by_invariant: BTreeMap<&'static str, u64>,
    failing_runs_by_outcome: BTreeMap<&'a str, u64>,
    stopped_at_adapter_fault: bool,
    smallest_failure: Option<SmallestFailure>,
    seconds: f64,
    met: bool,
    /// Always "scope-only": a clean scope says nothing of runs outside it.
    proof: &'static str,
}

#[derive(Serialize)]
struct ScopeJson {
    messages_max: u64,
    deviations_max: usize,
    runs_max: u64,
    delays: &'static str,
    /// Interior points every delay takes besides its boundary set (`--interior`).
    interior_points: u64,
    /// Interior points an outside event's instant takes (a producer message, a timed fault).
    instant_points: u64,
    /// What no run of the scope covers, in sentences.
    not_covered: Vec<String>,
}

/// The scope's delay points, in words.
fn delay_points(scope: &Scope) -> String {
    let mut s = "delays at lo, hi and the wake logic's constants ±1".to_string();
    if scope.interior > 0 {
        s += &format!(" and {} interior point(s)", scope.interior);
    }
    s + &format!(
        ", outside events' instants also at {} interior point(s)",
        INSTANT_GRID.max(scope.interior)
    )
}

/// What the scope leaves out, in sentences.
fn not_covered(scope: &Scope) -> Vec<String> {
    vec![
        format!("runs with more than {} message(s)", scope.messages_max),
        format!(
            "runs with more than {} choice(s) away from their simplest value",
            scope.deviations_max
        ),
        "delays strictly inside their range at any other point".to_string(),
    ]
}

#[derive(Serialize)]
struct SmallestFailure {
    invariant: String,
    records: u64,
    detail: String,
}

/// The JSON line.
pub fn json(e: &Exploration<'_>) -> String {
    let ex = e.ex;
    let line = ExploreLine {
        format: FORMAT,
        file: e.file.display().to_string(),
        wake: &e.scn.wake,
        expect: e.scn.expect.to_string(),
        scope: ScopeJson {
            messages_max: ex.scope.messages_max,
            deviations_max: ex.scope.deviations_max,
            runs_max: ex.scope.runs_max,
            delays: "boundary set",
            interior_points: ex.scope.interior,
            instant_points: INSTANT_GRID.max(ex.scope.interior),
            not_covered: not_covered(&ex.scope),
        },
        runs: ex.runs,
        distinct: ex.distinct,
        exhausted: ex.exhausted,
        failing: ex.failing,
        runs_to_expected_failure: ex.runs_to_expected,
        failing_runs_by_invariant: ex
            .by_invariant
            .iter()
            .map(|(i, n)| (i.name(), *n))
            .collect(),
        failing_runs_by_outcome: ex
            .by_outcome
            .iter()
            .map(|(o, n)| (o.as_str(), *n))
            .collect(),
        stopped_at_adapter_fault: ex.stopped_at_fault,
        smallest_failure: ex.smallest.as_ref().map(|r| SmallestFailure {
            invariant: r.outcome.label(),
            records: r.records,
            detail: describe(&r.outcome),
        }),
        seconds: (e.secs * 1000.0).round() / 1000.0,
        met: e.met,
        proof: "scope-only",
    };
    serde_json::to_string(&line).expect("an explore line serializes") + "\n"
}

/// The text report.
pub fn text(e: &Exploration<'_>) -> String {
    let (ex, scn) = (e.ex, e.scn);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "explored {} ({}): at most {} message(s), at most {} deviation(s) per run, {}",
        e.file.display(),
        scn.wake,
        ex.scope.messages_max,
        ex.scope.deviations_max,
        delay_points(&ex.scope)
    );
    let _ = writeln!(
        s,
        "  {} runs ({} distinct) in {:.2} s · {}",
        ex.runs,
        ex.distinct,
        e.secs,
        if ex.exhausted {
            "every run of this scope ran"
        } else {
            "NOT every run of this scope ran: --runs-max reached"
        }
    );
    if ex.failing == 0 {
        let _ = writeln!(
            s,
            "  no run {} breaks an invariant; scope only, not a proof: not covered are {}",
            if ex.exhausted {
                "of this scope"
            } else {
                "that ran"
            },
            not_covered(&ex.scope).join(", ")
        );
    } else {
        let by: Vec<String> = (ex.by_invariant.iter())
            .map(|(i, n)| format!("{i} {n}"))
            .chain(ex.by_outcome.iter().map(|(o, n)| format!("{o} {n}")))
            .collect();
        let _ = writeln!(s, "  failing runs: {} ({})", ex.failing, by.join(", "));
    }
    let smallest = ex.smallest_expected.as_ref().or(ex.smallest.as_ref());
    if ex.stopped_at_fault
        && let Some(r) = smallest
    {
        let _ = writeln!(
            s,
            "  stopped: the adapter faulted (restarting it for every run of the scope tells nothing new)"
        );
        for l in describe(&r.outcome).lines() {
            let _ = writeln!(s, "    {l}");
        }
    } else if let Some(r) = smallest {
        let target = match &scn.expect {
            Expect::Fail { invariant, .. } => Some(*invariant),
            _ => r.outcome.violations().first().map(|v| v.invariant),
        };
        let _ = writeln!(s, "  the smallest failure ({} records):", r.records);
        let scoped = scn.scoped(ex.scope.messages_max);
        for l in super::text::story(&scoped, r, target).lines() {
            if !l.starts_with("reproduce:") {
                let _ = writeln!(s, "    {l}");
            }
        }
    }
    let verdict = match (e.met, &e.ex.smallest_expected) {
        (false, _) => "NOT met",
        (true, None) if !matches!(scn.expect, Expect::Pass) => {
            "not in this scope, as its `[explore] holds_bug = false` says (its seeds show it)"
        }
        (true, _) => "met",
    };
    let _ = writeln!(s, "  expect {}: {verdict}", scn.expect);
    s
}
