//! An agent run's phases (`docs/hosts/pi.md`): agent_start, requests, tools, turn_end,
//! agent_end, retries, compaction, continue, settle and the deferred actions after it; 0.99 and
//! 0.58 where they differ. Starting a run is synchronous and lives in `core.rs` (`start_run`).

use super::core::{Compacting, PiCore, RPhase};
use super::faults::PiFault;
use super::host::PiHost;
use super::note::{Hook, HostError, Note, Queue, RunNote};
use super::{Gen, PiEv, PiKernel};
use crate::family::common::Core;
use crate::family::common::count_down;
use crate::sim::msg::Payload;
use crate::sim::record::{Actor, Ev, Starter};

/// pi 0.58's one listener order the model draws, after a retryable error: whether the wake
/// logic's `turn_end` handler runs before the agent's `agent_end` (0) or after it (1). A
/// microtask order (the two are microtasks of one instant), so `wakesim conform` enumerates it.
const LISTENER_ORDER: &str = "microtask order";

impl PiHost {
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

    /// A run's next phase.
    pub(super) fn run_step(&mut self, k: &mut PiKernel, id: u32) {
        match self.core.runs[id as usize - 1].phase {
            RPhase::Prepare => self.prepare_before_start(k, id),
            RPhase::PrepareDone => self.prepared_direct(k, id),
            RPhase::PromptPrepares => {}
            RPhase::AgentStart => self.agent_start(k, id),
            RPhase::Request => self.model_request(k, id),
            RPhase::Tools => self.tool_calls(k, id),
            RPhase::TurnEnd => self.turn_end(k, id),
            RPhase::TurnPoll => {
                self.turn_poll(k, id);
                self.run_step(k, id);
            }
            RPhase::AgentEnd => self.agent_end(k, id),
            RPhase::PostRun => self.post_run(k, id),
            RPhase::CompactionDone => self.compaction_done(k, id),
            RPhase::Continue => self.agent_continue(k, id),
            RPhase::Settle => self.settle(k, id),
            RPhase::SettledDone => self.settled_done(k, id),
            RPhase::Done => {}
        }
    }

    /// pi 1.x: a direct run's compaction check returned; its `before_agent_start` handlers run
    /// (the probe's take the handler delay), so a custom message's run gets the harness too.
    fn prepare_before_start(&mut self, k: &mut PiKernel, id: u32) {
        self.hook(k, Hook::BeforeAgentStart);
        self.core.runs[id as usize - 1].phase = RPhase::PrepareDone;
        let d = self.core.handler_delay(k);
        k.resume(d, PiEv::Run(id));
    }

    /// pi 1.x: a direct run's `_prepareRun` returns its message and the pending nextTurn ones.
    fn prepared_direct(&mut self, k: &mut PiKernel, id: u32) {
        let at = (self.core.direct_pending.iter())
            .position(|(r, _)| *r == id)
            .expect("a preparing direct run has its message");
        let (_, msg) = self.core.direct_pending.swap_remove(at);
        let mut items = vec![msg];
        items.append(&mut self.core.next_turn);
        self.run_note(k, id, RunNote::Prepared);
        self.core.start_prepared(k, id, Starter::Direct(id), items);
    }

    /// An inner run begins: `agent_start`, then one steering (or follow-up) message.
    fn agent_start(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        let inner = self.core.runs[i].inner;
        self.run_note(k, id, RunNote::AgentStart { inner });
        self.core.runs[i].phase = RPhase::Request;
        match self.core.generation {
            // pi 0.99's agent awaits the agent_start handlers; `runLoop` then polls steering
            // before its first request (`poll_at_request`, set where the run or continue()
            // started).
            Gen::V099 => {
                self.hook(k, Hook::AgentStart);
                k.schedule_micro(PiEv::Handlers(id));
            }
            // 0.58's agent does not await them (`listen.rs`): it polls and sends its request.
            Gen::V058 => {
                let follow_up_first = self.core.runs[i].follow_up_first;
                if !self.poll(k, id, Queue::Steering) && inner > 1 && follow_up_first {
                    self.poll(k, id, Queue::FollowUp);
                }
                self.model_request(k, id);
            }
        }
    }

