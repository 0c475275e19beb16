//! HARNESS: every model request carries what `before_agent_start` added. A run started directly
//! by `sendMessage(triggerTurn)` skips it (pi#5581): its requests go out without the harness.

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct Harness;

impl Checker for Harness {
    const READS: u32 = reads(&[EvKind::Request]);

    fn invariant(&self) -> Invariant {
        Invariant::Harness
    }

    fn reset(&mut self) {}

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, view: &View<'_>, out: &mut Vec<Violation>) {
        if let Ev::Request {
            req,
            harness: false,
        } = *ev
        {
            let carried = view.ledger.unrequested().first().copied();
            let what = match carried {
                Some(id) => format!(" carrying {id}"),
                None => String::new(),
            };
            out.push(Violation {
                invariant: Invariant::Harness,
                t,
                msg: carried,
                detail: format!(
                    "model request #{req}{what} went out without before_agent_start (the run was not started through prompt())"
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    //! Controls: a model request made outside prompt() (no before_agent_start) fires HARNESS,
    //! naming the message it carried; a harness request passes.
    use super::*;
    use crate::check::CheckParams;
    use crate::check::testkit::feed;
    use crate::sim::msg::MsgId;

    fn request(harness: bool) -> Vec<(u64, Ev<()>)> {
        vec![
            (0, Ev::Produced { msg: MsgId(0) }),
            (5, Ev::Appended { msg: MsgId(0) }),
            (10, Ev::Request { req: 3, harness }),
        ]
    }

    #[test]
    fn a_request_outside_prompt_fires() {
        let out = feed(&mut Harness, CheckParams::default(), &request(false), 100);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(
            (out[0].invariant, out[0].msg),
            (Invariant::Harness, Some(MsgId(0)))
        );
        assert!(out[0].detail.contains("#3"), "{}", out[0].detail);
    }

    #[test]
    fn a_harness_request_passes() {
        assert_eq!(
            feed(&mut Harness, CheckParams::default(), &request(true), 100),
            vec![]
        );
    }
}
