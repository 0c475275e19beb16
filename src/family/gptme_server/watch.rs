//! What produces messages on the server: watches firing (the watch thread's `_fire`, past
//! `_record_event`'s storm guards, into `_deliver`) and subagent completions (queued, then the
//! deferred wakes retried).

use super::SrvKernel;
use super::api::{SubagentCompletion, SystemMessage, WatchEvent};
use super::core::ServerCore;
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
struct Guard {
    /// Fire times inside the coalescing window (cleared when it coalesces).
    recent: Vec<Ms>,
    /// Fire times inside the auto-cancel window.
    window: Vec<Ms>,
    lifetime: u32,
    cancelled: bool,
}

/// The seed's planned watch events and the watches' storm guards. A planned event fires once:
/// at its instant, or earlier inside a retry's lock gap (`handle.rs`), after which its
/// scheduled instant does nothing.
#[derive(Clone, Debug, Default)]
pub(super) struct Watches {
    /// Per planned event: which watch fires, when, and whether it has fired.
    watch: Vec<u8>,
    at: Vec<Ms>,
    fired: Vec<bool>,
    guards: Vec<Guard>,
}

impl Watches {
    pub(super) fn new(watches: u8) -> Watches {
        Watches {
            guards: vec![Guard::default(); usize::from(watches)],
            ..Watches::default()
        }
    }

    /// As `new(watches)` makes them, keeping the allocations.
    pub(super) fn renew(&mut self, watches: u8) {
        let Watches {
            watch,
            at,
            fired,
            guards,
        } = self;
        watch.clear();
        at.clear();
        fired.clear();
        guards.truncate(usize::from(watches));
        for g in guards.iter_mut() {
            let Guard {
                recent,
                window,
                lifetime,
                cancelled,
            } = g;
            recent.clear();
            window.clear();
            *lifetime = 0;
            *cancelled = false;
        }
        guards.resize(usize::from(watches), Guard::default());
    }

    /// Plan one event of `watch` at `at` (instants never go back); returns its index.
    pub(super) fn plan(&mut self, watch: u8, at: Ms) -> u32 {
        self.watch.push(watch);
        self.at.push(at);
        self.fired.push(false);
        self.watch.len() as u32 - 1
    }

    /// The first planned event not fired yet that is due by `by` (none is due before now: the
    /// kernel ran those at their instants).
    pub(super) fn due_by(&self, by: Ms) -> Option<u32> {
        let i = self.fired.iter().position(|f| !f)?;
        (self.at[i] <= by).then_some(i as u32)
    }
}

/// `times.retain(|t| now < t + window)` for times pushed in order (the clock never goes back):
/// the ones that fell out of the window are a prefix, and mostly there are none.
#[inline]
fn expire(times: &mut Vec<Ms>, now: Ms, window: u64) {
    if times.first().is_some_and(|t| now.0 >= t.0 + window) {
        let out = times.partition_point(|t| now.0 >= t.0 + window);
        times.drain(..out);
    }
}

impl ServerCore {
    /// `_fire` → `_record_event`: the storm guards. Returns the drop reason when the event is not
    /// delivered.
    fn storm_guard(&mut self, now: Ms, watch: u8) -> Option<Reason> {
        let g = &mut self.watches.guards[usize::from(watch)];
        g.lifetime += 1;
        expire(&mut g.window, now, CANCEL_WINDOW_MS);
        g.window.push(now);
        if g.window.len() > CANCEL_EVENTS_MAX || g.lifetime > LIFETIME_EVENTS_MAX {
            g.cancelled = true;
            return Some(vocab::STORM_CANCELLED);
        }
        expire(&mut g.recent, now, STORM_WINDOW_MS);
        g.recent.push(now);
        if g.recent.len() > STORM_EVENTS_MAX {
            g.recent.clear();
            return Some(vocab::STORM_COALESCED);
        }
        None
    }

    /// Planned event `i` fires now (`_fire`): produced, then past the storm guards the event
    /// `_deliver` is called with; `None` when it fired already, its watch was cancelled or a
    /// guard dropped it.
    pub(super) fn fire_event(&mut self, k: &mut SrvKernel, i: u32) -> Option<WatchEvent> {
        let i = i as usize;
        if std::mem::replace(&mut self.watches.fired[i], true) {
            return None;
        }
        let watch = self.watches.watch[i];
        if self.watches.guards[usize::from(watch)].cancelled {
            return None;
        }
        let from = MsgFrom {
            kind: MsgKind::Watch,
            source: WATCH_STREAM,
            origin: watch,
            conv: CONV.0,
            stream: Some("the watch events of logdir A"),
        };
        let msg = k.produce_from(from, self.record_state(k));
        if let Some(reason) = self.storm_guard(k.now(), watch) {
            self.mark(k, vocab::STORM_GUARD);
            let cancelled = reason == vocab::STORM_CANCELLED;
            self.note(k, Actor::Host, Note::Storm { watch, cancelled });
            self.emit(k, Actor::Host, Ev::Dropped { msg, reason });
            return None;
        }
        Some(WatchEvent {
            logdir: CONV,
            watch,
            msg,
        })
    }
}

impl ServerHost {
    pub(super) fn fire(&mut self, k: &mut SrvKernel, i: u32) {
        let Some(event) = self.core.fire_event(k, i) else {
            return;
        };
        let msg = event.msg;
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
        let msg = k.produce_from(from, self.core.record_state(k));
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
