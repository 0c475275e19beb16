//! Unit tests of checkers on hand-built event sequences: `feed` plays observations into one
//! checker and the ledger in the monitor's order (the checker sees the ledger as it stood before
//! each record), registering a message at its `Produced`, then ends the run.

use super::{CheckParams, Checker, Ledger, View, Violation};
use crate::sim::msg::{MsgId, MsgInfo, MsgKind, SenderNames};
use crate::sim::record::Ev;
use crate::sim::time::Ms;

/// A message of the first sender (a completion) produced at `t`, in the conversation under
/// test, named plainly (checkers name no family).
pub(super) fn info(id: MsgId, t: Ms) -> MsgInfo {
    MsgInfo {
        id,
        kind: MsgKind::Completion,
        source: 0,
        origin: 0,
        conv: 0,
        stream: None,
        produced_at: t,
        names: SenderNames::PLAIN,
    }
}

/// Play `events` (virtual time in ms, observation) into `c`, then end the run at `end`: every
/// violation it reports.
pub(super) fn feed<C: Checker>(
    c: &mut C,
    params: CheckParams,
    events: &[(u64, Ev<()>)],
    end: u64,
) -> Vec<Violation> {
    feed_messages(c, params, events, end, info)
}

/// `feed`, with each message's `MsgInfo` made by `make` (its source, conversation ...).
pub(super) fn feed_messages<C: Checker>(
    c: &mut C,
    params: CheckParams,
    events: &[(u64, Ev<()>)],
    end: u64,
    make: impl Fn(MsgId, Ms) -> MsgInfo,
) -> Vec<Violation> {
    let mut messages = Vec::new();
    let mut ledger = Ledger::default();
    let mut out = Vec::new();
    for (t, ev) in events {
        let t = Ms(*t);
        if let Ev::Produced { msg } = *ev {
            messages.push(make(msg, t));
        }
        if C::READS & (1 << ev.kind() as u32) != 0 {
            let view = View {
                messages: &messages,
                ledger: &ledger,
                params: &params,
            };
            c.observe(t, ev, &view, &mut out);
        }
        ledger.apply(t, ev, &messages);
    }
    let view = View {
        messages: &messages,
        ledger: &ledger,
        params: &params,
    };
    c.finish(Ms(end), &view, &mut out);
    out
}
