//! What `wakesim explore` prints: the scope, the runs, the failures by invariant, the smallest
//! failure's story and the verdict; as text or as one JSON line.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use super::json::FORMAT;
use crate::engine::describe;
use crate::engine::explore::Explored;
use crate::scenario::{Expect, Scenario};

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
}

#[derive(Serialize)]
struct ScopeJson {
    messages_max: u64,
    deviations_max: usize,
    runs_max: u64,
    delays: &'static str,
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
    };
    serde_json::to_string(&line).expect("an explore line serializes") + "\n"
}

/// The text report.
pub fn text(e: &Exploration<'_>) -> String {
    let (ex, scn) = (e.ex, e.scn);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "explored {} ({}): at most {} message(s), delays from the boundary set, at most {} deviation(s) per run",
        e.file.display(),
        scn.wake,
        ex.scope.messages_max,
        ex.scope.deviations_max
    );
    let _ = writeln!(
        s,
        "  {} runs ({} distinct) in {:.2} s · {}",
        ex.runs,
        ex.distinct,
        e.secs,
        if ex.exhausted {
            "scope exhausted"
        } else {
            "NOT exhausted: --runs-max reached"
        }
    );
    if ex.failing == 0 {
        let _ = writeln!(s, "  no run breaks any invariant");
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
    let _ = writeln!(
        s,
        "  expect {}: {}",
        scn.expect,
        if e.met { "met" } else { "NOT met" }
    );
    s
}
