//! W2: one wake per burst, the fix (`SessionManager.retry_deferred_watch_wakes`,
//! `gptme/server/session_models.py` @0b19447c). The whole batch becomes one system message and one
//! wake; a refused batch goes back with `appendleft` in reverse, ahead of newer events, in order.

use crate::family::common::conv::ConvId;
use crate::family::gptme_server::api::{Server, ServerWake, SystemMessage};

/// W2: the batched drain of deferred watch events.
#[derive(Default)]
pub struct OneWakePerBurst;

impl OneWakePerBurst {
    /// The watch part of the retry, shared with W2-subagent.
    pub fn retry_watch_events(srv: &mut Server<'_>, cid: ConvId) {
        let batch = srv.take_queued_watch_events(Some(cid));
        if batch.is_empty() {
            return;
        }
        if !srv.request_watch_wake(cid, SystemMessage::watch(&batch)) {
            for e in batch.into_iter().rev() {
                srv.requeue_watch_event(e);
            }
        }
    }
}

impl ServerWake for OneWakePerBurst {
    fn retry_deferred_watch_wakes(&mut self, srv: &mut Server<'_>, cid: ConvId) {
        OneWakePerBurst::retry_watch_events(srv, cid);
    }
}
