//! G4: the upstream design (Gentleman-Programming/gentle-shell `extensions/gentle-agents.ts`,
//! #1631, hardened by T1-T3 in #1639/#1640; read at BGamboa13/gentle-shell @187446a1).
//!
//! - `route()`: idle when `ctx.isIdle()`; `run` while a run is active (agent_start..agent_settled);
//!   `hold` when busy without a run (compaction, /tree). Held content stays queued.
//! - Idle route: store the message with `triggerTurn: false` (appended, no turn) and owe a wake.
//!   All wakes of one synchronous pass coalesce into one microtask dispatch; the wake never
//!   repeats the content, it starts a turn through `prompt()` so before_agent_start runs.
//! - A prompt-start window (`PARENT_WAKE_GRACE_MS`) opens at dispatch and at before_agent_start
//!   and closes on agent_start, agent_settled and session_start; when it expires the wake is
//!   requested again, so a wake prompt that failed without a run is retried.
//! - T2: while anything is held, re-check the route every `HOLD_RECHECK_MS`; flush after
//!   `session_tree` (a cancelled /tree emits nothing, hence the re-check).
//! - T3: a user prompt seen at `input` opens the start window for `INPUT_PROMPT_GRACE_MS`, so a
//!   wake does not race a user prompt parked in its pre-run phase (P-9).
//!
//! What wakesim found in G4, and the fixes `Gentle::fixed` (`pi.gentle-fixed`) applies:
//! 1. `dispatch` clears `wakeOwed` when it sends the wake, and the start window's expiry only
//!    re-requests a wake that is still owed. A wake prompt that fails without a run (an input
//!    handler claims it, auth throws: pi reports both on the error channel only) leaves the stored
//!    content in the session and in no request until some later prompt or message (scenario
//!    `g4-failed-wake-prompt-strands`). Fix: when the window of our own wake prompt expires with
//!    no run started, owe the wake again.
//! 2. T3's input window (2 s) can expire before the user's prompt reaches before_agent_start,
//!    for instance while it compacts at step 9. Content held during the compaction is flushed on
//!    `session_compact`, the route reads idle (the prompt is still preparing), and the wake races
//!    the user's prompt to `Agent.prompt` (scenario `g4-user-prompt-compaction-race`). Fix: a
//!    `session_compact` while a user prompt is between `input` and before_agent_start reopens
//!    the input window (never shortening a longer one).
//!    Likewise a second user prompt within 2 s of one that died at input does not extend the
//!    first one's window (T3 never touches an open window), so the wake races the second. And a
//!    user's steer typed while streaming becomes a full prompt when the run settles before its
//!    step 5; T3 ignores inputs with a streamingBehavior (`g4-user-prompt-deferred-while-
//!    settling`, seed 251746 of `g4-held-orchestrator-overtaken`). See fix 5 for both.
//! 3. An orchestrator message that arrives while older ones are held (a /tree cancelled with no
//!    event, before the hold re-check) is sent at once and overtakes them (scenario
//!    `g4-held-orchestrator-overtaken`). Fix: queue it behind the held ones and flush in order.
//! 4. A user prompt typed while the agent_settled handlers run is deferred (step 0) and reaches
//!    `input` only after them; a message arriving in the same window reads the host idle, and the
//!    wake prompt it sends is deferred behind the user's. Both resume together and race to
//!    Agent.prompt (scenario `g4-user-prompt-deferred-while-settling`; the user-prompt generator
//!    lets a user type only while no prompt is in flight, so the user's came first and the
//!    wake could not see it). Fix: our own wake prompt withdraws itself at `input` (claims it)
//!    while a user prompt is between `input` and before_agent_start and still within its window;
//!    the stored content rides the user's run, and the wake is owed again if that run never
//!    starts.
//! 5. T3's 2 s assume a user prompt reaches before_agent_start within 2 s of `input`. Its awaits
//!    (input handlers, auth, the compaction check) may take longer, and the wake races it
//!    (scenario `g4-slow-user-prompt-outlasts-t3`). Fix: a user prompt seen at `input` holds the
//!    start window as long as our own wake prompt would (`PARENT_WAKE_GRACE_MS`, closed at its
//!    before_agent_start or agent_start), never shortening an open one; pi reports a prompt that
//!    dies at input or auth to nobody, so one that does costs a wake one window. A steer typed
//!    while streaming is expected for 2 s (its input handlers, then step 5 queues it); if the run
//!    settles within them it may go on as a prompt, and is then expected as one: a wake after
//!    such a run may wait a window for nothing, but never races it.
//! 6. A prompt's step-9 compaction may outlast any window, our own wake prompt's 30 s too; fix 1
//!    then owes the wake again and, when the compaction ends, sends it to race the prompt that
//!    is still alive (scenario `g4-fixed-long-compaction`). Fix: a window that expires while the
//!    host is busy without a run, with our wake or a user prompt pending, stays open (re-checked
//!    every second), and session_compact reopens it for that prompt too (fix 2 for our own).
//!
//! 7. At session_start G4 clears its own queues: content that arrived while the old ctx was stale
//!    (or was held over a compaction or /tree) never reached pi, so no documented drop covers it
//!    (pi discards only its own queues and what the old session appended but never requested);
//!    it is lost (scenario `g4-session-replacement-drops-documented`). Fix: keep what is held and
//!    flush it into the new session (scenario `g4-fixed-session-replacement-delivers`).
//!
//! 8. pi runs the prompts deferred during the agent_settled handlers one after another, each to
//!    its end (`_emitAgentSettled`). A wake prompt deferred behind a user's prompt (fix 4's case)
//!    therefore reaches `input` only after the user's run, which carried the stored content, has
//!    settled: its own run delivers nothing (no-wasted-wake; `g4-fixed-user-prompt-races`,
//!    `g4-fixed-withdrawn-wake-owed-again`; on the real pi 0.99.1,
//!    `scenarios/real-pi/g4-fixed-deferred-wake-after-user-run.toml`). Fix: our own wake prompt
//!    that reaches `input` after a run has started since it was sent, with nothing stored since
//!    that run started, claims itself at `input` (nothing is owed, so no turn).
//!
//! Modelled on the claude-bridge path (the wake is `sendUserMessage(text, steer)`), the one whose
//! requests must carry the harness. Sends in the model never throw synchronously, so the
//! delivery-retry timer of the real file (armed only on a synchronous throw) is not needed.

