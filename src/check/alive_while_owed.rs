//! ALIVE-WHILE-OWED (`docs/hosts/gptme.md` G-6, §4): a session does not end on its own (its
//! queue ran dry, or it completed) while it owns background work whose result has not reached
//! the model, unless a notice for that work (the wait's timeout, reported once) has. gptme before
//! PR #3843 started a background job, said it was running, and exited: two model calls, the
//! completion lost, the job killed at exit. Ends imposed from outside (SIGTERM) are not judged.
//!
//! A timeout notice excuses its job only when it is one: the wait it ended must have lasted the
//! documented `GPTME_WATCH_IDLE_MAX` (`CheckParams::notice_wait_ms_min`, derived from the
//! scenario's `idle_max_ms` less the one file read between the wait's deadline and its first
//! observed `Waiting`). A notice after a shorter wait is an early give-up, and the job it names is
//! still owed. The wait is the one from its first `Waiting` to its `WaitEnded`; a lane that
//! reports no `Waiting` before the notice cannot be judged, and the notice is taken as it is.

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::msg::MsgId;
use crate::sim::record::{Ev, WorkOp};
use crate::sim::time::Ms;

#[derive(Clone, Copy)]
struct Work {
    work: u32,
    shown: u32,
    started_at: Ms,
    finished: Option<MsgId>,
    killed: bool,
    noticed: bool,
    /// A notice for it came after a wait shorter than the documented one: when, and the wait.
    early: Option<(Ms, u64)>,
}

#[derive(Default)]
pub struct AliveWhileOwed {
    /// The session's own work (conversation 0), in start order.
    own: Vec<Work>,
    /// The first `Waiting` of the wait in progress (none since the last `WaitEnded`).
    wait_start: Option<Ms>,
    /// The last wait that ended: its first `Waiting` and its `WaitEnded`.
    last_wait: Option<(Ms, Ms)>,
}

impl AliveWhileOwed {
    /// How long the wait a notice at `t` ended had lasted, if a wait was observed.
    fn waited_before_notice(&self, t: Ms) -> Option<u64> {
        match (self.last_wait, self.wait_start) {
            (Some((start, end)), _) => Some(end.saturating_sub(start).0),
            (None, Some(start)) => Some(t.saturating_sub(start).0),
            (None, None) => None,
        }
    }
}

impl Checker for AliveWhileOwed {
    const READS: u32 = reads(&[
        EvKind::Work,
        EvKind::WorkNoticed,
        EvKind::SessionEnd,
        EvKind::Waiting,
        EvKind::WaitEnded,
    ]);

    fn invariant(&self) -> Invariant {
        Invariant::AliveWhileOwed
    }

