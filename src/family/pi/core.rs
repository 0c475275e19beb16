//! The pi host's state and the synchronous parts of its API: what happens inside a call before
//! its first `await`. The handle the wake logic calls is in `handle.rs`; the scheduled parts in
//! `prompt.rs` (prompt steps after an await), `run.rs` (run phases) and `faults.rs`.

use std::collections::VecDeque;

use super::api::{Ctx, CustomMessage, DeliverAs, SendOptions};
use super::config::{PiConfig, PiFault};
use super::note::{HostError, Note, Route, State, Step};
use super::{Gen, PiEv, PiKernel, Version, vocab};
use crate::family::common::faults::Faults;
use crate::family::common::{Calls, Core};
use crate::sim::msg::Payload;
use crate::sim::record::{Actor, Ev, Starter};
use crate::sim::sink::Sink;
use crate::sim::time::Ms;

/// `prompt()` progress: the step that runs when the prompt's next event fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PStep {
    Input,
    Streaming,
    Auth,
    Compaction,
    BeforeStart,
    Images,
    Start,
    Done,
}

pub(super) struct PromptTask {
    pub from_user: bool,
    pub payload: Payload,
    pub behavior: Option<DeliverAs>,
    pub step: PStep,
    pub auth_fails: bool,
    /// The deferred-action chain this prompt is the current action of (`chains`).
    pub parent: Option<u32>,
    /// 0.58: the `nextTurn` messages it took before `before_agent_start`.
    pub taken: Vec<Payload>,
    /// pi 1.x: the run its `_startRun` began after the auth check.
    pub run: Option<u32>,
}

/// `_runAgentPrompt` (0.99) or a bare agent run (0.58): its next phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RPhase {
    /// pi 1.x: `_prepareRun`'s compaction check; then `before_agent_start` (a direct run's).
    Prepare,
    /// pi 1.x: `before_agent_start` returned; the run takes nextTurn and calls `Agent.prompt`.
    PrepareDone,
    /// pi 1.x: a prompt's run, prepared by the prompt's own steps.
    PromptPrepares,
    AgentStart,
    Request,
    Tools,
    TurnEnd,
    /// 0.99: the turn_end handlers returned; the agent polls its queues.
    TurnPoll,
    AgentEnd,
    PostRun,
    CompactionDone,
    Continue,
    Settle,
    SettledDone,
    Done,
}

