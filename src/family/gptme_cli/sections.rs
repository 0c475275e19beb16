//! The gptme-cli family's scenario sections.

use serde::Deserialize;
use serde::de::{self, Deserializer};
use toml::Spanned;

use super::note::CliReply;
use crate::error::Result;
use crate::family::gptme_cli::config::{CliProducers, CliTiming};
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

impl RawCliProducers {
    /// `[producers]`, every value checked.
    pub fn read(self, cx: Cx<'_>) -> Result<CliProducers> {
        let d = CliProducers::default();
        let script = match &self.script {
            None => d.script,
            Some(s) if s.get_ref().len() > 1_000 => {
                let message = format!("{} replies is out of range 0..=1000", s.get_ref().len());
                return Err(cx.err(s.span(), message));
            }
            Some(s) => s.get_ref().iter().map(|r| r.0).collect(),
        };
        Ok(CliProducers {
            script,
            jobs: cx.at_most("jobs", SpanValue::or(self.jobs, d.jobs), 100)?,
            prompt_records: cx.at_most(
                "prompt_records",
                SpanValue::or(self.prompt_records, d.prompt_records),
                MESSAGES_MAX,
            )?,
        })
    }
}

impl RawCliTiming {
    /// `[timing]`, every value checked: the reader drains at most 1 s, the bounds are counts.
    pub fn read(self, cx: Cx<'_>) -> Result<CliTiming> {
        let d = CliTiming::default();
        let drain_ms = SpanValue::or(self.drain_ms, d.drain_ms);
        if drain_ms.max > 1_000 {
            let message = format!(
                "max {} is out of range 0..=1000 (the reader drains at most 1 s)",
                drain_ms.max
            );
            return Err(cx.key_err("drain_ms", message));
        }
        Ok(CliTiming {
            model_ms: SpanValue::or(self.model_ms, d.model_ms),
            tool_ms: SpanValue::or(self.tool_ms, d.tool_ms),
            job_ms: SpanValue::or(self.job_ms, d.job_ms),
            drain_ms,
            io_ms: SpanValue::or(self.io_ms, d.io_ms),
            wake_ms: SpanValue::or(self.wake_ms, d.wake_ms),
            idle_max_ms: self.idle_max_ms.map_or(d.idle_max_ms, |v| *v.get_ref()),
            claim_ms: SpanValue::or(self.claim_ms, d.claim_ms),
            steps_max: count(cx, &self.steps_max, d.steps_max, 1_000)?,
            turns_max: count(cx, &self.turns_max, d.turns_max, 100_000)?,
        })
    }
}
