//! NO-DEADLOCK (issue 12): a run never reaches a point where no thread of the host can run
//! again while one is unfinished: every thread blocked with nothing timed to wake it, or one
//! waiting for a lock whose holder died. Only a real host run under a thread scheduler can
//! observe it (the Python adapter's `sched.py` detects it and its driver ends the run with the
//! cause `deadlock`); the models are event loops that cannot block, so they never emit it.

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct NoDeadlock;

impl Checker for NoDeadlock {
    const READS: u32 = reads(&[EvKind::Deadlock]);

    fn reset(&mut self) {}

    fn invariant(&self) -> Invariant {
        Invariant::NoDeadlock
    }

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, _view: &View<'_>, out: &mut Vec<Violation>) {
        if let Ev::Deadlock { threads } = *ev {
            out.push(Violation {
                invariant: Invariant::NoDeadlock,
                t,
                msg: None,
                detail: format!(
                    "deadlock: {threads} thread(s) of the host can never run again (the note before it says what each waits for)"
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{CheckParams, InvariantSet, Ledger};

    fn view<'a>(ledger: &'a Ledger, params: &'a CheckParams) -> View<'a> {
        View {
            messages: &[],
            ledger,
            params,
        }
    }

    #[test]
    fn a_deadlock_is_a_violation_and_nothing_else_is() {
        let (ledger, params) = (Ledger::default(), CheckParams::default());
        let mut c = NoDeadlock;
        let mut out = Vec::new();
        c.observe::<()>(Ms(5), &Ev::Settled, &view(&ledger, &params), &mut out);
        c.observe::<()>(
            Ms(7),
            &Ev::Idle { idle: true },
            &view(&ledger, &params),
            &mut out,
        );
        assert!(out.is_empty());
        c.observe::<()>(
            Ms(9),
            &Ev::Deadlock { threads: 2 },
            &view(&ledger, &params),
            &mut out,
        );
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].invariant, Invariant::NoDeadlock);
        assert_eq!(out[0].t, Ms(9));
        assert!(out[0].detail.contains("2 thread(s)"), "{}", out[0].detail);
        assert!(InvariantSet::of(&[Invariant::NoDeadlock]).contains(Invariant::NoDeadlock));
    }
}