use std::collections::VecDeque;

use crate::family::pi::api::{
    CompactOutcome, Ctx, CustomMessage, DeliverAs, InputAction, InputEvent, Message, Pi, PiWake,
    SendOptions, StaleCtx, TimerId,
};
use crate::sim::msg::{MsgId, MsgKind, Payload};
use crate::sim::time::Ms;

pub const PARENT_WAKE_GRACE_MS: u64 = 30_000;
pub const HOLD_RECHECK_MS: u64 = 1_000;
pub const INPUT_PROMPT_GRACE_MS: u64 = 2_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Idle,
    Run,
    Hold,
}

pub struct Gentle {
    t2: bool,
    t3: bool,
    /// wakesim's proposed fixes: a start window that expires without a run re-owes the wake, and
    /// the end of a compaction inside a user prompt's preparation reopens the input window.
    fixed: bool,
    /// Our own wake prompt is out and no run has started since.
    wake_in_flight: bool,
    /// A user prompt passed `input` and has not reached before_agent_start yet.
    user_prompt_pending: bool,
    /// Until when that user prompt is expected to reach before_agent_start (the input window's
    /// own bound); past it the prompt is presumed dead (claimed at input, failed at auth).
    user_prompt_until: Option<Ms>,
    /// That user input was a steer typed while streaming: the agent_start of the run it was
    /// typed into is not its own, and agent_settled decides whether it goes on as a prompt.
    user_prompt_steer: bool,
    /// When the open start window closes.
    window_until: Option<Ms>,
    active_runs: u32,
    parent_run_active: bool,
    wake_owed: bool,
    /// Content was stored (sent without a turn) since the last run started: the next run's
    /// request carries it, and until then a wake prompt has something to deliver.
    stored_since_run: bool,
    wake_queued: bool,
    prompt_starting: bool,
    parent_ctx: Option<Ctx>,
    completions: VecDeque<MsgId>,
    messages: VecDeque<MsgId>,
    held_orchestrator: Vec<MsgId>,
    completions_maybe_pending: bool,
    prompt_grace: Option<TimerId>,
    dispatch_task: Option<TimerId>,
    boundary_flush: Option<TimerId>,
    hold_recheck: Option<TimerId>,
    /// How many wake prompts this load has sent: the wake text names it, as gentle-agents' own
    /// `[gentle-agents wake N]` does, so the built-in and the TypeScript twin show one timeline.
    wake_nonce: u32,
}