    /// A model request carries every message appended so far.
    fn model_request(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        let generation = self.core.generation;
        let timing = self.core.cfg.timing;
        if std::mem::take(&mut self.core.runs[i].poll_at_request) {
            self.poll(k, id, Queue::Steering);
        }
        self.core.requests += 1;
        let harness = match generation {
            Gen::V099 => self.core.run_options,
            Gen::V058 => self.core.runs[i].harness,
        };
        let req = self.core.requests;
        self.core.emit(k, Actor::Host, Ev::Request { req, harness });
        // A reply without tool calls may be a retryable error (pi's agent loop then ends the
        // inner run at once: turn_end, agent_end, no queue polled; `_handlePostAgentRun`
        // retries). Decided before the reply's delay, as the real lane's scripted model does.
        let last = self.core.runs[i].tools_left == 0;
        let failed = last && self.core.fires(k, PiFault::Retries);
        let run = &mut self.core.runs[i];
        run.failed = failed;
        run.phase = if run.tools_left > 0 {
            RPhase::Tools
        } else {
            RPhase::TurnEnd
        };
        let d = k.delay(timing.model_ms.min, timing.model_ms.max, "model");
        k.resume(d, PiEv::Run(id));
    }

    /// The reply's tool calls execute.
    fn tool_calls(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        let timing = self.core.cfg.timing;
        // A reply with tool calls is a successful assistant message: pi resets `_retryAttempt`.
        self.core.retry_attempt = 0;
        let run = &mut self.core.runs[i];
        run.tools_left = (run.tools_left.checked_sub(1))
            .expect("model invariant broken: a tool turn ended with none left");
        run.had_tools = true;
        run.phase = RPhase::TurnEnd;
        self.run_note(k, id, RunNote::ToolCalls);
        let d = k.delay(timing.tool_ms.min, timing.tool_ms.max, "tools");
        k.resume(d, PiEv::Run(id));
    }

    /// `turn_end`: pending custom messages flush; a queued message or tool results make another turn.
    fn turn_end(&mut self, k: &mut PiKernel, id: u32) {
        self.run_note(k, id, RunNote::TurnEnd);
        match self.core.generation {
            // pi 0.99's agent awaits the turn_end handlers, then flushes pending custom
            // messages and polls its queues (`runLoop` after `emit(turn_end)`).
            Gen::V099 => {
                self.hook(k, Hook::TurnEnd);
                self.core.runs[id as usize - 1].phase = RPhase::TurnPoll;
                k.schedule_micro(PiEv::Handlers(id));
            }
            // 0.58's agent polls at once and goes on (its next request, or agent_end and
            // isStreaming cleared) in a few microtasks. After a reply the event queue still
            // has the reply's message events to get through, and the agent is first (seen on
            // the real 0.58.3: g0-idle seed 0). After a retryable error (`start`, `error`: no
            // deltas, no tools) the queue is one microtask behind the agent: it begins the
            // turn_end handlers in the very microtask in which the agent emits agent_end and
            // clears isStreaming, just before it. The extension runner awaits each handler
            // (`await handler(event, ctx)`), so the first turn_end handler of the first
            // extension that has one runs while the agent still streams, and every later
            // handler runs after agent_end: which the wake logic's sending handler is depends
            // on the extensions loaded before it and on its own handlers before that one
            // (G2's `remember` comes before its flush: it sees idle; g4-gentle's flush is its
            // only one: busy). The model does not know that list, so it takes both orders
            // (`LISTENER_ORDER`).
            Gen::V058 => {
                let queue_idle = self.core.listening.is_none() && self.core.listeners.is_empty();
                self.core.listen(k, id, Hook::TurnEnd);
                self.turn_poll(k, id);
                let run = &self.core.runs[id as usize - 1];
                let (failed, next_turn) = (run.failed, run.phase == RPhase::Request);
                if failed && (!queue_idle || k.choose(2, LISTENER_ORDER) == 0) {
                    k.schedule(0, PiEv::Run(id));
                } else if next_turn && queue_idle {
                    // Another turn (tool results, a steer): its request follows `turn_start`
                    // and the awaits of `streamAssistantResponse` (the context transform,
                    // `convertToLlm`, the API key), several microtasks after turn_end, so an
                    // idle queue runs the wake logic's turn_end handler first; a run that
                    // handler starts makes its first request a few microtasks later still
                    // (seen on the real 0.58.3, g0-idle seeds 24 and 100: the wake's direct
                    // run R3 starts in the handler, then R2's tool turn requests, then R3).
                    k.schedule_micro(PiEv::Run(id));
                } else {
                    self.run_step(k, id);
                }
            }
        }
    }

