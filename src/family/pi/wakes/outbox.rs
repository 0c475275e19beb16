//! gentle-agents' delivery before the upstream redesign: producers' items are queued and flushed
//! through a `Sender` (the variant under test).
//!
//! - completions and notifications are queued and flushed at once when no agent run is counted
//!   active (`activeAgentRuns == 0`), else at `turn_end`, `agent_end` and `agent_settled`;
//! - orchestrator messages go straight to the sender with `{followUp, triggerTurn}`;
//! - `session_start` drops what the old session queued (the host reports it as documented loss).

use std::collections::VecDeque;

use crate::family::pi::api::{Ctx, Message, Pi, PiWake, SendOptions};

/// The events a sender may track (G2/G3 keep the latest ctx; G3 releases its reservation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderHook {
    SessionStart,
    AgentStart,
    TurnEnd,
    AgentEnd,
}

/// The send function of a G0-G3 variant: `send(message, options)`.
pub trait Sender {
    fn constants_ms(&self) -> Vec<u64> {
        Vec::new()
    }
    fn observe(&mut self, _pi: &mut Pi<'_>, _hook: SenderHook, _ctx: Ctx) {}
    fn send(&mut self, pi: &mut Pi<'_>, msg: Message, opts: SendOptions);
}

/// gentle-agents' queue-and-flush around a sender.
pub struct Outbox<S> {
    sender: S,
    active_runs: u32,
    queue: VecDeque<Message>,
    /// Options for queued items; steer since #867.
    item_opts: SendOptions,
}

impl<S: Sender> Outbox<S> {
    pub fn new(sender: S) -> Outbox<S> {
        Outbox {
            sender,
            active_runs: 0,
            queue: VecDeque::new(),
            item_opts: SendOptions::steer(),
        }
    }

    /// Send completions and notifications with other options (the pre-#867 followUp).
    pub fn completions_as(mut self, opts: SendOptions) -> Outbox<S> {
        self.item_opts = opts;
        self
    }

    fn flush(&mut self, pi: &mut Pi<'_>) {
        while let Some(m) = self.queue.pop_front() {
            self.sender.send(pi, m, self.item_opts);
        }
    }
}

impl<S: Sender> PiWake for Outbox<S> {
    fn constants_ms(&self) -> Vec<u64> {
        self.sender.constants_ms()
    }

    fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message) {
        if msg.kind == crate::sim::msg::MsgKind::Orchestrator {
            self.sender.send(pi, msg, msg.default_options());
            return;
        }
        self.queue.push_back(msg);
        if self.active_runs == 0 {
            self.flush(pi);
        }
    }

    fn on_session_start(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.queue.clear();
        self.sender.observe(pi, SenderHook::SessionStart, ctx);
    }

    fn on_agent_start(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.active_runs += 1;
        self.sender.observe(pi, SenderHook::AgentStart, ctx);
    }

    fn on_turn_end(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.sender.observe(pi, SenderHook::TurnEnd, ctx);
        self.flush(pi);
    }

    fn on_agent_end(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.active_runs = self.active_runs.saturating_sub(1);
        self.sender.observe(pi, SenderHook::AgentEnd, ctx);
        self.flush(pi);
    }

    fn on_agent_settled(&mut self, pi: &mut Pi<'_>, _ctx: Ctx) {
        self.flush(pi);
    }
}
