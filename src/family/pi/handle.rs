//! [`Pi`], the handle a pi wake logic calls: `pi.sendMessage`, `pi.sendUserMessage`, timers,
//! and `ctx.isIdle()`. Every call acts on the host at once and counts against the call budget.

use super::api::{Ctx, CustomMessage, DeliverAs, SendOptions, StaleCtx, TimerId};
use super::core::PiCore;
use super::note::{HostError, Note, TimerOp};
use super::{PiEv, PiKernel, vocab};
use crate::family::common::Core;
use crate::limits::USER_MESSAGE_TEXT_BYTES_MAX;
use crate::sim::msg::Payload;
use crate::sim::record::{Actor, Ev};
use crate::sim::sink::Sink;
use crate::sim::time::Ms;

/// The `pi` handle a wake logic calls. Every call acts on the host at once; sends are
/// fire-and-forget and report failures only on the error channel (the trace).
pub struct Pi<'a> {
    pub(super) core: &'a mut PiCore,
    pub(super) k: &'a mut PiKernel,
}

impl Pi<'_> {
    /// `Date.now()` on virtual time.
    pub fn now(&self) -> Ms {
        self.k.now()
    }

    /// `pi.sendMessage(message, options)`.
    pub fn send_message(&mut self, msg: CustomMessage, opts: SendOptions) {
        self.core.calls.count();
        self.core.send_custom(self.k, msg, opts);
    }

    /// `pi.sendUserMessage(content, {deliverAs})`: `prompt()` with source "extension". An empty
    /// payload is the blank wake text `" "`; a non-empty one renders those messages as the text.
    pub fn send_user_message(&mut self, payload: Payload, deliver_as: Option<DeliverAs>) {
        self.send_user(payload, None, deliver_as);
    }

    /// `pi.sendUserMessage(text, {deliverAs})` with the text the logic wrote, for the timeline:
    /// what an adapter's module sent. The text is shown only where it says more than the payload:
    /// a payload that carries messages is shown by them (as [`Pi::send_user_message`] shows it),
    /// and the blank `" "` is the empty payload's own rendering, so neither keeps the text and
    /// their trace (and hash) is the one the same call without text gives. A kept text is cut at
    /// [`USER_MESSAGE_TEXT_BYTES_MAX`] bytes.
    pub fn send_user_message_text(
        &mut self,
        payload: Payload,
        text: &str,
        deliver_as: Option<DeliverAs>,
    ) {
        let kept = (payload.is_empty() && text != " " && self.k.sink.narrating())
            .then(|| cut_text(text, USER_MESSAGE_TEXT_BYTES_MAX));
        self.send_user(payload, kept, deliver_as);
    }

    fn send_user(
        &mut self,
        payload: Payload,
        text: Option<Box<str>>,
        deliver_as: Option<DeliverAs>,
    ) {
        self.core.calls.count();
        if self.core.live_prompts > 0 {
            self.core.mark(self.k, vocab::WAKE_WHILE_PREPARING);
        }
        self.core.last_wake_at = Some(self.k.now());
        // The note's copy of the payload, made only when notes are kept.
        let noted = if self.k.sink.narrating() {
            payload.clone()
        } else {
            Payload::None
        };
        let id = self.core.new_prompt(false, payload, deliver_as);
        self.core.note(
            self.k,
            Actor::Wake,
            Note::SendUserMessage {
                prompt: id,
                payload: noted,
                text,
                deliver_as,
            },
        );
        let sent = Ev::PromptSent {
            prompt: id,
            from_wake: true,
        };
        self.core.emit(self.k, Actor::Wake, sent);
        if deliver_as == Some(DeliverAs::NextTurn) {
            self.core.note(
                self.k,
                Actor::Host,
                Note::Error {
                    prompt: Some(id),
                    error: HostError::InvalidDeliverAs,
                },
            );
            return;
        }
        self.core.prompt_begin(self.k, id);
    }

    /// `setTimeout(fn, delay_ms)`: `PiWake::on_timer` gets the id when it fires.
    pub fn set_timeout(&mut self, delay_ms: u64) -> TimerId {
        self.timer(delay_ms, false)
    }

    /// `clearTimeout(id)`.
    pub fn clear_timeout(&mut self, id: TimerId) {
        self.core.calls.count();
        if let Some(live) = self.core.timers.get_mut(id.0 as usize)
            && *live
        {
            *live = false;
            self.core.note(
                self.k,
                Actor::Wake,
                Note::Timer {
                    id: id.0,
                    op: TimerOp::Clear,
                },
            );
        }
    }

    /// `queueMicrotask(fn)`: runs before any other event of this instant (see `sim::queue`).
    pub fn queue_microtask(&mut self) -> TimerId {
        self.timer(0, true)
    }

    fn timer(&mut self, delay_ms: u64, micro: bool) -> TimerId {
        self.core.calls.count();
        let id = self.core.timers.len() as u32;
        self.core.timers.push(true);
        if micro {
            self.k.schedule_micro(PiEv::Timer(id));
        } else {
            self.k.schedule(delay_ms, PiEv::Timer(id));
        }
        self.core.note(
            self.k,
            Actor::Wake,
            Note::Timer {
                id,
                op: TimerOp::Set { delay_ms },
            },
        );
        TimerId(id)
    }

    pub(crate) fn ctx_is_idle(&mut self, ctx: Ctx) -> Result<bool, StaleCtx> {
        self.core.calls.count();
        let result = self.peek_idle(ctx).ok();
        if result.is_none() {
            self.core.mark(self.k, vocab::STALE_CTX);
        }
        self.core.note(self.k, Actor::Wake, Note::IsIdle { result });
        result.ok_or(StaleCtx)
    }

    /// What `ctx.isIdle()` would answer now, without calling it (nothing is recorded). The
    /// external adapter sends it with each event so an adapter can answer `isIdle()` itself.
    pub(crate) fn peek_idle(&self, ctx: Ctx) -> Result<bool, StaleCtx> {
        if ctx.session != self.core.session {
            Err(StaleCtx)
        } else {
            Ok(self.core.is_idle())
        }
    }
}

/// `text` in at most `max` bytes: whole if it fits, else cut at a character boundary so that
/// with the ending `…` it fits. Cutting a cut text again leaves it as it is, so the adapters'
/// own cut (to the same bound) and this one agree.
fn cut_text(text: &str, max: usize) -> Box<str> {
    if text.len() <= max {
        return text.into();
    }
    const ELLIPSIS: &str = "…";
    let mut end = max.saturating_sub(ELLIPSIS.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ELLIPSIS}", &text[..end]).into_boxed_str()
}