    /// After `turn_end`: pending custom messages flush; the queues are polled; a queued message
    /// or tool results make another turn, else the inner run ends.
    fn turn_poll(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
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
        let failed = self.core.runs[i].failed;
        let steered = !failed && self.poll(k, id, Queue::Steering);
        let more = !failed && (had_tools || steered || self.poll(k, id, Queue::FollowUp));
        if more {
            // The reply that ended this turn was not the inner run's last: it succeeded.
            self.core.retry_attempt = 0;
        }
        // The inner run ends on a successful reply: it is the context's last message.
        if !more && !failed {
            self.core.replied = true;
        }
        self.core.runs[i].phase = if more {
            RPhase::Request
        } else {
            RPhase::AgentEnd
        };
    }

    /// `agent_end` of an inner run.
    fn agent_end(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        let generation = self.core.generation;
        let inner = self.core.runs[i].inner;
        match generation {
            Gen::V099 => {
                // Handlers are awaited before the agent finishes its run: the agent stays busy
                // through the handlers' delay and is freed in `post_run` (pi 0.99.1:
                // `finishRun` clears `activeRun` after the executor has awaited every agent_end
                // listener; found by `wakesim conform`).
                self.run_note(k, id, RunNote::AgentEnd { inner });
                self.hook(k, Hook::AgentEnd);
            }
            Gen::V058 => {
                // The agent clears isStreaming at its agent_end event, before un-awaited
                // listeners run, and again in `_runLoop`'s finally a few microtasks later.
                self.core.clear_streaming(k);
                self.run_note(k, id, RunNote::AgentEnd { inner });
                k.schedule_micro(PiEv::Finally);
                // Its handlers, then the retry check, run on the event queue (`listen.rs`).
                self.core.runs[i].phase = RPhase::PostRun;
                self.core.listen(k, id, Hook::AgentEnd);
                return;
            }
        }
        self.core.runs[i].phase = RPhase::PostRun;
        k.schedule_micro(PiEv::Handlers(id));
    }

