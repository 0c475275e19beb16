//! W1: the per-event drain that requeues the refused event too, the bug of seed 000
//! (`docs/hosts/gptme.md`). `request_watch_wake` sets `generating` before it returns, so the
//! drain's second call sees the conversation busy with the first call's own wake, and the rest of
//! the burst goes back to wait for the next retry trigger (G-1).

use crate::family::common::conv::ConvId;
use crate::family::gptme_server::api::{Server, ServerWake, SystemMessage};

/// One wake per event; on a refusal, requeue the rest of the batch (from the refused event when
/// `requeue_refused`, after it otherwise: W0).
pub struct PerEventDrain {
    requeue_refused: bool,
}

impl PerEventDrain {
    /// W1: requeue `batch[i:]`.
    pub fn w1() -> PerEventDrain {
        PerEventDrain {
            requeue_refused: true,
        }
    }

    /// W0: requeue `batch[i+1:]`; the refused event is gone (see `w0.rs`).
    pub fn w0() -> PerEventDrain {
        PerEventDrain {
            requeue_refused: false,
        }
    }
}

impl ServerWake for PerEventDrain {
    fn retry_deferred_watch_wakes(&mut self, srv: &mut Server<'_>, cid: ConvId) {
        let batch = srv.take_queued_watch_events(Some(cid));
        for (i, e) in batch.iter().enumerate() {
            if !srv.request_watch_wake(cid, SystemMessage::watch(std::slice::from_ref(e))) {
                let from = if self.requeue_refused { i } else { i + 1 };
                for rest in batch[from..].iter().rev() {
                    srv.requeue_watch_event(*rest);
                }
                break;
            }
        }
    }
}
