//! pi 0.58's event queue (`AgentSession._agentEventQueue`): the agent emits its run events to
//! the session's listener, which only chains them on a promise queue, so the agent goes on to its
//! request (or its next turn) at once, and the extensions' handlers of `agent_start`, `turn_end`
//! and `agent_end` run later, one event after another (read from pi-coding-agent 0.58.3's
//! `_handleAgentEvent`/`_processAgentEvent` and pi-agent-core 0.58.4's `Agent.emit`; found by
//! `wakesim conform` against the real 0.58.3). The retry check runs in the same queue after the
//! `agent_end` handlers and sleeps its backoff there, holding later events' handlers back.
//!
//! `_runLoop`'s `finally` sets `isStreaming = false` again a few microtasks after the agent_end
//! event (`PiEv::Finally`): a run that a listener or a wake started in between (a `turn_end`
//! handler's `sendMessage(triggerTurn)` on the idle agent) then runs with `isStreaming` false, so
//! the host reads idle under it and takes another starter (seen on the real 0.58.3:
//! `wakesim replay scenarios/real-pi-0.58.3/g0-idle-wake-skips-harness.toml --seed 0`, R2).
//!
//! An entry's stages: `agent_start` first takes wakesim's leading handler delay (0); the wake
//! logic's handler (1); at least one microtask later the handlers after it take theirs (2); then
//! `agent_end` runs the retry check (`post_run`, 3), which may sleep its backoff (4).

use super::host::PiHost;
use super::note::Hook;
use super::{PiEv, PiKernel};
use crate::family::common::Core;
use crate::family::pi::core::PiCore;
use crate::sim::record::{Actor, Ev};

impl PiCore {
    /// 0.58's `isStreaming = false` (the agent run and the run flag, which it also is), observed
    /// only when it changes.
    pub(super) fn clear_streaming(&mut self, k: &mut PiKernel) {
        self.agent_active = None;
        if std::mem::replace(&mut self.run_active, false) {
            self.emit(k, Actor::Host, Ev::AgentRun { on: false });
            self.emit(k, Actor::Host, Ev::RunFlag { on: false });
        }
    }

    /// The agent emits a run event: queue its handlers.
    pub(super) fn listen(&mut self, k: &mut PiKernel, run: u32, hook: Hook) {
        self.listeners.push_back((run, hook));
        if self.listening.is_none() && self.listeners.len() == 1 {
            k.schedule_micro(PiEv::Listen);
        }
    }
}

impl PiHost {
    pub(super) fn listen_step(&mut self, k: &mut PiKernel) {
        let (run, hook, stage) = match self.core.listening {
            Some(entry) => entry,
            None => {
                let Some((run, hook)) = self.core.listeners.pop_front() else {
                    return;
                };
                let stage = if hook == Hook::AgentStart { 0 } else { 1 };
                (run, hook, stage)
            }
        };
        match stage {
            0 => {
                self.core.listening = Some((run, hook, 1));
                let d = self.core.handler_delay(k);
                k.resume(d, PiEv::Listen);
            }
            1 => {
                self.core.listening = Some((run, hook, 2));
                self.hook(k, hook);
                k.schedule_micro(PiEv::Listen);
            }
            2 => {
                let next = if hook == Hook::AgentEnd { 3 } else { 5 };
                self.core.listening = Some((run, hook, next));
                let d = self.core.handler_delay(k);
                k.resume(d, PiEv::Listen);
            }
            3 => {
                // `post_run` moves the entry to stage 4 when it sleeps a retry's backoff.
                self.run_step(k, run);
                if self.core.listening == Some((run, hook, 3)) {
                    self.done_listening(k);
                }
            }
            4 => {
                // The backoff slept: the queue goes on, and continue() runs from a
                // `setTimeout(…, 0)`.
                self.done_listening(k);
                k.schedule(0, PiEv::Run(run));
            }
            _ => self.done_listening(k),
        }
    }

    fn done_listening(&mut self, k: &mut PiKernel) {
        self.core.listening = None;
        if !self.core.listeners.is_empty() {
            k.schedule_micro(PiEv::Listen);
        }
    }
}
