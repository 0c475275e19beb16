//! A user's wake logic for pi, in Rust: the send decision of an extension that queues producer
//! messages in gentle-agents' outbox (`wakesim::family::pi::wakes::Outbox`) and wakes an idle
//! agent. Two versions, as a user writes them while fixing a bug:
//!
//! - `Naive`: when the agent is idle, queue the message for the next turn and prompt. A second
//!   message during the prompt's preparation still sees the agent idle and prompts again: two
//!   prompts race for one run (`docs/hosts/` P-4).
//! - `Reserved`: the first idle send reserves the wake until the run starts (or 60 s pass);
//!   later sends ride the pending prompt.

use wakesim::family::Registry;
use wakesim::family::pi::api::{Ctx, CustomMessage, Message, Pi, SendOptions};
use wakesim::family::pi::wakes::{Outbox, Sender, SenderHook};
use wakesim::sim::msg::Payload;
use wakesim::sim::time::Ms;

/// How long a wake stays reserved without a run starting.
pub const RESERVATION_MS: u64 = 60_000;

#[derive(Default)]
pub struct Naive {
    latest: Option<Ctx>,
}

#[derive(Default)]
pub struct Reserved {
    latest: Option<Ctx>,
    reserved_at: Option<Ms>,
}

fn idle(latest: Option<Ctx>, pi: &mut Pi<'_>) -> bool {
    latest.is_some_and(|ctx| ctx.is_idle(pi) == Ok(true))
}

impl Sender for Naive {
    fn observe(&mut self, _pi: &mut Pi<'_>, _hook: SenderHook, ctx: Ctx) {
        self.latest = Some(ctx);
    }

    fn send(&mut self, pi: &mut Pi<'_>, msg: Message, opts: SendOptions) {
        if idle(self.latest, pi) {
            pi.send_message(CustomMessage::carrying(msg.id), SendOptions::next_turn());
            pi.send_user_message(Payload::None, None);
        } else {
            pi.send_message(CustomMessage::carrying(msg.id), opts);
        }
    }
}

impl Sender for Reserved {
    fn constants_ms(&self) -> Vec<u64> {
        vec![RESERVATION_MS]
    }

    fn observe(&mut self, _pi: &mut Pi<'_>, hook: SenderHook, ctx: Ctx) {
        self.latest = Some(ctx);
        if matches!(hook, SenderHook::SessionStart | SenderHook::AgentStart) {
            self.reserved_at = None;
        }
    }

    fn send(&mut self, pi: &mut Pi<'_>, msg: Message, opts: SendOptions) {
        if !idle(self.latest, pi) {
            pi.send_message(CustomMessage::carrying(msg.id), opts);
            return;
        }
        pi.send_message(CustomMessage::carrying(msg.id), SendOptions::next_turn());
        let now = pi.now();
        if self
            .reserved_at
            .is_some_and(|at| (now - at).0 < RESERVATION_MS)
        {
            return;
        }
        self.reserved_at = Some(now);
        pi.send_user_message(Payload::None, None);
    }
}

/// The built-in wake logics and this crate's two.
pub fn registry() -> Registry {
    Registry::builtin()
        .with_pi("downstream.naive", "wake when idle, no reservation", || {
            Box::new(Outbox::new(Naive::default()))
        })
        .with_pi(
            "downstream.reserved",
            "wake when idle, reserved until the run starts",
            || Box::new(Outbox::new(Reserved::default())),
        )
}
