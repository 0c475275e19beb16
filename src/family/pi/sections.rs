//! The pi family's scenario sections.

use serde::Deserialize;
use toml::Spanned;

use crate::error::Result;
use crate::family::common::faults::FaultSpec;
use crate::family::pi::config::{PiConfig, PiFault, PiTiming, Producers};
use crate::input::Cx;
use crate::input::values::{MsgKindName, SpanValue};
use crate::limits::MESSAGES_MAX;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawProducers {
    messages: Option<SpanValue>,
    start_ms: Option<SpanValue>,
    spacing_ms: Option<SpanValue>,
    kinds: Option<Spanned<Vec<MsgKindName>>>,
    subagents: Option<Spanned<u8>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawTiming {
    step_ms: Option<SpanValue>,
    handler_ms: Option<SpanValue>,
    model_ms: Option<SpanValue>,
    tool_ms: Option<SpanValue>,
    tool_turns: Option<SpanValue>,
    compaction_ms: Option<SpanValue>,
    retry_ms: Option<SpanValue>,
    user_delay_ms: Option<SpanValue>,
}

/// The configuration a scenario's sections make, every value checked.
pub fn config(
    cx: Cx<'_>,
    producers: RawProducers,
    timing: RawTiming,
    faults: Vec<(PiFault, FaultSpec)>,
) -> Result<PiConfig> {
    let mut pi = PiConfig {
        faults,
        ..PiConfig::default()
    };
    let p = &mut pi.producers;
    let d = Producers::default();
    p.messages = cx.at_most(
        "messages",
        SpanValue::or(producers.messages, d.messages),
        MESSAGES_MAX,
    )?;
    p.start_ms = SpanValue::or(producers.start_ms, d.start_ms);
    p.spacing_ms = SpanValue::or(producers.spacing_ms, d.spacing_ms);
    if let Some(kinds) = &producers.kinds {
        if kinds.get_ref().is_empty() {
            return Err(cx.err(
                kinds.span(),
                "at least one message kind is needed".to_string(),
            ));
        }
        p.kinds = kinds.get_ref().iter().map(|k| k.0).collect();
    }
    if let Some(n) = &producers.subagents {
        let v = *n.get_ref();
        if !(1..=26).contains(&v) {
            return Err(cx.err(n.span(), format!("{v} is out of range 1..=26")));
        }
        p.subagents = v;
    }

    let t = &mut pi.timing;
    let d = PiTiming::default();
    t.step_ms = SpanValue::or(timing.step_ms, d.step_ms);
    t.handler_ms = SpanValue::or(timing.handler_ms, d.handler_ms);
    t.model_ms = SpanValue::or(timing.model_ms, d.model_ms);
    t.tool_ms = SpanValue::or(timing.tool_ms, d.tool_ms);
    t.tool_turns = cx.at_most(
        "tool_turns",
        SpanValue::or(timing.tool_turns, d.tool_turns),
        1_000,
    )?;
    t.compaction_ms = SpanValue::or(timing.compaction_ms, d.compaction_ms);
    t.retry_ms = SpanValue::or(timing.retry_ms, d.retry_ms);
    t.user_delay_ms = SpanValue::or(timing.user_delay_ms, d.user_delay_ms);
    Ok(pi)
}
