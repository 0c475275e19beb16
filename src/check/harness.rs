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
