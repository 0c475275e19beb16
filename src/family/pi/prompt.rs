//! `prompt()` from step 3 on (`docs/hosts/pi.md`): one await per event, each step a method.
//! Steps 0-2 are synchronous and live in `core.rs` (`prompt_begin`).

use super::api::{self, InputAction, InputEvent};
use super::core::{Compacting, PStep};
use super::faults::PiFault;
use super::host::PiHost;
use super::note::{Hook, HostError, Note, Step};
use super::{Gen, PiEv, PiKernel, vocab};
use crate::family::common::Core;
use crate::family::common::count_down;
use crate::sim::msg::Payload;
use crate::sim::record::{Actor, Starter};

impl PiHost {
    /// The prompt's preparation ends; its `prompt()` returns (`threw`: throws) unless it
    /// started a run, which its deferred-action chain, if any, then waits for.
    pub(super) fn end_prompt(&mut self, k: &mut PiKernel, id: u32, returns: Option<bool>) {
        let p = &mut self.core.prompts[id as usize - 1];
        p.step = PStep::Done;
        let parent = p.parent.take();
        // pi 1.x's prompt stopped counting as in flight when its `_startRun` began.
        if p.run.is_none() {
            count_down(&mut self.core.live_prompts, "pi prompts in flight");
        }
        match returns {
            Some(threw) => self.core.action_done(k, parent, threw),
            None => self.core.prompts[id as usize - 1].parent = parent,
        }
    }

    /// A prompt throws `error` (to its caller, or the extension error channel) and ends.
    fn reject_prompt(&mut self, k: &mut PiKernel, id: u32, error: HostError) {
        let prompt = Some(id);
        self.core
            .note(k, Actor::Host, Note::Error { prompt, error });
        self.fail_prompt(k, id, true);
    }

    /// A prompt ended without starting a run (`threw`: with an error).
    pub(super) fn fail_prompt(&mut self, k: &mut PiKernel, id: u32, threw: bool) {
        if !self.core.prompts[id as usize - 1].from_user {
            self.core.mark(k, vocab::WAKE_PROMPT_FAILED);
        }
        self.end_prompt(k, id, Some(threw));
    }

    fn prompt_note(&self, k: &mut PiKernel, prompt: u32, step: Step) {
        self.core.note(k, Actor::Host, Note::Step { prompt, step });
    }

    /// `prompt()` from step 3 on: one await per event.
    pub(super) fn prompt_step(&mut self, k: &mut PiKernel, id: u32) {
        match self.core.prompts[id as usize - 1].step {
            PStep::Input => self.input_handlers(k, id),
            PStep::Streaming => self.streaming_check(k, id),
            PStep::Auth => self.after_auth(k, id),
            PStep::Compaction => self.after_prep_compaction(k, id),
            PStep::BeforeStart => self.before_agent_start(k, id),
            PStep::Images => self.after_images(k, id),
            PStep::Start => self.start(k, id),
            PStep::Done => {}
        }
    }

