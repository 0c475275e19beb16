//! W2-subagent: W2 plus the subagent completions that the same retry function delivers, still
//! one completion per wake (`docs/hosts/gptme.md`). The first completion is woken for; the rest
//! are put back at the *tail* of the global queue for the woken step's STEP_PRE hook; when the
//! first's wake is refused it is put back too, now *behind* the rest: the next drain delivers
//! them out of order (G-4, an inference no report confirms; wakesim's model shows it).

use super::w2::OneWakePerBurst;
use crate::family::common::conv::ConvId;
use crate::family::gptme_server::api::{Server, ServerWake, SystemMessage};

/// W2-subagent.
#[derive(Default)]
pub struct WithSubagentCompletions;

impl ServerWake for WithSubagentCompletions {
    fn retry_deferred_watch_wakes(&mut self, srv: &mut Server<'_>, cid: ConvId) {
        OneWakePerBurst::retry_watch_events(srv, cid);
        let queued = srv.take_queued_completions(cid);
        let Some((first, rest)) = queued.split_first() else {
            return;
        };
        for r in rest {
            srv.put_completion(*r);
        }
        if !srv.request_watch_wake(cid, SystemMessage::completion(first)) {
            srv.put_completion(*first);
        }
    }
}
