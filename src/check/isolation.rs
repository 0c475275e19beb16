//! ISOLATION (`docs/hosts/gptme.md` G-10): another conversation's output never enters this one
//! (which would also steal it from its owner), and another conversation's running job never
//! holds this session's idle wait open.

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct Isolation;

impl Checker for Isolation {
    const READS: u32 = reads(&[EvKind::Appended, EvKind::Waiting]);

    fn invariant(&self) -> Invariant {
        Invariant::Isolation
    }

    fn reset(&mut self) {}

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, view: &View<'_>, out: &mut Vec<Violation>) {
        let (msg, detail) = match *ev {
            Ev::Appended { msg } => {
                let info = &view.messages[msg.0 as usize];
                if info.conv == 0 {
                    return;
                }
                (
                    Some(msg),
                    format!(
                        "{msg} ({}) entered this conversation: another conversation's output leaked in, and its owner can no longer claim it",
                        info.source_name()
                    ),
                )
            }
            Ev::Waiting { own: 0, foreign } if foreign > 0 => (
                None,
                format!(
                    "the session waits with no work of its own pending, held open by {foreign} job(s) of another conversation"
                ),
            ),
            _ => return,
        };
        out.push(Violation {
            invariant: Invariant::Isolation,
            t,
            msg,
            detail,
        });
    }
}
