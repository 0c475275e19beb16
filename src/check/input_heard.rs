//! INPUT-HEARD (issue 15, class 1; `docs/hosts/gptme.md` G-7 and G-12): outside input that
//! changes while the session sits in its idle wait ends that wait promptly. NO-SPIN bounds how
//! often the same input interrupts; this is its other half: input that changed (records written
//! to the prompt-queue file, regular or steer; `control.jsonl` rewritten with other contents,
//! of the same size too; a subagent report) must interrupt at all. gptme's wait polls its
//! inputs once per capped `cond.wait`, so the bound, `input_ms_max`, is derived from the host's
//! poll period (`[timing]`: the 1 s cap, a notified thread's wake-up and the file I/O), not
//! guessed.
//!
//! The wait runs from the first `Waiting` of a LOOP_CONTINUE hook to its `WaitEnded` (or the
//! session's end). An `InputChanged` inside it must be followed by the wait's end within
//! `input_ms_max`; the violation is dated at the crossing. Malformed records are not input
//! (the host does not report them).

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct InputHeard {
    /// The session is in its idle wait.
    waiting: bool,
    /// The earliest input that changed during this wait and has not ended it yet: when it
    /// changed and its fingerprint.
    unheard: Option<(Ms, u64)>,
}

impl InputHeard {
    /// The wait ended at `t`: judge the input it had to hear.
    fn ended(&mut self, t: Ms, view: &View<'_>, out: &mut Vec<Violation>) {
        self.waiting = false;
        let Some((since, input)) = self.unheard.take() else {
            return;
        };
        let max = view.params.input_ms_max;
        let waited = t.saturating_sub(since).0;
        if waited > max {
            out.push(Violation {
                invariant: Invariant::InputHeard,
                t: since + max,
                msg: None,
                detail: format!(
                    "outside input (fingerprint {input:016x}) changed at {} ms while the session sat in its idle wait, and the wait went on for {waited} ms without ending (input_ms_max = {max} ms, the host's poll period): the wait does not hear new input",
                    since.0
                ),
            });
        }
    }
}

impl Checker for InputHeard {
    const READS: u32 = reads(&[
        EvKind::Waiting,
        EvKind::InputChanged,
        EvKind::WaitEnded,
        EvKind::SessionEnd,
    ]);

    fn invariant(&self) -> Invariant {
        Invariant::InputHeard
    }

    fn reset(&mut self) {
        self.waiting = false;
        self.unheard = None;
    }

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, view: &View<'_>, out: &mut Vec<Violation>) {
        match *ev {
            Ev::Waiting { .. } => self.waiting = true,
            Ev::InputChanged { input } if self.waiting && self.unheard.is_none() => {
                self.unheard = Some((t, input));
            }
            Ev::WaitEnded | Ev::SessionEnd { .. } => self.ended(t, view, out),
            _ => {}
        }
    }

    /// The run ended while the session still waited: judge it at the run's end.
    fn finish(&mut self, t: Ms, view: &View<'_>, out: &mut Vec<Violation>) {
        if self.waiting {
            self.ended(t, view, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testkit::feed;
    use crate::check::{CheckParams, Invariant};
    use crate::sim::record::EndCause;

    const CONTROL: u64 = 0x636f_6e74_0000_0002;

    fn params() -> CheckParams {
        CheckParams {
            input_ms_max: 1_007,
            ..CheckParams::default()
        }
    }

    fn judge(events: &[(u64, Ev<()>)], end: u64) -> Vec<Violation> {
        feed(&mut InputHeard::default(), params(), events, end)
    }

    fn waiting() -> Ev<()> {
        Ev::Waiting { own: 1, foreign: 0 }
    }

    fn changed() -> Ev<()> {
        Ev::InputChanged { input: CONTROL }
    }

    #[test]
    fn a_same_size_rewrite_the_wait_never_hears_fires_at_the_crossing() {
        // control.jsonl rewritten at 2,000 ms while the wait polls every second; the wait goes
        // on until its job finishes at 9,000 ms.
        let out = judge(
            &[
                (1_000, waiting()),
                (2_000, changed()),
                (2_000, waiting()),
                (3_000, waiting()),
                (9_000, Ev::WaitEnded),
            ],
            10_000,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].invariant, Invariant::InputHeard);
        assert_eq!(out[0].t, Ms(3_007));
        assert!(
            out[0].detail.contains("changed at 2000 ms"),
            "{}",
            out[0].detail
        );
        assert!(out[0].detail.contains("7000 ms"), "{}", out[0].detail);
    }

    #[test]
    fn a_wait_still_on_at_the_run_end_fires_too() {
        let out = judge(&[(0, waiting()), (10, changed())], 5_000);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].t, Ms(1_017));
    }

    #[test]
    fn input_heard_within_the_poll_period_or_outside_a_wait_passes() {
        // Heard at the next poll (1,007 ms: the cap, a wake-up and the I/O), a session end,
        // and input written while the session was busy (no wait to end).
        let out = judge(
            &[
                (1_000, waiting()),
                (1_500, changed()),
                (2_507, Ev::WaitEnded),
                (3_000, changed()),
                (9_000, waiting()),
                (9_001, changed()),
                (
                    9_500,
                    Ev::SessionEnd {
                        cause: EndCause {
                            code: 1,
                            text: "SIGTERM",
                            voluntary: false,
                        },
                    },
                ),
            ],
            20_000,
        );
        assert!(out.is_empty(), "{out:?}");
    }
}
