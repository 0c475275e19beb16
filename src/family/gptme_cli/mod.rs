//! The gptme noninteractive CLI host (`wake-systems.md` §1.1.1, §1.1.4): `gptme -n`'s chat loop
//! with its prompt queue, STEP_PRE and LOOP_CONTINUE hooks by priority with StopPropagation,
//! auto-reply nudges and session completion, model replies that start background jobs or not,
//! jobs that finish at drawn times, the completion queue and the per-conversation condition,
//! `prompt-queue.jsonl` (regular, steer and malformed records, the 100-record cap) with its
//! closed sentinel, `control.jsonl`, subagent reports, another conversation's jobs, teardown
//! reset and SIGTERM.
//!
//! The main thread (the loop, the hooks, the idle wait) and the background threads (each job's
//! reader, another session's drain, the foreign owner, outside writers) interleave at every
//! point where gptme releases a lock or blocks: each is a kernel event, and events due at the
//! same instant are ordered by a choice.
//!
//! - `core.rs`: the state and the synchronous API ([`api::Cli`]);
//! - this file: the loop, the hooks, the threads and the faults;
//! - `api.rs`: the public wake-logic trait; `config.rs`: the knobs.

pub mod adapter;
pub mod api;
pub mod config;
pub mod core;
pub mod note;
pub mod sections;
pub mod vocab;
pub mod wakes;

use api::{Cli, CliWake, Flow, Item, Resume};
use config::{CliConfig, CliFault};
use core::{CliCore, FileRecord, Job, PROMPTS_MAX, QItem};

use crate::adapter::SlotRef;
use crate::check::{Invariant, Monitor};
use crate::error::Result;
use crate::family::common::Core;
use crate::family::common::conv::{ConvId, take_where};
use crate::family::common::faults::FaultSpec;
use crate::family::common::faults::{FaultKind, TimedFaults};
use crate::family::{Family, Host, Registry};
use crate::input::Cx;
use crate::sim::choice::Ratio;
use crate::sim::msg::{MsgFrom, MsgId, MsgKind, Payload};
use crate::sim::record::{Actor, EndCause, Ev, Window, WorkOp};
use crate::sim::sink::Sink;
use crate::sim::swarm::Mix;
use crate::sim::{Kernel, World};
use note::{CliReply, CliState, JobName, Note, Popped};

/// The conversation under test (A) and the other one in the process (B).
const OWN: u8 = 0;
const OTHER: u8 = 1;

/// FIFO streams (`MsgInfo::source`): each queue delivers in order.
const JOB_STREAM: [u8; 2] = [0, 1];
const PROMPT_STREAM: u8 = 2;
const STEER_STREAM: u8 = 3;
const SUBAGENT_STREAM: u8 = 4;

/// Priorities of the host's own hooks (gptme registers them with these or, where the source does
/// not say, the model places them: the subagent hook runs after the wait hook and before
/// auto-reply, as `wait_input` yielding "hook" needs).
const SUBAGENT_PRIORITY: i32 = 1100;
const AUTO_REPLY_PRIORITY: i32 = 999;
/// auto_reply completes the session at the third nudge it would send.
const NUDGES_MAX: u8 = 2;
/// A prompt flood writes this many records at once (one more than a wait may take).
const FLOOD_RECORDS: u64 = PROMPTS_MAX as u64 + 1;
/// Bytes a control record adds.
const CONTROL_RECORD_BYTES: u32 = 40;

/// The kernel this host runs on: its events, its narration into the checkers' monitor.
pub type CliKernel = Kernel<CliEv, Monitor<Note>>;

/// The CLI's scheduled events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CliEv {
    /// The chat loop's next iteration.
    Loop,
    /// Nothing was queued: the loop touches its closed sentinel.
    Close,
    /// A model reply arrives.
    Reply,
    /// A tool call finished; the next step runs.
    ToolDone,
    /// A suspended LOOP_CONTINUE hook resumes (its suspension number, and why).
    Resume(u32, ResumeKind),
    /// A job's process exits.
    JobExit(u32),
    /// A job's reader calls `_notify_completion`.
    Notify(u32),
    /// Conversation B's owner claims its job's completion.
    OwnerClaim(u32),
    /// Another session of A drains A's completions.
    ConcurrentDrain,
    /// The i-th planned timed fault.
    Timed(u32),
}

/// Why a suspended hook resumes (the kernel's copy of `api::Resume`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumeKind {
    Io,
    Notified,
    TimedOut,
}