pub(super) struct RunTask {
    pub phase: RPhase,
    pub inner: u32,
    pub tools_left: u64,
    pub had_tools: bool,
    /// The last model reply was a retryable error (the `retries` fault): the agent loop ends
    /// the inner run at once (turn_end, agent_end, no queue polled) and pi retries it.
    pub failed: bool,
    /// The next `agent.continue()` continues from the assistant's reply (queued messages
    /// asked for it), so it takes a follow-up when no steer is queued; a retry or a
    /// before-settle continuation continues from the context (`runAgentLoopContinue`), which
    /// polls only steering first and follow-ups at its stop branch.
    pub follow_up_first: bool,
    /// 0.99: the inner run polls steering right before its first request, after the
    /// `agent_start` handlers (pi-agent-core's `runLoop` starts with that poll).
    pub poll_at_request: bool,
    /// 0.58 has no shared prompt options: a run carries the harness if a prompt started it.
    pub harness: bool,
    /// The starter was rejected: this run only settles.
    pub rejected: bool,
    /// The deferred-action chain whose current action this run is, itself or through the
    /// prompt that started it (`chains`).
    pub parent: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Compacting {
    None,
    /// `/compact`; step 2 rejects prompts.
    Manual,
    /// `/tree` branch summarization.
    Tree,
    /// Auto compaction inside `prompt()` step 9 (PREP-COMPACT).
    Prompt,
    /// Auto compaction between inner runs (the run flag stays on).
    Run,
}

pub(super) enum Deferred {
    Prompt(u32),
    /// A `sendMessage(triggerTurn)`: 0.99 runs `_runAgentPrompt(message)`; pi 1.x calls
    /// `sendCustomMessage(message, options)` again, which routes it anew (`deliver_as`).
    Direct(Payload, Option<DeliverAs>),
}

/// pi 0.99's `_emitAgentSettled` after its handlers: `for (const action of deferred) await
/// action()`. One action at a time, each awaited to its end: a prompt's `prompt()` returns when
/// its input handlers claim it, when it queues, when it throws, or when the run it started has
/// settled and run its own deferred actions; a direct action (`_runAgentPrompt`) when its run has.
/// An action that throws ends the loop: the actions after it never run, and the owner run's
/// `_runAgentPrompt` throws in turn (its `finally` awaits `_emitAgentSettled`).
pub(super) struct Chain {
    /// The run whose settlement runs these actions.
    pub owner: u32,
    /// The actions not started yet.
    pub rest: VecDeque<Deferred>,
}

/// The pi host's state. The wake logic reaches it only through [`super::api::Pi`].
pub struct PiCore {
    pub(super) generation: Gen,
    /// pi 1.x's `_startRun`/`_prepareRun` on top of 0.99 (`pi-1.6`).
    pub(super) v16: bool,
    /// pi 1.x: the message of each direct run still preparing, by run.
    pub(super) direct_pending: Vec<(u32, Payload)>,
    /// The context's last message is an inner run's successful reply (nothing appended since).
    pub(super) replied: bool,
    pub(super) cfg: PiConfig,
    pub(super) faults: Faults<PiFault>,
    pub(super) session: u32,
    /// The session was replaced and its `session_start` is not delivered yet.
    pub(super) replacing: bool,
    /// `_isAgentRunActive` (0.99); mirrors the agent run on 0.58.
    pub(super) run_active: bool,
    /// `Agent.activeRun`.
    pub(super) agent_active: Option<u32>,
    pub(super) compacting: Compacting,
    /// `_isEmittingAgentSettled`, counted because a rejected run may settle inside another.
    pub(super) settling: u32,
    pub(super) deferred: Vec<Deferred>,
    /// Every deferred-action loop started, by id (see [`Chain`]).
    pub(super) chains: Vec<Chain>,
    pub(super) next_turn: Vec<Payload>,
    pub(super) pending_custom: Vec<Payload>,
    pub(super) steering: VecDeque<Payload>,
    pub(super) follow_up: VecDeque<Payload>,
    /// `_runSystemPromptOptions` is set: requests carry the harness.
    pub(super) run_options: bool,
    pub(super) prompts: Vec<PromptTask>,
    pub(super) live_prompts: u32,
    pub(super) runs: Vec<RunTask>,
    /// Continues scheduled on a timer (0.58): the host reads idle but work is pending.
    pub(super) pending_continues: u32,
    /// 0.58's `_agentEventQueue`: run events whose extension handlers run one after another,
    /// not awaited by the agent (see `listen.rs`).
    pub(super) listeners: VecDeque<(u32, super::note::Hook)>,
    /// The queue's entry being processed and its stage.
    pub(super) listening: Option<(u32, super::note::Hook, u8)>,
    pub(super) timers: Vec<bool>,
    /// Prompts whose input handlers run before anything else happens.
    pub(super) inputs_due: Vec<u32>,
    pub(super) requests: u32,
    /// `_retryAttempt`: retryable errors since the last successful model reply (pi resets it at
    /// every assistant message that is not an error); it doubles the backoff.
    pub(super) retry_attempt: u32,
    pub(super) idle: bool,
    /// Calls the wake logic made in the current handler invocation.
    pub(super) calls: Calls,
    /// When the wake logic last started a prompt (for the constant-boundary window).
    pub(super) last_wake_at: Option<Ms>,
}

pub use crate::family::common::BudgetExceeded;
pub use crate::limits::CALLS_MAX;

impl PiCore {
    pub(super) fn new(version: Version, cfg: PiConfig) -> PiCore {
        let faults = Faults::new(&cfg.faults);
        PiCore {
            generation: version.generation,
            v16: version.v16,
            direct_pending: Vec::new(),
            replied: false,
            cfg,
            faults,
            session: 1,
            replacing: false,
            run_active: false,
            agent_active: None,
            compacting: Compacting::None,
            settling: 0,
            deferred: Vec::new(),
            chains: Vec::new(),
            next_turn: Vec::new(),
            pending_custom: Vec::new(),
            steering: VecDeque::new(),
            follow_up: VecDeque::new(),
            run_options: false,
            prompts: Vec::new(),
            live_prompts: 0,
            runs: Vec::new(),
            pending_continues: 0,
            listeners: VecDeque::new(),
            listening: None,
            timers: Vec::new(),
            inputs_due: Vec::new(),
            requests: 0,
            retry_attempt: 0,
            idle: true,
            calls: Calls::default(),
            last_wake_at: None,
        }
    }

