//! The gptme-server family's scenario sections.

use serde::Deserialize;
use toml::Spanned;

use crate::error::Result;
use crate::family::gptme_server::config::{ServerProducers, ServerTiming};
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

impl RawServerProducers {
    /// `[producers]`, every value checked.
    pub fn read(self, cx: Cx<'_>) -> Result<ServerProducers> {
        let d = ServerProducers::default();
        let mut producers = ServerProducers {
            events: cx.at_most("events", SpanValue::or(self.events, d.events), MESSAGES_MAX)?,
            watches: d.watches,
            start_ms: SpanValue::or(self.start_ms, d.start_ms),
            spacing_ms: SpanValue::or(self.spacing_ms, d.spacing_ms),
            completions: cx.at_most(
                "completions",
                SpanValue::or(self.completions, d.completions),
                26,
            )?,
            completion_ms: SpanValue::or(self.completion_ms, d.completion_ms),
        };
        if let Some(w) = &self.watches {
            let v = *w.get_ref();
            if !(1..=16).contains(&v) {
                return Err(cx.err(w.span(), format!("{v} is out of range 1..=16")));
            }
            producers.watches = v;
        }
        Ok(producers)
    }
}

impl RawServerTiming {
    /// `[timing]`: durations only, each a checked range.
    pub fn read(self) -> ServerTiming {
        let d = ServerTiming::default();
        ServerTiming {
            thread_ms: SpanValue::or(self.thread_ms, d.thread_ms),
            model_ms: SpanValue::or(self.model_ms, d.model_ms),
            tool_ms: SpanValue::or(self.tool_ms, d.tool_ms),
            confirm_ms: SpanValue::or(self.confirm_ms, d.confirm_ms),
            command_ms: SpanValue::or(self.command_ms, d.command_ms),
        }
    }
}
