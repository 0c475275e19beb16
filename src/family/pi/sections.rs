//! The pi family's scenario sections.

use serde::Deserialize;
use toml::Spanned;

use crate::error::Result;
use crate::family::pi::config::{PiTiming, Producers};
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

impl RawProducers {
    /// `[producers]`, every value checked.
    pub fn read(self, cx: Cx<'_>) -> Result<Producers> {
        let d = Producers::default();
        let mut p = Producers {
            messages: cx.at_most(
                "messages",
                SpanValue::or(self.messages, d.messages),
                MESSAGES_MAX,
            )?,
            start_ms: SpanValue::or(self.start_ms, d.start_ms),
            spacing_ms: SpanValue::or(self.spacing_ms, d.spacing_ms),
            ..d
        };
        if let Some(kinds) = &self.kinds {
            if kinds.get_ref().is_empty() {
                let message = "at least one message kind is needed".to_string();
                return Err(cx.err(kinds.span(), message));
            }
            p.kinds = kinds.get_ref().iter().map(|k| k.0).collect();
        }
        if let Some(n) = &self.subagents {
            let v = *n.get_ref();
            if !(1..=26).contains(&v) {
                return Err(cx.err(n.span(), format!("{v} is out of range 1..=26")));
            }
            p.subagents = v;
        }
        Ok(p)
    }
}

impl RawTiming {
    /// `[timing]`, every value checked.
    pub fn read(self, cx: Cx<'_>) -> Result<PiTiming> {
        let d = PiTiming::default();
        Ok(PiTiming {
            step_ms: SpanValue::or(self.step_ms, d.step_ms),
            handler_ms: SpanValue::or(self.handler_ms, d.handler_ms),
            model_ms: SpanValue::or(self.model_ms, d.model_ms),
            tool_ms: SpanValue::or(self.tool_ms, d.tool_ms),
            tool_turns: cx.at_most(
                "tool_turns",
                SpanValue::or(self.tool_turns, d.tool_turns),
                1_000,
            )?,
            compaction_ms: SpanValue::or(self.compaction_ms, d.compaction_ms),
            retry_ms: SpanValue::or(self.retry_ms, d.retry_ms),
            user_delay_ms: SpanValue::or(self.user_delay_ms, d.user_delay_ms),
        })
    }
}
