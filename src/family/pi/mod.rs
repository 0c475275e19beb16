//! The pi host model (`wake-systems.md` §2): `AgentSession` of pi 0.99 and, as a second
//! generation, the older 0.58 host of H-5.
//!
//! Every `await` of the real host is a scheduling point: the model schedules its continuation
//! after a drawn delay, and events due at the same instant are ordered by a choice. The
//! synchronous segments (`prompt()` steps 0-2, step 12 taking `nextTurn` and setting the run flag,
//! the `sendCustomMessage` routing table) run atomically inside one event, as they do in JS.
//!
//! - `core.rs`: the state and the synchronous API (`Pi`, `sendCustomMessage`, `prompt()` entry,
//!   `_runAgentPrompt` entry);
//! - this file: the scheduled parts (prompt steps 3-12, run phases, faults, producers);
//! - `api.rs`: the public wake-logic trait; `note.rs`: the narration; `config.rs`: the knobs.

pub mod adapter;
pub mod api;
pub mod config;
pub mod core;
pub mod note;
pub mod sections;
pub mod vocab;
pub mod wakes;

use api::{CompactOutcome, InputAction, InputEvent, Message, Pi, PiWake, TimerId};
use config::{PiConfig, PiFault};
use core::{Compacting, Deferred, PStep, PiCore, RPhase};
use note::{FaultNote, Hook, HostError, Note, Queue, RunNote, Step};

use crate::adapter::SlotRef;
use crate::check::{Invariant, Monitor};
use crate::error::Result;
use crate::family::common::Core;
use crate::family::common::faults::FaultSpec;
use crate::family::common::faults::TimedFaults;
use crate::family::{Family, Host, Registry};
use crate::input::Cx;
use crate::sim::msg::{MsgKind, Payload};
use crate::sim::record::{Actor, Ev, Starter, Window};
use crate::sim::sink::Sink;
use crate::sim::swarm::{self, Mix};
use crate::sim::time::Ms;
use crate::sim::{Kernel, World};

/// Which pi the model plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gen {
    /// 0.99: `_isAgentRunActive` spans the whole run; `agent_settled`; handlers awaited.
    V099,
    /// 0.58: idle between inner runs, `continue()` on a timer, listeners not awaited.
    V058,
}

/// The kernel a pi host runs on: its events, its narration into the checkers' monitor.
pub type PiKernel = Kernel<PiEv, Monitor<Note>>;

/// The pi host's scheduled events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PiEv {
    /// The i-th planned producer message arrives at the extension.
    Produce(u32),
    /// A prompt's next step, after its current await.
    Prompt(u32),
    /// A run's next phase.
    Run(u32),
    /// A wake-logic timer.
    Timer(u32),
    /// `session_start` of the replacement session.
    SessionStart,
    /// The i-th planned timed fault.
    Timed(u32),
    /// A compaction or summarization started by a fault ends.
    FaultEnd(PiFault),
}

struct Planned {
    kind: MsgKind,
    source: u8,
}

/// The pi host with its wake logic: a `World` for the kernel.
pub struct PiHost {
    core: PiCore,
    wake: Box<dyn PiWake>,
    producers: Vec<Planned>,
    timed: TimedFaults<PiFault>,
    /// The producer kinds this seed enabled.
    kinds_on: Vec<MsgKind>,
}

impl PiHost {
    pub fn new(generation: Gen, cfg: PiConfig, wake: Box<dyn PiWake>) -> PiHost {
        PiHost {
            core: PiCore::new(generation, cfg),
            wake,
            producers: Vec::new(),
            timed: TimedFaults::default(),
            kinds_on: Vec::new(),
        }
    }

