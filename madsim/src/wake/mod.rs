//! Async wake logics for pi, written against tokio's API (`tokio::spawn`, `tokio::time`,
//! `tokio::sync`, `tokio::select!`), which madsim-tokio maps onto madsim under `--cfg madsim`.
//!
//! | name | design | verdict |
//! |---|---|---|
//! | `madsim.is-idle` | G2 as a coordinator task: ask `isIdle`, then wake with `nextTurn` + `sendUserMessage(" ")`; no reservation | caught: two wakes race to `Agent.prompt` (`single-starter`) |
//! | `madsim.reservation-timer` | the reference design: one wake prompt at a time under a reservation that a real timer expires, route/hold, decisions on a current view only | passes with every fault on |
//! | `madsim.reservation-stale-view` | the reference design deciding with `Host::call`, on whatever view it has | caught: a same-instant user prompt's `input` is still in the channel (`single-starter`) |
//!
//! Two rules every async logic run here must follow, or its runs stop being a function of the
//! seed (this lane's determinism tests catch a breach; madsim's own check would not, as it only
//! compares its random draws and its clock):
//! - `tokio::select!` must be `biased;`: its default random branch order draws from a
//!   thread-local generator that the operating system seeds, not madsim;
//! - no `HashMap`/`HashSet` iteration whose order reaches the host: their keys are seeded the same
//!   way.

mod is_idle;
mod reservation;

pub use is_idle::is_idle;
pub use reservation::{
    HOLD_RECHECK_MS, PROMPT_STEP_GRACE_MS, WAKE_RESERVATION_MS, reservation_stale_view,
    reservation_timer,
};

use crate::bridge::{Events, Host, WakeFuture};

/// An async wake logic: a name for scenario files and how to start its root task.
#[derive(Clone, Copy)]
pub struct AsyncWake {
    pub name: &'static str,
    /// One line: the design, and the bug if it has one.
    pub summary: &'static str,
    /// Constants of the logic (ms); the host's delay draws are biased toward them.
    pub constants_ms: &'static [u64],
    /// The kernel lane's wake logic of the same design, for side-by-side figures.
    pub kernel_counterpart: &'static str,
    /// Start the root task. It owns `events`, may clone `host` into tasks it spawns, and may
    /// return when it has nothing more to do.
    pub start: fn(Host, Events) -> WakeFuture,
}

/// The built-in async wake logics.
pub fn builtin() -> Vec<AsyncWake> {
    vec![
        AsyncWake {
            name: "madsim.is-idle",
            summary: "G2 as a tokio coordinator: ask ctx.isIdle(), then nextTurn + sendUserMessage(\" \"); no reservation, so two wakes race",
            constants_ms: &[],
            kernel_counterpart: "pi.is-idle",
            start: |host, events| Box::pin(is_idle(host, events)),
        },
        AsyncWake {
            name: "madsim.reservation-timer",
            summary: "reference: one wake prompt at a time under a reservation a real timer expires (re-waking what is still owed); route/hold; acts on a current view only",
            constants_ms: &[WAKE_RESERVATION_MS, HOLD_RECHECK_MS, PROMPT_STEP_GRACE_MS],
            kernel_counterpart: "pi.gentle-fixed",
            start: |host, events| Box::pin(reservation_timer(host, events)),
        },
        AsyncWake {
            name: "madsim.reservation-stale-view",
            summary: "the reference coordinator deciding on a view that may miss events still in its channel",
            constants_ms: &[WAKE_RESERVATION_MS, HOLD_RECHECK_MS, PROMPT_STEP_GRACE_MS],
            kernel_counterpart: "pi.gentle-fixed",
            start: |host, events| Box::pin(reservation_stale_view(host, events)),
        },
    ]
}
