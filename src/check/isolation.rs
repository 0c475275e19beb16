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

#[cfg(test)]
mod tests {
    //! Controls: another conversation's message appended here fires ISOLATION, and so does a wait
    //! held open only by another conversation's jobs; this conversation's own messages, and a wait
    //! with work of its own, pass.
    use super::*;
    use crate::check::CheckParams;
    use crate::check::testkit::{feed, feed_messages, info};
    use crate::sim::msg::{MsgId, MsgInfo};

    #[test]
    fn a_foreign_message_appended_here_fires() {
        let foreign = |id: MsgId, t: Ms| MsgInfo {
            conv: 1,
            ..info(id, t)
        };
        let events = [
            (0, Ev::Produced { msg: MsgId(0) }),
            (10, Ev::Appended { msg: MsgId(0) }),
        ];
        let out = feed_messages(
            &mut Isolation,
            CheckParams::default(),
            &events,
            100,
            foreign,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(
            (out[0].invariant, out[0].msg),
            (Invariant::Isolation, Some(MsgId(0)))
        );
        // The same message of this conversation passes.
        assert_eq!(
            feed(&mut Isolation, CheckParams::default(), &events, 100),
            vec![]
        );
    }

    #[test]
    fn a_wait_held_open_by_foreign_jobs_only_fires() {
        let held = [(10, Ev::Waiting { own: 0, foreign: 2 })];
        let out = feed(&mut Isolation, CheckParams::default(), &held, 100);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].detail.contains("2 job(s)"), "{}", out[0].detail);
        let own = [
            (10, Ev::Waiting { own: 1, foreign: 2 }),
            (20, Ev::Waiting { own: 0, foreign: 0 }),
        ];
        assert_eq!(
            feed(&mut Isolation, CheckParams::default(), &own, 100),
            vec![]
        );
    }
}
