//! BOUNDED-LATENCY: a message still owed must not wait more than `latency_ms_max` of virtual time
//! while the host is idle (nothing running, preparing, compacting or settling: nothing else will
//! move it), and must ride one of the next `latency_requests_max` model requests while the host
//! keeps working. The violation is dated at the instant the bound was crossed.
//!
//! Incremental, with no scan of the owed messages: the checker keeps running totals (idle time
//! so far, model requests so far) and, per message, the totals when it was produced. A message's
//! idle wait is the idle time since its production and its missed requests the requests since
//! then (a request that carries a message delivers it, so an owed message missed every one).
//! Both only shrink along the owed list (production order), so the first owed message is the one
//! that crosses a bound first, and the only one to look at.
//!
//! A documented drop excuses a message's loss, not its wait: at its `Dropped` record the idle
//! time it waited so far is judged too (a wake logic that strands a message in pi's nextTurn
//! past the bound is not saved by a `/new` that discards it afterwards).

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::msg::MsgId;
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct Latency {
    /// The start of the idle stretch in progress.
    idle_since: Option<Ms>,
    /// Idle milliseconds of the stretches closed so far.
    idle_closed: u64,
    /// Model requests so far.
    requests: u32,
    /// Per message, by id: the idle milliseconds and the model requests there had been when it
    /// was produced.
    idle_at: Vec<u64>,
    requests_at: Vec<u32>,
    fired: bool,
}

impl Latency {
    /// Close the idle stretch `[since, until)` (`None`: it never ends); report the first owed
    /// message if its idle wait crossed the bound.
    fn close_idle(
        &mut self,
        since: Ms,
        until: Option<Ms>,
        view: &View<'_>,
        out: &mut Vec<Violation>,
    ) {
        let max = view.params.latency_ms_max;
        if let Some(&id) = view.ledger.owed().first() {
            let produced = view.messages[id.0 as usize].produced_at;
            let start = since.max(produced);
            // Idle time it waited in earlier stretches (none if it came during this one).
            let before = if produced < since {
                self.idle_closed - self.idle_at[id.0 as usize]
            } else {
                0
            };
            let waited = match until {
                Some(end) => end.saturating_sub(start).0,
                None => u64::MAX,
            };
            if before.saturating_add(waited) > max {
                let crossing = start + max.saturating_sub(before);
                let detail = format_idle(id, before, max, until.is_none(), view);
                self.report(crossing, id, detail, out);
            }
        }
        if let Some(end) = until {
            self.idle_closed += end.saturating_sub(since).0;
        }
    }

    /// Message `id` leaves the owed list at `t` by a documented drop: judge the idle time it
    /// waited up to the drop.
    fn judge_drop(
        &mut self,
        t: Ms,
        id: MsgId,
        why: &str,
        view: &View<'_>,
        out: &mut Vec<Violation>,
    ) {
        let owed = view.ledger.get(id);
        if owed.delivered_at.is_some() || owed.dropped.is_some() {
            return;
        }
        let open = self.idle_since.map_or(0, |since| t.saturating_sub(since).0);
        let waited = (self.idle_closed + open).saturating_sub(self.idle_at[id.0 as usize]);
        let max = view.params.latency_ms_max;
        if waited <= max {
            return;
        }
        // Crossed in the idle stretch still open (else when the stretch it crossed in closed,
        // which only a message behind an earlier owed one can leave unreported).
        let crossing = match self.idle_since {
            Some(since) if waited - max <= t.saturating_sub(since).0 => Ms(t.0 - (waited - max)),
            _ => t,
        };
        let info = &view.messages[id.0 as usize];
        let detail = format!(
            "{id} ({}) waited {waited} ms while the host sat idle, past latency_ms_max = {max} ms, before it was dropped at {} ms ({why})",
            info.source_name(),
            t.0
        );
        self.report(crossing, id, detail, out);
    }

    fn report(&mut self, t: Ms, id: MsgId, detail: String, out: &mut Vec<Violation>) {
        if !self.fired {
            self.fired = true;
            out.push(Violation {
                invariant: Invariant::BoundedLatency,
                t,
                msg: Some(id),
                detail,
            });
        }
    }
}

fn format_idle(id: MsgId, before: u64, max: u64, forever: bool, view: &View<'_>) -> String {
    let info = &view.messages[id.0 as usize];
    let where_ = match view.ledger.get(id).appended_at {
        Some(_) => "appended but not in any request",
        None => "not delivered",
    };
    let tail = if forever {
        "and nothing left in the run would deliver it"
    } else {
        "before anything moved it"
    };
    let earlier = if before > 0 {
        format!(" (after {before} ms of earlier idle waits)")
    } else {
        String::new()
    };
    format!(
        "{id} ({}) {where_}: the host sat idle past latency_ms_max = {max} ms{earlier} {tail}",
        info.source_name()
    )
}

impl Checker for Latency {
    const READS: u32 = reads(&[
        EvKind::Produced,
        EvKind::Idle,
        EvKind::Request,
        EvKind::Dropped,
    ]);

    fn invariant(&self) -> Invariant {
        Invariant::BoundedLatency
    }

