//! The gptme CLI's faults: what a seed may switch on ([`CliFault`]), its timed faults as a type
//! of their own ([`CliTimed`], matched without a default, so a new timed fault does not compile
//! until it is handled here), how each timed fault acts (outside writers of the prompt-queue
//! and control files, subagent reports, another conversation's jobs, a teardown reset,
//! SIGTERM), and the session's end with its exit cleanup. Opportunity faults fire where the
//! model reaches them (`fires`): at a reply (tool calls) and at a job's completion (a
//! concurrent drain).

use super::api;
use super::core::{FileRecord, Job, PROMPTS_MAX};
use super::host::CliHost;
use super::note::{CliState, Note};
use super::{
    CONTROL_RECORD_BYTES, CliEv, CliKernel, FLOOD_RECORDS, OTHER, OWN, PROMPT_STREAM, STEER_STREAM,
    SUBAGENT_STREAM, vocab,
};
use crate::family::common::Core;
use crate::family::common::conv::{ConvId, take_where};
use crate::family::common::faults::FaultKind;
use crate::sim::choice::Ratio;
use crate::sim::msg::{MsgFrom, MsgId, MsgKind, Payload};
use crate::sim::record::{Actor, EndCause, Ev, WorkOp};
use crate::sim::sink::Sink;

/// Faults a seed may switch on for the gptme CLI (`docs/hosts/gptme.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CliFault {
    /// The complete tool is loaded (autonomous sessions): `auto_reply_hook` (LOOP_CONTINUE 999)
    /// nudges after a reply without a tool call and completes the session after two nudges.
    AutoReply,
    /// A model reply calls a foreground tool, so another step follows.
    ToolCalls,
    /// An outside writer appends regular records to `prompt-queue.jsonl`.
    PromptWrites,
    /// An outside writer appends steer records.
    SteerWrites,
    /// An outside writer appends a malformed line (it stays on disk and ends no wait).
    MalformedRecords,
    /// An outside writer appends 101 records at once: more than one wait may take.
    PromptFlood,
    /// The parent writes `control.jsonl`, or rewrites it with new contents of the same size;
    /// nothing in this session consumes it.
    ControlWrites,
    /// A stale, non-empty `control.jsonl` is in the logdir from the start (G-7).
    StaleControl,
    /// A subagent of this session reports (completion or progress).
    SubagentReports,
    /// Another conversation in the process starts a background job (G-10).
    ForeignJobs,
    /// When an own job's completion is queued, another drain of this conversation (another
    /// session at STEP_PRE) claims it first (G-9).
    ConcurrentDrain,
    /// `reset_background_jobs(cid)` mid-session: kill, purge, pop and notify (G-11).
    TeardownReset,
    /// SIGTERM: cleanup resets every job and the process exits.
    Sigterm,
}

impl CliFault {
    pub const ALL: [CliFault; 13] = [
        CliFault::AutoReply,
        CliFault::ToolCalls,
        CliFault::PromptWrites,
        CliFault::SteerWrites,
        CliFault::MalformedRecords,
        CliFault::PromptFlood,
        CliFault::ControlWrites,
        CliFault::StaleControl,
        CliFault::SubagentReports,
        CliFault::ForeignJobs,
        CliFault::ConcurrentDrain,
        CliFault::TeardownReset,
        CliFault::Sigterm,
    ];
}

impl FaultKind for CliFault {
    const LIST: &'static [CliFault] = &CliFault::ALL;
    type Timed = CliTimed;