    /// Compaction between inner runs is done; the run continues.
    fn compaction_done(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        let generation = self.core.generation;
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

    /// `agent.continue()`: another inner run, or rejected when the agent is busy.
    fn agent_continue(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        let generation = self.core.generation;
        let timing = self.core.cfg.timing;
        if generation == Gen::V058 {
            count_down(
                &mut self.core.pending_continues,
                "pi 0.58's scheduled continues",
            );
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
        // A retry's continue() finds another run's reply last in the context (that run started
        // while this one slept its backoff: the flag was cleared under it, P-4's spurious
        // settle): pi's `Agent.continue()` then runs a queued message, or throws "Cannot
        // continue from message role: assistant" and this run settles (pi 1.6.0, seen on the
        // real host: `wakesim conform scenarios/real-pi-1.6.0/g1-counter-strands-between-
        // inner-runs.toml --seeds 4923..4924`; 0.99.1's `Agent.continue` is the same).
        let from_other_reply =
            generation == Gen::V099 && !self.core.runs[i].follow_up_first && self.core.replied;
        if from_other_reply && self.core.steering.is_empty() && self.core.follow_up.is_empty() {
            let who = Starter::Continue(id);
            // The driver reports the call as accepted (no run held the agent); it throws after.
            self.core.emit(
                k,
                Actor::Host,
                Ev::Starter {
                    who,
                    accepted: true,
                },
            );
            let error = HostError::ContinueFromReply;
            self.core.note(
                k,
                Actor::Host,
                Note::Error {
                    prompt: None,
                    error,
                },
            );
            self.core.runs[i].rejected = true;
            self.finish_or_settle(k, id);
            return;
        }
        if from_other_reply {
            self.core.runs[i].follow_up_first = true;
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
        // pi 0.99's `Agent.continue()` from the assistant's reply drains a steering message,
        // else a follow-up, at the call, before agent_start.
        // Its `runLoop` then polls steering before the first request, unless the call took a
        // steering message (`skipInitialSteeringPoll`).
        if generation == Gen::V099 {
            let took_steer = self.core.runs[i].follow_up_first && self.poll(k, id, Queue::Steering);
            if self.core.runs[i].follow_up_first && !took_steer {
                self.poll(k, id, Queue::FollowUp);
            }
            self.core.runs[i].poll_at_request = !took_steer;
        }
        let tools = timing.tool_turns;
        let tools_left = tools.min + k.choose(tools.max - tools.min + 1, "tool turns");
        let run = &mut self.core.runs[i];
        run.inner += 1;
        run.tools_left = tools_left;
        run.phase = RPhase::AgentStart;
        match generation {
            Gen::V099 => {
                let d = self.core.handler_delay(k);
                k.resume(d, PiEv::Run(id));
            }
            Gen::V058 => {
                self.core.listen(k, id, Hook::AgentStart);
                k.resume(0, PiEv::Run(id));
            }
        }
    }

    /// 0.99's `finally`: the run flag clears and `agent_settled` handlers run.
    fn settle(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
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
        k.schedule_micro(PiEv::Handlers(id));
    }

    /// The settled handlers returned: the deferred prompts and direct runs start, one after
    /// another (`Chain`); with none, the run's `_runAgentPrompt` returns.
    fn settled_done(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        count_down(&mut self.core.settling, "pi runs emitting agent_settled");
        self.core.runs[i].phase = RPhase::Done;
        let deferred = std::mem::take(&mut self.core.deferred);
        if deferred.is_empty() {
            return self.core.run_done(k, id, false);
        }
        let count = deferred.len() as u32;
        self.run_note(k, id, RunNote::DeferredActions { count });
        self.core.run_deferred(k, id, deferred);
    }

    /// `_handlePostAgentRun` and the before-settle boundary.
    fn post_run(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        let generation = self.core.generation;
        let timing = self.core.cfg.timing;
        if generation == Gen::V099 && self.core.agent_active == Some(id) {
            self.core.agent_active = None;
            self.core.emit(k, Actor::Host, Ev::AgentRun { on: false });
        }
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
        let retry = std::mem::take(&mut self.core.runs[i].failed);
        // The inner run's last reply: a retryable error, or a success, which resets pi's
        // attempt counter.
        self.core.retry_attempt = if retry {
            self.core.retry_attempt + 1
        } else {
            0
        };
        // Which continue() follows: from the context (a retry drops the failed reply; a
        // before-settle continuation adds an entry) or from the assistant's reply (the rest).
        self.core.runs[i].follow_up_first = !retry;
        if retry {
            self.run_note(k, id, RunNote::Retry);
            on_timer(&mut self.core, k);
            self.core.runs[i].phase = RPhase::Continue;
            let d = backoff(generation, timing.retry_ms, self.core.retry_attempt);
            if generation == Gen::V058 {
                // The backoff sleeps inside the event queue (`listen.rs`, stage 4).
                self.core.listening = Some((id, Hook::AgentEnd, 4));
                k.schedule(d, PiEv::Listen);
            } else {
                continue_after(k, d, PiEv::Run(id));
            }
        } else if self.core.compacting == Compacting::None
            && self.core.fires(k, PiFault::CompactionContinue)
        {
            self.core.replied = false;
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
            // pi 0.99's `_handlePostAgentRun` awaits only its compaction check, which takes no
            // time without a compaction, and then continue()s at once (found by `wakesim
            // conform`: a steer during the agent_end handlers, continued a step delay late).
            let d = match generation {
                Gen::V099 => 0,
                Gen::V058 => self.core.step_delay(k),
            };
            continue_after(k, d, PiEv::Run(id));
        } else if generation == Gen::V099 && self.core.fires(k, PiFault::ExtraContinues) {
            // The boundary chains a custom entry: the context no longer ends on the reply.
            self.core.replied = false;
            self.core.runs[i].follow_up_first = false;
            self.core.runs[i].phase = RPhase::Continue;
            let d = self.core.handler_delay(k);
            continue_after(k, d, PiEv::Run(id));
        } else {
            self.finish_or_settle(k, id);
        }
    }

    /// 0.99 ends every `_runAgentPrompt` in its `finally` with `_emitAgentSettled`; 0.58 just ends.
    pub(super) fn finish_or_settle(&mut self, k: &mut PiKernel, id: u32) {
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
}

/// pi's retry backoff, as pi computes it (no draw): `baseDelayMs * 2^(attempt-1)` with
/// `retry_ms.min` as `baseDelayMs`; 0.99 and 1.x cap it at `maxAgentDelayMs` (`retry_ms.max`,
/// pi-ai's `retryDelayMs`), 0.58.3 does not (`_handleRetryableError`). The real-pi driver sets
/// pi's retry settings from the same `retry_ms`.
pub(super) fn backoff(generation: Gen, retry_ms: crate::family::common::Span, attempt: u32) -> u64 {
    let doubled = retry_ms
        .min
        .saturating_mul(1u64 << attempt.saturating_sub(1).min(62));
    match generation {
        Gen::V099 => doubled.min(retry_ms.max),
        Gen::V058 => doubled,
    }
}
