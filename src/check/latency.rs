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
    const READS: u32 = reads(&[EvKind::Produced, EvKind::Idle, EvKind::Request]);

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
