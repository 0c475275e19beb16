//! SINGLE-STARTER: at most one starter reaches `Agent.prompt` at a time. A rejected start ("Agent
//! is already processing a prompt") means two prompts, a prompt and a direct run, or a prompt and
//! the host's own `continue()` raced.

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::record::{Ev, Starter};
use crate::sim::time::Ms;

#[derive(Default)]
pub struct SingleStarter {
    last: Option<(Starter, Ms)>,
}

pub fn starter_name(s: Starter) -> String {
    match s {
        Starter::Prompt(p) => format!("prompt P{p}"),
        Starter::Direct(r) => format!("direct run R{r}"),
        Starter::Continue(r) => format!("continue() of run R{r}"),
    }
}

impl Checker for SingleStarter {
    const READS: u32 = reads(&[EvKind::Starter]);

    fn invariant(&self) -> Invariant {
        Invariant::SingleStarter
    }

    fn reset(&mut self) {
        self.last = None;
    }

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, _view: &View<'_>, out: &mut Vec<Violation>) {
        if let Ev::Starter { who, accepted } = *ev {
            if accepted {
                self.last = Some((who, t));
                return;
            }
            let other = match self.last {
                Some((s, at)) => format!("{} (started at {} ms)", starter_name(s), at.0),
                None => "another run".to_string(),
            };
            out.push(Violation {
                invariant: Invariant::SingleStarter,
                t,
                msg: None,
                detail: format!(
                    "{} reached Agent.prompt while {other} was active: rejected as already processing",
                    starter_name(who)
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    //! Controls: a starter rejected while another run is active fires SINGLE-STARTER, naming the
    //! run that held the agent; accepted starters one after another pass.
    use super::*;
    use crate::check::CheckParams;
    use crate::check::testkit::feed;

    #[test]
    fn a_rejected_starter_fires() {
        let events = [
            (
                0,
                Ev::Starter {
                    who: Starter::Prompt(1),
                    accepted: true,
                },
            ),
            (
                10,
                Ev::Starter {
                    who: Starter::Direct(2),
                    accepted: false,
                },
            ),
        ];
        let out = feed(
            &mut SingleStarter::default(),
            CheckParams::default(),
            &events,
            100,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(
            (out[0].invariant, out[0].t),
            (Invariant::SingleStarter, Ms(10))
        );
        assert!(
            out[0].detail.contains("direct run R2")
                && out[0].detail.contains("prompt P1 (started at 0 ms)"),
            "{}",
            out[0].detail
        );
    }

    #[test]
    fn accepted_starters_pass() {
        let events = [
            (
                0,
                Ev::Starter {
                    who: Starter::Prompt(1),
                    accepted: true,
                },
            ),
            (
                50,
                Ev::Starter {
                    who: Starter::Continue(1),
                    accepted: true,
                },
            ),
        ];
        assert_eq!(
            feed(
                &mut SingleStarter::default(),
                CheckParams::default(),
                &events,
                100
            ),
            vec![]
        );
    }
}