    /// Call into the wake logic with a fresh call budget; then run the input handlers of any
    /// prompt the call started.
    fn call<R>(
        &mut self,
        k: &mut PiKernel,
        f: impl FnOnce(&mut dyn PiWake, &mut Pi<'_>) -> R,
    ) -> R {
        self.core.calls.reset();
        let mut pi = Pi {
            core: &mut self.core,
            k,
        };
        let r = f(&mut *self.wake, &mut pi);
        self.run_inputs(k);
        r
    }

    /// Call the host from outside its own events, as an async wake task does between two of them
    /// (the madsim lane): `f` gets the same [`Pi`] handle the handlers get, with a fresh call
    /// budget, at the kernel's current time. Input handlers of prompts it starts run before this
    /// returns, as they do after a handler.
    pub fn enter<R>(&mut self, k: &mut PiKernel, f: impl FnOnce(&mut Pi<'_>) -> R) -> R {
        let r = self.call(k, |_, pi| f(pi));
        self.core.sync_idle(k);
        r
    }

    /// Run the input handlers of prompts started since: pi calls them synchronously inside
    /// `prompt()`, before anything else can happen.
    fn run_inputs(&mut self, k: &mut PiKernel) {
        while !self.core.inputs_due.is_empty() {
            let id = self.core.inputs_due.remove(0);
            self.prompt_step(k, id);
        }
    }

    /// Deliver an extension event to the wake logic.
    fn hook(&mut self, k: &mut PiKernel, hook: Hook) {
        self.core.note(k, Actor::Wake, Note::Handler(hook));
        let ctx = self.core.ctx();
        self.call(k, |w, pi| match hook {
            Hook::SessionStart => w.on_session_start(pi, ctx),
            Hook::AgentStart => w.on_agent_start(pi, ctx),
            Hook::TurnEnd => w.on_turn_end(pi, ctx),
            Hook::AgentEnd => w.on_agent_end(pi, ctx),
            Hook::AgentSettled => w.on_agent_settled(pi, ctx),
            Hook::SessionCompact => w.on_session_compact(pi, ctx, CompactOutcome::Done),
            Hook::SessionCompactFailed => w.on_session_compact(pi, ctx, CompactOutcome::Failed),
            Hook::SessionTree => w.on_session_tree(pi, ctx),
            Hook::BeforeAgentStart => w.on_before_agent_start(pi, ctx),
            Hook::Timer(id) => w.on_timer(pi, TimerId(id)),
            Hook::Input | Hook::Message(_) => unreachable!("delivered by their own paths"),
        });
    }

    fn plan(&mut self, k: &mut PiKernel) {
        self.core.faults.plan(k);
        let active = k.limits().active_ms;
        let mut p = self.core.cfg.producers.clone();
        let mask = swarm::draw_subset(&mut k.choices, p.kinds.len());
        p.kinds = (0..p.kinds.len())
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| p.kinds[i])
            .collect();
        self.kinds_on = p.kinds.clone();
        let n = p.messages.min + k.choose(p.messages.max - p.messages.min + 1, "messages");
        let mut t = Ms(k.instant(p.start_ms.min, p.start_ms.max, "first message"));
        let mut completed = vec![false; usize::from(p.subagents)];
        let mut last_at: Vec<Option<Ms>> = vec![None; usize::from(p.subagents) + 1];
        for i in 0..n {
            if i > 0 {
                t = t + k.instant(p.spacing_ms.min, p.spacing_ms.max, "spacing");
            }
            if t.0 >= active {
                break;
            }
            let kind = p.kinds[k.choose(p.kinds.len() as u64, "kind") as usize];
            // A subagent sends notifications, then one completion, its last message.
            let source = match kind {
                MsgKind::Orchestrator => p.subagents,
                _ => {
                    let open: Vec<u8> = (0..p.subagents)
                        .filter(|s| !completed[*s as usize])
                        .collect();
                    if open.is_empty() {
                        continue;
                    }
                    open[k.choose(open.len() as u64, "subagent") as usize]
                }
            };
            if kind == MsgKind::Completion {
                completed[source as usize] = true;
            }
            // One source sends one message at a time: never two at the same instant, whose
            // order a same-instant choice could swap.
            let last = &mut last_at[source as usize];
            if last.is_some_and(|l| l >= t) {
                t = last.expect("checked") + 1;
            }
            *last = Some(t);
            k.schedule_at(t, PiEv::Produce(self.producers.len() as u32));
            self.producers.push(Planned { kind, source });
        }
        self.timed.plan(&self.core.faults, k, PiEv::Timed);
    }

    fn end_prompt(&mut self, id: u32) {
        self.core.prompts[id as usize - 1].step = PStep::Done;
        self.core.live_prompts -= 1;
    }

    /// A prompt throws `error` (to its caller, or the extension error channel) and ends.
    fn reject_prompt(&mut self, k: &mut PiKernel, id: u32, error: HostError) {
        let prompt = Some(id);
        self.core
            .note(k, Actor::Host, Note::Error { prompt, error });
        self.fail_prompt(k, id);
    }

    /// A prompt ended without starting a run.
    fn fail_prompt(&mut self, k: &mut PiKernel, id: u32) {
        if !self.core.prompts[id as usize - 1].from_user {
            self.core.mark(k, vocab::WAKE_PROMPT_FAILED);
        }
        self.end_prompt(id);
    }

    fn prompt_note(&self, k: &mut PiKernel, prompt: u32, step: Step) {
        self.core.note(k, Actor::Host, Note::Step { prompt, step });
    }

    /// `prompt()` from step 3 on: one await per event.
    fn prompt_step(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        let (from_user, behavior) = (
            self.core.prompts[i].from_user,
            self.core.prompts[i].behavior,
        );
        match self.core.prompts[i].step {
            PStep::Input => {
                let input = InputEvent {
                    from_user,
                    streaming_behavior: if self.core.is_streaming() {
                        behavior
                    } else {
                        None
                    },
                };
                self.core.note(k, Actor::Wake, Note::Handler(Hook::Input));
                let ctx = self.core.ctx();
                let action = self.call(k, |w, pi| w.on_input(pi, ctx, input));
                if action == InputAction::Handled {
                    self.prompt_note(k, id, Step::InputHandledByWake);
                    self.fail_prompt(k, id);
                } else if self.core.fires(k, PiFault::InputSwallowsPrompt) {
                    self.prompt_note(k, id, Step::InputSwallowed);
                    self.fail_prompt(k, id);
                } else {
                    self.core.prompts[i].step = PStep::Streaming;
                    let d = self.core.step_delay(k);
                    k.resume(d, PiEv::Prompt(id));
                }
            }
            PStep::Streaming => {
                // Step 5, the single isStreaming check, after the input handlers' await.
                if self.core.run_active && self.core.agent_active.is_none() {
                    self.core.mark(k, vocab::PROMPT_RACES_SETTLE);
                }
                if self.core.is_streaming() {
                    match behavior {
                        Some(d) => {
                            let payload = self.core.prompts[i].payload.clone();
                            match d {
                                api::DeliverAs::FollowUp => self.core.follow_up.push_back(payload),
                                _ => self.core.steering.push_back(payload),
                            }
                            self.prompt_note(k, id, Step::QueuedWhileStreaming(d));
                        }
                        None => {
                            self.reject_prompt(k, id, HostError::AlreadyProcessing);
                            return;
                        }
                    }
                    self.end_prompt(id);
                    return;
                }
                self.core.flush_pending_custom(k);
                self.core.prompts[i].auth_fails = self.core.fires(k, PiFault::AuthError);
                self.prompt_note(k, id, Step::AwaitAuth);
                self.core.prompts[i].step = PStep::Auth;
                let d = self.core.step_delay(k);
                k.resume(d, PiEv::Prompt(id));
            }
            PStep::Auth => {
                if self.core.prompts[i].auth_fails {
                    self.reject_prompt(k, id, HostError::AuthFailed);
                } else if self.core.compacting == Compacting::None
                    && self.core.fires(k, PiFault::PrePromptCompaction)
                {
                    self.core.compacting = Compacting::Prompt;
                    self.prompt_note(k, id, Step::PrePromptCompaction);
                    self.core.prompts[i].step = PStep::Compaction;
                    let c = self.core.cfg.timing.compaction_ms;
                    let d = k.delay(c.min, c.max, "compaction");
                    k.resume(d, PiEv::Prompt(id));
                } else {
                    self.core.prompts[i].step = PStep::BeforeStart;
                    let d = self.core.step_delay(k);
                    k.resume(d, PiEv::Prompt(id));
                }
            }
            PStep::Compaction => {
                self.core.compacting = Compacting::None;
                self.prompt_note(k, id, Step::CompactionDone);
                self.hook(k, Hook::SessionCompact);
                self.core.prompts[i].step = PStep::BeforeStart;
                let d = self.core.step_delay(k);
                k.resume(d, PiEv::Prompt(id));
            }
            PStep::BeforeStart => {
                self.prompt_note(k, id, Step::BeforeAgentStart);
                self.hook(k, Hook::BeforeAgentStart);
                self.core.prompts[i].step = PStep::Images;
                let d = self.core.handler_delay(k);
                k.resume(d, PiEv::Prompt(id));
            }
            PStep::Images => {
                self.core.prompts[i].step = PStep::Start;
                let d = self.core.step_delay(k);
                k.resume(d, PiEv::Prompt(id));
            }
            PStep::Start => {
                // Step 12, one synchronous segment: take nextTurn, set the options, start the run.
                let taken = std::mem::take(&mut self.core.next_turn);
                let ids: Vec<_> = taken.iter().flat_map(|p| p.ids().iter().copied()).collect();
                self.core.note(
                    k,
                    Actor::Host,
                    Note::TookNextTurn {
                        prompt: id,
                        payload: Payload::from_slice(&ids),
                        items: taken.len() as u32,
                    },
                );
                let mut items = Vec::with_capacity(taken.len() + 1);
                items.push(self.core.prompts[i].payload.clone());
                items.extend(taken);
                self.end_prompt(id);
                self.core.run_options = true;
                self.core.start_run(k, Starter::Prompt(id), items, true);
            }
            PStep::Done => {}
        }
    }

    fn run_note(&self, k: &mut PiKernel, run: u32, note: RunNote) {
        self.core.note(k, Actor::Host, Note::Run { run, note });
    }

    /// Take one queued message into the run (queues are one-at-a-time by default).
    fn poll(&mut self, k: &mut PiKernel, run: u32, queue: Queue) -> bool {
        let item = match queue {
            Queue::Steering => self.core.steering.pop_front(),
            Queue::FollowUp => self.core.follow_up.pop_front(),
            Queue::PendingCustom => None,
        };
        let Some(payload) = item else { return false };
        self.core.append_all(k, std::slice::from_ref(&payload));
        self.core.note(
            k,
            Actor::Host,
            Note::Polled {
                run,
                queue,
                payload,
            },
        );
        true
    }

    fn run_step(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        let generation = self.core.generation;
        let timing = self.core.cfg.timing;
        match self.core.runs[i].phase {
            RPhase::AgentStart => {
                let inner = self.core.runs[i].inner;
                self.run_note(k, id, RunNote::AgentStart { inner });
                self.hook(k, Hook::AgentStart);
                if !self.poll(k, id, Queue::Steering) && inner > 1 {
                    self.poll(k, id, Queue::FollowUp);
                }
                self.core.runs[i].phase = RPhase::Request;
                let d = self.core.handler_delay(k);
                k.resume(d, PiEv::Run(id));
            }
            RPhase::Request => {
                self.core.requests += 1;
                let harness = match generation {
                    Gen::V099 => self.core.run_options,
                    Gen::V058 => self.core.runs[i].harness,
                };
                let req = self.core.requests;
                self.core.emit(k, Actor::Host, Ev::Request { req, harness });
                let run = &mut self.core.runs[i];
                run.phase = if run.tools_left > 0 {
                    RPhase::Tools
                } else {
                    RPhase::TurnEnd
                };
                let d = k.delay(timing.model_ms.min, timing.model_ms.max, "model");
                k.resume(d, PiEv::Run(id));
            }
            RPhase::Tools => {
                let run = &mut self.core.runs[i];
                run.tools_left -= 1;
                run.had_tools = true;
                run.phase = RPhase::TurnEnd;
                self.run_note(k, id, RunNote::ToolCalls);
                let d = k.delay(timing.tool_ms.min, timing.tool_ms.max, "tools");
                k.resume(d, PiEv::Run(id));
            }
            RPhase::TurnEnd => {
                self.run_note(k, id, RunNote::TurnEnd);
                self.hook(k, Hook::TurnEnd);
                if !self.core.pending_custom.is_empty() {
                    let ids: Vec<_> = self
                        .core
                        .pending_custom
                        .iter()
                        .flat_map(|p| p.ids().to_vec())
                        .collect();
                    self.core.flush_pending_custom(k);
                    let payload = Payload::from_slice(&ids);
                    self.core.note(
                        k,
                        Actor::Host,
                        Note::Polled {
                            run: id,
                            queue: Queue::PendingCustom,
                            payload,
                        },
                    );
                }
                let had_tools = std::mem::take(&mut self.core.runs[i].had_tools);
                let steered = self.poll(k, id, Queue::Steering);
                let more = had_tools || steered || self.poll(k, id, Queue::FollowUp);
                self.core.runs[i].phase = if more {
                    RPhase::Request
                } else {
                    RPhase::AgentEnd
                };
                let d = self.core.handler_delay(k);
                k.resume(d, PiEv::Run(id));
            }
            RPhase::AgentEnd => {
                let inner = self.core.runs[i].inner;
                match generation {
                    Gen::V099 => {
                        // Handlers are awaited before the agent finishes its run.
                        self.run_note(k, id, RunNote::AgentEnd { inner });
                        self.hook(k, Hook::AgentEnd);
                        self.core.agent_active = None;
                        self.core.emit(k, Actor::Host, Ev::AgentRun { on: false });
                    }
                    Gen::V058 => {
                        // The agent's finally clears isStreaming before un-awaited listeners run.
                        self.core.agent_active = None;
                        self.core.run_active = false;
                        self.core.emit(k, Actor::Host, Ev::AgentRun { on: false });
                        self.core.emit(k, Actor::Host, Ev::RunFlag { on: false });
                        self.run_note(k, id, RunNote::AgentEnd { inner });
                        self.hook(k, Hook::AgentEnd);
                    }
                }
                self.core.runs[i].phase = RPhase::PostRun;
                let d = self.core.handler_delay(k);
                k.resume(d, PiEv::Run(id));
            }
            RPhase::PostRun => self.post_run(k, id),
            RPhase::CompactionDone => {
                self.core.compacting = Compacting::None;
                self.run_note(k, id, RunNote::CompactionDone);
                self.hook(k, Hook::SessionCompact);
                self.core.runs[i].phase = RPhase::Continue;
                let d = match generation {
                    Gen::V099 => self.core.step_delay(k),
                    Gen::V058 => {
                        self.core.pending_continues += 1;
                        self.run_note(k, id, RunNote::ContinueScheduled);
                        100
                    }
                };
                k.resume(d, PiEv::Run(id));
            }
            RPhase::Continue => {
                if generation == Gen::V058 {
                    self.core.pending_continues -= 1;
                }
                self.run_note(k, id, RunNote::Continue);
                if self.core.agent_active.is_some() {
                    let who = Starter::Continue(id);
                    self.core.emit(
                        k,
                        Actor::Host,
                        Ev::Starter {
                            who,
                            accepted: false,
                        },
                    );
                    let error = HostError::ContinueBusy;
                    self.core.note(
                        k,
                        Actor::Host,
                        Note::Error {
                            prompt: None,
                            error,
                        },
                    );
                    self.finish_or_settle(k, id);
                    return;
                }
                self.core.agent_active = Some(id);
                let who = Starter::Continue(id);
                self.core.emit(
                    k,
                    Actor::Host,
                    Ev::Starter {
                        who,
                        accepted: true,
                    },
                );
                self.core.emit(k, Actor::Host, Ev::AgentRun { on: true });
                if generation == Gen::V058 {
                    self.core.run_active = true;
                    self.core.emit(k, Actor::Host, Ev::RunFlag { on: true });
                }
                let tools = timing.tool_turns;
                let tools_left = tools.min + k.choose(tools.max - tools.min + 1, "tool turns");
                let run = &mut self.core.runs[i];
                run.inner += 1;
                run.tools_left = tools_left;
                run.phase = RPhase::AgentStart;
                let d = self.core.handler_delay(k);
                k.resume(d, PiEv::Run(id));
            }
            RPhase::Settle => {
                self.core.flush_pending_custom(k);
                self.core.run_options = false;
                let spurious = self.core.agent_active.is_some();
                self.core.run_active = false;
                self.core.emit(k, Actor::Host, Ev::RunFlag { on: false });
                self.core.settling += 1;
                self.run_note(k, id, RunNote::Settle { spurious });
                self.core.emit(k, Actor::Host, Ev::Settled);
                self.hook(k, Hook::AgentSettled);
                self.core.runs[i].phase = RPhase::SettledDone;
                let d = self.core.handler_delay(k);
                k.resume(d, PiEv::Run(id));
            }
            RPhase::SettledDone => {
                self.core.settling -= 1;
                self.core.runs[i].phase = RPhase::Done;
                let deferred = std::mem::take(&mut self.core.deferred);
                if !deferred.is_empty() {
                    let count = deferred.len() as u32;
                    self.run_note(k, id, RunNote::DeferredActions { count });
                }
                for d in deferred {
                    match d {
                        Deferred::Prompt(p) => {
                            self.core
                                .note(k, Actor::Host, Note::DeferredRuns { prompt: Some(p) });
                            self.core.prompt_begin(k, p);
                        }
                        Deferred::Direct(payload) => {
                            self.core
                                .note(k, Actor::Host, Note::DeferredRuns { prompt: None });
                            let run = self.core.runs.len() as u32 + 1;
                            self.core
                                .start_run(k, Starter::Direct(run), vec![payload], false);
                        }
                    }
                }
            }
            RPhase::Done => {}
        }
    }

    /// `_handlePostAgentRun` and the before-settle boundary.
    fn post_run(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        let generation = self.core.generation;
        let timing = self.core.cfg.timing;
        // 0.58 schedules continue() with setTimeout: an ordinary event, never a microtask.
        let continue_after = |k: &mut PiKernel, d: u64, ev: PiEv| match generation {
            Gen::V058 => k.schedule(d, ev),
            Gen::V099 => k.resume(d, ev),
        };
        let on_timer = |core: &mut PiCore, k: &mut PiKernel| {
            if generation == Gen::V058 {
                core.pending_continues += 1;
                core.note(
                    k,
                    Actor::Host,
                    Note::Run {
                        run: id,
                        note: RunNote::ContinueScheduled,
                    },
                );
            }
        };
        if self.core.fires(k, PiFault::Retries) {
            self.run_note(k, id, RunNote::Retry);
            on_timer(&mut self.core, k);
            self.core.runs[i].phase = RPhase::Continue;
            let d = k.delay(timing.retry_ms.min, timing.retry_ms.max, "retry backoff");
            continue_after(k, d, PiEv::Run(id));
        } else if self.core.compacting == Compacting::None
            && self.core.fires(k, PiFault::CompactionContinue)
        {
            self.core.compacting = Compacting::Run;
            self.run_note(k, id, RunNote::CompactionStart);
            self.core.runs[i].phase = RPhase::CompactionDone;
            let d = k.delay(
                timing.compaction_ms.min,
                timing.compaction_ms.max,
                "compaction",
            );
            continue_after(k, d, PiEv::Run(id));
        } else if !self.core.steering.is_empty() || !self.core.follow_up.is_empty() {
            on_timer(&mut self.core, k);
            self.core.runs[i].phase = RPhase::Continue;
            let d = self.core.step_delay(k);
            continue_after(k, d, PiEv::Run(id));
        } else if generation == Gen::V099 && self.core.fires(k, PiFault::ExtraContinues) {
            self.core.runs[i].phase = RPhase::Continue;
            let d = self.core.handler_delay(k);
            continue_after(k, d, PiEv::Run(id));
        } else {
            self.finish_or_settle(k, id);
        }
    }

    /// 0.99 ends every `_runAgentPrompt` in its `finally` with `_emitAgentSettled`; 0.58 just ends.
    fn finish_or_settle(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        match self.core.generation {
            Gen::V099 => {
                self.core.runs[i].phase = RPhase::Settle;
                k.resume(0, PiEv::Run(id));
            }
            Gen::V058 => {
                self.core.runs[i].phase = RPhase::Done;
                self.run_note(k, id, RunNote::Done);
            }
        }
    }

    /// Try a timed fault again later when the host is not in a state where it can happen.
    fn retry_timed(&mut self, k: &mut PiKernel, i: u32) {
        self.timed.retry(k, i, PiEv::Timed(i));
    }

    fn timed_fault(&mut self, k: &mut PiKernel, i: u32) {
        if k.quiescent() {
            return;
        }
        let c = &self.core;
        let busy_or_preparing = c.is_streaming()
            || c.compacting != Compacting::None
            || c.live_prompts > 0
            || c.settling > 0
            || c.replacing;
        match self.timed.fault(i) {
            f @ (PiFault::ManualCompaction | PiFault::TreeSummarization) => {
                if busy_or_preparing || c.agent_active.is_some() {
                    return self.retry_timed(k, i);
                }
                let (mode, note) = if f == PiFault::ManualCompaction {
                    (Compacting::Manual, FaultNote::ManualCompactionStart)
                } else {
                    (Compacting::Tree, FaultNote::TreeStart)
                };
                self.core.compacting = mode;
                self.core.note(k, Actor::Fault, Note::Fault(note));
                let s = self.core.cfg.timing.compaction_ms;
                let d = k.delay(s.min, s.max, "compaction");
                k.schedule(d, PiEv::FaultEnd(f));
            }
            PiFault::SessionReplacement => {
                if !c.quiet() {
                    return self.retry_timed(k, i);
                }
                self.core.session += 1;
                self.core.replacing = true;
                self.core.next_turn.clear();
                self.core.pending_custom.clear();
                self.core.steering.clear();
                self.core.follow_up.clear();
                let session = self.core.session;
                self.core.note(
                    k,
                    Actor::Fault,
                    Note::Fault(FaultNote::Replaced { session }),
                );
                let d = self.core.step_delay(k);
                k.schedule(d, PiEv::SessionStart);
            }
            PiFault::UserPrompts => {
                // The user submits only when no prompt is in flight (preparing or deferred): a
                // user racing a wake prompt already on its way is pi#6744, which no wake logic
                // can prevent, not a wake race.
                if c.live_prompts > 0
                    || c.deferred.iter().any(|d| matches!(d, Deferred::Prompt(_)))
                    || c.replacing
                    || matches!(c.compacting, Compacting::Manual | Compacting::Tree)
                {
                    return self.retry_timed(k, i);
                }
                let steer = self.core.is_streaming();
                let behavior = steer.then_some(api::DeliverAs::Steer);
                let id = self.core.new_prompt(true, Payload::None, behavior);
                self.core
                    .note(k, Actor::User, Note::UserPrompt { prompt: id, steer });
                self.core.prompt_begin(k, id);
            }
            f => unreachable!("{f:?} is not a timed fault"),
        }
    }

    fn fault_end(&mut self, k: &mut PiKernel, f: PiFault) {
        self.core.compacting = Compacting::None;
        match f {
            PiFault::ManualCompaction => {
                let failed = k.chance(crate::sim::choice::Ratio::new(1, 4), "compaction fails");
                self.core.note(
                    k,
                    Actor::Fault,
                    Note::Fault(FaultNote::ManualCompactionEnd { failed }),
                );
                let hook = if failed {
                    Hook::SessionCompactFailed
                } else {
                    Hook::SessionCompact
                };
                self.hook(k, hook);
            }
            PiFault::TreeSummarization => {
                let cancelled = k.chance(crate::sim::choice::Ratio::new(1, 3), "tree cancelled");
                self.core.note(
                    k,
                    Actor::Fault,
                    Note::Fault(FaultNote::TreeEnd { cancelled }),
                );
                if !cancelled {
                    self.hook(k, Hook::SessionTree);
                }
            }
            other => unreachable!("{other:?} does not end"),
        }
    }

    fn session_start(&mut self, k: &mut PiKernel) {
        self.core.replacing = false;
        // What the old session still owed is the documented loss of replacement (P-7).
        let owed = k.sink.owed().to_vec();
        for msg in owed {
            let reason = vocab::SESSION_REPLACED;
            self.core.emit(k, Actor::Host, Ev::Dropped { msg, reason });
        }
        let session = self.core.session;
        self.core
            .note(k, Actor::Host, Note::SessionStart { session });
        self.hook(k, Hook::SessionStart);
    }
}

impl World for PiHost {
    type Ev = PiEv;
    type Sink = Monitor<Note>;