impl Gentle {
    pub fn new(t2: bool, t3: bool) -> Gentle {
        Gentle {
            t2,
            t3,
            fixed: false,
            wake_in_flight: false,
            user_prompt_pending: false,
            user_prompt_until: None,
            user_prompt_steer: false,
            active_runs: 0,
            parent_run_active: false,
            wake_owed: false,
            stored_since_run: false,
            wake_queued: false,
            prompt_starting: false,
            window_until: None,
            parent_ctx: None,
            completions: VecDeque::new(),
            messages: VecDeque::new(),
            held_orchestrator: Vec::new(),
            completions_maybe_pending: false,
            prompt_grace: None,
            dispatch_task: None,
            boundary_flush: None,
            hold_recheck: None,
            wake_nonce: 0,
        }
    }

    fn route(&mut self, pi: &mut Pi<'_>) -> Result<Route, StaleCtx> {
        let ctx = self.parent_ctx.ok_or(StaleCtx)?;
        if ctx.is_idle(pi)? {
            self.parent_run_active = false;
            Ok(Route::Idle)
        } else if self.parent_run_active {
            Ok(Route::Run)
        } else {
            Ok(Route::Hold)
        }
    }

    /// G4 with wakesim's two fixes (see the module docs).
    pub fn fixed() -> Gentle {
        Gentle {
            fixed: true,
            ..Gentle::new(true, true)
        }
    }

    /// A user prompt is between `input` and before_agent_start and still expected to get there.
    fn user_prompt_expected(&self, now: Ms) -> bool {
        self.user_prompt_pending && self.user_prompt_until.is_some_and(|until| now < until)
    }

    /// A user prompt is on its way to before_agent_start for `ms` more at least (never less than
    /// it was already expected for).
    fn expect_user_prompt(&mut self, pi: &mut Pi<'_>, ms: u64) {
        let until = pi.now() + ms;
        self.user_prompt_pending = true;
        self.user_prompt_until = Some(self.user_prompt_until.map_or(until, |u| u.max(until)));
    }

    /// Keep the start window open until at least `until` (never shortening it).
    fn hold_window_until(&mut self, pi: &mut Pi<'_>, until: Ms) {
        if self.window_until.is_none_or(|u| u < until) {
            self.begin_prompt_start(pi, (until - pi.now()).0);
        }
    }

    fn forget_user_prompt(&mut self) {
        self.user_prompt_pending = false;
        self.user_prompt_until = None;
        self.user_prompt_steer = false;
    }

    fn begin_prompt_start(&mut self, pi: &mut Pi<'_>, grace_ms: u64) {
        self.end_prompt_start(pi);
        self.prompt_starting = true;
        self.window_until = Some(pi.now() + grace_ms);
        self.prompt_grace = Some(pi.set_timeout(grace_ms));
    }

    fn end_prompt_start(&mut self, pi: &mut Pi<'_>) {
        self.prompt_starting = false;
        self.window_until = None;
        if let Some(t) = self.prompt_grace.take() {
            pi.clear_timeout(t);
        }
    }

    fn request_wake(&mut self, pi: &mut Pi<'_>) {
        if !self.wake_owed || self.wake_queued || self.prompt_starting {
            return;
        }
        self.wake_queued = true;
        self.dispatch_task = Some(pi.queue_microtask());
    }

    fn dispatch_wake(&mut self, pi: &mut Pi<'_>) {
        self.wake_queued = false;
        if !self.wake_owed || self.prompt_starting {
            return;
        }
        let Ok(route) = self.route(pi) else { return };
        if route == Route::Hold {
            self.arm_hold_recheck(pi);
        }
        if route != Route::Idle {
            return;
        }
        self.wake_owed = false;
        self.begin_prompt_start(pi, PARENT_WAKE_GRACE_MS);
        self.wake_in_flight = true;
        self.wake_nonce += 1;
        // The wake text names a nonce; it repeats none of the content.
        let text = format!("[gentle-agents wake {}]", self.wake_nonce);
        pi.send_user_message_text(Payload::None, &text, Some(DeliverAs::Steer));
    }

    fn has_held_content(&self) -> bool {
        !self.held_orchestrator.is_empty()
            || self.wake_owed
            || self.completions_maybe_pending
            || !self.messages.is_empty()
            || !self.completions.is_empty()
    }

