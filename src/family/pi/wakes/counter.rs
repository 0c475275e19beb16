//! G1: idleness from an agent_start/agent_end counter (the design #1528 described, abandoned).
//!
//! pi emits one agent_start/agent_end pair per inner run (retries, compaction continue, queued
//! steer), so between two inner runs the counter reads 0 while the run goes on. A message sent
//! then is queued as nextTurn and `sendUserMessage(" ")` throws at step 5 ("already processing",
//! error channel only); nothing drains nextTurn until the next prompt (P-3).

use super::outbox::{Sender, SenderHook};
use crate::family::pi::api::{Ctx, CustomMessage, Message, Pi, SendOptions};
use crate::sim::msg::Payload;

#[derive(Default)]
pub struct Counter {
    count: u32,
}

impl Sender for Counter {
    fn observe(&mut self, _pi: &mut Pi<'_>, hook: SenderHook, _ctx: Ctx) {
        match hook {
            SenderHook::AgentStart => self.count += 1,
            SenderHook::AgentEnd => self.count = self.count.saturating_sub(1),
            _ => {}
        }
    }

    fn send(&mut self, pi: &mut Pi<'_>, msg: Message, opts: SendOptions) {
        if self.count == 0 {
            pi.send_message(CustomMessage::carrying(msg.id), SendOptions::next_turn());
            pi.send_user_message(Payload::None, None);
        } else {
            pi.send_message(CustomMessage::carrying(msg.id), opts);
        }
    }
}
