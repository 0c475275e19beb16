//! gptme's real server: the pinned gptme[server] 0.35.1 from PyPI, which the Python adapter's
//! driver (`adapters/python/gptme_driver.py`) runs under its deterministic thread scheduler
//! (`docs/remote-host.md`): the names that driver uses for the server's vocabulary, the
//! scenario's server sections as it reads them, the labels of the plan it draws as the model
//! does (`adapters/python/wakesim_adapter/plan_server.py`), and the model twin of each of its
//! variants (`wakesim conform`).

use serde_json::{Value, json};

use super::config::ServerConfig;
use super::vocab::{
    BUSY_COMMAND, BUSY_RUN, BUSY_TOOLS, PERSIST_FAILED, STORM_CANCELLED, STORM_COALESCED,
};
use crate::family::common::Span;
use crate::family::common::faults::FaultKind;
use crate::family::{Host, OwnDriver, RealHost, Twin, WireNames};
use crate::limits::{TIMED_FAULT_ATTEMPTS_MAX, TIMED_FAULT_RETRY_MS};

/// gptme 0.35.1's server, judged by this family's invariants; its model twin is the server
/// model (`gptme-server`).
pub const REAL_HOSTS: &[RealHost] = &[RealHost {
    host: Host {
        name: "gptme-server@0.35.1",
        version_label: "gptme-server@0.35.1",
        describe: "the real gptme 0.35.1 server (PyPI, hash-pinned): SessionManager, session_step's step threads, the watch tool's _fire/_deliver, under the Python thread scheduler",
    },
    version: "0.35.1",
    model: "gptme-server",
}];

/// The driver's own wake variants (`real_variants.py`): `w2` is gptme's own retry, the others
/// patches of it.
pub const DRIVER: OwnDriver = OwnDriver {
    command: &["python3", "adapters/python/gptme_driver.py"],
    pin: "adapters/python/real/gptme-{version}.txt",
    variants: &["w0", "w1", "w2"],
    own: "w2",
};

/// The server's documented drops and refusal reasons by their wire names.
pub const WIRE: WireNames = WireNames {
    drops: &[
        ("storm-coalesced", STORM_COALESCED),
        ("storm-cancelled", STORM_CANCELLED),
    ],
    refusals: &[
        ("run", BUSY_RUN),
        ("tools", BUSY_TOOLS),
        ("command", BUSY_COMMAND),
        ("persist-failed", PERSIST_FAILED),
    ],
    ends: &[],
};

/// The labels of `ServerHost::plan`'s draws (the faults switched on with their rates, the
/// producer kinds, the watch events and completions, the timed faults' occurrences), which the
/// driver draws first, in the same order, with the same bounds.
pub const PLAN_LABELS: &[&str] = &[
    "fault on",
    "fault rate",
    "producer kinds",
    "events",
    "first event",
    "spacing",
    "watch",
    "completions",
    "completion time",
    "occurrences",
    "fault time",
];

/// The model twin of a driver variant: the built-in wake logic with the same code. gptme
/// 0.35.1's own `retry_deferred_watch_wakes` is W2 (one wake per burst of watch events) plus the
/// subagent completions `first, *rest`: the model's W2-subagent.
pub fn twin(wake: &Value) -> Result<Twin, String> {
    Twin::builtin_variant(
        wake,
        DRIVER.own,
        &[
            ("w0", "gptme.w0-drop-refused"),
            ("w1", "gptme.w1-per-event-drain"),
            ("w2", "gptme.w2-subagent"),
        ],
    )
}

fn span(s: Span) -> Value {
    json!({ "min": s.min, "max": s.max })
}

/// The server sections, resolved, for `hello.scenario`.
pub fn sections(cfg: &ServerConfig) -> Value {
    let p = &cfg.producers;
    let t = &cfg.timing;
    // In `ServerFault::ALL` order, the order the model switches them on in.
    let mut specs = cfg.faults.clone();
    specs.sort_by_key(|(f, _)| f.index());
    let faults: Vec<Value> = (specs.iter())
        .map(|(f, s)| {
            json!({
                "name": f.name(), "share": [s.share.num, s.share.den],
                "rate": [s.rate.num, s.rate.den], "max": s.max, "timed": f.is_timed(),
            })
        })
        .collect();
    json!({
        "producers": {
            "events": span(p.events), "watches": p.watches, "start_ms": span(p.start_ms),
            "spacing_ms": span(p.spacing_ms), "completions": span(p.completions),
            "completion_ms": span(p.completion_ms),
        },
        "timing": {
            "model_ms": span(t.model_ms), "tool_ms": span(t.tool_ms),
            "confirm_ms": span(t.confirm_ms), "command_ms": span(t.command_ms),
        },
        "faults": faults,
        "timed_retry_ms": TIMED_FAULT_RETRY_MS,
        "timed_attempts_max": TIMED_FAULT_ATTEMPTS_MAX,
    })
}
