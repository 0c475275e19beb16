//! BOUNDED-LATENCY: a message still owed must not wait more than `latency_ms_max` of virtual time
//! while the host is idle (nothing running, preparing, compacting or settling: nothing else will
//! move it), and must ride one of the next `latency_requests_max` model requests while the host
//! keeps working. Idle time is summed lazily at each idle→busy edge and at the end, and the
//! violation is dated at the instant the bound was crossed.

use super::{Checker, Invariant, View, Violation};
use crate::sim::msg::MsgId;
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct Latency {
    idle_since: Option<Ms>,
    /// Per message: idle milliseconds waited so far, and requests that went without it.
    idle_ms: Vec<u64>,
    requests: Vec<u32>,
    fired: bool,
}

impl Latency {
    fn slot(&mut self, id: MsgId) -> usize {
        let i = id.0 as usize;
        if self.idle_ms.len() <= i {
            self.idle_ms.resize(i + 1, 0);
            self.requests.resize(i + 1, 0);
        }
        i
    }

    /// Add the idle stretch `[since, until)` to every owed message; report the earliest crossing.
    fn close_idle(
        &mut self,
        since: Ms,
        until: Option<Ms>,
        view: &View<'_>,
        out: &mut Vec<Violation>,
    ) {
        let max = view.params.latency_ms_max;
        let mut worst: Option<(Ms, MsgId, u64)> = None;
        for &id in view.ledger.owed() {
            let produced = view.messages[id.0 as usize].produced_at;
            let start = since.max(produced);
            let i = self.slot(id);
            let before = self.idle_ms[i];
            let crossing = start + max.saturating_sub(before);
            let waited = match until {
                Some(end) => end.saturating_sub(start).0,
                None => u64::MAX,
            };
            self.idle_ms[i] = before.saturating_add(waited);
            if self.idle_ms[i] > max && worst.is_none_or(|(t, _, _)| crossing < t) {
                worst = Some((crossing, id, before));
            }
        }
        if let Some((t, id, before)) = worst {
            self.report(
                t,
                id,
                format_idle(id, before, max, until.is_none(), view),
                out,
            );
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
    fn invariant(&self) -> Invariant {
        Invariant::BoundedLatency
    }

    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, view: &View<'_>, out: &mut Vec<Violation>) {
        if self.fired {
            return;
        }
        match *ev {
            Ev::Idle { idle: true } => self.idle_since = Some(t),
            Ev::Idle { idle: false } => {
                if let Some(since) = self.idle_since.take() {
                    self.close_idle(since, Some(t), view, out);
                }
            }
            Ev::Request { req, .. } => {
                let max = view.params.latency_requests_max;
                let carried = view.ledger.unrequested();
                for &id in view.ledger.owed() {
                    if carried.contains(&id) {
                        continue;
                    }
                    let i = self.slot(id);
                    self.requests[i] += 1;
                    if self.requests[i] > max {
                        let info = &view.messages[id.0 as usize];
                        let detail = format!(
                            "{id} ({}) missed {} model requests in a row (latency_requests_max = {max}); request #{req} went without it",
                            info.source_name(),
                            self.requests[i]
                        );
                        self.report(t, id, detail, out);
                        return;
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
