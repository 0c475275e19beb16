//! G3: `ctx.isIdle()` with a 60 s wake reservation and lazy expiry (`lib/idle-wake.ts` @d62bc901).
//!
//! The first idle send reserves the turn; later idle sends only queue as nextTurn and ride the
//! pending prompt. The reservation ends on agent_start or session_start, or expires after 60 s,
//! but only when the next send checks it. A wake prompt that fails without a run (an input
//! handler claims it, auth throws) leaves the reservation held: messages queued meanwhile wait
//! for a later send after expiry, or forever (P-5). Busy without a run (compaction) takes the
//! host path, a direct run without the harness (P-6).

use super::is_idle::host_idle;
use super::outbox::{Sender, SenderHook};
use crate::family::pi::api::{Ctx, CustomMessage, Message, Pi, SendOptions};
use crate::sim::msg::Payload;
use crate::sim::time::Ms;

pub const WAKE_RESERVATION_MS: u64 = 60_000;

#[derive(Default)]
pub struct Reservation {
    latest: Option<Ctx>,
    reserved_at: Option<Ms>,
}

impl Sender for Reservation {
    fn constants_ms(&self) -> Vec<u64> {
        vec![WAKE_RESERVATION_MS]
    }

    fn observe(&mut self, _pi: &mut Pi<'_>, hook: SenderHook, ctx: Ctx) {
        self.latest = Some(ctx);
        if matches!(hook, SenderHook::SessionStart | SenderHook::AgentStart) {
            self.reserved_at = None;
        }
    }

    fn send(&mut self, pi: &mut Pi<'_>, msg: Message, opts: SendOptions) {
        if !host_idle(self.latest, pi) {
            pi.send_message(CustomMessage::carrying(msg.id), opts);
            return;
        }
        pi.send_message(CustomMessage::carrying(msg.id), SendOptions::next_turn());
        let now = pi.now();
        if let Some(at) = self.reserved_at
            && (now - at).0 < WAKE_RESERVATION_MS
        {
            return;
        }
        self.reserved_at = Some(now);
        pi.send_user_message(Payload::None, None);
    }
}
