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

#[cfg(test)]
mod tests {
    //! Controls: two messages of one source appended in the reverse of their production order fire
    //! FIFO at the later append; the same order passes, and so do two sources interleaved.
    use super::*;
    use crate::check::CheckParams;
    use crate::check::testkit::{feed, feed_messages, info};
    use crate::sim::msg::MsgId;

    fn appended(order: [u32; 2]) -> Vec<(u64, Ev<()>)> {
        vec![
            (0, Ev::Produced { msg: MsgId(0) }),
            (5, Ev::Produced { msg: MsgId(1) }),
            (
                10,
                Ev::Appended {
                    msg: MsgId(order[0]),
                },
            ),
            (
                20,
                Ev::Appended {
                    msg: MsgId(order[1]),
                },
            ),
        ]
    }

    #[test]
    fn one_source_out_of_order_fires() {
        let out = feed(
            &mut Fifo::default(),
            CheckParams::default(),
            &appended([1, 0]),
            100,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(
            (out[0].invariant, out[0].t, out[0].msg),
            (Invariant::Fifo, Ms(20), Some(MsgId(0)))
        );
    }

    #[test]
    fn production_order_passes_and_two_sources_may_interleave() {
        assert_eq!(
            feed(
                &mut Fifo::default(),
                CheckParams::default(),
                &appended([0, 1]),
                100
            ),
            vec![]
        );
        // m0 from source 0, m1 from source 1: their relative order is free.
        let two_sources = |id: MsgId, t: Ms| MsgInfo {
            source: id.0 as u8,
            ..info(id, t)
        };
        let out = feed_messages(
            &mut Fifo::default(),
            CheckParams::default(),
            &appended([1, 0]),
            100,
            two_sources,
        );
        assert_eq!(out, vec![]);
    }

    use crate::sim::msg::MsgInfo;
}
