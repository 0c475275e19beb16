//! The gptme-server family's scenario sections.

use serde::Deserialize;
use toml::Spanned;

use crate::error::Result;
use crate::family::common::faults::FaultSpec;
use crate::family::gptme_server::config::{
    ServerConfig, ServerFault, ServerProducers, ServerTiming,
};
use crate::input::Cx;
use crate::input::values::SpanValue;
use crate::limits::MESSAGES_MAX;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawServerProducers {
    events: Option<SpanValue>,
    watches: Option<Spanned<u8>>,
    start_ms: Option<SpanValue>,
    spacing_ms: Option<SpanValue>,
    completions: Option<SpanValue>,
    completion_ms: Option<SpanValue>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawServerTiming {
    thread_ms: Option<SpanValue>,
    model_ms: Option<SpanValue>,
    tool_ms: Option<SpanValue>,
    confirm_ms: Option<SpanValue>,
    command_ms: Option<SpanValue>,
}

/// The configuration a scenario's sections make, every value checked.
pub fn config(
    cx: Cx<'_>,
    p: RawServerProducers,
    t: RawServerTiming,
    faults: Vec<(ServerFault, FaultSpec)>,
) -> Result<ServerConfig> {
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
    Ok(ServerConfig {
        producers,
        faults,
        timing,
    })
}
