//! What produces messages on the server: watches firing (the watch thread's `_fire`, past
//! `_record_event`'s storm guards, into `_deliver`) and subagent completions (queued, then the
//! deferred wakes retried).

use super::SrvKernel;
use super::api::{SubagentCompletion, SystemMessage, WatchEvent};
use super::host::ServerHost;
use super::note::Note;
use super::{COMPLETION_STREAM, CONV, WATCH_STREAM, vocab};
use crate::family::common::Core;
use crate::sim::msg::{MsgFrom, MsgKind};
use crate::sim::record::{Actor, Ev, Reason};
use crate::sim::time::Ms;

/// The storm guards of `_record_event` (`gptme/tools/watch.py`): the modelled host's own bounds.
const STORM_WINDOW_MS: u64 = 20_000;
const STORM_EVENTS_MAX: usize = 20;
const CANCEL_WINDOW_MS: u64 = 300_000;
const CANCEL_EVENTS_MAX: usize = 200;
const LIFETIME_EVENTS_MAX: u32 = 1_000;

/// Per-watch storm-guard state.
#[derive(Clone, Debug, Default)]
pub(super) struct Guard {
    /// Fire times inside the coalescing window (cleared when it coalesces).
    recent: Vec<Ms>,
    /// Fire times inside the auto-cancel window.
    window: Vec<Ms>,
    lifetime: u32,
    cancelled: bool,
}

impl ServerHost {
    /// `_fire` → `_record_event`: the storm guards. Returns the drop reason when the event is not
    /// delivered.
    fn storm_guard(&mut self, now: Ms, watch: u8) -> Option<Reason> {
        let g = &mut self.guards[usize::from(watch)];
        g.lifetime += 1;
        g.window.retain(|t| now.0 < t.0 + CANCEL_WINDOW_MS);
        g.window.push(now);
        if g.window.len() > CANCEL_EVENTS_MAX || g.lifetime > LIFETIME_EVENTS_MAX {
            g.cancelled = true;
            return Some(vocab::STORM_CANCELLED);
        }
        g.recent.retain(|t| now.0 < t.0 + STORM_WINDOW_MS);
        g.recent.push(now);
        if g.recent.len() > STORM_EVENTS_MAX {
            g.recent.clear();
            return Some(vocab::STORM_COALESCED);
        }
        None
    }

    pub(super) fn fire(&mut self, k: &mut SrvKernel, i: u32) {
        let watch = self.fires[i as usize];
        if self.guards[usize::from(watch)].cancelled {
            return;
        }
        let from = MsgFrom {
            kind: MsgKind::Watch,
            source: WATCH_STREAM,
            origin: watch,
            conv: CONV.0,
            stream: Some("the watch events of logdir A"),
        };
        let msg = k.produce_from(from, self.core.state() as u8);
        if let Some(reason) = self.storm_guard(k.now(), watch) {
            self.core.mark(k, vocab::STORM_GUARD);
            let cancelled = reason == vocab::STORM_CANCELLED;
            self.core
                .note(k, Actor::Host, Note::Storm { watch, cancelled });
            self.core.emit(k, Actor::Host, Ev::Dropped { msg, reason });
            return;
        }
        let event = WatchEvent {
            logdir: CONV,
            watch,
            msg,
        };
        self.pass(k, Note::Deliver { cid: CONV, msg }, |w, srv| {
            w.deliver(srv, CONV, event)
        });
    }

    pub(super) fn completion(&mut self, k: &mut SrvKernel, i: u32) {
        let agent = self.completions[i as usize];
        let from = MsgFrom {
            kind: MsgKind::Completion,
            source: COMPLETION_STREAM,
            origin: agent,
            conv: CONV.0,
            stream: Some("the subagent completions of logdir A"),
        };
        let msg = k.produce_from(from, self.core.state() as u8);
        let c = SubagentCompletion {
            logdir: CONV,
            agent,
            msg,
        };
        // `notify_completion` (gptme 0.35.1, `tools/subagent/hooks.py`): `_notify_server` wakes
        // the parent at once, and the completion is queued (`_completion_queue.put`) only when
        // that wake is refused; the retry at a step's end takes it from there. (The model had
        // inferred a queue-then-retry; `wakesim conform` against the real code showed the
        // direct wake: the wake's pass was no retry.)
        self.pass(k, Note::NotifyCompletion { cid: CONV, msg }, |_, srv| {
            if !srv.request_watch_wake(CONV, SystemMessage::completion(&c)) {
                srv.put_completion(c);
            }
        });
    }
}
