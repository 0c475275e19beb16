//! NO-WASTED-WAKE (issue 15, class 1; the pi twin of gptme's no-spin): a wake prompt that starts
//! an agent run must hand the model something. When `Starter { Prompt(p), accepted }` starts a
//! run for a prompt the wake logic sent (`PromptSent { from_wake: true }`), the run's first model
//! request must deliver at least one message (one appended and in no request yet). A run that
//! delivers nothing is one model call too many: the content the wake was for rode another run
//! (a user's prompt, an earlier wake), or pi dropped it with the old session, or nothing was
//! owed at all. A user's prompt is never judged: the user may ask anything.

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::record::{Ev, Starter};
use crate::sim::time::Ms;

#[derive(Default)]
pub struct NoWastedWake {
    /// Prompts the wake logic sent, each with how many messages were owed when it was sent.
    wakes: Vec<(u32, usize)>,
    /// The wake prompt whose run started and has made no model request yet.
    starting: Option<(u32, usize)>,
}

impl Checker for NoWastedWake {
    const READS: u32 = reads(&[EvKind::PromptSent, EvKind::Starter, EvKind::Request]);

    fn invariant(&self) -> Invariant {
        Invariant::NoWastedWake
    }

    fn reset(&mut self) {
        self.wakes.clear();
        self.starting = None;
    }

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, view: &View<'_>, out: &mut Vec<Violation>) {
        match *ev {
            Ev::PromptSent {
                prompt,
                from_wake: true,
            } => self.wakes.push((prompt, view.ledger.owed().len())),
            Ev::Starter {
                who,
                accepted: true,
            } => {
                self.starting = match who {
                    Starter::Prompt(p) => self.wakes.iter().copied().find(|(w, _)| *w == p),
                    Starter::Direct(_) | Starter::Continue(_) => None,
                };
            }
            Ev::Request { req, .. } => {
                let Some((prompt, owed)) = self.starting.take() else {
                    return;
                };
                if !view.ledger.unrequested().is_empty() {
                    return;
                }
                let why = match owed {
                    0 => "nothing was owed when it was sent".to_string(),
                    n => format!(
                        "the {n} message(s) owed when it was sent reached the model another way or were dropped"
                    ),
                };
                out.push(Violation {
                    invariant: Invariant::NoWastedWake,
                    t,
                    msg: None,
                    detail: format!(
                        "wake prompt P{prompt} started a run whose first model request (#{req}) delivers no message ({why}): one model call too many"
                    ),
                });
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testkit::feed;
    use crate::check::{CheckParams, Invariant};
    use crate::sim::msg::MsgId;

    const M1: MsgId = MsgId(0);

    fn sent(prompt: u32, from_wake: bool) -> Ev<()> {
        Ev::PromptSent { prompt, from_wake }
    }

    fn started(prompt: u32) -> Ev<()> {
        Ev::Starter {
            who: Starter::Prompt(prompt),
            accepted: true,
        }
    }

    fn request(req: u32) -> Ev<()> {
        Ev::Request { req, harness: true }
    }

    fn judge(events: &[(u64, Ev<()>)]) -> Vec<Violation> {
        feed(
            &mut NoWastedWake::default(),
            CheckParams::default(),
            events,
            1_000,
        )
    }

    #[test]
    fn a_wake_whose_content_a_user_prompt_already_took_is_wasted() {
        // m1 stored, the wake P1 sent for it; the user's P2 starts first and carries m1; then
        // P1 starts a run of its own with nothing left to deliver.
        let out = judge(&[
            (0, Ev::Produced { msg: M1 }),
            (0, Ev::Appended { msg: M1 }),
            (0, sent(1, true)),
            (1, sent(2, false)),
            (5, started(2)),
            (6, request(1)),
            (40, started(1)),
            (41, request(2)),
        ]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].invariant, Invariant::NoWastedWake);
        assert_eq!(out[0].t, Ms(41));
        assert!(
            out[0].detail.contains("wake prompt P1"),
            "{}",
            out[0].detail
        );
        assert!(
            out[0].detail.contains("the 1 message(s) owed"),
            "{}",
            out[0].detail
        );
    }

    #[test]
    fn a_wake_with_nothing_owed_is_wasted() {
        let out = judge(&[(0, sent(1, true)), (3, started(1)), (4, request(1))]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(
            out[0].detail.contains("nothing was owed"),
            "{}",
            out[0].detail
        );
    }

    #[test]
    fn a_wake_whose_content_rides_its_run_is_not_wasted() {
        // Stored before the wake, or carried by the prompt itself (appended as the run starts).
        let stored = judge(&[
            (0, Ev::Produced { msg: M1 }),
            (0, Ev::Appended { msg: M1 }),
            (0, sent(1, true)),
            (3, started(1)),
            (4, request(1)),
            (9, request(2)),
        ]);
        assert!(stored.is_empty(), "{stored:?}");
        let carried = judge(&[
            (0, Ev::Produced { msg: M1 }),
            (0, sent(1, true)),
            (3, started(1)),
            (3, Ev::Appended { msg: M1 }),
            (4, request(1)),
        ]);
        assert!(carried.is_empty(), "{carried:?}");
    }

    #[test]
    fn a_user_prompt_with_nothing_owed_and_a_rejected_wake_are_not_judged() {
        let out = judge(&[
            (0, sent(1, false)),
            (3, started(1)),
            (4, request(1)),
            (5, sent(2, true)),
            (
                6,
                Ev::Starter {
                    who: Starter::Prompt(2),
                    accepted: false,
                },
            ),
            (7, request(2)),
        ]);
        assert!(out.is_empty(), "{out:?}");
    }
}
