//! The gptme-cli family's scenario sections.

use serde::Deserialize;
use serde::de::{self, Deserializer};
use toml::Spanned;

use super::note::CliReply;
use crate::error::Result;
use crate::family::common::faults::FaultSpec;
use crate::family::gptme_cli::config::{CliConfig, CliFault, CliProducers, CliTiming};
use crate::input::Cx;
use crate::input::values::SpanValue;
use crate::limits::MESSAGES_MAX;

/// A scripted model reply: `"job"`, `"tool"` or `"text"`.
pub struct ReplyName(CliReply);

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
pub struct RawCliProducers {
    script: Option<Spanned<Vec<ReplyName>>>,
    jobs: Option<SpanValue>,
    prompt_records: Option<SpanValue>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawCliTiming {
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

/// The configuration a scenario's sections make, every value checked.
pub fn config(
    cx: Cx<'_>,
    p: RawCliProducers,
    t: RawCliTiming,
    faults: Vec<(CliFault, FaultSpec)>,
) -> Result<CliConfig> {
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
    Ok(CliConfig {
        producers,
        faults,
        timing,
    })
}