    pub(super) fn ctx(&self) -> Ctx {
        Ctx {
            session: self.session,
        }
    }

    /// `isStreaming`: the session run flag on 0.99, the agent's own flag on 0.58.
    pub(super) fn is_streaming(&self) -> bool {
        match self.generation {
            Gen::V099 => self.run_active,
            Gen::V058 => self.agent_active.is_some(),
        }
    }

    /// `isIdle` as extensions read it.
    pub(super) fn is_idle(&self) -> bool {
        match self.generation {
            Gen::V099 => !self.run_active && self.compacting == Compacting::None,
            Gen::V058 => self.agent_active.is_none(),
        }
    }

    pub(super) fn state(&self) -> State {
        if self.replacing {
            State::Disposed
        } else if self.is_streaming() {
            State::Running
        } else if self.settling > 0 {
            State::Settling
        } else {
            match self.compacting {
                Compacting::Manual | Compacting::Tree => State::Compacting,
                Compacting::Prompt => State::PrepCompact,
                Compacting::Run => State::Running,
                Compacting::None if self.live_prompts > 0 => State::Preparing,
                Compacting::None => State::Idle,
            }
        }
    }

    /// Does this fault fire at this opportunity? Draws only when the fault is on for the seed.
    pub(super) fn fires(&mut self, k: &mut PiKernel, f: PiFault) -> bool {
        self.faults.fires(k, f)
    }

    pub(super) fn append_all(&mut self, k: &mut PiKernel, items: &[Payload]) {
        self.replied = false;
        for p in items {
            self.append(k, p);
        }
    }

    /// Flush `_pendingCustomMessages` into the session (turn_end, run end, before a prompt).
    pub(super) fn flush_pending_custom(&mut self, k: &mut PiKernel) {
        for p in std::mem::take(&mut self.pending_custom) {
            self.replied = false;
            self.append(k, &p);
        }
    }

    /// `sendCustomMessage` (§2.5): route synchronously.
    pub(super) fn send_custom(&mut self, k: &mut PiKernel, msg: CustomMessage, opts: SendOptions) {
        // The note's copy of the payload, made only when notes are kept (`note` drops it else).
        let payload = if k.sink.narrating() {
            msg.payload.clone()
        } else {
            Payload::None
        };
        let route = if opts.deliver_as == Some(DeliverAs::NextTurn) {
            self.next_turn.push(msg.payload);
            Route::NextTurn
        } else if self.is_streaming() && opts.trigger_turn {
            if opts.deliver_as == Some(DeliverAs::FollowUp) {
                self.follow_up.push_back(msg.payload);
                Route::FollowUp
            } else {
                self.steering.push_back(msg.payload);
                Route::Steer
            }
        } else if opts.trigger_turn {
            if self.generation == Gen::V099 && self.settling > 0 {
                self.deferred
                    .push(Deferred::Direct(msg.payload, opts.deliver_as));
                Route::Deferred
            } else {
                let run = self.runs.len() as u32 + 1;
                let note = Note::SendMessage {
                    custom_type: msg.custom_type,
                    payload,
                    opts,
                    route: if self.v16 {
                        Route::PreparedRun(run)
                    } else {
                        Route::DirectRun(run)
                    },
                };
                self.note(k, Actor::Wake, note);
                if self.v16 {
                    self.prepare_direct(k, msg.payload, None);
                } else {
                    self.start_run(k, Starter::Direct(run), vec![msg.payload], false, None);
                }
                return;
            }
        } else if self.is_streaming() {
            self.pending_custom.push(msg.payload);
            Route::PendingCustom
        } else {
            self.replied = false;
            self.append(k, &msg.payload);
            Route::Appended
        };
        let note = Note::SendMessage {
            custom_type: msg.custom_type,
            payload,
            opts,
            route,
        };
        self.note(k, Actor::Wake, note);
    }

