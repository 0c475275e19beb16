//! The wake-logic API of the gptme CLI: what `background_job_wait_hook` (LOOP_CONTINUE) and
//! `background_job_completion_hook` (STEP_PRE) see in `gptme/tools/shell_background.py`.
//!
//! A LOOP_CONTINUE hook that blocks is a thread in gptme: it drains under `_job_lock`, reads the
//! prompt-queue and control files outside it, and waits on the conversation's condition. Here
//! it is a resumable state machine: [`CliWake::loop_continue`] starts it and returns a [`Flow`];
//! `Flow::Unlock` releases the lock for file I/O (other threads run: a reader may notify), and
//! `Flow::Wait` blocks in `cond(cid).wait(timeout)`; the host calls [`CliWake::resume`] when the
//! I/O is done or the wait ends. Each call runs atomically, as code under the lock does.
//!
//! The calls on [`Cli`] mirror gptme's: [`Cli::claim_completions`] (the completion hook's atomic
//! claim), [`Cli::jobs`] (`_background_jobs`), [`Cli::mark_wait_expired`],
//! [`Cli::take_prompts`] (`drain_prompt_queue` then `drain_steer_prompts`, capped; and
//! [`Cli::take_prompts_steer_ordered`], B1-ordered's take: regular records, else one steer),
//! [`Cli::control_file`], [`Cli::subagent_pending`], [`Cli::idle_max_ms`]
//! (`GPTME_WATCH_IDLE_MAX`).

use super::note::JobName;
use crate::sim::msg::MsgId;

pub use super::handle::Cli;
pub use crate::family::common::conv::ConvId;

/// A background job, as the registry knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobRef {
    /// Which job object (job ids are reused after a reset; this is not).
    pub(crate) index: u32,
    pub(crate) name: JobName,
}

impl JobRef {
    /// The per-conversation job id users see (`#1`, `#2`, ...).
    pub fn id(&self) -> u32 {
        self.name.id
    }

    pub fn conversation(&self) -> ConvId {
        ConvId(self.name.conv)
    }
}

/// A registered job's state (`_background_jobs[cid][id]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobView {
    pub job: JobRef,
    /// Its process has not exited yet.
    pub running: bool,
    /// `_completion_notified`: its completion was queued.
    pub notified: bool,
    /// `_wait_expired`: a wait timed out on it and reported so.
    pub wait_expired: bool,
}

/// A completion claimed from the queue: "Background shell job #N finished (exit code X)", with
/// its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claimed {
    pub job: JobRef,
    pub msg: MsgId,
}

/// A record taken from `prompt-queue.jsonl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PromptRecord {
    pub msg: MsgId,
    pub steer: bool,
}

/// Stands for the resolved path of the logdir's `control.jsonl` in fingerprints.
const CONTROL_PATH: u64 = 0x636f_6e74;

/// `control.jsonl` as read: non-empty contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlFile {
    /// Which contents (every write or rewrite makes new contents).
    pub(crate) version: u32,
    pub(crate) size: u32,
}

impl ControlFile {
    /// `(resolved path, sha256(contents))`, as a number: equal exactly when the contents are.
    pub fn fingerprint(&self) -> u64 {
        // One control path per logdir, so the contents' version alone tells them apart.
        CONTROL_PATH << 32 | u64::from(self.version)
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u32 {
        self.size
    }
}

/// What a hook yields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// A job's completion message.
    Completion(Claimed),
    /// A prompt-queue record, delivered as a user message.
    Prompt(PromptRecord),
    /// `system("Background wait yielded to pending session input.")`, for this control file.
    InputPending(ControlFile),
    /// The timeout notice for these jobs (sent once).
    Timeout(Vec<JobRef>),
}

impl Item {
    /// The producer message the item carries, if any (notices carry none).
    pub fn msg(&self) -> Option<MsgId> {
        match self {
            Item::Completion(c) => Some(c.msg),
            Item::Prompt(r) => Some(r.msg),
            Item::InputPending(_) | Item::Timeout(_) => None,
        }
    }
}

/// What a LOOP_CONTINUE hook does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flow {
    /// The hook is done: it yields `items` (maybe none), then `StopPropagation` if `stop`.
    Return { items: Vec<Item>, stop: bool },
    /// Release `_job_lock` and do file I/O; the host resumes the hook with `Resume::Io`.
    Unlock,
    /// `cond(cid).wait(timeout_ms)` under `_job_lock`; the host resumes the hook with
    /// `Resume::Notified` or `Resume::TimedOut`.
    Wait { timeout_ms: u64 },
}

impl Flow {
    /// The hook yields nothing.
    pub fn nothing() -> Flow {
        Flow::Return {
            items: Vec::new(),
            stop: false,
        }
    }

    /// The hook yields `items`, then `StopPropagation` when there are any.
    pub fn yield_and_stop(items: Vec<Item>) -> Flow {
        let stop = !items.is_empty();
        Flow::Return { items, stop }
    }
}

/// Why a suspended hook resumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    Io,
    Notified,
    TimedOut,
}

/// A wake logic for the gptme CLI: the code under test.
pub trait CliWake {
    /// Constants of the logic in ms; the kernel biases its delay draws toward them.
    fn constants_ms(&self) -> Vec<u64> {
        Vec::new()
    }

    /// The priority of this logic's LOOP_CONTINUE hook (higher runs first; `auto_reply_hook` is
    /// 999, the subagent hook 50, as gptme 0.35.1 registers them).
    fn loop_continue_priority(&self) -> i32;

    /// The hook's name in timelines.
    fn name(&self) -> &'static str;

    /// The STEP_PRE hook's name in timelines.
    fn step_pre_name(&self) -> &'static str {
        "the wake logic's STEP_PRE hook"
    }

    /// STEP_PRE (priority 900 in #3843): what to append before the model request.
    fn step_pre(&mut self, _cli: &mut Cli<'_>) -> Vec<Item> {
        Vec::new()
    }

    /// The LOOP_CONTINUE hook starts.
    fn loop_continue(&mut self, cli: &mut Cli<'_>) -> Flow;

    /// A suspended hook continues.
    fn resume(&mut self, _cli: &mut Cli<'_>, _why: Resume) -> Flow {
        Flow::nothing()
    }

    /// `reset_background_jobs()` of every conversation ran: module state such as
    /// `_control_wait_keys` is cleared.
    fn on_reset_all(&mut self) {}
}