/// A LOOP_CONTINUE hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hook {
    Wake,
    Subagent,
    AutoReply,
}

/// LOOP_CONTINUE in progress.
struct HookRun {
    /// Hooks by priority, highest first, and the next to run.
    order: Vec<(Hook, i32)>,
    next: usize,
    items: Vec<QItem>,
    /// The current suspension of the wake hook.
    suspension: u32,
    waiting_noted: bool,
    rechecks: u32,
    waited: bool,
}

/// The gptme CLI with its wake logic: a `World` for the kernel.
pub struct CliHost {
    core: CliCore,
    wake: Box<dyn CliWake>,
    timed: TimedFaults<CliFault>,
    run: Option<HookRun>,
    suspensions: u32,
    jobs_planned: u64,
    jobs_started: u64,
    replies: usize,
    steps_in_turn: u64,
    turns: u64,
    last_reply_tool: bool,
    nudges: u8,
    subagent_reports: u8,
}

impl CliHost {
    pub fn new(cfg: CliConfig, wake: Box<dyn CliWake>) -> CliHost {
        CliHost {
            core: CliCore::new(cfg),
            wake,
            timed: TimedFaults::default(),
            run: None,
            suspensions: 0,
            jobs_planned: 0,
            jobs_started: 0,
            replies: 0,
            steps_in_turn: 0,
            turns: 0,
            last_reply_tool: false,
            nudges: 0,
            subagent_reports: 0,
        }
    }

