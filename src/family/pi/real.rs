//! pi's real hosts: the pinned releases `hosts/pi/driver.mjs` runs (`docs/remote-host.md`), the
//! names its driver uses for pi's own vocabulary, the scenario's pi sections as the driver reads
//! them, and the model twin conformance compares a real run with.

use serde_json::{Value, json};

use super::config::PiConfig;
use super::vocab::SESSION_REPLACED;
use crate::family::RealHost;
use crate::family::common::Span;
use crate::family::common::faults::FaultKind;
use crate::family::{Host, WireNames};

/// pi 0.99.1 and 1.6.0 from npm, each pinned by `hosts/pi/<version>/package-lock.json`, judged
/// against the 0.99 model (`pi`) and its 1.x variant (`pi-1.6`), their conformance twins. pi
/// 0.58.3, the older host, against the 0.58 model (`pi-0.58`).
pub const REAL_HOSTS: &[RealHost] = &[
    RealHost {
        host: Host {
            name: "pi@0.99.1",
            version_label: "pi@0.99.1",
            describe: "the real pi 0.99.1 (npm, pinned): its own AgentSession under virtual time, the wake logic loaded as an extension",
        },
        version: "0.99.1",
        model: "pi",
    },
    RealHost {
        host: Host {
            name: "pi@1.6.0",
            version_label: "pi@1.6.0",
            describe: "the real pi 1.6.0 (npm, pinned): runs start through _startRun/_prepareRun, the same wake-logic API",
        },
        version: "1.6.0",
        model: "pi-1.6",
    },
    RealHost {
        host: Host {
            name: "pi@0.58.3",
            version_label: "pi@0.58.3",
            describe: "the real pi 0.58.3 (npm @mariozechner, pinned): no session run flag (isIdle is the agent's isStreaming), a retry's continue() on a timer, no agent_settled",
        },
        version: "0.58.3",
        model: "pi-0.58",
    },
];

/// The only drop a pi driver reports is the documented one of a replaced session.
pub const WIRE: WireNames = WireNames {
    drops: &[("session-replaced", SESSION_REPLACED)],
    refusals: &[],
    ends: &[],
};

/// The labels of `PiHost::plan`'s draws (the swarm's fault and producer mix, the producer
/// messages, the timed faults), which `hosts/pi/driver.mjs` draws first, in the same order.
pub const PLAN_LABELS: &[&str] = &[
    "fault on",
    "fault rate",
    "producer kinds",
    "messages",
    "first message",
    "spacing",
    "kind",
    "subagent",
    "occurrences",
    "fault time",
];

fn span(s: Span) -> Value {
    json!({ "min": s.min, "max": s.max })
}

/// The pi sections, resolved (defaults applied, fault rates decided), for `hello.scenario`: a
/// driver never parses TOML or repeats a default.
pub fn sections(cfg: &PiConfig) -> Value {
    let p = &cfg.producers;
    let t = &cfg.timing;
    let faults: Vec<Value> = (cfg.faults.iter())
        .map(|(f, s)| {
            json!({
                "name": f.name(),
                "share": [s.share.num, s.share.den],
                "rate": [s.rate.num, s.rate.den],
                "max": s.max,
                "timed": f.is_timed(),
            })
        })
        .collect();
    json!({
        "producers": {
            "messages": span(p.messages),
            "start_ms": span(p.start_ms),
            "spacing_ms": span(p.spacing_ms),
            "kinds": p.kinds.iter().map(|k| k.name()).collect::<Vec<_>>(),
            "subagents": p.subagents,
        },
        "timing": {
            "step_ms": span(t.step_ms),
            "handler_ms": span(t.handler_ms),
            "model_ms": span(t.model_ms),
            "tool_ms": span(t.tool_ms),
            "tool_turns": span(t.tool_turns),
            "compaction_ms": span(t.compaction_ms),
            "retry_ms": span(t.retry_ms),
            "user_delay_ms": span(t.user_delay_ms),
        },
        "faults": faults,
    })
}

/// The model twin's adapter command: the same extension through the Node adapter, which takes
/// an extension's factory (its default export) or a named export.
pub fn twin(wake: &Value) -> Result<Vec<String>, String> {
    let extension = (wake.get("extension").and_then(Value::as_str))
        .ok_or("the real host's wake has no extension")?;
    // The Node adapter embedded in the binary, written into the cache directory on first use.
    let adapter = crate::remote::home::sources()?.join("adapters/node/adapter.mjs");
    let mut command = vec![
        "node".to_string(),
        adapter.to_string_lossy().into_owned(),
        extension.to_string(),
    ];
    match wake
        .get("deliver")
        .and_then(Value::as_str)
        .unwrap_or("factory")
    {
        "factory" => {}
        d => match d.strip_prefix("export:") {
            Some(name) => command.extend(["--export".to_string(), name.to_string()]),
            None => {
                return Err(format!(
                    "deliver `{d}` has no model twin (the Node adapter takes a factory or an export)"
                ));
            }
        },
    }
    Ok(command)
}
