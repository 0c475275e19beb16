//! W0: the per-event drain that drops the refused event (`docs/hosts/gptme.md`, inferred from
//! `test_requeue_preserves_remaining_events` and the seed: the old code "requeued only the events
//! after the first"). `take_queued_watch_events` already removed the refused event from the
//! queue; requeueing `batch[i+1:]` loses it for good (G-2, NO-LOSS). It shares W1's loop
//! (`w1.rs`), which requeues from the refused event instead.

use super::w1::PerEventDrain;

/// W0, built from W1's drain.
pub fn w0() -> PerEventDrain {
    PerEventDrain::w0()
}
