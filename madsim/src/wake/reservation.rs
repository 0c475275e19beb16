//! `madsim.reservation-timer`: the reference async wake coordinator for pi.
//!
//! G3's reservation (one wake prompt at a time) with what wakesim found missing in G3 and G4:
//!
//! - **Route** (G4). Idle (`ctx.isIdle()`): queue as `nextTurn`, which the next `prompt()` takes
//!   in step 12, and wake with `sendUserMessage(" ")` unless a prompt is already on its way. A run
//!   active (agent_start..agent_settled): steer into it. Busy without a run (compaction, /tree) or
//!   a stale ctx: hold, and look again on `session_compact`, `session_tree` and every
//!   `HOLD_RECHECK_MS` (G3's host path would start a run without the harness there, P-6).
//! - **Reservation.** A prompt that will take `nextTurn` is on its way: our wake prompt, or a user
//!   prompt seen at `input` (a wake would race it, P-9). It ends on `agent_start` (step 12 took
//!   the queue) and `session_start`. `before_agent_start` takes it (a prompt is about to start);
//!   a `session_compact` keeps a live one for `PROMPT_STEP_GRACE_MS` more (a prompt that
//!   compacted in step 9 reaches before_agent_start within a few awaits); a user's input typed
//!   while streaming holds it only that long (queued into the run at step 5, or on as a full
//!   prompt). Its expiry is a real timer (`tokio::time`), not a check at the next send: when it
//!   fires with content still owed, the prompt failed without a run (an input handler claimed
//!   it, auth threw) and the coordinator wakes again. G3 checks expiry lazily, so a failed wake
//!   strands what it was for (P-5).
//! - **A current view.** Every decision runs in one `Host::call_current`: `isIdle`, the route and
//!   the sends in one synchronous segment on the host, and only if the coordinator has taken
//!   every event the host posted. A coordinator task always lags the host by a few polls; acting
//!   on a stale view would, for instance, wake while a user prompt whose `input` event is still in
//!   the channel is being prepared.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use wakesim::family::pi::api::{Ctx, CustomMessage, Message, Pi, SendOptions};
use wakesim::sim::msg::Payload;

use crate::bridge::{Event, Events, Host};

/// How long a wake prompt may take to start a run before the coordinator wakes again. Above any
/// preparation without compaction (a compaction renews it), below the idle-latency bound.
pub const WAKE_RESERVATION_MS: u64 = 30_000;
/// A few awaits of `prompt()`: how long a reservation outlives a `session_compact` (the
/// compacting prompt reaches before_agent_start next), and how long a user's input typed while
/// streaming holds one (it is queued into the run at step 5, or goes on as a full prompt if the
/// run settled first).
pub const PROMPT_STEP_GRACE_MS: u64 = 2_000;
/// How often held content is looked at again.
pub const HOLD_RECHECK_MS: u64 = 1_000;

/// Where a flush sent the content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// Queued as nextTurn; `woke`: a wake prompt was sent.
    Idle {
        woke: bool,
    },
    Run,
    Hold,
}

struct Coordinator {
    host: Host,
    /// Decide only on a current view (`Host::call_current`); off in `madsim.reservation-stale-view`.
    current_view: bool,
    ctx: Option<Ctx>,
    /// agent_start..agent_settled, as the events tell it.
    run_active: bool,
    /// Producer messages not yet handed to the host, in arrival order.
    pending: VecDeque<Message>,
    /// Content queued as nextTurn that no prompt has taken yet.
    owed: bool,
    /// The reservation's expiry, while a prompt that will take nextTurn is on its way.
    reserved_until: Option<Instant>,
    /// When held content is looked at again.
    recheck_at: Option<Instant>,
}

pub async fn reservation_timer(host: Host, events: Events) {
    coordinate(host, events, true).await
}

/// The same coordinator deciding on whatever view it has (`Host::call`): the lag of a task behind
/// the host's events becomes a race that madsim's scheduler finds.
pub async fn reservation_stale_view(host: Host, events: Events) {
    coordinate(host, events, false).await
}

async fn coordinate(host: Host, mut events: Events, current_view: bool) {
    let mut c = Coordinator {
        host,
        current_view,
        ctx: None,
        run_active: false,
        pending: VecDeque::new(),
        owed: false,
        reserved_until: None,
        recheck_at: None,
    };
    loop {
        // The timers are real madsim timers; a far deadline stands in for "not armed" and the
        // branch is disabled then.
        let far = Instant::now() + Duration::from_secs(24 * 3600);
        let expiry = sleep_until(c.reserved_until.unwrap_or(far));
        let recheck = sleep_until(c.recheck_at.unwrap_or(far));
        tokio::select! {
            biased;
            ev = events.recv() => match ev {
                Some(ev) => c.observe(ev),
                None => return,
            },
            () = expiry, if c.reserved_until.is_some() => c.reserved_until = None,
            () = recheck, if c.recheck_at.is_some() => c.recheck_at = None,
        }
        c.flush(&events).await;
    }
}

