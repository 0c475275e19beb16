//! EXACTLY-ONCE: a message enters the conversation at most once.

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct ExactlyOnce;

impl Checker for ExactlyOnce {
    const READS: u32 = reads(&[EvKind::Appended]);

    fn invariant(&self) -> Invariant {
        Invariant::ExactlyOnce
    }

    fn reset(&mut self) {}

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, view: &View<'_>, out: &mut Vec<Violation>) {
        if let Ev::Appended { msg } = *ev {
            let before = view.ledger.get(msg);
            if let Some(first) = before.appended_at {
                out.push(Violation {
                    invariant: Invariant::ExactlyOnce,
                    t,
                    msg: Some(msg),
                    detail: format!(
                        "{msg} entered the conversation again (first at {} ms)",
                        first.0
                    ),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Controls: a message appended twice fires EXACTLY-ONCE at the second append, naming the
    //! first; two messages appended once each pass.
    use super::*;
    use crate::check::CheckParams;
    use crate::check::testkit::feed;
    use crate::sim::msg::MsgId;

    #[test]
    fn a_second_append_of_one_message_fires() {
        let m = MsgId(0);
        let events = [
            (0, Ev::Produced { msg: m }),
            (10, Ev::Appended { msg: m }),
            (30, Ev::Appended { msg: m }),
        ];
        let out = feed(&mut ExactlyOnce, CheckParams::default(), &events, 100);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(
            (out[0].invariant, out[0].t, out[0].msg),
            (Invariant::ExactlyOnce, Ms(30), Some(m))
        );
        assert!(
            out[0].detail.contains("first at 10 ms"),
            "{}",
            out[0].detail
        );
    }

    #[test]
    fn each_message_once_passes() {
        let events = [
            (0, Ev::Produced { msg: MsgId(0) }),
            (1, Ev::Produced { msg: MsgId(1) }),
            (10, Ev::Appended { msg: MsgId(0) }),
            (10, Ev::Appended { msg: MsgId(1) }),
        ];
        assert_eq!(
            feed(&mut ExactlyOnce, CheckParams::default(), &events, 100),
            vec![]
        );
    }
}
