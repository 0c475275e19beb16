//! JSON Lines: one object a line, each with a `type`.

use serde_json::{Value, json};

use super::lines;
use crate::engine::run::{Outcome, RunResult, ScenarioReport, SeedNote, invariants_of};
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

/// The `"type":"scenario"` line of `wakesim run`; `extra` adds named sections (findability,
/// determinism).
pub fn scenario_line(scn: &Scenario, rep: &ScenarioReport, extra: &[(&str, Value)]) -> String {
    let first = rep
        .first_failure
        .as_ref()
        .map(|n| json!({"seed": n.seed, "invariant": n.outcome, "detail": n.detail}));
    let unexpected = rep.unexpected.as_ref().map(|n| {
        json!({
            "seed": n.seed,
            "outcome": n.outcome,
            "detail": n.detail,
            "reproduce": format!("wakesim replay {} --seed {}", scn.path.display(), n.seed),
        })
    });
    let mut line = json!({
        "type": "scenario",
        "file": scn.path.display().to_string(),
        "name": scn.name,
        "host": scn.host.name(),
        "wake": scn.wake,
        "expect": scn.expect.to_string(),
        "must_reach": scn.must_reach.iter().map(|w| w.name()).collect::<Vec<_>>(),
        "seeds": rep.seed_count(),
        "seed_range": [rep.seeds.start, rep.seeds.end],
        "events": rep.events,
        "failures": rep.failures,
        "failing_seeds_by_outcome": rep.counts,
        "windows": rep.windows,
        "first_failure": first,
        "first_expected": rep.first_expected,
        "unexpected": unexpected,
        "met": rep.met,
        "why": rep.why,
    });
    let obj = line.as_object_mut().expect("object");
    for (k, v) in extra {
        obj.insert((*k).to_string(), v.clone());
    }
    line.to_string()
}

/// Read a scenario line back into the (unjudged) report it came from, for `wakesim merge`.
pub fn report_from_line(v: &Value) -> Result<ScenarioReport, String> {
    let u64_at = |key: &str| {
        v[key]
            .as_u64()
            .ok_or_else(|| format!("`{key}` is missing or not a number"))
    };
    let range = v["seed_range"]
        .as_array()
        .and_then(|a| Some(a.first()?.as_u64()?..a.get(1)?.as_u64()?))
        .ok_or("`seed_range` is missing or not [start, end]")?;
    let counts = |key: &str| -> Result<std::collections::BTreeMap<String, u64>, String> {
        serde_json::from_value(v[key].clone()).map_err(|e| format!("`{key}`: {e}"))
    };
    let note = |key: &str, label: &str| -> Result<Option<SeedNote>, String> {
        if v[key].is_null() {
            return Ok(None);
        }
        let n = &v[key];
        Ok(Some(SeedNote {
            seed: n["seed"]
                .as_u64()
                .ok_or(format!("`{key}.seed` is missing"))?,
            outcome: n[label]
                .as_str()
                .ok_or(format!("`{key}.{label}` is missing"))?
                .to_string(),
            detail: n["detail"].as_str().unwrap_or_default().to_string(),
        }))
    };
    let mut rep = ScenarioReport::new(range);
    rep.events = u64_at("events")?;
    rep.failures = u64_at("failures")?;
    rep.counts = counts("failing_seeds_by_outcome")?;
    rep.windows = counts("windows")?;
    rep.first_failure = note("first_failure", "invariant")?;
    rep.first_expected = v["first_expected"].as_u64();
    rep.unexpected = note("unexpected", "outcome")?;
    Ok(rep)
}

/// The last line of `wakesim run`.
pub fn summary_line(sum: &super::Summary) -> String {
    json!({
        "type": "summary",
        "regressions": sum.regressions,
        "scenarios": sum.scenarios,
        "unmet": sum.unmet,
        "seeds": sum.seeds,
        "events": sum.events,
        "seconds": (sum.secs * 1000.0).round() / 1000.0,
        "seeds_per_s": sum.rate(sum.seeds).round(),
        "events_per_s": sum.rate(sum.events).round(),
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
            "faults": r.mix.faults.iter().map(|(n, rate)| json!({"fault": n, "rate": rate.to_string()})).collect::<Vec<_>>(),
            "producers": r.mix.producers,
            "windows": r.marks.iter().map(|(w, n)| json!({"window": w.name(), "count": n})).collect::<Vec<_>>(),
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
        let line = super::reproduce(scn, r);
        obj.insert(
            "reproduce".into(),
            json!(line.trim_start_matches("reproduce: ")),
        );
    }
    out.push(verdict.to_string());
    out.join("\n") + "\n"
}

/// The `"type":"regression"` line of `wakesim run`.
pub fn regression_line(
    reg: &crate::engine::regression::Regression,
    r: &crate::engine::regression::Replayed,
) -> String {
    use crate::engine::regression::Replayed;
    let (result, met, stale) = match r {
        Replayed::Stale { result, why } => (result, false, Some(why.clone())),
        Replayed::Run { result, met } => (result, *met, None),
    };
    json!({
        "type": "regression",
        "file": reg.path.display().to_string(),
        "scenario": reg.scenario.path.display().to_string(),
        "seed": reg.seed,
        "expect": reg.expect.to_string(),
        "outcome": result.outcome.label(),
        "detail": crate::engine::run::describe(&result.outcome),
        "events": result.events,
        "stale": stale,
        "met": met,
        "reproduce": format!("wakesim replay {}", reg.path.display()),
    })
    .to_string()
}
