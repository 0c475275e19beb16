//! G0: raw triggerTurn, the code before the fix. `send(m, opts) = pi.sendMessage(m, opts)`.
//! On an idle host pi runs the message directly with `_runAgentPrompt`, skipping the input
//! handlers and before_agent_start (pi#5581): the woken turn runs without the harness (P-1), and
//! during a compaction without a run it starts a run anyway (P-2).

use super::outbox::Sender;
use crate::family::pi::api::{CustomMessage, Message, Pi, SendOptions};

pub struct Raw;

impl Sender for Raw {
    fn send(&mut self, pi: &mut Pi<'_>, msg: Message, opts: SendOptions) {
        pi.send_message(CustomMessage::carrying(msg.id), opts);
    }
}
