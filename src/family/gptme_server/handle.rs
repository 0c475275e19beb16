//! [`Server`], the handle a gptme-server wake logic calls: `request_watch_wake` and the queue
//! operations. Every call acts on the host at once and counts against the call budget.

use super::api::{SubagentCompletion, SystemMessage, WatchEvent};
use super::config::ServerFault;
use super::core::ServerCore;
use super::note::{Note, WakeResult};
use super::{SrvKernel, vocab};
use crate::family::common::Core;
use crate::family::common::conv::ConvId;
use crate::sim::msg::Payload;
use crate::sim::record::{Actor, Ev, Refusal};
use crate::sim::time::Ms;

/// The handle a server wake logic calls. Every call acts on the host at once.
pub struct Server<'a> {
    pub(super) core: &'a mut ServerCore,
    pub(super) k: &'a mut SrvKernel,
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
        let payload = msg.payload;
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
        c.emit(
            self.k,
            Actor::Host,
            Ev::Wake {
                pass,
                wake,
                msgs: payload.clone(),
                refused,
            },
        );
        c.note(
            self.k,
            Actor::Wake,
            Note::RequestWake {
                cid,
                wake,
                payload,
                result,
            },
        );
        if let WakeResult::Accepted {
            session,
            dispatched: true,
        } = result
        {
            c.start_step(self.k, usize::from(session) - 1);
        }
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
        let ids: Vec<_> = taken.iter().map(|e| e.msg).collect();
        self.taken("take_queued_watch_events", &ids);
        taken
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
        let ids: Vec<_> = taken.iter().map(|e| e.msg).collect();
        self.taken("take_queued_completions", &ids);
        taken
    }

    /// Narrate what a take removed from its queue (nothing, when it was empty).
    fn taken(&mut self, call: &'static str, ids: &[crate::sim::msg::MsgId]) {
        if !ids.is_empty() {
            let payload = Payload::from_slice(ids);
            self.core
                .note(self.k, Actor::Wake, Note::Take { call, payload });
        }
    }

    /// `_completion_queue.put(c)`: at the tail.
    pub fn put_completion(&mut self, c: SubagentCompletion) {
        self.core.calls.count();
        self.core.completions.push_back(c);
        self.core
            .note(self.k, Actor::Wake, Note::PutCompletion { msg: c.msg });
    }
}