    /// `prompt()` steps 0-2, synchronous up to the input handlers' await.
    pub(super) fn prompt_begin(&mut self, k: &mut PiKernel, id: u32) {
        let p = &mut self.prompts[id as usize - 1];
        if self.generation == Gen::V099 && self.settling > 0 {
            // Deferred (again, for a deferred action's prompt): prompt() returns at once.
            let parent = p.parent.take();
            self.deferred.push(Deferred::Prompt(id));
            self.note(
                k,
                Actor::Host,
                Note::Step {
                    prompt: id,
                    step: Step::DeferredWhileSettling,
                },
            );
            self.action_done(k, parent, false);
            return;
        }
        if self.compacting == Compacting::Manual {
            p.step = PStep::Done;
            let from_user = p.from_user;
            let parent = p.parent.take();
            self.note(
                k,
                Actor::Host,
                Note::Error {
                    prompt: Some(id),
                    error: HostError::CompactionInProgress,
                },
            );
            if !from_user {
                self.mark(k, vocab::WAKE_PROMPT_FAILED);
            }
            self.action_done(k, parent, true);
            return;
        }
        p.step = PStep::Input;
        self.live_prompts += 1;
        if self.live_prompts >= 2 {
            self.mark(k, vocab::CONCURRENT_PROMPTS);
        }
        // `_runInputHandlers` calls the first handler synchronously inside prompt(): the host runs
        // it as soon as the current call into the wake logic (or host step) returns.
        self.inputs_due.push(id);
    }

    pub(super) fn new_prompt(
        &mut self,
        from_user: bool,
        payload: Payload,
        behavior: Option<DeliverAs>,
    ) -> u32 {
        self.prompts.push(PromptTask {
            from_user,
            payload,
            behavior,
            step: PStep::Done,
            auth_fails: false,
            parent: None,
            taken: Vec::new(),
            run: None,
        });
        self.prompts.len() as u32
    }

    /// `_runAgentPrompt(items)` up to `agent.prompt()`: set the run flag, then either take the
    /// agent or be rejected because a run already holds it (H-1).
    pub(super) fn start_run(
        &mut self,
        k: &mut PiKernel,
        who: Starter,
        items: Vec<Payload>,
        harness: bool,
        parent: Option<u32>,
    ) {
        let id = self.runs.len() as u32 + 1;
        if self.generation == Gen::V099 && !self.v16 {
            self.run_active = true;
            self.emit(k, Actor::Host, Ev::RunFlag { on: true });
        }
        let tools = self.cfg.timing.tool_turns;
        let mut run = RunTask {
            phase: RPhase::AgentStart,
            inner: 1,
            tools_left: 0,
            had_tools: false,
            failed: false,
            follow_up_first: true,
            poll_at_request: self.generation == Gen::V099,
            harness,
            rejected: false,
            parent,
        };
        if self.agent_active.is_some() {
            return self.reject_start(k, who, &items, run);
        }
        run.tools_left = tools.min + k.choose(tools.max - tools.min + 1, "tool turns");
        self.runs.push(run);
        self.agent_active = Some(id);
        self.emit(
            k,
            Actor::Host,
            Ev::Starter {
                who,
                accepted: true,
            },
        );
        self.emit(k, Actor::Host, Ev::AgentRun { on: true });
        if self.generation == Gen::V058 {
            self.run_active = true;
            self.emit(k, Actor::Host, Ev::RunFlag { on: true });
        }
        self.append_all(k, &items);
        match self.generation {
            // The agent_start handlers: wakesim's first probe, then the wake logic's.
            Gen::V099 => {
                let d = self.handler_delay(k);
                k.resume(d, PiEv::Run(id));
            }
            // 0.58's agent goes on to its request; the handlers run on the event queue.
            Gen::V058 => {
                self.listen(k, id, super::note::Hook::AgentStart);
                k.resume(0, PiEv::Run(id));
            }
        }
    }

    /// What the host shows when `Agent.prompt` refuses `who` because a run holds the agent: the
    /// refused starter, pi's "already processing" error, and the messages `items` lost with the
    /// caller's local array.
    fn refuse_busy(&mut self, k: &mut PiKernel, who: Starter, items: &[Payload]) {
        self.emit(
            k,
            Actor::Host,
            Ev::Starter {
                who,
                accepted: false,
            },
        );
        let prompt = match who {
            Starter::Prompt(p) => Some(p),
            Starter::Direct(_) | Starter::Continue(_) => None,
        };
        let error = HostError::AgentBusy;
        self.note(k, Actor::Host, Note::Error { prompt, error });
        let lost: Vec<_> = items.iter().flat_map(|p| p.ids().iter().copied()).collect();
        if !lost.is_empty() {
            let payload = Payload::from_slice(&lost);
            self.note(k, Actor::Host, Note::Lost { payload });
        }
    }