    fn name(self) -> &'static str {
        match self {
            CliFault::AutoReply => "auto_reply",
            CliFault::ToolCalls => "tool_calls",
            CliFault::PromptWrites => "prompt_writes",
            CliFault::SteerWrites => "steer_writes",
            CliFault::MalformedRecords => "malformed_records",
            CliFault::PromptFlood => "prompt_flood",
            CliFault::ControlWrites => "control_writes",
            CliFault::StaleControl => "stale_control",
            CliFault::SubagentReports => "subagent_reports",
            CliFault::ForeignJobs => "foreign_jobs",
            CliFault::ConcurrentDrain => "concurrent_drain",
            CliFault::TeardownReset => "teardown_reset",
            CliFault::Sigterm => "sigterm",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            CliFault::AutoReply => {
                "the complete tool is loaded: auto_reply nudges, and completes the session after two nudges"
            }
            CliFault::ToolCalls => "a model reply calls a foreground tool; another step follows",
            CliFault::PromptWrites => "an outside writer appends records to prompt-queue.jsonl",
            CliFault::SteerWrites => "an outside writer appends steer records",
            CliFault::MalformedRecords => "an outside writer appends a malformed line",
            CliFault::PromptFlood => "an outside writer appends 101 records at once",
            CliFault::ControlWrites => {
                "the parent writes control.jsonl or rewrites it with the same size; nothing consumes it"
            }
            CliFault::StaleControl => {
                "a stale non-empty control.jsonl is in the logdir from the start"
            }
            CliFault::SubagentReports => "a subagent of this session reports",
            CliFault::ForeignJobs => "another conversation in the process starts a background job",
            CliFault::ConcurrentDrain => {
                "another drain of this conversation claims a queued completion first"
            }
            CliFault::TeardownReset => {
                "reset_background_jobs(cid) mid-session: kill, purge, pop and notify the condition"
            }
            CliFault::Sigterm => "SIGTERM: cleanup resets every job and the process exits",
        }
    }

    fn timed(self) -> Option<CliTimed> {
        match self {
            CliFault::PromptWrites => Some(CliTimed::PromptWrites),
            CliFault::SteerWrites => Some(CliTimed::SteerWrites),
            CliFault::MalformedRecords => Some(CliTimed::MalformedRecords),
            CliFault::PromptFlood => Some(CliTimed::PromptFlood),
            CliFault::ControlWrites => Some(CliTimed::ControlWrites),
            CliFault::SubagentReports => Some(CliTimed::SubagentReports),
            CliFault::ForeignJobs => Some(CliTimed::ForeignJobs),
            CliFault::TeardownReset => Some(CliTimed::TeardownReset),
            CliFault::Sigterm => Some(CliTimed::Sigterm),
            CliFault::AutoReply
            | CliFault::ToolCalls
            | CliFault::StaleControl
            | CliFault::ConcurrentDrain => None,
        }
    }

    fn defaults(self) -> (Ratio, u32) {
        match self {
            CliFault::AutoReply | CliFault::StaleControl => (Ratio::ALWAYS, 1),
            CliFault::ToolCalls => (Ratio::new(1, 3), 4),
            CliFault::ConcurrentDrain => (Ratio::new(1, 2), 2),
            CliFault::PromptFlood | CliFault::TeardownReset | CliFault::Sigterm => {
                (Ratio::ALWAYS, 1)
            }
            CliFault::PromptWrites
            | CliFault::SteerWrites
            | CliFault::MalformedRecords
            | CliFault::ControlWrites
            | CliFault::SubagentReports
            | CliFault::ForeignJobs => (Ratio::ALWAYS, 3),
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The CLI's timed faults: what happens at drawn instants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CliTimed {
    PromptWrites,
    SteerWrites,
    MalformedRecords,
    PromptFlood,
    ControlWrites,
    SubagentReports,
    ForeignJobs,
    TeardownReset,
    Sigterm,
}

/// Stand for the logdir's `prompt-queue.jsonl` and this session's subagent queues in the
/// fingerprints of `Ev::InputChanged` (the control file's is its own, `ControlFile::fingerprint`).
const PROMPT_QUEUE_PATH: u64 = 0x7072_6f6d;
const SUBAGENT_QUEUES: u64 = 0x7375_6261;

/// An outside writer of `prompt-queue.jsonl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Writer {
    /// Regular records.
    Prompts,
    /// Steer records.
    Steer,
    /// A malformed line.
    Malformed,
    /// More records at once than one wait may take.
    Flood,
}

