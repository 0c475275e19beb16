//! The wake-logic API of the gptme server: what `SessionManager.retry_deferred_watch_wakes` and
//! the watch tool's `_deliver` see.
//!
//! It mirrors gptme's functions (`gptme/server/session_models.py` @0b19447c,
//! `gptme/tools/watch.py`, `gptme/tools/subagent/`): [`Server::request_watch_wake`],
//! [`Server::take_queued_watch_events`], [`Server::requeue_watch_event`],
//! [`Server::take_queued_completions`], [`Server::put_completion`]. The host calls the
//! [`ServerWake`] methods from its threads (the watch thread's `_deliver`, a step thread's
//! completion, `finish_command`, the subagent notifier), never re-entrantly; each call on
//! [`Server`] acts on the host at once, as the Python does under its locks.
//!
//! ```
//! use wakesim::family::common::conv::ConvId;
//! use wakesim::family::gptme_server::api::{Server, ServerWake, SystemMessage};
//!
//! /// Wakes once for the whole burst, puts the burst back in order when refused (W2).
//! struct OneWakePerBurst;
//!
//! impl ServerWake for OneWakePerBurst {
//!     fn retry_deferred_watch_wakes(&mut self, srv: &mut Server<'_>, cid: ConvId) {
//!         let batch = srv.take_queued_watch_events(Some(cid));
//!         if !batch.is_empty() && !srv.request_watch_wake(cid, SystemMessage::watch(&batch)) {
//!             for e in batch.into_iter().rev() {
//!                 srv.requeue_watch_event(e);
//!             }
//!         }
//!     }
//! }
//!
//! let registry = wakesim::family::Registry::builtin()
//!     .with_gptme_server("my.w2", "one wake per burst", || Box::new(OneWakePerBurst));
//! assert!(registry.get("my.w2").is_some());
//! ```

use crate::sim::msg::{MsgId, Payload};

pub use super::handle::Server;
pub use crate::family::common::conv::ConvId;

/// One fired watch event, as `_pending_deliveries` holds it: `(logdir, watch_id, text)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchEvent {
    /// The logdir it is routed to; `conversation_id = logdir.name`.
    pub logdir: ConvId,
    /// The watch that fired (`w1`, `w2`, ...: 0-based).
    pub watch: u8,
    /// The event's text: the message wakesim tracks.
    pub msg: MsgId,
}

/// One subagent completion on `_completion_queue`: `(agent, status, summary, branch)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubagentCompletion {
    /// The parent's logdir.
    pub logdir: ConvId,
    /// The subagent (`a`, `b`, ...: 0-based).
    pub agent: u8,
    pub msg: MsgId,
}

/// A system message a wake persists: the events it carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemMessage {
    pub payload: Payload,
}

impl SystemMessage {
    /// `"Watch {id} fired: {text}"` for each event, joined by newlines.
    pub fn watch(events: &[WatchEvent]) -> SystemMessage {
        // `Payload::from_slice` of the ids, without the list in between.
        let payload = match events {
            [] => Payload::None,
            [one] => Payload::One(one.msg),
            many => Payload::Many(many.iter().map(|e| e.msg).collect()),
        };
        SystemMessage { payload }
    }

    /// The completion message of one subagent.
    pub fn completion(c: &SubagentCompletion) -> SystemMessage {
        SystemMessage {
            payload: Payload::One(c.msg),
        }
    }
}

/// gptme's `_deliver`: wake for the event, or append it to `_pending_deliveries` when refused.
pub fn default_deliver(srv: &mut Server<'_>, cid: ConvId, event: WatchEvent) {
    if !srv.request_watch_wake(cid, SystemMessage::watch(&[event])) {
        srv.queue_watch_event(event);
    }
}

/// A wake logic for the gptme server: the code under test.
pub trait ServerWake {
    /// Constants of the logic in ms; the kernel biases its delay draws toward them.
    fn constants_ms(&self) -> Vec<u64> {
        Vec::new()
    }

    /// The watch tool's `_deliver`: a watch of conversation `cid` fired (past the storm guards).
    /// gptme tries a wake and, when it is refused, appends the event to `_pending_deliveries`
    /// for a later retry; that is the default.
    fn deliver(&mut self, srv: &mut Server<'_>, cid: ConvId, event: WatchEvent) {
        default_deliver(srv, cid, event);
    }

    /// True when [`ServerWake::deliver`] is not gptme's `_deliver` (a logic that overrides it
    /// says so here). Then no watch event fires inside the retry's lock gaps (the logic is not
    /// re-entered): each is delivered by `deliver` at its own instant. Otherwise a watch event due
    /// within a thread start may run gptme's `_deliver` between the retry's calls
    /// (`watch_in_take_gap`, `watch_in_wake_gap`). Asked before every call into the logic.
    fn custom_deliver(&mut self) -> bool {
        false
    }

    /// `SessionManager.retry_deferred_watch_wakes(cid)`: called at step completion, in
    /// `finish_command`, and after a subagent completion was queued for `cid`.
    fn retry_deferred_watch_wakes(&mut self, srv: &mut Server<'_>, cid: ConvId);
}