    fn reset(&mut self) {
        self.idle_since = None;
        self.idle_closed = 0;
        self.requests = 0;
        self.idle_at.clear();
        self.requests_at.clear();
        self.fired = false;
    }

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, view: &View<'_>, out: &mut Vec<Violation>) {
        if self.fired {
            return;
        }
        match *ev {
            Ev::Produced { msg } => {
                // Ids are dense and in production order.
                assert_eq!(msg.0 as usize, self.idle_at.len(), "message ids are dense");
                let open = self.idle_since.map_or(0, |since| t.saturating_sub(since).0);
                self.idle_at.push(self.idle_closed + open);
                self.requests_at.push(self.requests);
            }
            // A host reports each edge of its idleness once; an idle stretch runs to the next
            // busy edge.
            Ev::Idle { idle: true } if self.idle_since.is_none() => self.idle_since = Some(t),
            Ev::Idle { idle: false } => {
                if let Some(since) = self.idle_since.take() {
                    self.close_idle(since, Some(t), view, out);
                }
            }
            Ev::Dropped { msg, reason } => self.judge_drop(t, msg, reason.text, view, out),
            Ev::Request { req, .. } => {
                self.requests += 1;
                let max = view.params.latency_requests_max;
                let carried = view.ledger.unrequested();
                // The first owed message this request does not carry missed the most requests.
                let missing = view.ledger.owed().iter().find(|id| !carried.contains(id));
                if let Some(&id) = missing {
                    let missed = self.requests - self.requests_at[id.0 as usize];
                    if missed > max {
                        let info = &view.messages[id.0 as usize];
                        let detail = format!(
                            "{id} ({}) missed {missed} model requests in a row (latency_requests_max = {max}); request #{req} went without it",
                            info.source_name(),
                        );
                        self.report(t, id, detail, out);
                    }
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, _t: Ms, view: &View<'_>, out: &mut Vec<Violation>) {
        if self.fired {
            return;
        }
        // Nothing is left to run: an idle host stays idle forever.
        if let Some(since) = self.idle_since.take() {
            self.close_idle(since, None, view, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testkit::feed;
    use crate::check::{CheckParams, Invariant};
    use crate::sim::record::Reason;

    const REPLACED: Reason = Reason::new(0, "session replaced");

    /// m1 produced at 0 while the host is idle, queued (nothing moves it), dropped at `drop_at`
    /// while the host is still idle; then the host works and idles to the end.
    fn stranded_then_dropped(drop_at: u64) -> Vec<(u64, Ev<()>)> {
        let m1 = MsgId(0);
        vec![
            (0, Ev::Idle { idle: true }),
            (0, Ev::Produced { msg: m1 }),
            (
                drop_at,
                Ev::Dropped {
                    msg: m1,
                    reason: REPLACED,
                },
            ),
            (drop_at, Ev::Idle { idle: false }),
            (drop_at + 10, Ev::Idle { idle: true }),
        ]
    }

    fn params(ms: u64) -> CheckParams {
        CheckParams {
            latency_ms_max: ms,
            ..CheckParams::default()
        }
    }

    #[test]
    fn a_message_stranded_past_the_bound_fails_although_a_drop_excuses_its_loss() {
        let out = feed(
            &mut Latency::default(),
            params(1_000),
            &stranded_then_dropped(1_500),
            9_000,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].invariant, Invariant::BoundedLatency);
        assert_eq!(out[0].t, Ms(1_000), "dated when the bound was crossed");
        assert_eq!(out[0].msg, Some(MsgId(0)));
        assert!(
            out[0].detail.contains("waited 1500 ms"),
            "{}",
            out[0].detail
        );
        assert!(
            out[0].detail.contains("session replaced"),
            "{}",
            out[0].detail
        );
    }

    #[test]
    fn a_message_dropped_within_the_bound_is_excused() {
        let out = feed(
            &mut Latency::default(),
            params(1_000),
            &stranded_then_dropped(900),
            9_000,
        );
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn idle_waits_before_the_drop_add_up_across_stretches() {
        // 600 ms idle, busy 5 s (no request carries it), 600 ms idle, dropped: 1,200 ms idle.
        let m1 = MsgId(0);
        let events = vec![
            (0, Ev::Idle { idle: true }),
            (0, Ev::Produced { msg: m1 }),
            (600, Ev::Idle { idle: false }),
            (5_600, Ev::Idle { idle: true }),
            (
                6_200,
                Ev::Dropped {
                    msg: m1,
                    reason: REPLACED,
                },
            ),
        ];
        let out = feed(&mut Latency::default(), params(1_000), &events, 9_000);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].t, Ms(6_000));
        // A message delivered before the drop record is not judged by it.
        let mut delivered = events.clone();
        delivered.insert(3, (5_000, Ev::Appended { msg: m1 }));
        delivered.insert(
            4,
            (
                5_000,
                Ev::Request {
                    req: 1,
                    harness: false,
                },
            ),
        );
        let out = feed(&mut Latency::default(), params(1_000), &delivered, 9_000);
        assert!(out.is_empty(), "{out:?}");
    }
}
