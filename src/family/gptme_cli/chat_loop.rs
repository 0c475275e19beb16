//! The chat loop (`gptme/chat.py`, noninteractive): drain the prompt-queue file, pop one
//! message and append it, run steps (STEP_PRE hooks, the model request, scripted or drawn
//! replies that start jobs or call tools), and with nothing queued close and break.

use super::api::Item;
use super::core::{PROMPTS_MAX, QItem};
use super::faults::CliFault;
use super::host::CliHost;
use super::note::{CliReply, CliState, Note, Popped};
use super::{CliEv, CliKernel, OWN, vocab};
use crate::family::common::Core;
use crate::sim::choice::Ratio;
use crate::sim::msg::{MsgId, Payload};
use crate::sim::record::{Actor, Ev};

impl CliHost {
    // ---- the chat loop

    pub(super) fn loop_top(&mut self, k: &mut CliKernel) {
        if self.core.ended.is_some() {
            return;
        }
        self.turns += 1;
        if self.turns > self.core.cfg.timing.turns_max {
            return self.end(k, vocab::BOUND);
        }
        self.drain_file(k);
        if let Some(item) = self.core.queue.pop_front() {
            self.pop(k, item);
            self.steps_in_turn = 0;
            return self.step(k);
        }
        // Noninteractive with nothing queued: touch the sentinel (after the file I/O of the
        // drain above, in which a writer may still append), drain again, then break.
        let d = self.core.cfg.timing.io_ms.delay(k, "file io");
        k.schedule(d, CliEv::Close);
    }

    /// The closing protocol: `prompt-queue-closed` tells writers the loop has closed; what was
    /// written before it is drained once more, and reopens the loop.
    pub(super) fn close(&mut self, k: &mut CliKernel) {
        if self.core.ended.is_some() {
            return;
        }
        self.core.closed = true;
        self.drain_file(k);
        if !self.core.queue.is_empty() {
            self.core.closed = false;
            self.core
                .note_with(k, Actor::Host, || Note::Closing { reopened: true });
            return self.loop_top(k);
        }
        self.core
            .note_with(k, Actor::Host, || Note::Closing { reopened: false });
        self.end(k, vocab::QUEUE_EMPTY);
    }

    /// `drain_external_prompt_queue`: regular records into the prompt queue, up to its cap.
    fn drain_file(&mut self, k: &mut CliKernel) {
        let room = PROMPTS_MAX.saturating_sub(self.core.queue.len());
        let taken = self.core.take_file(room, true, false);
        if taken.is_empty() {
            return;
        }
        self.core.note_with(k, Actor::Host, || {
            let ids: Vec<MsgId> = taken.iter().map(|r| r.msg).collect();
            Note::DrainFile {
                payload: Payload::from_slice(&ids),
            }
        });
        self.core
            .queue
            .extend(taken.into_iter().map(|r| QItem::Hook(Item::Prompt(r))));
    }

    /// Pop one message and append it to the log.
    fn pop(&mut self, k: &mut CliKernel, item: QItem) {
        let popped = || match &item {
            QItem::Initial => Popped::Initial,
            QItem::Nudge(n) => Popped::Nudge(*n),
            QItem::Subagent(m) => Popped::Subagent(*m),
            QItem::Hook(i) => match i {
                Item::Completion(c) => Popped::Completion(c.job.name, c.msg),
                Item::Prompt(r) => Popped::Prompt(r.msg, r.steer),
                Item::InputPending(_) => Popped::InputPending,
                Item::Timeout(jobs) => Popped::Timeout(jobs.iter().map(|j| j.name).collect()),
            },
        };
        self.core.note_with(k, Actor::Host, || Note::Pop(popped()));
        match item {
            QItem::Hook(i) => self.append_item(k, &i),
            QItem::Subagent(msg) => self.core.emit(k, Actor::Host, Ev::Appended { msg }),
            QItem::Initial | QItem::Nudge(_) => {}
        }
    }