impl Coordinator {
    fn reserve(&mut self) {
        self.reserved_until = Some(Instant::now() + Duration::from_millis(WAKE_RESERVATION_MS));
    }

    /// Hold the reservation for `ms` more at least, never shortening it.
    fn reserve_at_least(&mut self, ms: u64) {
        let after = Instant::now() + Duration::from_millis(ms);
        self.reserved_until = Some(self.reserved_until.map_or(after, |until| until.max(after)));
    }

    fn observe(&mut self, ev: Event) {
        match ev {
            Event::SessionStart(ctx) => {
                // The host dropped the old session's queues and what it appended but never
                // requested (documented loss, P-7); what is still pending here never reached
                // it and goes into the new session (forgetting it would be a loss).
                self.ctx = Some(ctx);
                self.run_active = false;
                self.owed = false;
                self.reserved_until = None;
                self.recheck_at = None;
            }
            Event::AgentStart(ctx) => {
                self.ctx = Some(ctx);
                self.run_active = true;
                // The prompt that started this run took nextTurn in step 12.
                self.owed = false;
                self.reserved_until = None;
            }
            Event::AgentSettled(_) => self.run_active = false,
            Event::Input(_, input) if input.from_user && input.streaming_behavior.is_none() => {
                // A user prompt is on its way: it will take nextTurn, and a wake now would race it.
                self.reserve();
            }
            Event::Input(_, input) if input.from_user => {
                // Typed while streaming: queued into the run at step 5, unless the run settles
                // first and it goes on as a full prompt. Cover the steps up to that point.
                self.reserve_at_least(PROMPT_STEP_GRACE_MS);
            }
            // A prompt reached before_agent_start: step 12 follows, and a wake now would race it.
            Event::BeforeAgentStart(_) if !self.run_active => self.reserve(),
            // The prompt we wait for may have compacted (step 9) for long: it goes on to
            // before_agent_start within a few awaits, so keep the reservation until then at
            // least. Only that long: a /compact without a prompt proves nothing.
            Event::SessionCompact(..) if self.reserved_until.is_some() => {
                self.reserve_at_least(PROMPT_STEP_GRACE_MS);
            }
            Event::Message(m) => self.pending.push_back(m),
            _ => {}
        }
    }

    /// Hand pending content to the host, and wake if content is owed and no prompt is on its way.
    async fn flush(&mut self, events: &Events) {
        let wake = self.owed && self.reserved_until.is_none();
        if self.pending.is_empty() && !wake {
            return;
        }
        let batch: Vec<Message> = self.pending.iter().copied().collect();
        let ctx = self.ctx;
        let run_active = self.run_active;
        let reserved = self.reserved_until.is_some();
        let decide = move |pi: &mut Pi<'_>| {
            let Some(ctx) = ctx else { return Route::Hold };
            match ctx.is_idle(pi) {
                Ok(true) => {
                    for m in &batch {
                        pi.send_message(CustomMessage::carrying(m.id), SendOptions::next_turn());
                    }
                    let woke = !reserved;
                    if woke {
                        pi.send_user_message(Payload::None, None);
                    }
                    Route::Idle { woke }
                }
                Ok(false) if run_active => {
                    for m in &batch {
                        pi.send_message(CustomMessage::carrying(m.id), SendOptions::steer());
                    }
                    Route::Run
                }
                // Busy without a run, or a stale ctx (the new session_start is coming).
                _ => Route::Hold,
            }
        };
        let route = if self.current_view {
            self.host.call_current(events, decide).await
        } else {
            Some(self.host.call(decide).await)
        };
        match route {
            // The host did something we have not taken yet: take it, then decide again.
            None => {}
            Some(Route::Idle { woke }) => {
                self.pending.clear();
                self.owed = true;
                if woke {
                    self.reserve();
                }
            }
            Some(Route::Run) => self.pending.clear(),
            Some(Route::Hold) if self.recheck_at.is_none() => {
                self.recheck_at = Some(Instant::now() + Duration::from_millis(HOLD_RECHECK_MS));
            }
            Some(Route::Hold) => {}
        }
    }
}
