//! BOUNDARY-FLUSH (issue 15, class 1; `mutants/teeth-plan.md` 3.4): a message owed when pi reports
//! that a `/tree` or a `/compact` ended (`session_tree`, `session_compact`: the `Boundary`
//! observation) waits at most `boundary_ms_max` of idle time after that event.
//!
//! BOUNDED-LATENCY sums a message's idle waits over the run, and must admit what no event
//! announces: content held over a `/tree` that is cancelled (pi emits nothing) waits for the
//! wake logic's next hold re-check (G4's T2: every `HOLD_RECHECK_MS`). A `/tree` or a compaction
//! that ends does announce itself, and a wake logic holding content over it has its event to send
//! it at once; waiting for the next re-check instead is the same wait a cancelled `/tree` costs,
//! which the per-run sum cannot tell apart. This bound is per boundary: from the event, while
//! the host stays idle, until it next becomes busy (a wake prompt preparing, a run) or what was
//! owed is gone.
//!
//! The bound is the scenario's (`[check] boundary_ms_max`): only a scenario whose wake logic
//! claims to flush at these events and that has nothing else the logic may rightly wait for
//! (a user prompt it expects holds a wake back for a whole window, pi's `PARENT_WAKE_GRACE_MS`)
//! sets it; without it nothing is judged. A boundary while the host is busy (a prompt's own
//! step-9 compaction) starts no idle wait: the prompt goes on.

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::msg::MsgId;
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct BoundaryFlush {
    /// The host is idle, since when.
    idle_since: Option<Ms>,
    /// The boundary whose idle wait is being judged: when, which, and the first message owed
    /// then.
    pending: Option<(Ms, bool, MsgId)>,
}

impl BoundaryFlush {
    /// The idle wait after the pending boundary ends at `until` (`None`: never, the run is
    /// over): report it if it crossed the bound while its message was still owed.
    fn close(&mut self, until: Option<Ms>, view: &View<'_>, out: &mut Vec<Violation>) {
        let Some((at, tree, id)) = self.pending.take() else {
            return;
        };
        let (Some(max), Some(since)) = (view.params.boundary_ms_max, self.idle_since) else {
            return;
        };
        let l = view.ledger.get(id);
        if l.delivered_at.is_some() || l.dropped.is_some() {
            return;
        }
        let start = since.max(at);
        let waited = match until {
            Some(end) => end.saturating_sub(start).0,
            None => u64::MAX,
        };
        if waited <= max {
            return;
        }
        let event = if tree {
            "session_tree (a /tree ended)"
        } else {
            "session_compact (a /compact ended)"
        };
        let how_long = match until {
            Some(_) => format!("{waited} ms"),
            None => "to the end of the run".to_string(),
        };
        let info = &view.messages[id.0 as usize];
        out.push(Violation {
            invariant: Invariant::BoundaryFlush,
            t: start + max,
            msg: Some(id),
            detail: format!(
                "{id} ({}) was owed when pi reported {event} at {} ms, and the host then sat idle {how_long} before anything moved it (boundary_ms_max = {max} ms): held content waited past the event that announced the host free",
                info.source_name(),
                at.0
            ),
        });
    }
}

impl Checker for BoundaryFlush {
    const READS: u32 = reads(&[EvKind::Boundary, EvKind::Idle]);

    fn invariant(&self) -> Invariant {
        Invariant::BoundaryFlush
    }