    /// Call into the wake logic with a fresh call budget.
    fn call<R>(
        &mut self,
        k: &mut CliKernel,
        f: impl FnOnce(&mut dyn CliWake, &mut Cli<'_>) -> R,
    ) -> R {
        self.core.calls.reset();
        let mut cli = Cli {
            core: &mut self.core,
            k,
        };
        f(&mut *self.wake, &mut cli)
    }

    fn state(&mut self, s: CliState) {
        if self.core.ended.is_none() {
            self.core.state = s;
        }
    }

    // ---- the chat loop

    fn loop_top(&mut self, k: &mut CliKernel) {
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
    fn close(&mut self, k: &mut CliKernel) {
        if self.core.ended.is_some() {
            return;
        }
        self.core.closed = true;
        self.drain_file(k);
        if !self.core.queue.is_empty() {
            self.core.closed = false;
            self.core
                .note(k, Actor::Host, Note::Closing { reopened: true });
            return self.loop_top(k);
        }
        self.core
            .note(k, Actor::Host, Note::Closing { reopened: false });
        self.end(k, vocab::QUEUE_EMPTY);
    }

    /// `drain_external_prompt_queue`: regular records into the prompt queue, up to its cap.
    fn drain_file(&mut self, k: &mut CliKernel) {
        let room = PROMPTS_MAX.saturating_sub(self.core.queue.len());
        let taken = self.core.take_file(room, true, false);
        if taken.is_empty() {
            return;
        }
        let ids: Vec<MsgId> = taken.iter().map(|r| r.msg).collect();
        self.core.note(
            k,
            Actor::Host,
            Note::DrainFile {
                payload: Payload::from_slice(&ids),
            },
        );
        self.core
            .queue
            .extend(taken.into_iter().map(|r| QItem::Hook(Item::Prompt(r))));
    }

    /// Pop one message and append it to the log.
    fn pop(&mut self, k: &mut CliKernel, item: QItem) {
        let popped = match &item {
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
        self.core.note(k, Actor::Host, Note::Pop(popped));
        match item {
            QItem::Hook(i) => self.append_item(k, &i),
            QItem::Subagent(msg) => self.core.emit(k, Actor::Host, Ev::Appended { msg }),
            QItem::Initial | QItem::Nudge(_) => {}
        }
    }

    /// What entering the log means for each item.
    fn append_item(&mut self, k: &mut CliKernel, item: &Item) {
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
    fn step(&mut self, k: &mut CliKernel) {
        self.steps_in_turn += 1;
        let items = self.call(k, |w, cli| w.step_pre(cli));
        if !items.is_empty() {
            let ids: Vec<MsgId> = items.iter().filter_map(Item::msg).collect();
            for i in &items {
                self.append_item(k, i);
            }
            let hook = self.wake.step_pre_name();
            self.core.note(
                k,
                Actor::Wake,
                Note::StepPre {
                    hook,
                    payload: Payload::from_slice(&ids),
                },
            );
        }
        let steer = self.core.take_file(usize::MAX, false, true);
        let steer: Vec<MsgId> = steer.iter().map(|r| r.msg).collect();
        self.append_host(k, "steer prompts", &steer);
        let reports: Vec<MsgId> = self.core.subagents.drain(..).collect();
        self.append_host(k, "subagent hook", &reports);
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
        let payload = Payload::from_slice(ids);
        self.core
            .note(k, Actor::Host, Note::StepPre { hook, payload });
    }

    fn reply(&mut self, k: &mut CliKernel) {
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
                    .note(k, Actor::Host, Note::CliReply { reply: kind });
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
                self.core.note(k, Actor::Host, Note::CliReply { reply });
                self.last_reply_tool = true;
                self.nudges = 0;
                let d = self.core.cfg.timing.tool_ms.delay(k, "tool");
                k.schedule(d, CliEv::ToolDone);
            }
        }
    }

    fn tool_done(&mut self, k: &mut CliKernel) {
        if self.core.ended.is_some() {
            return;
        }
        self.state(CliState::Loop);
        if self.steps_in_turn >= self.core.cfg.timing.steps_max {
            return self.loop_continue(k);
        }
        self.step(k);
    }

    // ---- LOOP_CONTINUE hooks

    fn loop_continue(&mut self, k: &mut CliKernel) {
        let mut order = vec![
            (Hook::Wake, self.wake.loop_continue_priority()),
            (Hook::Subagent, SUBAGENT_PRIORITY),
        ];
        if self.core.faults.on(CliFault::AutoReply) {
            order.push((Hook::AutoReply, AUTO_REPLY_PRIORITY));
        }
        // Stable: equal priorities keep registration order.
        order.sort_by_key(|(_, p)| std::cmp::Reverse(*p));
        self.run = Some(HookRun {
            order,
            next: 0,
            items: Vec::new(),
            suspension: 0,
            waiting_noted: false,
            rechecks: 0,
            waited: false,
        });
        self.run_hooks(k, None);
    }

    /// Run hooks from the next one; `resumed` is the wake hook's flow after a suspension.
    fn run_hooks(&mut self, k: &mut CliKernel, mut resumed: Option<Flow>) {
        loop {
            let Some(run) = self.run.as_mut() else { return };
            let Some(&(hook, priority)) = run.order.get(run.next) else {
                break;
            };
            match hook {
                Hook::Wake => {
                    let flow = match resumed.take() {
                        Some(f) => f,
                        None => {
                            let name = self.wake.name();
                            self.core
                                .note(k, Actor::Wake, Note::Hook { name, priority });
                            self.call(k, |w, cli| w.loop_continue(cli))
                        }
                    };
                    if !self.wake_flow(k, flow) {
                        return;
                    }
                }
                Hook::Subagent => {
                    let reports: Vec<MsgId> = self.core.subagents.drain(..).collect();
                    if !reports.is_empty() {
                        self.core.note(
                            k,
                            Actor::Host,
                            Note::Yield {
                                name: "subagent hook",
                                payload: Payload::from_slice(&reports),
                                input: false,
                                timeout: false,
                                stop: false,
                            },
                        );
                        let run = self.run.as_mut().expect("running");
                        run.items.extend(reports.into_iter().map(QItem::Subagent));
                    }
                }
                Hook::AutoReply => {
                    let run = self.run.as_ref().expect("running");
                    if !self.last_reply_tool && self.core.queue.is_empty() && run.items.is_empty() {
                        if self.nudges >= NUDGES_MAX {
                            return self.end(k, vocab::SESSION_COMPLETE);
                        }
                        self.nudges += 1;
                        let count = self.nudges;
                        self.core.note(k, Actor::Host, Note::Nudge { count });
                        let run = self.run.as_mut().expect("running");
                        run.items.push(QItem::Nudge(count));
                    }
                }
            }
            if let Some(run) = self.run.as_mut() {
                run.next += 1;
            }
        }
        let run = self.run.take().expect("running");
        self.core.queue.extend(run.items);
        self.state(CliState::Loop);
        k.schedule(0, CliEv::Loop);
    }

    /// Act on the wake hook's flow. True when the hook is done (the next hook runs).
    fn wake_flow(&mut self, k: &mut CliKernel, flow: Flow) -> bool {
        match flow {
            Flow::Return { items, stop } => {
                let run = self.run.as_mut().expect("running");
                if run.waited && run.rechecks > 0 {
                    let rechecks = run.rechecks;
                    self.core.note(k, Actor::Host, Note::WaitEnded { rechecks });
                }
                let ids: Vec<MsgId> = items.iter().filter_map(Item::msg).collect();
                let input = items.iter().any(|i| matches!(i, Item::InputPending(_)));
                let timeout = items.iter().any(|i| matches!(i, Item::Timeout(_)));
                self.core.note(
                    k,
                    Actor::Wake,
                    Note::Yield {
                        name: self.wake.name(),
                        payload: Payload::from_slice(&ids),
                        input,
                        timeout,
                        stop,
                    },
                );
                for i in &items {
                    if let Item::InputPending(c) = i {
                        let input = c.fingerprint();
                        self.core.emit(k, Actor::Host, Ev::InputInterrupt { input });
                    }
                }
                let run = self.run.as_mut().expect("running");
                run.items.extend(items.into_iter().map(QItem::Hook));
                if stop {
                    run.next = run.order.len();
                }
                true
            }
            Flow::Unlock => {
                self.suspensions += 1;
                let s = self.suspensions;
                self.run.as_mut().expect("running").suspension = s;
                self.core.hook_unlocked = true;
                let d = self.core.cfg.timing.io_ms.delay(k, "file io");
                k.schedule(d, CliEv::Resume(s, ResumeKind::Io));
                false
            }
            Flow::Wait { timeout_ms } => {
                self.suspensions += 1;
                let s = self.suspensions;
                let own = self.core.unfinished(OWN);
                let foreign = self.core.unfinished(OTHER);
                self.core.emit(k, Actor::Host, Ev::Waiting { own, foreign });
                let run = self.run.as_mut().expect("running");
                run.suspension = s;
                run.waited = true;
                let note = !run.waiting_noted;
                run.waiting_noted = true;
                self.core.waiter = Some(s);
                self.state(CliState::Waiting);
                if note {
                    self.core
                        .note(k, Actor::Host, Note::Wait { timeout_ms, own });
                }
                k.schedule(timeout_ms, CliEv::Resume(s, ResumeKind::TimedOut));
                false
            }
        }
    }

    fn resume(&mut self, k: &mut CliKernel, s: u32, kind: ResumeKind) {
        let Some(run) = self.run.as_mut() else { return };
        if run.suspension != s {
            return;
        }
        let why = match kind {
            ResumeKind::Io => {
                self.core.hook_unlocked = false;
                Resume::Io
            }
            ResumeKind::TimedOut => {
                if self.core.waiter != Some(s) {
                    return; // notified first
                }
                self.core.waiter = None;
                run.rechecks += 1;
                Resume::TimedOut
            }
            ResumeKind::Notified => {
                let rechecks = run.rechecks;
                run.waiting_noted = false;
                run.rechecks = 0;
                self.core.note(k, Actor::Host, Note::Woken { rechecks });
                Resume::Notified
            }
        };
        self.state(CliState::Loop);
        let flow = self.call(k, |w, cli| w.resume(cli, why));
        self.run_hooks(k, Some(flow));
    }

    /// `cond(cid).notify_all()`: wake the waiter blocked on A's condition.
    fn notify_waiter(&mut self, k: &mut CliKernel) -> bool {
        let Some(s) = self.core.waiter.take() else {
            return false;
        };
        let d = self.core.cfg.timing.wake_ms.delay(k, "thread wake");
        k.schedule(d, CliEv::Resume(s, ResumeKind::Notified));
        true
    }

    // ---- background threads

    fn start_job(&mut self, k: &mut CliKernel, conv: u8) -> u32 {
        let index = self.core.jobs.len() as u32;
        let id = self.core.next_id[usize::from(conv)];
        self.core.next_id[usize::from(conv)] += 1;
        let name = JobName { conv, id };
        self.core.jobs.push(Job {
            name,
            running: true,
            notified: false,
            wait_expired: false,
            registered: true,
            killed: false,
            msg: None,
        });
        self.core.emit(
            k,
            Actor::Host,
            Ev::Work {
                work: index,
                shown: id,
                conv,
                op: WorkOp::Started,
            },
        );
        let d = self.core.cfg.timing.job_ms.delay(k, "job");
        k.schedule(d, CliEv::JobExit(index));
        index
    }

    fn job_exit(&mut self, k: &mut CliKernel, index: u32) {
        let j = self.core.jobs[index as usize];
        if j.killed || self.core.ended.is_some() {
            return;
        }
        self.core.jobs[index as usize].running = false;
        self.core
            .note(k, Actor::Host, Note::JobExits { job: j.name });
        let d = self.core.cfg.timing.drain_ms.delay(k, "reader drain");
        k.schedule(d, CliEv::Notify(index));
    }

    /// `_notify_completion(job)` on the reader thread.
    fn notify(&mut self, k: &mut CliKernel, index: u32) {
        if self.core.ended.is_some() {
            return;
        }
        let j = self.core.jobs[index as usize];
        if !j.registered {
            self.core
                .note(k, Actor::Host, Note::LateCallback { job: j.name });
            return;
        }
        let conv = j.name.conv;
        let from = MsgFrom {
            kind: MsgKind::Job,
            source: JOB_STREAM[usize::from(conv)],
            origin: (j.name.id - 1) as u8,
            conv,
            stream: Some(if conv == OWN {
                "the job completions of conversation A"
            } else {
                "the job completions of conversation B"
            }),
        };
        let msg = k.produce_from(from, self.core.state as u8);
        let job = &mut self.core.jobs[index as usize];
        job.notified = true;
        job.msg = Some(msg);
        self.core.emit(
            k,
            Actor::Host,
            Ev::Work {
                work: index,
                shown: j.name.id,
                conv,
                op: WorkOp::Finished(msg),
            },
        );
        self.core.completions.push_back(index);
        if conv != OWN {
            self.core.note(
                k,
                Actor::Host,
                Note::Notify {
                    job: j.name,
                    msg,
                    woke: false,
                },
            );
            let d = self.core.cfg.timing.claim_ms.delay(k, "owner claim");
            k.schedule(d, CliEv::OwnerClaim(index));
            return;
        }
        if self.core.hook_unlocked {
            self.core.mark(k, vocab::NOTIFY_BEFORE_WAIT);
        }
        let woke = self.notify_waiter(k);
        self.core.note(
            k,
            Actor::Host,
            Note::Notify {
                job: j.name,
                msg,
                woke,
            },
        );
        if self.core.faults.fires(k, CliFault::ConcurrentDrain) {
            k.schedule(0, CliEv::ConcurrentDrain);
        }
    }

    /// Another session of A (a server or ACP client on the same conversation) runs a step: its
    /// STEP_PRE completion hook claims A's queued completions into the shared log, and its model
    /// request reads them.
    fn concurrent_drain(&mut self, k: &mut CliKernel) {
        if self.core.ended.is_some() {
            return;
        }
        let claimed = self.core.claim(ConvId(OWN));
        if claimed.is_empty() {
            return;
        }
        if self.run.is_some() {
            self.core.mark(k, vocab::CONCURRENT_DRAIN);
        }
        let ids: Vec<MsgId> = claimed.iter().map(|c| c.msg).collect();
        for &msg in &ids {
            self.core.emit(k, Actor::Host, Ev::Appended { msg });
        }
        self.core.note(
            k,
            Actor::Host,
            Note::ConcurrentDrain {
                payload: Payload::from_slice(&ids),
            },
        );
        // That session's step goes on to its model request, which reads the same log.
        self.core.requests += 1;
        let req = self.core.requests;
        self.core
            .emit(k, Actor::Host, Ev::Request { req, harness: true });
    }

    fn owner_claim(&mut self, k: &mut CliKernel, index: u32) {
        if self.core.ended.is_some() {
            return;
        }
        let j = self.core.jobs[index as usize];
        let queued = self.core.completions.iter().position(|&i| i == index);
        let msg = queued.map(|p| {
            self.core.completions.remove(p);
            j.msg.expect("queued with its message")
        });
        if let Some(msg) = msg {
            self.core.emit(k, Actor::Host, Ev::OwnerClaimed { msg });
        }
        self.core
            .note(k, Actor::Host, Note::OwnerClaims { job: j.name, msg });
    }

    // ---- faults and the end

    /// `reset_background_jobs(cid)`: pop the conversation's jobs (killing running ones), purge
    /// their queued completions, pop and notify its condition; ids start over at 1.
    fn reset(&mut self, k: &mut CliKernel, conv: u8) {
        self.core.note(
            k,
            Actor::Fault,
            Note::Reset {
                cid: Some(ConvId(conv)),
            },
        );
        if self.core.waiter.is_some() {
            self.core.mark(k, vocab::RESET_DURING_WAIT);
        }
        self.pop_jobs(k, |j| j.name.conv == conv);
        let jobs = &self.core.jobs;
        let purged: Vec<MsgId> = take_where(&mut self.core.completions, |&i| {
            jobs[i as usize].name.conv == conv
        })
        .into_iter()
        .map(|i| jobs[i as usize].msg.expect("queued with its message"))
        .collect();
        for msg in purged {
            self.core.note(k, Actor::Host, Note::Purged { msg });
            let reason = vocab::JOB_RESET;
            self.core.emit(k, Actor::Host, Ev::Dropped { msg, reason });
        }
        self.core.next_id[usize::from(conv)] = 1;
        if conv == OWN {
            self.notify_waiter(k);
        }
    }

    /// Unregister the jobs `which` selects, killing those still running; their readers call back
    /// later and find them gone. A job popped before its completion was queued never delivers it.
    fn pop_jobs(&mut self, k: &mut CliKernel, which: impl Fn(&Job) -> bool) {
        for index in 0..self.core.jobs.len() as u32 {
            let j = self.core.jobs[index as usize];
            if !j.registered || !which(&j) {
                continue;
            }
            self.core.jobs[index as usize].registered = false;
            if !j.notified {
                // Popped before its completion was queued: running (killed now) or exited with
                // its reader still draining; either way its reader's callback will be dropped.
                let job = &mut self.core.jobs[index as usize];
                job.killed = j.running;
                job.running = false;
                self.core.emit(
                    k,
                    Actor::Host,
                    Ev::Work {
                        work: index,
                        shown: j.name.id,
                        conv: j.name.conv,
                        op: WorkOp::Killed,
                    },
                );
                let (job, running) = (j.name, j.running);
                self.core
                    .note(k, Actor::Host, Note::Killed { job, running });
                if j.running && self.core.ended.is_none() {
                    let d = self.core.cfg.timing.drain_ms.delay(k, "reader drain");
                    k.schedule(d, CliEv::Notify(index));
                }
            }
        }
    }

    /// The session ends: SESSION_END, then the exit cleanup (`reset_background_jobs()` at
    /// atexit or in the SIGTERM handler).
    fn end(&mut self, k: &mut CliKernel, cause: EndCause) {
        if self.core.ended.is_some() {
            return;
        }
        self.core.emit(k, Actor::Host, Ev::SessionEnd { cause });
        self.core.ended = Some(cause);
        self.core.state = CliState::Ended;
        self.core.waiter = None;
        self.core.hook_unlocked = false;
        self.run = None;
        self.core.note(k, Actor::Host, Note::Reset { cid: None });
        self.pop_jobs(k, |_| true);
        for index in std::mem::take(&mut self.core.completions) {
            let j = self.core.jobs[index as usize];
            let msg = j.msg.expect("queued with its message");
            let reason = if j.name.conv != OWN {
                Some(vocab::OTHER_CONVERSATION)
            } else if j.wait_expired {
                Some(vocab::TIMED_OUT_AT_EXIT)
            } else if cause == vocab::SIGNAL {
                Some(vocab::TERMINATED)
            } else {
                None
            };
            self.core.note(k, Actor::Host, Note::Purged { msg });
            if let Some(reason) = reason {
                self.core.emit(k, Actor::Host, Ev::Dropped { msg, reason });
            }
        }
        self.wake.on_reset_all();
        for r in std::mem::take(&mut self.core.file) {
            if let Some(msg) = r.msg {
                let reason = vocab::LEFT_ON_DISK;
                self.core.emit(k, Actor::Host, Ev::Dropped { msg, reason });
            }
        }
        for msg in std::mem::take(&mut self.core.subagents) {
            let reason = vocab::SUBAGENT_AT_EXIT;
            self.core.emit(k, Actor::Host, Ev::Dropped { msg, reason });
        }
        if cause == vocab::SIGNAL {
            let owed: Vec<MsgId> = k
                .sink
                .owed()
                .iter()
                .copied()
                .filter(|m| k.sink.messages()[m.0 as usize].conv == OWN)
                .collect();
            for msg in owed {
                let reason = vocab::TERMINATED;
                self.core.emit(k, Actor::Host, Ev::Dropped { msg, reason });
            }
        }
    }

    fn timed_fault(&mut self, k: &mut CliKernel, i: u32) {
        if k.quiescent() || self.core.ended.is_some() {
            return;
        }
        // LOOP_CONTINUE in progress: the session is in (or on its way into) its idle wait.
        let waiting = self.core.waiter.is_some() || self.run.is_some();
        let f = self.timed.fault(i);
        match f {
            CliFault::PromptWrites
            | CliFault::SteerWrites
            | CliFault::MalformedRecords
            | CliFault::PromptFlood => {
                let steer = f == CliFault::SteerWrites;
                let malformed = f == CliFault::MalformedRecords;
                if self.core.closed {
                    self.core.note(
                        k,
                        Actor::Fault,
                        Note::Writer {
                            payload: Payload::None,
                            steer,
                            malformed,
                            refused: true,
                        },
                    );
                    return;
                }
                let n = match f {
                    CliFault::PromptFlood => FLOOD_RECORDS,
                    CliFault::MalformedRecords => 0,
                    _ => self.core.cfg.producers.prompt_records.count(k, "records"),
                };
                let mut ids = Vec::new();
                for _ in 0..n {
                    let from = MsgFrom {
                        kind: MsgKind::Prompt,
                        source: if steer { STEER_STREAM } else { PROMPT_STREAM },
                        origin: u8::from(steer),
                        conv: OWN,
                        stream: None,
                    };
                    let msg = k.produce_from(from, self.core.state as u8);
                    self.core.file.push_back(FileRecord {
                        msg: Some(msg),
                        steer,
                    });
                    ids.push(msg);
                }
                if malformed {
                    self.core.file.push_back(FileRecord {
                        msg: None,
                        steer: false,
                    });
                }
                if waiting && !malformed {
                    self.core.mark(k, vocab::INPUT_DURING_WAIT);
                }
                if self.core.records_on_disk() as usize > PROMPTS_MAX {
                    self.core.mark(k, vocab::PROMPTS_OVER_CAP);
                }
                self.core.note(
                    k,
                    Actor::Fault,
                    Note::Writer {
                        payload: Payload::from_slice(&ids),
                        steer,
                        malformed,
                        refused: false,
                    },
                );
            }
            CliFault::ControlWrites => {
                let same_size =
                    self.core.control.is_some() && k.chance(Ratio::new(1, 2), "same-size rewrite");
                self.write_control(k, same_size);
                if waiting {
                    self.core.mark(k, vocab::INPUT_DURING_WAIT);
                    if same_size {
                        self.core.mark(k, vocab::SAME_SIZE_REWRITE);
                    }
                }
            }
            CliFault::SubagentReports => {
                let from = MsgFrom {
                    kind: MsgKind::Notification,
                    source: SUBAGENT_STREAM,
                    origin: self.subagent_reports % 26,
                    conv: OWN,
                    stream: Some("the subagent reports to conversation A"),
                };
                self.subagent_reports = self.subagent_reports.wrapping_add(1);
                let msg = k.produce_from(from, self.core.state as u8);
                self.core.subagents.push_back(msg);
                if waiting {
                    self.core.mark(k, vocab::INPUT_DURING_WAIT);
                }
            }
            CliFault::ForeignJobs => {
                let index = self.start_job(k, OTHER);
                let job = self.core.jobs[index as usize].name;
                self.core.note(k, Actor::Fault, Note::ForeignJob { job });
            }
            CliFault::TeardownReset => self.reset(k, OWN),
            CliFault::Sigterm => {
                self.core.note(k, Actor::Fault, Note::Sigterm);
                self.end(k, vocab::SIGNAL);
            }
            f => unreachable!("{} is not a timed fault", f.name()),
        }
    }

    fn write_control(&mut self, k: &mut CliKernel, same_size: bool) {
        self.core.control_versions += 1;
        let size = match (self.core.control, same_size) {
            (Some(c), true) => c.size,
            (Some(c), false) => c.size + CONTROL_RECORD_BYTES,
            (None, _) => CONTROL_RECORD_BYTES,
        };
        self.core.control = Some(api::ControlFile {
            version: self.core.control_versions,
            size,
        });
        self.core
            .note(k, Actor::Fault, Note::ControlWrite { size, same_size });
    }

    fn plan(&mut self, k: &mut CliKernel) {
        self.core.faults.plan(k);
        let jobs = self.core.cfg.producers.jobs;
        self.jobs_planned = jobs.count(k, "jobs");
        self.timed.plan(&self.core.faults, k, CliEv::Timed);
    }
}

impl World for CliHost {
    type Ev = CliEv;
    type Sink = Monitor<Note>;

    fn mix(&self) -> Mix {
        Mix {
            faults: self.core.faults.mix(),
            producers: Vec::new(),
        }
    }

    fn start(&mut self, k: &mut CliKernel) {
        k.choices.set_constants(&self.wake.constants_ms());
        self.plan(k);
        let stale_control = self.core.faults.on(CliFault::StaleControl);
        if stale_control {
            self.core.control_versions += 1;
            self.core.control = Some(api::ControlFile {
                version: self.core.control_versions,
                size: CONTROL_RECORD_BYTES,
            });
        }
        self.core.note(
            k,
            Actor::Host,
            Note::CliStart {
                auto_reply: self.core.faults.on(CliFault::AutoReply),
                stale_control,
            },
        );
        k.schedule(0, CliEv::Loop);
    }

    fn step(&mut self, k: &mut CliKernel, ev: CliEv) {
        match ev {
            CliEv::Loop => self.loop_top(k),
            CliEv::Close => self.close(k),
            CliEv::Reply => {
                if self.core.ended.is_none() {
                    self.reply(k);
                }
            }
            CliEv::ToolDone => self.tool_done(k),
            CliEv::Resume(s, kind) => self.resume(k, s, kind),
            CliEv::JobExit(i) => self.job_exit(k, i),
            CliEv::Notify(i) => self.notify(k, i),
            CliEv::OwnerClaim(i) => self.owner_claim(k, i),
            CliEv::ConcurrentDrain => self.concurrent_drain(k),
            CliEv::Timed(i) => self.timed_fault(k, i),
        }
        self.core.sync_idle(k);
    }
}

/// The gptme-cli family: gptme's noninteractive chat loop, its wake logic written against
/// [`CliWake`].
pub struct CliFamily;

impl Family for CliFamily {
    const NAME: &'static str = "gptme-cli";
    const HOSTS: &'static [(Host, ())] = &[(
        // The noninteractive CLI chat loop with background jobs (`gptme/chat.py`,
        // `gptme/tools/shell_background.py` as of PR #3843).
        Host {
            name: "gptme-cli",
            version_label: "gptme-cli -n (#3843)",
            describe: "gptme -n chat loop: prompt queue, STEP_PRE/LOOP_CONTINUE hooks by priority, background jobs, completion queue and condition, prompt-queue and control files",
        },
        (),
    )];
    const INVARIANTS: &'static [Invariant] = &[
        Invariant::NoLoss,
        Invariant::ExactlyOnce,
        Invariant::Fifo,
        Invariant::BoundedLatency,
        Invariant::AliveWhileOwed,
        Invariant::NoSpin,
        Invariant::Isolation,
    ];
    const WINDOWS: &'static [Window] = vocab::WINDOWS;
    const COMPACT_RUNS: bool = true;

    type Variant = ();
    type Fault = CliFault;
    type Note = Note;
    type Config = CliConfig;
    type Producers = sections::RawCliProducers;
    type Timing = sections::RawCliTiming;
    type Wake = dyn CliWake;
    type World = CliHost;

    fn state_name(code: u8) -> &'static str {
        note::state_name(code)
    }

    fn config(
        cx: Cx<'_>,
        producers: sections::RawCliProducers,
        timing: sections::RawCliTiming,
        faults: Vec<(CliFault, FaultSpec)>,
    ) -> Result<CliConfig> {
        sections::config(cx, producers, timing, faults)
    }

    fn scope(config: &mut CliConfig, messages_max: u64) {
        config.producers.jobs.cap(messages_max);
        config.producers.prompt_records.cap(messages_max);
    }

    fn world(_: (), config: &CliConfig, wake: Box<dyn CliWake>) -> CliHost {
        CliHost::new(config.clone(), wake)
    }

    fn external(slot: SlotRef, constants_ms: Vec<u64>) -> Box<dyn CliWake> {
        Box::new(adapter::ExternalCli::new(slot, constants_ms))
    }
}

impl Registry {
    /// Add (or replace) a gptme-cli wake logic under `name`.
    pub fn with_gptme_cli(
        self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<dyn CliWake> + Send + Sync + 'static,
    ) -> Registry {
        self.with::<CliFamily>(name, summary, make)
    }
}
