//! `madsim.is-idle`: G2 (`lib/idle-wake.ts` @949bd4ae) as the coordinator task an async Rust
//! harness would write, around gentle-agents' queue-and-flush.
//!
//! It queues completions and notifications and flushes them when no agent run is counted active
//! (and at `turn_end`, `agent_end`, `agent_settled`); orchestrator messages go out at once. Each
//! send asks `ctx.isIdle()` and, on `true`, queues the message as `nextTurn` and wakes with
//! `sendUserMessage(" ")`. There is no reservation: `prompt()` keeps the host idle while it
//! prepares, so a second message in that window wakes again and two prompts race to
//! `Agent.prompt` (P-4). Asking and acting are two round trips here, so the answer can also be
//! stale by the time the wake lands.

use std::collections::VecDeque;

use wakesim::family::pi::api::{Ctx, CustomMessage, Message, SendOptions};
use wakesim::sim::msg::{MsgKind, Payload};

use crate::bridge::{Event, Events, Host};

pub async fn is_idle(host: Host, mut events: Events) {
    let mut latest: Option<Ctx> = None;
    let mut active_runs = 0u32;
    let mut queue: VecDeque<Message> = VecDeque::new();
    while let Some(ev) = events.recv().await {
        let boundary = match ev {
            Event::SessionStart(ctx) => {
                latest = Some(ctx);
                queue.clear();
                false
            }
            Event::AgentStart(ctx) => {
                latest = Some(ctx);
                active_runs += 1;
                false
            }
            Event::TurnEnd(ctx) => {
                latest = Some(ctx);
                true
            }
            Event::AgentEnd(ctx) => {
                latest = Some(ctx);
                active_runs = active_runs.saturating_sub(1);
                true
            }
            Event::AgentSettled(_) => true,
            Event::Message(m) if m.kind == MsgKind::Orchestrator => {
                send(&host, latest, m).await;
                false
            }
            Event::Message(m) => {
                queue.push_back(m);
                active_runs == 0
            }
            _ => false,
        };
        if boundary {
            while let Some(m) = queue.pop_front() {
                send(&host, latest, m).await;
            }
        }
    }
}

async fn send(host: &Host, latest: Option<Ctx>, m: Message) {
    // hostIdle(): a missing or stale ctx reads as not idle.
    let idle = match latest {
        Some(ctx) => host.call(move |pi| ctx.is_idle(pi) == Ok(true)).await,
        None => false,
    };
    let msg = CustomMessage::carrying(m.id);
    if idle {
        host.call(move |pi| {
            pi.send_message(msg, SendOptions::next_turn());
            pi.send_user_message(Payload::None, None);
        })
        .await;
    } else {
        let opts = m.default_options();
        host.call(move |pi| pi.send_message(msg, opts)).await;
    }
}
