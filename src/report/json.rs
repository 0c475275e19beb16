//! JSON Lines: one object a line, each with a `type`.

use serde_json::{Value, json};

use super::lines;
use crate::run::{Outcome, RunResult, ScenarioReport, describe, invariants_of};
use crate::scenario::Scenario;

fn outcome_json(o: &Outcome) -> Value {
    match o {
        Outcome::Pass => json!({"verdict": "pass"}),
        Outcome::Fail(vs) => json!({
            "verdict": "fail",
            "invariants": invariants_of(o).iter().map(|i| i.name()).collect::<Vec<_>>(),
            "violations": vs.iter().map(|v| json!({
                "invariant": v.invariant.name(),
                "t_ms": v.t.0,
                "message": v.msg.map(|m| m.to_string()),
                "detail": v.detail,
            })).collect::<Vec<_>>(),
        }),
        Outcome::Panic(m) => json!({"verdict": "panic", "message": m}),
        Outcome::StepBudget { steps } => json!({"verdict": "step-budget", "steps": steps}),
        Outcome::AdapterFault(f) => json!({
            "verdict": "adapter-fault",
            "fault": f.kind.name(),
            "detail": f.detail,
            "stderr_tail": f.stderr_tail,
        }),
    }
}

/// The `"type":"scenario"` line of `wakesim run`.
pub fn scenario_line(scn: &Scenario, rep: &ScenarioReport) -> String {
    let first = rep
        .first_failure
        .as_ref()
        .map(|(seed, o)| json!({"seed": seed, "invariant": o.label(), "detail": describe(o)}));
    let unexpected = rep.unexpected.as_ref().map(|(seed, o)| {
        json!({
            "seed": seed,
            "outcome": o.label(),
            "detail": describe(o),
            "reproduce": format!("wakesim replay {} --seed {seed}", scn.path.display()),
        })
    });
    json!({
        "type": "scenario",
        "file": scn.path.display().to_string(),
        "name": scn.name,
        "host": scn.host.name(),
        "wake": scn.wake,
        "seeds": rep.seed_count(),
        "seed_range": [rep.seeds.start, rep.seeds.end],
        "events": rep.events,
        "failures": rep.failures,
        "failing_seeds_by_outcome": rep.counts,
        "first_failure": first,
        "unexpected": unexpected,
        "expect": scn.expect.to_string(),
        "met": rep.met,
        "why": rep.why,
    })
    .to_string()
}

/// The last line of `wakesim run`.
pub fn summary_line(scenarios: usize, seeds: u64, events: u64, secs: f64, unmet: usize) -> String {
    let rate = |n: u64| {
        if secs > 0.0 {
            (n as f64 / secs).round()
        } else {
            0.0
        }
    };
    json!({
        "type": "summary",
        "scenarios": scenarios,
        "unmet": unmet,
        "seeds": seeds,
        "events": events,
        "seconds": (secs * 1000.0).round() / 1000.0,
        "seeds_per_s": rate(seeds),
        "events_per_s": rate(events),
    })
    .to_string()
}

/// `wakesim replay --format json`: a run line, one line per timeline entry, a verdict line.
pub fn replay(scn: &Scenario, r: &RunResult) -> String {
    let mut out = Vec::new();
    out.push(
        json!({
            "type": "run",
            "file": scn.path.display().to_string(),
            "host": scn.host.name(),
            "wake": scn.wake,
            "seed": r.seed,
            "faults": r.faults_on,
            "version": env!("CARGO_PKG_VERSION"),
        })
        .to_string(),
    );
    for l in lines(scn.host, &r.trace, &r.messages, r.outcome.violations()) {
        out.push(
            json!({
                "type": if l.kind == super::LineKind::Violation { "violation" } else { "event" },
                "t_ms": l.t,
                "actor": l.actor.name(),
                "event": l.text,
                "state": l.state,
            })
            .to_string(),
        );
    }
    let mut verdict = outcome_json(&r.outcome);
    let obj = verdict.as_object_mut().expect("object");
    obj.insert("type".into(), json!("verdict"));
    obj.insert("events".into(), json!(r.events));
    obj.insert("end_ms".into(), json!(r.end.0));
    obj.insert("trace_hash".into(), json!(format!("{:016x}", r.trace_hash)));
    if !r.outcome.is_pass() {
        obj.insert(
            "reproduce".into(),
            json!(format!(
                "wakesim replay {} --seed {}",
                scn.path.display(),
                r.seed
            )),
        );
    }
    out.push(verdict.to_string());
    out.join("\n") + "\n"
}