    fn arm_hold_recheck(&mut self, pi: &mut Pi<'_>) {
        if !self.t2 || self.hold_recheck.is_some() || !self.has_held_content() {
            return;
        }
        self.hold_recheck = Some(pi.set_timeout(HOLD_RECHECK_MS));
    }

    fn stop_hold_recheck(&mut self, pi: &mut Pi<'_>) {
        if let Some(t) = self.hold_recheck.take() {
            pi.clear_timeout(t);
        }
    }

    /// The route for a flush, or None when content must stay held (or the ctx is stale).
    fn delivery_route(&mut self, pi: &mut Pi<'_>) -> Option<Route> {
        match self.route(pi) {
            Ok(Route::Hold) => {
                self.arm_hold_recheck(pi);
                None
            }
            Ok(r) => {
                self.stop_hold_recheck(pi);
                Some(r)
            }
            Err(StaleCtx) => None,
        }
    }

    fn send_to_parent(&mut self, pi: &mut Pi<'_>, id: MsgId, route: Route, run_mode: DeliverAs) {
        let msg = CustomMessage::carrying(id);
        match route {
            Route::Run => pi.send_message(
                msg,
                SendOptions {
                    deliver_as: Some(run_mode),
                    trigger_turn: true,
                },
            ),
            Route::Idle => {
                pi.send_message(msg, SendOptions::store());
                self.stored_since_run = true;
                self.wake_owed = true;
                self.request_wake(pi);
            }
            Route::Hold => unreachable!("held content is not sent"),
        }
    }

    fn flush_orchestrator(&mut self, pi: &mut Pi<'_>) {
        if self.held_orchestrator.is_empty() {
            return;
        }
        let Some(route) = self.delivery_route(pi) else {
            return;
        };
        for id in std::mem::take(&mut self.held_orchestrator) {
            self.send_to_parent(pi, id, route, DeliverAs::FollowUp);
        }
    }

    fn flush_messages(&mut self, pi: &mut Pi<'_>) {
        if self.messages.is_empty() {
            return;
        }
        let Some(route) = self.delivery_route(pi) else {
            return;
        };
        while let Some(id) = self.messages.pop_front() {
            self.send_to_parent(pi, id, route, DeliverAs::Steer);
        }
    }

    fn flush_completions(&mut self, pi: &mut Pi<'_>) {
        if self.completions.is_empty() {
            self.completions_maybe_pending = false;
            return;
        }
        let Some(route) = self.delivery_route(pi) else {
            return;
        };
        while let Some(id) = self.completions.pop_front() {
            self.send_to_parent(pi, id, route, DeliverAs::Steer);
        }
        self.completions_maybe_pending = false;
    }

    fn flush_all(&mut self, pi: &mut Pi<'_>) {
        self.flush_orchestrator(pi);
        self.flush_messages(pi);
        self.flush_completions(pi);
        self.request_wake(pi);
    }

    fn schedule_boundary_flush(&mut self, pi: &mut Pi<'_>) {
        if self.boundary_flush.is_none() {
            self.boundary_flush = Some(pi.set_timeout(0));
        }
    }

    fn clear_timer(pi: &mut Pi<'_>, slot: &mut Option<TimerId>) {
        if let Some(t) = slot.take() {
            pi.clear_timeout(t);
        }
    }
}

impl PiWake for Gentle {
    fn constants_ms(&self) -> Vec<u64> {
        let mut c = vec![PARENT_WAKE_GRACE_MS];
        if self.t2 {
            c.push(HOLD_RECHECK_MS);
        }
        if self.t3 {
            c.push(INPUT_PROMPT_GRACE_MS);
        }
        c
    }

    fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message) {
        match msg.kind {
            MsgKind::Orchestrator if self.fixed && !self.held_orchestrator.is_empty() => {
                // Held ones go first: queue behind them and flush in order.
                self.held_orchestrator.push(msg.id);
                self.flush_orchestrator(pi);
            }
            MsgKind::Orchestrator => match self.route(pi) {
                Ok(Route::Hold) | Err(StaleCtx) => {
                    self.held_orchestrator.push(msg.id);
                    self.arm_hold_recheck(pi);
                }
                Ok(route) => {
                    self.stop_hold_recheck(pi);
                    self.send_to_parent(pi, msg.id, route, DeliverAs::FollowUp);
                }
            },
            MsgKind::Notification => {
                self.messages.push_back(msg.id);
                if self.active_runs == 0 {
                    self.flush_messages(pi);
                }
            }
            // gptme's kinds never reach a pi extension; a completion is what any other message
            // would be to gentle-agents (its settleCompletion path).
            MsgKind::Completion | MsgKind::Watch | MsgKind::Job | MsgKind::Prompt => {
                self.completions.push_back(msg.id);
                self.completions_maybe_pending = true;
                if self.active_runs == 0 {
                    self.flush_all(pi);
                }
            }
        }
    }

    fn on_session_start(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        if !self.fixed {
            // G4 forgets what it still holds: pi's own queues went with the old session, but
            // these never reached pi at all (a loss: g4-session-replacement-drops-documented).
            self.completions.clear();
            self.messages.clear();
            self.held_orchestrator.clear();
            self.completions_maybe_pending = false;
        }
        self.parent_ctx = Some(ctx);
        self.parent_run_active = false;
        // A wake owed for the old session was for content pi dropped with it.
        self.wake_owed = false;
        self.stored_since_run = false;
        self.wake_in_flight = false;
        self.forget_user_prompt();
        self.end_prompt_start(pi);
        Self::clear_timer(pi, &mut self.hold_recheck);
        Self::clear_timer(pi, &mut self.boundary_flush);
        if self.fixed {
            // Fix 7: what it holds (sent while the ctx was stale, or held over a compaction or
            // /tree) goes into the new session.
            self.flush_all(pi);
        }
    }

    fn on_before_agent_start(&mut self, pi: &mut Pi<'_>, _ctx: Ctx) {
        self.forget_user_prompt();
        if !self.parent_run_active {
            self.begin_prompt_start(pi, PARENT_WAKE_GRACE_MS);
        }
    }

    fn on_agent_start(&mut self, pi: &mut Pi<'_>, _ctx: Ctx) {
        self.active_runs += 1;
        self.parent_run_active = true;
        self.wake_owed = false;
        self.stored_since_run = false;
        self.wake_in_flight = false;
        if !self.user_prompt_steer {
            self.forget_user_prompt();
        }
        self.end_prompt_start(pi);
    }

    fn on_agent_end(&mut self, pi: &mut Pi<'_>, _ctx: Ctx) {
        self.active_runs = self.active_runs.saturating_sub(1);
        self.flush_all(pi);
    }

    fn on_agent_settled(&mut self, pi: &mut Pi<'_>, _ctx: Ctx) {
        self.parent_run_active = false;
        self.wake_in_flight = false;
        self.end_prompt_start(pi);
        if self.fixed && self.user_prompt_expected(pi.now()) {
            // A steer the user typed during the run may still be in its input handlers and now go
            // on as a full prompt (its step 5 finds the host idle); it may as well have been
            // queued into the run already, and pi tells the extension neither. Expect it as any
            // user prompt: a wake after such a run may wait one window for nothing (only when
            // the steer came within 2 s of the end of the run), but never races it.
            self.expect_user_prompt(pi, PARENT_WAKE_GRACE_MS);
            self.user_prompt_steer = false;
            if let Some(until) = self.user_prompt_until {
                self.hold_window_until(pi, until);
            }
        } else if self.fixed {
            // A steer typed earlier was queued into the run at its step 5.
            self.forget_user_prompt();
        }
        self.flush_all(pi);
    }

    fn on_turn_end(&mut self, pi: &mut Pi<'_>, _ctx: Ctx) {
        self.flush_all(pi);
    }

    fn on_session_compact(&mut self, pi: &mut Pi<'_>, _ctx: Ctx, _outcome: CompactOutcome) {
        let renew_by = pi.now() + INPUT_PROMPT_GRACE_MS;
        if self.fixed
            && (self.user_prompt_pending || self.wake_in_flight)
            && !self.parent_run_active
            && self.window_until.is_none_or(|until| until < renew_by)
        {
            // A compaction inside the user's prompt or our own wake prompt (step 9) can outlast
            // its window; the prompt goes on to before_agent_start right after it, so reopen the
            // window first.
            if self.user_prompt_pending {
                self.expect_user_prompt(pi, INPUT_PROMPT_GRACE_MS);
            }
            self.begin_prompt_start(pi, INPUT_PROMPT_GRACE_MS);
        }
        self.schedule_boundary_flush(pi);
    }

    fn on_session_tree(&mut self, pi: &mut Pi<'_>, _ctx: Ctx) {
        if self.t2 {
            self.schedule_boundary_flush(pi);
        }
    }

    fn on_input(&mut self, pi: &mut Pi<'_>, _ctx: Ctx, input: InputEvent) -> InputAction {
        if self.fixed && input.from_user {
            if input.streaming_behavior.is_some() || self.parent_run_active {
                // A steer typed while streaming: queued at its step 5, one await (the input
                // handlers) from now, unless the run settles first and it goes on as a full
                // prompt (agent_settled then expects it in full). It may come before the
                // agent_start of the run it was typed into, which must not forget it.
                self.expect_user_prompt(pi, INPUT_PROMPT_GRACE_MS);
                self.user_prompt_steer = true;
                return InputAction::Continue;
            }
            // A user prompt on its way to before_agent_start: no wake of ours while it is
            // expected. Its awaits (input handlers, auth, the compaction check) are not bounded
            // by T3's 2 s; a prompt that neither starts nor visibly dies is given as long as our
            // own wake prompt is (PARENT_WAKE_GRACE_MS), after which it is presumed dead
            // (claimed by another input handler, rejected at auth: pi reports neither to us).
            self.expect_user_prompt(pi, PARENT_WAKE_GRACE_MS);
            self.user_prompt_steer = false;
            if let Some(until) = self.user_prompt_until {
                self.hold_window_until(pi, until);
            }
            return InputAction::Continue;
        } else if self.fixed && self.wake_in_flight && self.user_prompt_expected(pi.now()) {
            // Our own wake prompt reached input while a user prompt is on its way to
            // before_agent_start. That happens when the user's prompt was deferred during the
            // agent_settled handlers (step 0, invisible to `input` until they finish) and the
            // wake was sent in the same window: both resume after the handlers and would race to
            // Agent.prompt. The content is stored in the session already and rides the user's
            // run, so withdraw the wake; if that prompt dies too, the window expires when it is
            // no longer expected and the wake is owed again.
            self.wake_in_flight = false;
            self.wake_owed = true;
            if let Some(until) = self.user_prompt_until {
                self.begin_prompt_start(pi, (until - pi.now()).0);
            }
            return InputAction::Handled;
        } else if self.fixed && !input.from_user && !self.stored_since_run {
            // Fix 8: our own wake prompt reaches input with nothing stored since the last run
            // started: a run has started since it was sent (it was deferred behind a user's
            // prompt while the agent_settled handlers ran, and pi ran that prompt's run first)
            // and carried the content, so a turn now would deliver nothing. Claim it. (A wake
            // still owed or in flight always has content stored since: both are set only with or
            // after a store, and cleared with it at agent_start and session_start.)
            return InputAction::Handled;
        }
        if input.streaming_behavior.is_some() || self.parent_run_active {
            return InputAction::Continue;
        }
        // T3 never shortens an open window.
        if self.t3 && !self.prompt_starting {
            self.begin_prompt_start(pi, INPUT_PROMPT_GRACE_MS);
        }
        InputAction::Continue
    }

    fn on_timer(&mut self, pi: &mut Pi<'_>, timer: TimerId) {
        let some = Some(timer);
        if self.prompt_grace == some {
            self.prompt_grace = None;
            if self.fixed
                && (self.wake_in_flight || self.user_prompt_pending)
                && matches!(self.route(pi), Ok(Route::Hold))
            {
                // The prompt we wait for may be compacting at its step 9 (busy without a run):
                // it is not dead, and when the compaction ends it goes on to Agent.prompt. Keep
                // the window open, re-checking every second; session_compact reopens it.
                self.begin_prompt_start(pi, HOLD_RECHECK_MS);
                return;
            }
            self.prompt_starting = false;
            self.window_until = None;
            if self.fixed && std::mem::take(&mut self.wake_in_flight) {
                // Our wake prompt never started a run (claimed at input, failed at auth): the
                // content it was for is stored but in no request yet. Owe the wake again.
                self.wake_owed = true;
            }
            self.request_wake(pi);
        } else if self.dispatch_task == some {
            self.dispatch_task = None;
            self.dispatch_wake(pi);
        } else if self.boundary_flush == some {
            self.boundary_flush = None;
            self.flush_all(pi);
        } else if self.hold_recheck == some {
            self.hold_recheck = None;
            self.flush_all(pi);
        }
    }
}