impl CliHost {
    /// Occurrence `i` of a timed fault is due.
    pub(super) fn timed_fault(&mut self, k: &mut CliKernel, i: u32) {
        if k.quiescent() || self.core.ended.is_some() {
            return;
        }
        // LOOP_CONTINUE in progress: the session is in (or on its way into) its idle wait.
        let waiting = self.core.waiter.is_some() || self.run.is_some();
        match self.timed.fault(i) {
            CliTimed::PromptWrites => self.write_prompts(k, Writer::Prompts, waiting),
            CliTimed::SteerWrites => self.write_prompts(k, Writer::Steer, waiting),
            CliTimed::MalformedRecords => self.write_prompts(k, Writer::Malformed, waiting),
            CliTimed::PromptFlood => self.write_prompts(k, Writer::Flood, waiting),
            CliTimed::ControlWrites => {
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
            CliTimed::SubagentReports => self.subagent_report(k, waiting),
            CliTimed::ForeignJobs => {
                let index = self.start_job(k, OTHER);
                let job = self.core.jobs[index as usize].name;
                self.core.note(k, Actor::Fault, Note::ForeignJob { job });
            }
            CliTimed::TeardownReset => self.reset(k, OWN),
            CliTimed::Sigterm => {
                self.core.note(k, Actor::Fault, Note::Sigterm);
                self.end(k, vocab::SIGNAL);
            }
        }
    }

    /// An outside writer appends to `prompt-queue.jsonl`, unless the loop has closed it.
    fn write_prompts(&mut self, k: &mut CliKernel, writer: Writer, waiting: bool) {
        let steer = writer == Writer::Steer;
        let malformed = writer == Writer::Malformed;
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
        let n = match writer {
            Writer::Flood => FLOOD_RECORDS,
            Writer::Malformed => 0,
            Writer::Prompts | Writer::Steer => {
                self.core.cfg.producers.prompt_records.count(k, "records")
            }
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
        // New records are input the idle wait must hear (a malformed line is not).
        if let Some(first) = ids.first() {
            let input = PROMPT_QUEUE_PATH << 32 | u64::from(first.0);
            self.core.emit(k, Actor::Fault, Ev::InputChanged { input });
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

    /// A subagent of this session reports.
    fn subagent_report(&mut self, k: &mut CliKernel, waiting: bool) {
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
        let input = SUBAGENT_QUEUES << 32 | u64::from(msg.0);
        self.core.emit(k, Actor::Fault, Ev::InputChanged { input });
        if waiting {
            self.core.mark(k, vocab::INPUT_DURING_WAIT);
        }
    }

    // ---- faults and the end

    /// `reset_background_jobs(cid)`: pop the conversation's jobs (killing running ones), purge
    /// their queued completions, pop and notify its condition; ids start over at 1.
    pub(super) fn reset(&mut self, k: &mut CliKernel, conv: u8) {
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
    pub(super) fn pop_jobs(&mut self, k: &mut CliKernel, which: impl Fn(&Job) -> bool) {
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
    pub(super) fn end(&mut self, k: &mut CliKernel, cause: EndCause) {
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

    fn write_control(&mut self, k: &mut CliKernel, same_size: bool) {
        self.core.control_versions += 1;
        let size = match (self.core.control, same_size) {
            (Some(c), true) => c.size,
            (Some(c), false) => c.size + CONTROL_RECORD_BYTES,
            (None, _) => CONTROL_RECORD_BYTES,
        };
        let control = api::ControlFile {
            version: self.core.control_versions,
            size,
        };
        self.core.control = Some(control);
        // New contents, of the same size too: input the idle wait must hear.
        let input = control.fingerprint();
        self.core.emit(k, Actor::Fault, Ev::InputChanged { input });
        self.core
            .note(k, Actor::Fault, Note::ControlWrite { size, same_size });
    }
}
