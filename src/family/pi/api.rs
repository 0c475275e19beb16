//! The wake-logic API for pi: what an extension sees.
//!
//! It mirrors pi's extension surface (`pi.on(event, handler)`, `pi.sendMessage`,
//! `pi.sendUserMessage`, `ctx.isIdle()`, and the timers a module uses). A wake logic implements
//! [`PiWake`]; the host calls its handlers from the scheduler, never re-entrantly, and every call
//! it makes on [`Pi`] takes effect on the host synchronously, as the real async functions do up to
//! their first `await`. Failures of the fire-and-forget sends go to the extension error channel
//! (the trace), never back to the caller, exactly as in pi.
//!
//! Plugging in your own logic needs no change to wakesim:
//!
//! ```
//! use wakesim::family::pi::api::{Ctx, Message, Pi, PiWake, SendOptions, CustomMessage};
//!
//! /// Always steer, never wake: a (buggy) logic that strands messages on an idle host.
//! struct SteerOnly;
//!
//! impl PiWake for SteerOnly {
//!     fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message) {
//!         pi.send_message(CustomMessage::carrying(msg.id), SendOptions::steer());
//!     }
//! }
//!
//! let registry = wakesim::family::Registry::builtin()
//!     .with_pi("my.steer-only", "always steer, never wake", || Box::new(SteerOnly));
//! let entry = registry.get("my.steer-only").unwrap();
//! assert!(entry.make::<wakesim::family::pi::PiFamily>().is_some());
//! ```

use crate::sim::msg::{MsgId, MsgKind, Payload};

pub use super::handle::Pi;

/// An extension context. It names the session it was handed out for; once that session is
/// replaced, `is_idle` fails with [`StaleCtx`], as pi's stale ctx throws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ctx {
    pub(crate) session: u32,
}

impl Ctx {
    /// `ctx.isIdle()`: no run active and no compaction, read live.
    pub fn is_idle(&self, pi: &mut Pi<'_>) -> Result<bool, StaleCtx> {
        pi.ctx_is_idle(*self)
    }

    /// The session this ctx belongs to (1 for the first).
    pub fn session(&self) -> u32 {
        self.session
    }
}

/// "This extension ctx is stale after session replacement or reload."
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaleCtx;

/// A message a producer hands to the extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    pub id: MsgId,
    pub kind: MsgKind,
    /// Index of its source (subagent a = 0, ...).
    pub source: u8,
}

impl Message {
    /// The options gentle-agents uses for this kind on a running host: steer for completions and
    /// notifications (#867), followUp for orchestrator messages; both trigger a turn.
    pub fn default_options(&self) -> SendOptions {
        match self.kind {
            MsgKind::Orchestrator => SendOptions::follow_up(),
            MsgKind::Completion | MsgKind::Notification => SendOptions::steer(),
            // gptme's kinds never reach a pi extension (pi's plans produce the three above);
            // named here so that a new kind must choose its options.
            MsgKind::Watch | MsgKind::Job | MsgKind::Prompt => SendOptions::steer(),
        }
    }
}

/// How a message is delivered (`deliverAs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliverAs {
    Steer,
    FollowUp,
    /// Only `sendMessage`: kept for the next `prompt()`, which alone drains it.
    NextTurn,
}

impl DeliverAs {
    pub fn name(self) -> &'static str {
        match self {
            DeliverAs::Steer => "steer",
            DeliverAs::FollowUp => "followUp",
            DeliverAs::NextTurn => "nextTurn",
        }
    }
}

/// Options of `pi.sendMessage`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendOptions {
    pub deliver_as: Option<DeliverAs>,
    pub trigger_turn: bool,
}

impl SendOptions {
    /// `{deliverAs: "steer", triggerTurn: true}`
    pub fn steer() -> SendOptions {
        SendOptions {
            deliver_as: Some(DeliverAs::Steer),
            trigger_turn: true,
        }
    }
    /// `{deliverAs: "followUp", triggerTurn: true}`
    pub fn follow_up() -> SendOptions {
        SendOptions {
            deliver_as: Some(DeliverAs::FollowUp),
            trigger_turn: true,
        }
    }
    /// `{deliverAs: "nextTurn"}`
    pub fn next_turn() -> SendOptions {
        SendOptions {
            deliver_as: Some(DeliverAs::NextTurn),
            trigger_turn: false,
        }
    }
    /// `{triggerTurn: false}`: store now, start nothing.
    pub fn store() -> SendOptions {
        SendOptions {
            deliver_as: None,
            trigger_turn: false,
        }
    }
}

/// A custom message: the producer messages it carries (none for a wake marker).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomMessage {
    pub custom_type: &'static str,
    pub payload: Payload,
}

impl CustomMessage {
    pub fn carrying(id: MsgId) -> CustomMessage {
        CustomMessage {
            custom_type: "message",
            payload: Payload::One(id),
        }
    }

    pub fn batch(ids: &[MsgId]) -> CustomMessage {
        CustomMessage {
            custom_type: "message",
            payload: Payload::from_slice(ids),
        }
    }

    /// A message that carries no content, such as `gentle-agents.wake`.
    pub fn marker(custom_type: &'static str) -> CustomMessage {
        CustomMessage {
            custom_type,
            payload: Payload::None,
        }
    }
}

/// The `input` event: a prompt entering `prompt()` step 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputEvent {
    /// True for the user's own prompt (source interactive), false for an extension's.
    pub from_user: bool,
    /// The streamingBehavior, passed only when the host is streaming.
    pub streaming_behavior: Option<DeliverAs>,
}

/// What an `input` handler decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InputAction {
    #[default]
    Continue,
    /// The handler claimed the input: the prompt ends here, with no run and no event.
    Handled,
}

/// How a compaction ended (`session_compact` or `session_compact_failed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactOutcome {
    Done,
    Failed,
}

/// A timer set by the wake logic (`setTimeout`, `queueMicrotask`), on virtual time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimerId(pub u32);

/// A wake logic for pi: the code under test. Every handler has a no-op default.
pub trait PiWake {
    /// Constants of the logic (grace periods, reservations) in ms. The kernel biases its delay
    /// draws toward each and one either side, where boundary races live.
    fn constants_ms(&self) -> Vec<u64> {
        Vec::new()
    }

    /// A producer hands the extension a message to deliver to the conversation.
    fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message);

    fn on_session_start(&mut self, _pi: &mut Pi<'_>, _ctx: Ctx) {}
    fn on_agent_start(&mut self, _pi: &mut Pi<'_>, _ctx: Ctx) {}
    fn on_turn_end(&mut self, _pi: &mut Pi<'_>, _ctx: Ctx) {}
    fn on_agent_end(&mut self, _pi: &mut Pi<'_>, _ctx: Ctx) {}
    fn on_agent_settled(&mut self, _pi: &mut Pi<'_>, _ctx: Ctx) {}
    fn on_session_compact(&mut self, _pi: &mut Pi<'_>, _ctx: Ctx, _outcome: CompactOutcome) {}
    fn on_session_tree(&mut self, _pi: &mut Pi<'_>, _ctx: Ctx) {}
    fn on_input(&mut self, _pi: &mut Pi<'_>, _ctx: Ctx, _input: InputEvent) -> InputAction {
        InputAction::Continue
    }
    fn on_before_agent_start(&mut self, _pi: &mut Pi<'_>, _ctx: Ctx) {}
    /// A timer this logic set has fired.
    fn on_timer(&mut self, _pi: &mut Pi<'_>, _timer: TimerId) {}
}
