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
