//! gptme's real chat loop: the pinned gptme 0.35.1 from PyPI, whose noninteractive loop
//! (`_run_chat_loop`, `background_job_wait_hook`, the job registry, the prompt-queue files) the
//! Python adapter's driver (`adapters/python/gptme_driver.py`) runs under its deterministic thread
//! scheduler (`docs/remote-host.md`): the names that driver uses for the CLI's vocabulary, the
//! scenario's CLI sections as it reads them, the labels of the plan it draws as the model does
//! (`adapters/python/wakesim_adapter/plan_cli.py`), and the model twin of each of its variants
//! (`wakesim conform`).

use serde_json::{Value, json};

use super::config::CliConfig;
use super::note::CliReply;
use super::vocab::{
    BOUND, JOB_RESET, LEFT_ON_DISK, OTHER_CONVERSATION, QUEUE_EMPTY, SESSION_COMPLETE, SIGNAL,
    SUBAGENT_AT_EXIT, TERMINATED, TIMED_OUT_AT_EXIT,
};
use crate::family::common::Span;
use crate::family::common::faults::FaultKind;
use crate::family::{Host, OwnDriver, RealHost, Twin, WireNames};

/// gptme 0.35.1's chat loop, judged by this family's invariants; its model twin is the CLI model
/// (`gptme-cli`).
pub const REAL_HOSTS: &[RealHost] = &[RealHost {
    host: Host {
        name: "gptme-cli@0.35.1",
        version_label: "gptme-cli@0.35.1",
        describe: "the real gptme 0.35.1 chat loop (PyPI, hash-pinned): _run_chat_loop, background_job_wait_hook, jobs and their readers, the prompt-queue files, under the Python thread scheduler",
    },
    version: "0.35.1",
    model: "gptme-cli",
}];

/// The driver's own wake variants (`real_variants.py`): `b1` is gptme's own wait hook, the
/// others patches of it.
pub const DRIVER: OwnDriver = OwnDriver {
    command: &["python3", "adapters/python/gptme_driver.py"],
    pin: "adapters/python/real/gptme-{version}.txt",
    variants: &[
        "b0",
        "b1",
        "b1-pre",
        "b1-no-recheck",
        "b1-no-recheck-capped",
    ],
    own: "b1",
};

/// The CLI's documented drops and session ends by their wire names.
pub const WIRE: WireNames = WireNames {
    drops: &[
        ("job-reset", JOB_RESET),
        ("left-on-disk", LEFT_ON_DISK),
        ("terminated", TERMINATED),
        ("timed-out-at-exit", TIMED_OUT_AT_EXIT),
        ("other-conversation", OTHER_CONVERSATION),
        ("subagent-at-exit", SUBAGENT_AT_EXIT),
    ],
    refusals: &[],
    ends: &[
        ("queue-empty", QUEUE_EMPTY),
        ("session-complete", SESSION_COMPLETE),
        ("signal", SIGNAL),
        ("bound", BOUND),
    ],
};

/// The labels of `CliHost::plan`'s draws (the faults switched on with their rates, the jobs the
/// drawn replies may start, the timed faults' occurrences), which the driver draws first, in the
/// same order, with the same bounds.
pub const PLAN_LABELS: &[&str] = &[
    "fault on",
    "fault rate",
    "jobs",
    "occurrences",
    "fault time",
];

/// The model twin of a driver variant: the built-in wake logic with the same code. gptme
/// 0.35.1's own `background_job_wait_hook` is B1 (`gptme.b1-idle-wait`); its patches B1-pre and
/// B1 without the recheck (and without the 1 s cap) are the model's variants of the same names;
/// `b0` leaves the wait hook out, which the model's B0 (a completion hook at the turn's end, no
/// wait) stands for.
pub fn twin(wake: &Value) -> Result<Twin, String> {
    Twin::builtin_variant(
        wake,
        DRIVER.own,
        &[
            ("b0", "gptme.b0-exit-on-empty"),
            ("b1", "gptme.b1-idle-wait"),
            ("b1-pre", "gptme.b1-pre-control-any"),
            ("b1-no-recheck", "gptme.b1-no-recheck"),
        ],
    )
}

fn span(s: Span) -> Value {
    json!({ "min": s.min, "max": s.max })
}

/// The CLI sections, resolved, for `hello.scenario` (the script by the model's reply names).
pub fn sections(cfg: &CliConfig) -> Value {
    let t = &cfg.timing;
    let script: Vec<&str> = (cfg.producers.script.iter())
        .map(|r| match r {
            CliReply::Text => "text",
            CliReply::Tool => "tool",
            CliReply::Job(_) => "job",
        })
        .collect();
    // In `CliFault::ALL` order, the order the model switches them on in.
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
    let p = &cfg.producers;
    json!({
        "faults": faults,
        "producers": {
            "script": script, "jobs": span(p.jobs), "prompt_records": span(p.prompt_records),
        },
        "timing": {
            "model_ms": span(t.model_ms), "tool_ms": span(t.tool_ms), "job_ms": span(t.job_ms),
            "drain_ms": span(t.drain_ms), "idle_max_ms": t.idle_max_ms,
        },
    })
}