    /// Step 3: the input handlers (the wake logic's among them) may claim the prompt.
    fn input_handlers(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        let (from_user, behavior) = (
            self.core.prompts[i].from_user,
            self.core.prompts[i].behavior,
        );
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
            self.fail_prompt(k, id, false);
        } else if self.core.fires(k, PiFault::InputSwallowsPrompt) {
            self.prompt_note(k, id, Step::InputSwallowed);
            self.fail_prompt(k, id, false);
        } else {
            self.core.prompts[i].step = PStep::Streaming;
            let d = self.core.step_delay(k);
            k.resume(d, PiEv::Prompt(id));
        }
    }

    /// Step 5, the single isStreaming check, after the input handlers' await.
    fn streaming_check(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        let behavior = self.core.prompts[i].behavior;
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
                        api::DeliverAs::Steer => self.core.steering.push_back(payload),
                        // pi's prompt() queues every streamingBehavior but followUp as a steer
                        // (`else this._queueSteer`). A wake's nextTurn never gets here:
                        // sendUserMessage refuses it first (`handle.rs`, InvalidDeliverAs).
                        api::DeliverAs::NextTurn => self.core.steering.push_back(payload),
                    }
                    self.prompt_note(k, id, Step::QueuedWhileStreaming(d));
                }
                None => {
                    self.reject_prompt(k, id, HostError::AlreadyProcessing);
                    return;
                }
            }
            self.end_prompt(k, id, Some(false));
            return;
        }
        // pi 1.x flushes held custom messages once the run is prepared (`_startRun`).
        if !self.core.v16 {
            self.core.flush_pending_custom(k);
        }
        self.core.prompts[i].auth_fails = self.core.fires(k, PiFault::AuthError);
        self.prompt_note(k, id, Step::AwaitAuth);
        self.core.prompts[i].step = PStep::Auth;
        let d = self.core.step_delay(k);
        k.resume(d, PiEv::Prompt(id));
    }

    /// Step 8's auth check, then step 9's compaction check.
    fn after_auth(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        if self.core.prompts[i].auth_fails {
            self.reject_prompt(k, id, HostError::AuthFailed);
            return;
        }
        if self.core.v16 {
            // pi 1.x: `_preparePrompt` returned; `_startRun` sets the run flag before the
            // compaction check and before_agent_start.
            // From here the prompt is its run's preparation, no longer a prompt in flight.
            let run = self.core.begin_start_run(k, None);
            self.core.prompts[i].run = Some(run);
            count_down(&mut self.core.live_prompts, "pi prompts in flight");
        }
        if self.core.compacting == Compacting::None
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

    /// Step 9's compaction (PREP-COMPACT) ends: done (`session_compact`), or failed
    /// (`_runAutoCompaction` catches the error and emits `session_compact_failed`); either way
    /// the prompt goes on to before_agent_start (pi 0.99.1 `agent-session.js`).
    fn after_prep_compaction(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        self.core.compacting = Compacting::None;
        if self.core.fires(k, PiFault::PromptCompactionFails) {
            self.prompt_note(k, id, Step::CompactionFailed);
            self.hook(k, Hook::SessionCompactFailed);
        } else {
            self.prompt_note(k, id, Step::CompactionDone);
            self.hook(k, Hook::SessionCompact);
        }
        self.core.prompts[i].step = PStep::BeforeStart;
        let d = self.core.step_delay(k);
        k.resume(d, PiEv::Prompt(id));
    }

    /// Step 10: `before_agent_start` handlers add the harness. pi 0.58 takes `nextTurn` just
    /// before them (0.58.3's `prompt()`: the pending messages join the prompt's array, then
    /// `await emitBeforeAgentStart`; found by `wakesim conform` on g2-wake-in-the-retry-gap
    /// seed 26, where the prompt that reached its handlers first carried them).
    fn before_agent_start(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        if self.core.generation == Gen::V058 {
            let taken = self.take_next_turn(k, id, true);
            self.core.prompts[i].taken = taken;
        }
        self.prompt_note(k, id, Step::BeforeAgentStart);
        self.hook(k, Hook::BeforeAgentStart);
        // pi 0.58 has no image normalization (step 11): Agent.prompt follows the handlers.
        self.core.prompts[i].step = match self.core.generation {
            Gen::V099 => PStep::Images,
            Gen::V058 => PStep::Start,
        };
        let d = self.core.handler_delay(k);
        k.resume(d, PiEv::Prompt(id));
    }

    /// Step 11: image normalisation.
    fn after_images(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        self.core.prompts[i].step = PStep::Start;
        let d = self.core.step_delay(k);
        k.resume(d, PiEv::Prompt(id));
    }

    /// Step 12, one synchronous segment: take nextTurn, set the options, start the run.
    fn start(&mut self, k: &mut PiKernel, id: u32) {
        let i = id as usize - 1;
        // Step 12, one synchronous segment: take nextTurn, set the options, start the run.
        let taken = match self.core.generation {
            Gen::V099 => self.take_next_turn(k, id, false),
            Gen::V058 => std::mem::take(&mut self.core.prompts[i].taken),
        };
        let mut items = Vec::with_capacity(taken.len() + 1);
        items.push(self.core.prompts[i].payload.clone());
        items.extend(taken);
        self.end_prompt(k, id, None);
        let parent = self.core.prompts[i].parent.take();
        if let Some(run) = self.core.prompts[i].run {
            self.core.runs[run as usize - 1].parent = parent;
            self.core.start_prepared(k, run, Starter::Prompt(id), items);
            return;
        }
        self.core.run_options = true;
        self.core
            .start_run(k, Starter::Prompt(id), items, true, parent);
    }

    /// The prompt takes the pending `nextTurn` messages (narrated at the step it does).
    fn take_next_turn(&mut self, k: &mut PiKernel, id: u32, early: bool) -> Vec<Payload> {
        let taken = std::mem::take(&mut self.core.next_turn);
        self.core.note_with(k, Actor::Host, || {
            let ids: Vec<_> = taken.iter().flat_map(|p| p.ids().iter().copied()).collect();
            Note::TookNextTurn {
                prompt: id,
                payload: Payload::from_slice(&ids),
                items: taken.len() as u32,
                early,
            }
        });
        taken
    }
}