    fn reset(&mut self) {
        self.own.clear();
        self.wait_start = None;
        self.last_wait = None;
    }

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, view: &View<'_>, out: &mut Vec<Violation>) {
        match *ev {
            Ev::Work {
                work,
                shown,
                conv: 0,
                op,
            } => match op {
                WorkOp::Started => self.own.push(Work {
                    work,
                    shown,
                    started_at: t,
                    finished: None,
                    killed: false,
                    noticed: false,
                    early: None,
                }),
                WorkOp::Finished(msg) => {
                    if let Some(w) = self.own.iter_mut().find(|w| w.work == work) {
                        w.finished = Some(msg);
                    }
                }
                WorkOp::Killed => {
                    if let Some(w) = self.own.iter_mut().find(|w| w.work == work) {
                        w.killed = true;
                    }
                }
            },
            Ev::Waiting { .. } => {
                self.wait_start.get_or_insert(t);
            }
            Ev::WaitEnded => {
                if let Some(start) = self.wait_start.take() {
                    self.last_wait = Some((start, t));
                }
            }
            Ev::WorkNoticed { work } => {
                let min = view.params.notice_wait_ms_min;
                // Only a notice after the documented wait excuses its job.
                let waited = self.waited_before_notice(t);
                if let Some(w) = self.own.iter_mut().find(|w| w.work == work) {
                    match waited {
                        Some(waited) if waited < min => w.early = Some((t, waited)),
                        _ => w.noticed = true,
                    }
                }
            }
            Ev::SessionEnd { cause } if cause.voluntary => {
                let owed = self.own.iter().find(|w| {
                    !w.killed
                        && !w.noticed
                        && w.finished.is_none_or(|m| {
                            let l = view.ledger.get(m);
                            l.delivered_at.is_none() && l.dropped.is_none()
                        })
                });
                let Some(w) = owed else { return };
                let what = match w.finished {
                    None => "was still running".to_string(),
                    Some(m) => {
                        format!("had finished, but its completion {m} had not reached the model")
                    }
                };
                let notice = match w.early {
                    Some((at, waited)) => format!(
                        "its only timeout notice, at {} ms, ended a wait of {waited} ms, short of GPTME_WATCH_IDLE_MAX ({} ms at least)",
                        at.0, view.params.notice_wait_ms_min
                    ),
                    None => "no timeout notice for it was reported".to_string(),
                };
                out.push(Violation {
                    invariant: Invariant::AliveWhileOwed,
                    t,
                    msg: w.finished,
                    detail: format!(
                        "the session ended ({}) while its job #{} (started at {} ms) {what}, and {notice}",
                        cause.text,
                        w.shown,
                        w.started_at.0,
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
    use crate::sim::record::EndCause;

    /// GPTME_WATCH_IDLE_MAX 30,000 ms less one 5 ms file read.
    const MIN: u64 = 29_995;

    fn params() -> CheckParams {
        CheckParams {
            notice_wait_ms_min: MIN,
            ..CheckParams::default()
        }
    }

    fn work(op: WorkOp) -> Ev<()> {
        Ev::Work {
            work: 0,
            shown: 1,
            conv: 0,
            op,
        }
    }

    fn queue_empty() -> Ev<()> {
        Ev::SessionEnd {
            cause: EndCause {
                code: 0,
                text: "queue empty",
                voluntary: true,
            },
        }
    }

    /// Job #1 starts at 0 and runs on; the session waits from 1,005 ms (its first `Waiting`,
    /// one capped wait a second), its wait ends at `ended` with the timeout notice, and the
    /// session ends on its own 100 ms later.
    fn notice_after(ended: u64) -> Vec<(u64, Ev<()>)> {
        let mut events = vec![(0, work(WorkOp::Started))];
        let mut t = 1_005;
        while t < ended {
            events.push((t, Ev::Waiting { own: 1, foreign: 0 }));
            t += 1_000;
        }
        events.push((ended, Ev::WaitEnded));
        events.push((ended, Ev::WorkNoticed { work: 0 }));
        events.push((ended + 100, queue_empty()));
        events
    }

    fn judge(events: &[(u64, Ev<()>)]) -> Vec<Violation> {
        feed(&mut AliveWhileOwed::default(), params(), events, 60_000)
    }

    #[test]
    fn a_notice_before_the_documented_wait_excuses_nothing() {
        // The wait gave up after 10 s of a 30 s GPTME_WATCH_IDLE_MAX.
        let out = judge(&notice_after(11_005));
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].invariant, Invariant::AliveWhileOwed);
        assert_eq!(out[0].t, Ms(11_105));
        assert!(
            out[0].detail.contains("ended a wait of 10000 ms"),
            "{}",
            out[0].detail
        );
        assert!(out[0].detail.contains("29995 ms"), "{}", out[0].detail);
    }

    #[test]
    fn a_notice_at_or_after_the_documented_wait_excuses_its_job() {
        assert!(judge(&notice_after(1_005 + MIN)).is_empty());
        assert!(judge(&notice_after(31_005)).is_empty());
        // A family that derives no wait (the bound 0) takes any notice, as before.
        let out = feed(
            &mut AliveWhileOwed::default(),
            CheckParams::default(),
            &notice_after(11_005),
            60_000,
        );
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn without_any_notice_the_session_end_fires_as_before() {
        let events = vec![
            (0, work(WorkOp::Started)),
            (1_005, Ev::Waiting { own: 1, foreign: 0 }),
            (2_000, Ev::WaitEnded),
            (2_100, queue_empty()),
        ];
        let out = judge(&events);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(
            out[0]
                .detail
                .contains("no timeout notice for it was reported"),
            "{}",
            out[0].detail
        );
    }
}