    /// `Agent.prompt` rejects a starter while a run holds the agent (H-1): the messages it took
    /// are lost with its local array; on 0.99 the rejected run still settles.
    fn reject_start(
        &mut self,
        k: &mut PiKernel,
        who: Starter,
        items: &[Payload],
        mut run: RunTask,
    ) {
        let id = self.runs.len() as u32 + 1;
        self.refuse_busy(k, who, items);
        run.rejected = true;
        run.phase = match self.generation {
            Gen::V099 => RPhase::Settle,
            Gen::V058 => RPhase::Done,
        };
        self.runs.push(run);
        if self.generation == Gen::V099 {
            k.resume(0, PiEv::Run(id));
        }
    }

    /// The settlement of run `owner` starts its deferred actions, one at a time.
    pub(super) fn run_deferred(&mut self, k: &mut PiKernel, owner: u32, actions: Vec<Deferred>) {
        let chain = self.chains.len() as u32;
        self.chains.push(Chain {
            owner,
            rest: actions.into(),
        });
        self.chain_next(k, chain);
    }

    /// A chain's next action starts; with none left, its owner run's `_emitAgentSettled` returns.
    fn chain_next(&mut self, k: &mut PiKernel, chain: u32) {
        let c = chain as usize;
        match self.chains[c].rest.pop_front() {
            Some(Deferred::Prompt(p)) => {
                self.note(k, Actor::Host, Note::DeferredRuns { prompt: Some(p) });
                self.prompts[p as usize - 1].parent = Some(chain);
                self.prompt_begin(k, p);
            }
            Some(Deferred::Direct(payload, deliver_as)) => {
                self.note(k, Actor::Host, Note::DeferredRuns { prompt: None });
                let run = self.runs.len() as u32 + 1;
                if !self.v16 {
                    self.start_run(k, Starter::Direct(run), vec![payload], false, Some(chain));
                } else if self.is_streaming() {
                    // pi 1.x re-routes: another run holds the session, so it queues, and the
                    // action returns at once.
                    match deliver_as {
                        Some(DeliverAs::FollowUp) => self.follow_up.push_back(payload),
                        Some(DeliverAs::Steer) | None => self.steering.push_back(payload),
                        // Routed anew as `sendCustomMessage` routes it: nextTurn waits for the
                        // next prompt(), never a steer. (`send_custom` keeps a nextTurn message
                        // before it could be deferred, so none is deferred today.)
                        Some(DeliverAs::NextTurn) => self.next_turn.push(payload),
                    }
                    self.chain_next(k, chain);
                } else {
                    self.prepare_direct(k, payload, Some(chain));
                }
            }
            None => {
                let owner = self.chains[c].owner;
                self.run_done(k, owner, false);
            }
        }
    }

    /// A deferred action returned (`threw`: it threw) : its chain goes on, or ends dropping the
    /// actions after it.
    pub(super) fn action_done(&mut self, k: &mut PiKernel, chain: Option<u32>, threw: bool) {
        let Some(chain) = chain else { return };
        if !threw {
            return self.chain_next(k, chain);
        }
        let c = chain as usize;
        let owner = self.chains[c].owner;
        let dropped = std::mem::take(&mut self.chains[c].rest);
        if !dropped.is_empty() {
            let count = dropped.len() as u32;
            let note = Note::Run {
                run: owner,
                note: super::note::RunNote::DeferredDropped { count },
            };
            self.note(k, Actor::Host, note);
        }
        self.run_done(k, owner, true);
    }

    /// Run `id`'s `_runAgentPrompt` returned (after its settlement and deferred actions), or
    /// threw: its starter rejected, or a deferred action of its settlement threw.
    pub(super) fn run_done(&mut self, k: &mut PiKernel, id: u32, threw: bool) {
        let run = &self.runs[id as usize - 1];
        let threw = threw || run.rejected;
        let parent = run.parent;
        self.action_done(k, parent, threw);
    }

    pub(super) fn step_delay(&self, k: &mut PiKernel) -> u64 {
        let s = self.cfg.timing.step_ms;
        k.delay(s.min, s.max, "await")
    }

    pub(super) fn handler_delay(&self, k: &mut PiKernel) -> u64 {
        let s = self.cfg.timing.handler_ms;
        k.delay(s.min, s.max, "handlers")
    }

