//! [`Server`], the handle a gptme-server wake logic calls: `request_watch_wake` and the queue
//! operations. Every call acts on the host at once and counts against the call budget.
//!
//! gptme releases its locks between these calls: `retry_deferred_watch_wakes` holds
//! `_pending_lock` only inside `take_queued_watch_events` and `conversation_lock` only inside
//! `request_watch_wake`, so the watch thread's `_fire` → `_deliver` may run when either returns.
//! During a retry the handle lets a watch event due within a thread start run there (the faults
//! `watch_in_take_gap` and `watch_in_wake_gap`), through gptme's own `_deliver`.

use super::api::{SubagentCompletion, SystemMessage, WatchEvent, default_deliver};
use super::config::ServerFault;
use super::core::ServerCore;
use super::note::{Note, WakeResult};
use super::{CONV, SrvKernel, vocab};
use crate::family::common::Core;
use crate::family::common::conv::ConvId;
use crate::sim::msg::Payload;
use crate::sim::record::{Actor, Ev, Refusal};
use crate::sim::sink::Sink;
use crate::sim::time::Ms;

/// The handle a server wake logic calls. Every call acts on the host at once.
pub struct Server<'a> {
    pub(super) core: &'a mut ServerCore,
    pub(super) k: &'a mut SrvKernel,
    /// The logic's `deliver` is gptme's `_deliver`, so a watch event may run in a lock gap.
    pub(super) gaps: bool,
}

impl Server<'_> {
    /// `monotonic()` on virtual time.
    pub fn now(&self) -> Ms {
        self.k.now()
    }

    /// `SessionManager.request_watch_wake(cid, msg)`: under the conversation lock, refuse when
    /// the conversation is busy; otherwise persist the message, set `generating` on the most
    /// recently active session (before returning: the next call sees it busy) and start a step
    /// thread. Returns True once the message is persisted, even when the thread fails to start.
    pub fn request_watch_wake(&mut self, cid: ConvId, msg: SystemMessage) -> bool {
        self.core.calls.count();
        let c = &mut *self.core;
        c.wakes += 1;
        let wake = c.wakes;
        let pass = c.pass;
        let mut payload = msg.payload;
        let refused = match c.busy() {
            Some(r) => Some(r),
            None if c.faults.fires(self.k, ServerFault::PersistFailure) => {
                Some(Refusal::Other(vocab::PERSIST_FAILED))
            }
            None => None,
        };
        let result = match refused {
            Some(r) => {
                if c.retrying && !matches!(r, Refusal::Wake(_)) {
                    c.mark(self.k, vocab::WAKE_WHILE_BUSY);
                }
                WakeResult::Refused(r)
            }
            None => c.accept_wake(self.k, wake, &payload),
        };
        // The observation takes the payload; a copy is made only for a note that is kept.
        let msgs = if self.k.sink.narrating() {
            payload.clone()
        } else {
            std::mem::take(&mut payload)
        };
        c.emit(
            self.k,
            Actor::Host,
            Ev::Wake {
                pass,
                wake,
                msgs,
                refused,
            },
        );
        c.note_with(self.k, Actor::Wake, move || Note::RequestWake {
            cid,
            wake,
            payload,
            result,
        });
        if let WakeResult::Accepted {
            session,
            dispatched: true,
        } = result
        {
            c.start_step(self.k, usize::from(session) - 1);
        }
        self.lock_gap(ServerFault::WatchInWakeGap, "request_watch_wake");
        refused.is_none()
    }

    /// `take_queued_watch_events(logdir)`: remove and return every deferred event of `logdir`
    /// (all of them for `None`), in FIFO order.
    pub fn take_queued_watch_events(&mut self, logdir: Option<ConvId>) -> Vec<WatchEvent> {
        self.core.calls.count();
        let taken = self.core.take_watch(logdir);
        if taken.len() >= 2 {
            self.core.mark(self.k, vocab::BURST_DRAINED);
        }
        if !taken.is_empty() {
            self.taken("take_queued_watch_events", taken.iter().map(|e| e.msg));
        }
        if !taken.is_empty() {
            self.lock_gap(ServerFault::WatchInTakeGap, "take_queued_watch_events");
        }
        taken
    }

    /// A lock gap of the retry, after `call` returned: when `fault` fires, the first watch event
    /// due within a thread start (`thread_ms.max`) fires now instead, its `_deliver` (gptme's:
    /// a wake, or appended to `_pending_deliveries` when refused) running before the retry's next
    /// statement. Its wake is the watch thread's, not the retry's: a delivery pass of its own.
    #[inline]
    fn lock_gap(&mut self, fault: ServerFault, call: &'static str) {
        let c = &*self.core;
        if !self.gaps || !c.retrying || !c.faults.on(fault) {
            return;
        }
        self.lock_gap_on(fault, call);
    }

    /// `lock_gap` of a retry whose `fault` is on this seed.
    #[inline(never)]
    fn lock_gap_on(&mut self, fault: ServerFault, call: &'static str) {
        let c = &mut *self.core;
        let by = self.k.now() + c.cfg.timing.thread_ms.max;
        let Some(i) = c.watches.due_by(by) else {
            return;
        };
        if !c.faults.fires(self.k, fault) {
            return;
        }
        let Some(event) = c.fire_event(self.k, i) else {
            return;
        };
        let msg = event.msg;
        c.note(self.k, Actor::Host, Note::LockGap { call, msg });
        c.passes += 1;
        let retry_pass = std::mem::replace(&mut c.pass, c.passes);
        c.retrying = false;
        c.note(self.k, Actor::Wake, Note::Deliver { cid: CONV, msg });
        default_deliver(self, CONV, event);
        self.core.pass = retry_pass;
        self.core.retrying = true;
    }

    /// `requeue_watch_event(logdir, id, text)`: put an event back at the head (`appendleft`).
    pub fn requeue_watch_event(&mut self, event: WatchEvent) {
        self.core.calls.count();
        self.core.pending.push_front(event);
        self.core
            .note(self.k, Actor::Wake, Note::Requeue { msg: event.msg });
    }

    /// `_pending_deliveries.append(...)`: defer an event for a later retry (at the tail).
    pub fn queue_watch_event(&mut self, event: WatchEvent) {
        self.core.calls.count();
        self.core.pending.push_back(event);
        self.core
            .note(self.k, Actor::Wake, Note::Defer { msg: event.msg });
    }

    /// `take_queued_completions(logdir)`: remove and return this parent's subagent completions.
    pub fn take_queued_completions(&mut self, logdir: ConvId) -> Vec<SubagentCompletion> {
        self.core.calls.count();
        let taken = self.core.take_completions(logdir);
        if !taken.is_empty() {
            self.taken("take_queued_completions", taken.iter().map(|e| e.msg));
        }
        taken
    }

    /// Narrate what a take removed from its queue (not empty), when notes are kept.
    fn taken(&mut self, call: &'static str, ids: impl Iterator<Item = crate::sim::msg::MsgId>) {
        self.core.note_with(self.k, Actor::Wake, || {
            let ids: Vec<_> = ids.collect();
            Note::Take {
                call,
                payload: Payload::from_slice(&ids),
            }
        });
    }

    /// `_completion_queue.put(c)`: at the tail.
    pub fn put_completion(&mut self, c: SubagentCompletion) {
        self.core.calls.count();
        self.core.completions.push_back(c);
        self.core
            .note(self.k, Actor::Wake, Note::PutCompletion { msg: c.msg });
    }
}