    /// What entering the log means for each item.
    pub(super) fn append_item(&mut self, k: &mut CliKernel, item: &Item) {
        if let Some(msg) = item.msg() {
            self.core.emit(k, Actor::Host, Ev::Appended { msg });
        }
        if let Item::Timeout(jobs) = item {
            for j in jobs {
                let work = j.index;
                self.core.emit(k, Actor::Host, Ev::WorkNoticed { work });
            }
        }
    }

    /// One step: STEP_PRE hooks append what they yield, then the model request.
    pub(super) fn step(&mut self, k: &mut CliKernel) {
        self.steps_in_turn += 1;
        let items = self.call(k, |w, cli| w.step_pre(cli));
        if !items.is_empty() {
            for i in &items {
                self.append_item(k, i);
            }
            let hook = self.wake.step_pre_name();
            self.core.note_with(k, Actor::Wake, || {
                let ids: Vec<MsgId> = items.iter().filter_map(Item::msg).collect();
                Note::StepPre {
                    hook,
                    payload: Payload::from_slice(&ids),
                }
            });
        }
        // Each list is collected (and appended) only when there is something in it: mostly
        // there is not, and `append_host` does nothing for an empty one.
        let steer = self.core.take_file(usize::MAX, false, true);
        if !steer.is_empty() {
            let steer: Vec<MsgId> = steer.iter().map(|r| r.msg).collect();
            self.append_host(k, "steer prompts", &steer);
        }
        if !self.core.subagents.is_empty() {
            let reports: Vec<MsgId> = self.core.subagents.drain(..).collect();
            self.append_host(k, "subagent hook", &reports);
        }
        self.core.requests += 1;
        let req = self.core.requests;
        self.state(CliState::Generating);
        self.core
            .emit(k, Actor::Host, Ev::Request { req, harness: true });
        let d = self.core.cfg.timing.model_ms.delay(k, "model");
        k.schedule(d, CliEv::Reply);
    }

    fn append_host(&mut self, k: &mut CliKernel, hook: &'static str, ids: &[MsgId]) {
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

    pub(super) fn reply(&mut self, k: &mut CliKernel) {
        self.state(CliState::Loop);
        let script = &self.core.cfg.producers.script;
        let kind = match script.get(self.replies) {
            Some(r) => *r,
            None => {
                if self.jobs_started < self.jobs_planned
                    && k.chance(Ratio::new(1, 2), "reply starts a job")
                {
                    CliReply::Job(0)
                } else if self.core.faults.fires(k, CliFault::ToolCalls) {
                    CliReply::Tool
                } else {
                    CliReply::Text
                }
            }
        };
        self.replies += 1;
        match kind {
            CliReply::Text => {
                self.core
                    .note_with(k, Actor::Host, || Note::CliReply { reply: kind });
                self.last_reply_tool = false;
                self.loop_continue(k);
            }
            CliReply::Job(_) | CliReply::Tool => {
                let reply = if let CliReply::Job(_) = kind {
                    self.jobs_started += 1;
                    let index = self.start_job(k, OWN);
                    CliReply::Job(self.core.jobs[index as usize].name.id)
                } else {
                    kind
                };
                self.state(CliState::Tools);
                self.core
                    .note_with(k, Actor::Host, || Note::CliReply { reply });
                self.last_reply_tool = true;
                self.nudges = 0;
                let d = self.core.cfg.timing.tool_ms.delay(k, "tool");
                k.schedule(d, CliEv::ToolDone);
            }
        }
    }

    pub(super) fn tool_done(&mut self, k: &mut CliKernel) {
        if self.core.ended.is_some() {
            return;
        }
        self.state(CliState::Loop);
        if self.steps_in_turn >= self.core.cfg.timing.steps_max {
            return self.loop_continue(k);
        }
        self.step(k);
    }
}
