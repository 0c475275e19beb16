//! NO-LOSS: every produced message that no documented guard dropped reaches a model request by the
//! end of the run (after the quiescent phase).

use super::{Checker, Invariant, View, Violation, reads};
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct NoLoss;

impl Checker for NoLoss {
    const READS: u32 = reads(&[]);

    fn invariant(&self) -> Invariant {
        Invariant::NoLoss
    }

    fn reset(&mut self) {}

    #[inline(always)]
    fn observe<N>(&mut self, _t: Ms, _ev: &Ev<N>, _view: &View<'_>, _out: &mut Vec<Violation>) {}

    fn finish(&mut self, t: Ms, view: &View<'_>, out: &mut Vec<Violation>) {
        let owed = view.ledger.owed();
        let Some(&first) = owed.first() else { return };
        let info = &view.messages[first.0 as usize];
        let where_ = match view.ledger.get(first).appended_at {
            Some(at) => format!("appended at {} ms but no model request followed", at.0),
            None => "never entered the conversation".to_string(),
        };
        let more = match owed.len() {
            1 => String::new(),
            n => format!(" ({} more undelivered)", n - 1),
        };
        out.push(Violation {
            invariant: Invariant::NoLoss,
            t,
            msg: Some(first),
            detail: format!(
                "{first} ({}, produced at {} ms) {where_} by the end of the run{more}",
                info.source_name(),
                info.produced_at.0
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    //! Controls: a message that never reaches a request fires NO-LOSS (with where it stopped); one
    //! that is appended and requested, or dropped by a documented guard, passes.
    use super::*;
    use crate::check::CheckParams;
    use crate::check::testkit::feed;
    use crate::sim::msg::MsgId;
    use crate::sim::record::Reason;

    const M0: MsgId = MsgId(0);

    #[test]
    fn a_message_appended_but_never_requested_is_lost() {
        let events = [
            (0, Ev::Produced { msg: M0 }),
            (10, Ev::Appended { msg: M0 }),
        ];
        let out = feed(&mut NoLoss, CheckParams::default(), &events, 1_000);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].invariant, Invariant::NoLoss);
        assert_eq!(out[0].msg, Some(M0));
        assert!(
            out[0].detail.contains("appended at 10 ms"),
            "{}",
            out[0].detail
        );
    }

    #[test]
    fn a_message_requested_or_dropped_by_a_guard_is_not_lost() {
        let delivered = [
            (0, Ev::Produced { msg: M0 }),
            (10, Ev::Appended { msg: M0 }),
            (
                20,
                Ev::Request {
                    req: 0,
                    harness: true,
                },
            ),
        ];
        assert_eq!(
            feed(&mut NoLoss, CheckParams::default(), &delivered, 1_000),
            vec![]
        );
        let dropped = [
            (0, Ev::Produced { msg: M0 }),
            (
                5,
                Ev::Dropped {
                    msg: M0,
                    reason: Reason::new(0, "coalesced"),
                },
            ),
        ];
        assert_eq!(
            feed(&mut NoLoss, CheckParams::default(), &dropped, 1_000),
            vec![]
        );
    }
}