    fn reset(&mut self) {
        self.idle_since = None;
        self.pending = None;
    }

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, view: &View<'_>, out: &mut Vec<Violation>) {
        match *ev {
            Ev::Boundary { tree } => {
                if view.params.boundary_ms_max.is_none() || self.pending.is_some() {
                    return;
                }
                if let Some(&id) = view.ledger.owed().first() {
                    self.pending = Some((t, tree, id));
                }
            }
            Ev::Idle { idle: true } => {
                // A host busy at the boundary that becomes idle only later (a prompt that went
                // on after its own compaction, and its run) is idle on another occasion: pi
                // reports the host free at the event's instant, not after.
                if self.pending.is_some_and(|(at, ..)| at < t) && self.idle_since.is_none() {
                    self.pending = None;
                }
                self.idle_since.get_or_insert(t);
            }
            Ev::Idle { idle: false } => {
                // The host is busy again: the idle wait after the boundary (if the host was idle
                // at all since it) is over.
                self.close(Some(t), view, out);
                self.idle_since = None;
            }
            _ => {}
        }
    }

    fn finish(&mut self, _t: Ms, view: &View<'_>, out: &mut Vec<Violation>) {
        // Nothing is left to run: an idle host stays idle.
        self.close(None, view, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testkit::feed;
    use crate::check::{CheckParams, Invariant};

    fn params(max: Option<u64>) -> CheckParams {
        CheckParams {
            boundary_ms_max: max,
            ..CheckParams::default()
        }
    }

    /// m1 produced while a /tree runs (busy), held by the wake logic; the /tree ends at 5,000 ms
    /// (the host idle, `session_tree`) and the held message goes `sent_after` ms later (the host
    /// busy with the wake prompt, then the request that carries it).
    fn held_over_tree(sent_after: u64) -> Vec<(u64, Ev<()>)> {
        let m1 = MsgId(0);
        let sent = 5_000 + sent_after;
        vec![
            (0, Ev::Idle { idle: true }),
            (1_000, Ev::Idle { idle: false }),
            (2_000, Ev::Produced { msg: m1 }),
            (5_000, Ev::Idle { idle: true }),
            (5_000, Ev::Boundary { tree: true }),
            (sent, Ev::Appended { msg: m1 }),
            (sent, Ev::Idle { idle: false }),
            (
                sent + 40,
                Ev::Request {
                    req: 1,
                    harness: true,
                },
            ),
            (sent + 900, Ev::Idle { idle: true }),
        ]
    }

    #[test]
    fn content_sent_at_the_next_recheck_instead_of_the_event_fires() {
        // Sent at the next 1 s hold re-check: 700 ms after session_tree.
        let out = feed(
            &mut BoundaryFlush::default(),
            params(Some(0)),
            &held_over_tree(700),
            20_000,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].invariant, Invariant::BoundaryFlush);
        assert_eq!(out[0].msg, Some(MsgId(0)));
        assert_eq!(out[0].t, Ms(5_000), "dated when the bound was crossed");
        assert!(out[0].detail.contains("idle 700 ms"), "{}", out[0].detail);
        assert!(out[0].detail.contains("session_tree"), "{}", out[0].detail);
    }

    #[test]
    fn content_never_sent_after_the_event_fires_at_the_end() {
        let m1 = MsgId(0);
        let events = vec![
            (0, Ev::Idle { idle: true }),
            (1_000, Ev::Idle { idle: false }),
            (2_000, Ev::Produced { msg: m1 }),
            (5_000, Ev::Boundary { tree: false }),
            (5_000, Ev::Idle { idle: true }),
        ];
        let out = feed(
            &mut BoundaryFlush::default(),
            params(Some(100)),
            &events,
            60_000,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].t, Ms(5_100));
        assert!(
            out[0].detail.contains("end of the run"),
            "{}",
            out[0].detail
        );
        assert!(
            out[0].detail.contains("session_compact"),
            "{}",
            out[0].detail
        );
    }

    #[test]
    fn content_sent_at_the_event_or_no_bound_or_nothing_owed_passes() {
        let judge = |events: &[(u64, Ev<()>)], max| {
            feed(&mut BoundaryFlush::default(), params(max), events, 20_000)
        };
        // Sent at the event itself.
        assert!(judge(&held_over_tree(0), Some(0)).is_empty());
        // Within a looser bound.
        assert!(judge(&held_over_tree(700), Some(1_000)).is_empty());
        // A scenario that sets no bound judges nothing.
        assert!(judge(&held_over_tree(700), None).is_empty());
        // Nothing owed at the event: a message produced after it is not its business.
        let m1 = MsgId(0);
        let later = vec![
            (0, Ev::Idle { idle: true }),
            (1_000, Ev::Idle { idle: false }),
            (5_000, Ev::Idle { idle: true }),
            (5_000, Ev::Boundary { tree: true }),
            (6_000, Ev::Produced { msg: m1 }),
            (9_000, Ev::Idle { idle: false }),
        ];
        assert!(judge(&later, Some(0)).is_empty());
        // A boundary inside a busy stretch (a prompt's own compaction): the prompt goes on, and
        // idle time after that busy stretch is another occasion's (BOUNDED-LATENCY's).
        let busy = vec![
            (0, Ev::Idle { idle: true }),
            (1_000, Ev::Produced { msg: m1 }),
            (1_000, Ev::Idle { idle: false }),
            (3_000, Ev::Boundary { tree: false }),
            (4_000, Ev::Idle { idle: true }),
            (9_000, Ev::Idle { idle: false }),
            (9_100, Ev::Appended { msg: m1 }),
            (
                9_100,
                Ev::Request {
                    req: 1,
                    harness: true,
                },
            ),
        ];
        assert!(judge(&busy, Some(0)).is_empty());
    }
}
