//! Step threads (`docs/hosts/gptme.md`): STEP_PRE hooks and the model request, the reply
//! (with or without tool calls or a confirmation), finishing the step, and the user confirming
//! a pending tool call. Starting a step thread is synchronous and lives in `core.rs`.

use super::core::SPhase;
use super::faults::ServerFault;
use super::host::ServerHost;
use super::note::{Note, Reply, RetryCause, StepOrigin};
use super::{CONV, SrvEv, SrvKernel};
use crate::family::common::Core;
use crate::family::common::count_down;
use crate::sim::msg::{MsgId, Payload};
use crate::sim::record::{Actor, Ev};

impl ServerHost {
    /// A step thread's next phase.
    pub(super) fn step_phase(&mut self, k: &mut SrvKernel, id: u32) {
        match self.core.steps[id as usize].phase {
            SPhase::Start => self.step_start(k, id),
            SPhase::Reply => self.step_reply(k, id),
            SPhase::Tools => self.step_tools(k, id),
            SPhase::Confirmed => self.tool_done(k, id),
            SPhase::Done => {}
        }
    }

    /// The step thread starts: STEP_PRE hooks, then the model request.
    fn step_start(&mut self, k: &mut SrvKernel, id: u32) {
        let i = id as usize;
        let session = self.core.steps[id as usize].session;
        let timing = self.core.cfg.timing;
        let origin = self.core.sessions[session]
            .generating
            .unwrap_or(StepOrigin::AfterTools);
        self.core.note(
            k,
            Actor::Host,
            Note::StepStart {
                session: session as u8 + 1,
                origin,
            },
        );
        self.step_pre(k);
        self.core.requests += 1;
        let req = self.core.requests;
        self.core
            .emit(k, Actor::Host, Ev::Request { req, harness: true });
        self.core.steps[i].phase = SPhase::Reply;
        let d = timing.model_ms.delay(k, "model");
        k.schedule(d, SrvEv::Step(id));
    }

    /// The model replied: a tool call awaiting confirmation, tool calls that execute, or none (the step completes, and the conversation's deferred wakes are retried).
    fn step_reply(&mut self, k: &mut SrvKernel, id: u32) {
        let i = id as usize;
        let session = self.core.steps[id as usize].session;
        let timing = self.core.cfg.timing;
        self.core.sessions[session].last_activity = k.now();
        let s = session as u8 + 1;
        if self.core.faults.fires(k, ServerFault::ToolConfirmation) {
            let sess = &mut self.core.sessions[session];
            sess.pending_tools = true;
            sess.generating = None;
            self.core.note(
                k,
                Actor::Host,
                Note::Reply {
                    session: s,
                    reply: Reply::ToolNeedsConfirmation,
                },
            );
            self.end_step(id);
            let d = timing.confirm_ms.delay(k, "confirmation");
            k.schedule(d, SrvEv::Confirm(id));
            self.retry(k, RetryCause::StepCompletion(s));
        } else if self.core.faults.fires(k, ServerFault::ToolCalls) {
            self.core.note(
                k,
                Actor::Host,
                Note::Reply {
                    session: s,
                    reply: Reply::ToolCalls,
                },
            );
            self.core.sessions[session].executing_tools = true;
            self.core.steps[i].phase = SPhase::Tools;
            let d = timing.tool_ms.delay(k, "tools");
            k.schedule(d, SrvEv::Step(id));
        } else {
            self.core.sessions[session].generating = None;
            self.core.note(
                k,
                Actor::Host,
                Note::Reply {
                    session: s,
                    reply: Reply::Done,
                },
            );
            self.end_step(id);
            self.retry(k, RetryCause::StepCompletion(s));
        }
    }

    /// Tool calls finished executing; another step runs on the same thread.
    fn step_tools(&mut self, k: &mut SrvKernel, id: u32) {
        let i = id as usize;
        let session = self.core.steps[id as usize].session;
        let sess = &mut self.core.sessions[session];
        sess.executing_tools = false;
        if sess.generating.is_none() {
            sess.generating = Some(StepOrigin::AfterTools);
        }
        self.core.steps[i].phase = SPhase::Start;
        k.schedule(0, SrvEv::Step(id));
    }

    fn end_step(&mut self, id: u32) {
        self.core.steps[id as usize].phase = SPhase::Done;
        count_down(&mut self.core.live_steps, "gptme steps in flight");
    }

    /// STEP_PRE hooks of a step: the subagent hook takes this parent's completions; the watch
    /// tool's `_watch_drain_hook` (priority 940, when loaded) takes its deferred events; each
    /// yields one system message per item, appended before the model request.
    fn step_pre(&mut self, k: &mut SrvKernel) {
        let done: Vec<MsgId> = self
            .core
            .take_completions(CONV)
            .iter()
            .map(|c| c.msg)
            .collect();
        self.step_pre_appends(k, "subagent completions", &done);
        if self.core.faults.on(ServerFault::WatchTool) {
            let events: Vec<MsgId> = self
                .core
                .take_watch(Some(CONV))
                .iter()
                .map(|e| e.msg)
                .collect();
            self.step_pre_appends(k, "_watch_drain_hook", &events);
        }
    }

    /// A STEP_PRE hook yielded one system message per item: append them.
    fn step_pre_appends(&mut self, k: &mut SrvKernel, hook: &'static str, ids: &[MsgId]) {
        if ids.is_empty() {
            return;
        }
        for &msg in ids {
            self.core.emit(k, Actor::Host, Ev::Appended { msg });
        }
        self.core.note_with(k, Actor::Host, || Note::StepPre {
            hook,
            payload: Payload::from_slice(ids),
        });
    }

    /// The user confirms: the confirm route calls `start_tool_execution` without a reservation
    /// (gptme 0.35.1, `api_v2_sessions.py`), whose thread claims and runs the tool.
    pub(super) fn confirm(&mut self, k: &mut SrvKernel, id: u32) {
        let session = self.core.steps[id as usize].session;
        let sess = &mut self.core.sessions[session];
        sess.pending_tools = false;
        sess.executing_tools = true;
        self.core.note(
            k,
            Actor::User,
            Note::Confirmed {
                session: session as u8 + 1,
            },
        );
        let nid = self.core.start_step(k, session);
        self.core.steps[nid as usize].phase = SPhase::Confirmed;
    }

    /// The confirmed tool ran. Its thread elects a continuation under `conversation_lock` and
    /// `step_lock` only when no tool is pending or executing, no session of the conversation
    /// generates and no command is active (`start_tool_execution`, `reserved=False`); else it
    /// starts none and calls no retry: the output waits in the log for the next step.
    fn tool_done(&mut self, k: &mut SrvKernel, id: u32) {
        let session = self.core.steps[id as usize].session;
        self.core.sessions[session].executing_tools = false;
        let continued = self.core.busy().is_none();
        if continued {
            let sess = &mut self.core.sessions[session];
            sess.step_seq += 1;
            sess.generating = Some(StepOrigin::AfterTools);
            self.core.steps[id as usize].phase = SPhase::Start;
            k.schedule(0, SrvEv::Step(id));
        } else {
            self.end_step(id);
        }
        self.core.note(
            k,
            Actor::Host,
            Note::ToolDone {
                session: session as u8 + 1,
                continued,
            },
        );
    }
}
