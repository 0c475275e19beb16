//! FIFO: the messages of one source enter the conversation in the order they were produced.
//! Judged at the end over first appends, so a message lost for good (NO-LOSS's business) does not
//! also count as a reorder.

use super::{Checker, Invariant, View, Violation, reads};
use crate::sim::msg::MsgId;
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct Fifo {
    /// Per source, the last id appended so far: scratch of `finish`, kept across runs.
    last: Vec<Option<MsgId>>,
}

impl Checker for Fifo {
    const READS: u32 = reads(&[]);

    fn invariant(&self) -> Invariant {
        Invariant::Fifo
    }

    fn reset(&mut self) {
        self.last.clear();
    }

    #[inline(always)]
    fn observe<N>(&mut self, _t: Ms, _ev: &Ev<N>, _view: &View<'_>, _out: &mut Vec<Violation>) {}

    fn finish(&mut self, _t: Ms, view: &View<'_>, out: &mut Vec<Violation>) {
        // Ids grow in production order, so per source the appended ids must grow too.
        let last = &mut self.last;
        last.clear();
        for &id in view.ledger.append_order() {
            let info = &view.messages[id.0 as usize];
            let s = info.source as usize;
            if last.len() <= s {
                last.resize(s + 1, None);
            }
            match last[s] {
                Some(prev) if prev > id => {
                    let at = view.ledger.get(id).appended_at.unwrap_or_default();
                    out.push(Violation {
                        invariant: Invariant::Fifo,
                        t: at,
                        msg: Some(id),
                        detail: format!(
                            "{id} entered the conversation after {prev}, though {id} was produced first (both from {})",
                            info.stream_name()
                        ),
                    });
                    return;
                }
                _ => last[s] = Some(id),
            }
        }
    }
}
