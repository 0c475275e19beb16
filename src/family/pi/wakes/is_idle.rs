//! G2: `ctx.isIdle()` without a reservation (BGamboa13/gentle-shell `lib/idle-wake.ts` @949bd4ae).
//!
//! `prompt()` keeps the host idle through its preparation (steps 0-11). A second message in that
//! window sees isIdle true again and submits a second prompt: both reach step 12, `Agent.prompt`
//! rejects the later one, whose settlement clears the run flag under the first run, emits a
//! spurious agent_settled, and loses the nextTurn messages it took (P-4, H-1).

use super::outbox::{Sender, SenderHook};
use crate::family::pi::api::{Ctx, CustomMessage, Message, Pi, SendOptions};
use crate::sim::msg::Payload;

#[derive(Default)]
pub struct IsIdle {
    latest: Option<Ctx>,
}

/// `hostIdle()`: a missing or stale ctx reads as not idle, so the host path is taken (P-8).
pub(super) fn host_idle(latest: Option<Ctx>, pi: &mut Pi<'_>) -> bool {
    latest.is_some_and(|ctx| ctx.is_idle(pi) == Ok(true))
}

impl Sender for IsIdle {
    fn observe(&mut self, _pi: &mut Pi<'_>, _hook: SenderHook, ctx: Ctx) {
        self.latest = Some(ctx);
    }

    fn send(&mut self, pi: &mut Pi<'_>, msg: Message, opts: SendOptions) {
        if host_idle(self.latest, pi) {
            pi.send_message(CustomMessage::carrying(msg.id), SendOptions::next_turn());
            pi.send_user_message(Payload::None, None);
            return;
        }
        pi.send_message(CustomMessage::carrying(msg.id), opts);
    }
}