    fn mix(&self) -> Mix {
        Mix {
            faults: self.core.faults.mix(),
            producers: self.kinds_on.iter().map(|k| k.name()).collect(),
        }
    }

    fn start(&mut self, k: &mut PiKernel) {
        k.choices.set_constants(&self.wake.constants_ms());
        self.plan(k);
        self.core.emit(k, Actor::Host, Ev::Idle { idle: true });
        let session = self.core.session;
        self.core
            .note(k, Actor::Host, Note::SessionStart { session });
        self.hook(k, Hook::SessionStart);
        self.core.sync_idle(k);
    }

    fn step(&mut self, k: &mut PiKernel, ev: PiEv) {
        match ev {
            PiEv::Produce(i) => {
                let p = &self.producers[i as usize];
                let (kind, source) = (p.kind, p.source);
                let id = k.produce(kind, source, self.core.state() as u8);
                self.core.mark_arrival(k);
                self.core
                    .note(k, Actor::Wake, Note::Handler(Hook::Message(id)));
                let msg = Message { id, kind, source };
                self.call(k, |w, pi| w.on_message(pi, msg));
            }
            PiEv::Prompt(id) => self.prompt_step(k, id),
            PiEv::Run(id) => self.run_step(k, id),
            PiEv::Timer(id) => {
                if std::mem::replace(&mut self.core.timers[id as usize], false) {
                    self.hook(k, Hook::Timer(id));
                }
            }
            PiEv::SessionStart => self.session_start(k),
            PiEv::Timed(i) => self.timed_fault(k, i),
            PiEv::FaultEnd(f) => self.fault_end(k, f),
        }
        self.run_inputs(k);
        self.core.sync_idle(k);
    }
}

/// The pi family: pi 0.99's `AgentSession` and the older 0.58 host, their wake logic written
/// against [`PiWake`].
pub struct PiFamily;

impl Family for PiFamily {
    const NAME: &'static str = "pi";
    const HOSTS: &'static [(Host, Gen)] = &[
        (
            // pi 0.99 `AgentSession` (earendil-works/pi @014b48bf).
            Host {
                name: "pi",
                version_label: "pi-0.99",
                describe: "pi 0.99 AgentSession: prompt() steps 0-12, run flag spanning inner runs, agent_settled, deferral while settling",
            },
            Gen::V099,
        ),
        (
            // pi 0.58 (badlogic/pi-mono v0.58.3), the older host of H-5.
            Host {
                name: "pi-0.58",
                version_label: "pi-0.58",
                describe: "pi 0.58: isIdle per inner run, continue() on a timer, agent_end listeners not awaited, no agent_settled",
            },
            Gen::V058,
        ),
    ];
    const INVARIANTS: &'static [Invariant] = &[
        Invariant::NoLoss,
        Invariant::ExactlyOnce,
        Invariant::Fifo,
        Invariant::BoundedLatency,
        Invariant::SingleStarter,
        Invariant::FlagCoherence,
        Invariant::Harness,
    ];
    const WINDOWS: &'static [Window] = vocab::WINDOWS;
    const COMPACT_RUNS: bool = false;

    type Variant = Gen;
    type Fault = PiFault;
    type Note = Note;
    type Config = PiConfig;
    type Producers = sections::RawProducers;
    type Timing = sections::RawTiming;
    type Wake = dyn PiWake;
    type World = PiHost;

    fn state_name(code: u8) -> &'static str {
        note::state_name(code)
    }

    fn config(
        cx: Cx<'_>,
        producers: sections::RawProducers,
        timing: sections::RawTiming,
        faults: Vec<(PiFault, FaultSpec)>,
    ) -> Result<PiConfig> {
        sections::config(cx, producers, timing, faults)
    }

    fn scope(config: &mut PiConfig, messages_max: u64) {
        config.producers.messages.cap(messages_max);
    }

    fn world(generation: Gen, config: &PiConfig, wake: Box<dyn PiWake>) -> PiHost {
        PiHost::new(generation, config.clone(), wake)
    }

    fn external(slot: SlotRef, constants_ms: Vec<u64>) -> Box<dyn PiWake> {
        Box::new(adapter::ExternalPi::new(slot, constants_ms))
    }
}

impl Registry {
    /// Add (or replace) a pi wake logic under `name`.
    pub fn with_pi(
        self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<dyn PiWake> + Send + Sync + 'static,
    ) -> Registry {
        self.with::<PiFamily>(name, summary, make)
    }
}
