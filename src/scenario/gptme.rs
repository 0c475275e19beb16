//! The gptme families' scenario sections: the server's and the CLI's.

use serde::Deserialize;
use serde::de::{self, Deserializer};
use toml::Spanned;

use super::values::SpanValue;
use super::{Cx, HostConfig, MESSAGES_MAX, Sections};
use crate::error::Result;
use crate::host::faults::FaultSpec;
use crate::host::gptme::cli::config::{CliConfig, CliFault, CliProducers, CliTiming};
use crate::host::gptme::note::CliReply;
use crate::host::gptme::server::config::{
    ServerConfig, ServerFault, ServerProducers, ServerTiming,
};

pub(super) struct ServerSections;
pub(super) struct CliSections;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServerProducers {
    events: Option<SpanValue>,
    watches: Option<Spanned<u8>>,
    start_ms: Option<SpanValue>,
    spacing_ms: Option<SpanValue>,
    completions: Option<SpanValue>,
    completion_ms: Option<SpanValue>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServerTiming {
    thread_ms: Option<SpanValue>,
    model_ms: Option<SpanValue>,
    tool_ms: Option<SpanValue>,
    confirm_ms: Option<SpanValue>,
    command_ms: Option<SpanValue>,
}

impl Sections for ServerSections {
    type Producers = RawServerProducers;
    type Timing = RawServerTiming;
    type Fault = ServerFault;

    fn config(
        cx: Cx<'_>,
        p: RawServerProducers,
        t: RawServerTiming,
        faults: Vec<(ServerFault, FaultSpec)>,
    ) -> Result<HostConfig> {
        let d = ServerProducers::default();
        let mut producers = ServerProducers {
            events: cx.at_most("events", SpanValue::or(p.events, d.events), MESSAGES_MAX)?,
            watches: d.watches,
            start_ms: SpanValue::or(p.start_ms, d.start_ms),
            spacing_ms: SpanValue::or(p.spacing_ms, d.spacing_ms),
            completions: cx.at_most(
                "completions",
                SpanValue::or(p.completions, d.completions),
                26,
            )?,
            completion_ms: SpanValue::or(p.completion_ms, d.completion_ms),
        };
        if let Some(w) = &p.watches {
            let v = *w.get_ref();
            if !(1..=16).contains(&v) {
                return Err(cx.err(w.span(), format!("{v} is out of range 1..=16")));
            }
            producers.watches = v;
        }
        let d = ServerTiming::default();
        let timing = ServerTiming {
            thread_ms: SpanValue::or(t.thread_ms, d.thread_ms),
            model_ms: SpanValue::or(t.model_ms, d.model_ms),
            tool_ms: SpanValue::or(t.tool_ms, d.tool_ms),
            confirm_ms: SpanValue::or(t.confirm_ms, d.confirm_ms),
            command_ms: SpanValue::or(t.command_ms, d.command_ms),
        };
        Ok(HostConfig::GptmeServer(ServerConfig {
            producers,
            faults,
            timing,
        }))
    }
}

/// A scripted model reply: `"job"`, `"tool"` or `"text"`.
pub(super) struct ReplyName(CliReply);

impl<'de> Deserialize<'de> for ReplyName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "job" => Ok(ReplyName(CliReply::Job(0))),
            "tool" => Ok(ReplyName(CliReply::Tool)),
            "text" => Ok(ReplyName(CliReply::Text)),
            other => Err(de::Error::custom(format!(
                "unknown reply `{other}`, expected one of job, tool, text"
            ))),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCliProducers {
    script: Option<Spanned<Vec<ReplyName>>>,
    jobs: Option<SpanValue>,
    prompt_records: Option<SpanValue>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCliTiming {
    model_ms: Option<SpanValue>,
    tool_ms: Option<SpanValue>,
    job_ms: Option<SpanValue>,
    drain_ms: Option<SpanValue>,
    io_ms: Option<SpanValue>,
    wake_ms: Option<SpanValue>,
    idle_max_ms: Option<Spanned<u64>>,
    claim_ms: Option<SpanValue>,
    steps_max: Option<Spanned<u64>>,
    turns_max: Option<Spanned<u64>>,
}

/// A count in `1..=max`.
fn count(cx: Cx<'_>, v: &Option<Spanned<u64>>, default: u64, max: u64) -> Result<u64> {
    match v {
        None => Ok(default),
        Some(s) => {
            let n = *s.get_ref();
            if !(1..=max).contains(&n) {
                return Err(cx.err(s.span(), format!("{n} is out of range 1..={max}")));
            }
            Ok(n)
        }
    }
}

impl Sections for CliSections {
    type Producers = RawCliProducers;
    type Timing = RawCliTiming;
    type Fault = CliFault;

    fn config(
        cx: Cx<'_>,
        p: RawCliProducers,
        t: RawCliTiming,
        faults: Vec<(CliFault, FaultSpec)>,
    ) -> Result<HostConfig> {
        let d = CliProducers::default();
        let script = match &p.script {
            None => d.script,
            Some(s) if s.get_ref().len() > 1_000 => {
                return Err(cx.err(
                    s.span(),
                    format!("{} replies is out of range 0..=1000", s.get_ref().len()),
                ));
            }
            Some(s) => s.get_ref().iter().map(|r| r.0).collect(),
        };
        let producers = CliProducers {
            script,
            jobs: cx.at_most("jobs", SpanValue::or(p.jobs, d.jobs), 100)?,
            prompt_records: cx.at_most(
                "prompt_records",
                SpanValue::or(p.prompt_records, d.prompt_records),
                MESSAGES_MAX,
            )?,
        };
        let d = CliTiming::default();
        let drain_ms = SpanValue::or(t.drain_ms, d.drain_ms);
        if drain_ms.max > 1_000 {
            return Err(cx.key_err(
                "drain_ms",
                format!(
                    "max {} is out of range 0..=1000 (the reader drains at most 1 s)",
                    drain_ms.max
                ),
            ));
        }
        let timing = CliTiming {
            model_ms: SpanValue::or(t.model_ms, d.model_ms),
            tool_ms: SpanValue::or(t.tool_ms, d.tool_ms),
            job_ms: SpanValue::or(t.job_ms, d.job_ms),
            drain_ms,
            io_ms: SpanValue::or(t.io_ms, d.io_ms),
            wake_ms: SpanValue::or(t.wake_ms, d.wake_ms),
            idle_max_ms: t.idle_max_ms.map_or(d.idle_max_ms, |v| *v.get_ref()),
            claim_ms: SpanValue::or(t.claim_ms, d.claim_ms),
            steps_max: count(cx, &t.steps_max, d.steps_max, 1_000)?,
            turns_max: count(cx, &t.turns_max, d.turns_max, 100_000)?,
        };
        Ok(HostConfig::GptmeCli(CliConfig {
            producers,
            faults,
            timing,
        }))
    }
}
