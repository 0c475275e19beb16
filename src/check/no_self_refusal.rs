//! NO-SELF-REFUSAL (`docs/hosts/gptme.md` G-1): a wake refused as busy must be refused because
//! of outside work, never because a wake issued earlier in the same drain has just set the busy
//! flag. gptme's `request_watch_wake` sets `generating` before it returns, so a per-event drain
//! that wakes once per event refuses its own second wake and requeues the rest of the burst.

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::msg::Payload;
use crate::sim::record::{Ev, Refusal};
use crate::sim::time::Ms;

#[derive(Default)]
pub struct NoSelfRefusal {
    /// The drain in progress and the wakes it issued that the host accepted, with what they
    /// carried.
    pass: Option<u32>,
    accepted: Vec<(u32, Payload)>,
}

fn carried(p: &Payload) -> String {
    let ids: Vec<String> = p.ids().iter().map(|m| m.to_string()).collect();
    match ids.len() {
        0 => String::new(),
        _ => format!(" ({})", ids.join(" ")),
    }
}

impl Checker for NoSelfRefusal {
    const READS: u32 = reads(&[EvKind::Pass, EvKind::Wake]);

    fn invariant(&self) -> Invariant {
        Invariant::NoSelfRefusal
    }

    fn reset(&mut self) {
        self.pass = None;
        self.accepted.clear();
    }

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, _view: &View<'_>, out: &mut Vec<Violation>) {
        match ev {
            Ev::Pass { pass, on: true } => {
                self.pass = Some(*pass);
                self.accepted.clear();
            }
            Ev::Pass { on: false, .. } => self.pass = None,
            Ev::Wake {
                pass,
                wake,
                msgs,
                refused,
            } if self.pass == Some(*pass) => match refused {
                None => self.accepted.push((*wake, msgs.clone())),
                Some(Refusal::Wake(by)) => {
                    if let Some((_, theirs)) = self.accepted.iter().find(|(w, _)| w == by) {
                        out.push(Violation {
                            invariant: Invariant::NoSelfRefusal,
                            t,
                            msg: msgs.ids().first().copied(),
                            detail: format!(
                                "wake #{wake}{} was refused as busy, but the conversation was busy only with wake #{by}{}, issued earlier in the same drain: the drain refused itself",
                                carried(msgs),
                                carried(theirs)
                            ),
                        });
                    }
                }
                Some(_) => {}
            },
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    //! Controls: a wake refused as busy with a wake the same pass accepted fires NO-SELF-REFUSAL;
    //! a refusal by a wake of an earlier pass, or for another reason, passes.
    use super::*;
    use crate::check::CheckParams;
    use crate::check::testkit::feed;
    use crate::sim::msg::{MsgId, Payload};
    use crate::sim::record::Reason;

    fn wake(pass: u32, wake: u32, msg: u32, refused: Option<Refusal>) -> Ev<()> {
        Ev::Wake {
            pass,
            wake,
            msgs: Payload::One(MsgId(msg)),
            refused,
        }
    }

    #[test]
    fn a_drain_refused_by_its_own_wake_fires() {
        let events = [
            (0, Ev::Produced { msg: MsgId(0) }),
            (0, Ev::Produced { msg: MsgId(1) }),
            (10, Ev::Pass { pass: 1, on: true }),
            (10, wake(1, 1, 0, None)),
            (10, wake(1, 2, 1, Some(Refusal::Wake(1)))),
            (10, Ev::Pass { pass: 1, on: false }),
        ];
        let out = feed(
            &mut NoSelfRefusal::default(),
            CheckParams::default(),
            &events,
            100,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(
            (out[0].invariant, out[0].msg),
            (Invariant::NoSelfRefusal, Some(MsgId(1)))
        );
    }

    #[test]
    fn a_refusal_by_an_earlier_pass_or_another_reason_passes() {
        let events = [
            (0, Ev::Produced { msg: MsgId(0) }),
            (0, Ev::Produced { msg: MsgId(1) }),
            (10, Ev::Pass { pass: 1, on: true }),
            (10, wake(1, 1, 0, None)),
            (10, Ev::Pass { pass: 1, on: false }),
            (20, Ev::Pass { pass: 2, on: true }),
            (20, wake(2, 2, 1, Some(Refusal::Wake(1)))),
            (
                20,
                wake(2, 3, 1, Some(Refusal::Other(Reason::new(1, "tools")))),
            ),
            (20, Ev::Pass { pass: 2, on: false }),
        ];
        assert_eq!(
            feed(
                &mut NoSelfRefusal::default(),
                CheckParams::default(),
                &events,
                100
            ),
            vec![]
        );
    }
}