    /// Mark the race windows a producer message arrives in.
    pub(super) fn mark_arrival(&self, k: &mut PiKernel) {
        let gap = match self.generation {
            Gen::V099 => self.run_active && self.agent_active.is_none(),
            Gen::V058 => self.pending_continues > 0,
        };
        if gap {
            self.mark(k, vocab::MESSAGE_BETWEEN_INNER_RUNS);
        }
        if self.settling > 0 {
            self.mark(k, vocab::MESSAGE_WHILE_SETTLING);
        }
        if matches!(
            self.compacting,
            Compacting::Manual | Compacting::Tree | Compacting::Prompt
        ) {
            self.mark(k, vocab::MESSAGE_WHILE_COMPACTING);
        }
        if let Some(last) = self.last_wake_at {
            let since = (k.now() - last).0;
            if k.choices
                .constants()
                .iter()
                .any(|&c| since.abs_diff(c) <= 1)
            {
                self.mark(k, crate::family::common::windows::AT_CONSTANT_BOUNDARY);
            }
        }
    }
}

impl Core for PiCore {
    type Ev = PiEv;
    type Note = Note;

    fn state_code(&self) -> u8 {
        self.state() as u8
    }

    /// Nothing is running, preparing, compacting, settling or scheduled to continue: only the
    /// wake logic (or a new prompt) can move a pending message now.
    fn quiet(&self) -> bool {
        !self.run_active
            && self.agent_active.is_none()
            && self.compacting == Compacting::None
            && self.live_prompts == 0
            && self.settling == 0
            && self.deferred.is_empty()
            && self.chains.iter().all(|c| c.rest.is_empty())
            && self.pending_continues == 0
            && self.listening.is_none()
            && !self.replacing
    }

    fn idle_mut(&mut self) -> &mut bool {
        &mut self.idle
    }
}

/// pi 1.x (`pi-1.6`): runs begin in `_startRun`, which sets the run flag at once and then
/// prepares the run (`_prepareRun`: the compaction check, `before_agent_start`, images for a
/// user message, nextTurn taken) before `Agent.prompt`; held custom messages are flushed after
/// the preparation (read from pi 1.6.0's `agent-session.js`).
impl PiCore {
    /// `_startRun` up to its first await: the run flag is set and run `id` (numbered now, as the
    /// real driver numbers it) prepares.
    pub(super) fn begin_start_run(&mut self, k: &mut PiKernel, parent: Option<u32>) -> u32 {
        let id = self.runs.len() as u32 + 1;
        self.run_active = true;
        self.emit(k, Actor::Host, Ev::RunFlag { on: true });
        self.runs.push(RunTask {
            phase: RPhase::PromptPrepares,
            inner: 1,
            tools_left: 0,
            had_tools: false,
            failed: false,
            follow_up_first: true,
            poll_at_request: true,
            harness: false,
            rejected: false,
            parent,
        });
        self.note(
            k,
            Actor::Host,
            Note::Run {
                run: id,
                note: super::note::RunNote::Preparing,
            },
        );
        id
    }

    /// A custom message's `_startRun`: it prepares (the compaction check's await first).
    pub(super) fn prepare_direct(&mut self, k: &mut PiKernel, msg: Payload, parent: Option<u32>) {
        let id = self.begin_start_run(k, parent);
        self.direct_pending.push((id, msg));
        self.runs[id as usize - 1].phase = RPhase::Prepare;
        let d = self.step_delay(k);
        k.resume(d, PiEv::Run(id));
    }

    /// `_prepareRun` returned for run `id`: `Agent.prompt(items)` takes the agent, or rejects
    /// it (the run then settles, as on 0.99).
    pub(super) fn start_prepared(
        &mut self,
        k: &mut PiKernel,
        id: u32,
        who: Starter,
        items: Vec<Payload>,
    ) {
        let i = id as usize - 1;
        self.flush_pending_custom(k);
        self.run_options = true;
        if self.agent_active.is_some() {
            self.refuse_busy(k, who, items.as_slice());
            let run = &mut self.runs[i];
            run.rejected = true;
            run.phase = RPhase::Settle;
            k.resume(0, PiEv::Run(id));
            return;
        }
        let tools = self.cfg.timing.tool_turns;
        let tools_left = tools.min + k.choose(tools.max - tools.min + 1, "tool turns");
        let run = &mut self.runs[i];
        run.tools_left = tools_left;
        run.phase = RPhase::AgentStart;
        self.agent_active = Some(id);
        self.emit(
            k,
            Actor::Host,
            Ev::Starter {
                who,
                accepted: true,
            },
        );
        self.emit(k, Actor::Host, Ev::AgentRun { on: true });
        self.append_all(k, &items);
        let d = self.handler_delay(k);
        k.resume(d, PiEv::Run(id));
    }
}
