//! ALIVE-WHILE-OWED (`wake-systems.md` §1.3 G-6, §4): a session does not end on its own (its
//! queue ran dry, or it completed) while it owns background work whose result has not reached
//! the model, unless a notice for that work (the wait's timeout, reported once) has. gptme before
//! PR #3843 started a background job, said it was running, and exited: two model calls, the
//! completion lost, the job killed at exit. Ends imposed from outside (SIGTERM) are not judged.

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
}

#[derive(Default)]
pub struct AliveWhileOwed {
    /// The session's own work (conversation 0), in start order.
    own: Vec<Work>,
}

impl Checker for AliveWhileOwed {
    const READS: u32 = reads(&[EvKind::Work, EvKind::WorkNoticed, EvKind::SessionEnd]);

    fn invariant(&self) -> Invariant {
        Invariant::AliveWhileOwed
    }

    fn reset(&mut self) {
        self.own.clear();
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
            Ev::WorkNoticed { work } => {
                if let Some(w) = self.own.iter_mut().find(|w| w.work == work) {
                    w.noticed = true;
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
                out.push(Violation {
                    invariant: Invariant::AliveWhileOwed,
                    t,
                    msg: w.finished,
                    detail: format!(
                        "the session ended ({}) while its job #{} (started at {} ms) {what}, and no timeout notice for it was reported",
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
