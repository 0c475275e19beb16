//! The gptme CLI's state and the synchronous API its wake logics call: the job registry under
//! `_job_lock`, the completion queue, the prompt-queue and control files. The handle the wake
//! logic calls is in `handle.rs`; the chat loop, the hooks and the background threads in
//! `chat_loop.rs`, `hooks.rs` and `jobs.rs`.

use std::collections::VecDeque;

use super::CliEv;
use super::api::{Claimed, ControlFile, Item, JobRef, JobView, PromptRecord};
use super::config::{CliConfig, CliFault};
use super::note::{CliState, JobName, Note};
use crate::family::common::conv::{ConvId, take_map_where};
use crate::family::common::faults::Faults;
use crate::family::common::{Calls, Core};
use crate::sim::msg::MsgId;
use crate::sim::record::EndCause;

/// `MAX_PROMPT_QUEUE_SIZE` (`gptme/constants.py`): what one drain of the prompt-queue file takes.
pub const PROMPTS_MAX: usize = 100;

/// A background job object.
#[derive(Clone, Copy, Debug)]
pub(super) struct Job {
    pub name: JobName,
    pub running: bool,
    /// `_completion_notified`.
    pub notified: bool,
    /// `_wait_expired`.
    pub wait_expired: bool,
    /// Still in `_background_jobs[cid]` (a reset pops it).
    pub registered: bool,
    pub killed: bool,
    pub msg: Option<MsgId>,
}

/// A line of `prompt-queue.jsonl`: a record, or a malformed line (`msg` none).
#[derive(Clone, Copy, Debug)]
pub(super) struct FileRecord {
    pub msg: Option<MsgId>,
    pub steer: bool,
}

/// What the chat loop's in-memory `prompt_queue` holds.
#[derive(Clone, Debug)]
pub(super) enum QItem {
    Initial,
    Hook(Item),
    Nudge(u8),
    Subagent(MsgId),
}

/// The CLI's state. The wake logic reaches it only through [`super::api::Cli`].
pub struct CliCore {
    pub(super) cfg: CliConfig,
    pub(super) faults: Faults<CliFault>,
    pub(super) queue: VecDeque<QItem>,
    pub(super) file: VecDeque<FileRecord>,
    /// The `prompt-queue-closed` sentinel exists.
    pub(super) closed: bool,
    pub(super) control: Option<ControlFile>,
    pub(super) control_versions: u32,
    pub(super) jobs: Vec<Job>,
    /// Next job id per conversation (a reset starts over at 1).
    pub(super) next_id: [u32; 2],
    /// `_completion_queue`: job indices.
    pub(super) completions: VecDeque<u32>,
    /// The waiter blocked in `cond(A).wait`: the suspension it resumes.
    pub(super) waiter: Option<u32>,
    /// A hook released the lock for file I/O and has not resumed yet.
    pub(super) hook_unlocked: bool,
    /// This session's subagents' reports not yet delivered.
    pub(super) subagents: VecDeque<MsgId>,
    pub(super) ended: Option<EndCause>,
    pub(super) state: CliState,
    pub(super) requests: u32,
    pub(super) idle: bool,
    pub(super) calls: Calls,
    /// What the last `Cli::jobs` lent the wake logic: a scratch list, not state (its allocation
    /// is kept across calls and seeds).
    pub(super) views: Vec<JobView>,
}

impl CliCore {
    pub(super) fn new(cfg: CliConfig) -> CliCore {
        let faults = Faults::new(&cfg.faults);
        CliCore {
            cfg,
            faults,
            queue: VecDeque::from([QItem::Initial]),
            file: VecDeque::new(),
            closed: false,
            control: None,
            control_versions: 0,
            jobs: Vec::new(),
            next_id: [1, 1],
            completions: VecDeque::new(),
            waiter: None,
            hook_unlocked: false,
            subagents: VecDeque::new(),
            ended: None,
            state: CliState::Loop,
            requests: 0,
            idle: false,
            calls: Calls::default(),
            views: Vec::new(),
        }
    }

    /// This core as `new(cfg.clone())` would make it, keeping its allocations (the
    /// configuration is copied only when it changed). Every field is named: a new field does not
    /// compile until it is renewed here.
    pub(super) fn renew(&mut self, cfg: &CliConfig) {
        let CliCore {
            cfg: own_cfg,
            faults,
            queue,
            file,
            closed,
            control,
            control_versions,
            jobs,
            next_id,
            completions,
            waiter,
            hook_unlocked,
            subagents,
            ended,
            state,
            requests,
            idle,
            calls,
            views,
        } = self;
        faults.renew_for(own_cfg, cfg, |c| &c.faults);
        queue.clear();
        queue.push_back(QItem::Initial);
        file.clear();
        *closed = false;
        *control = None;
        *control_versions = 0;
        jobs.clear();
        *next_id = [1, 1];
        completions.clear();
        *waiter = None;
        *hook_unlocked = false;
        subagents.clear();
        *ended = None;
        *state = CliState::Loop;
        *requests = 0;
        *idle = false;
        *calls = Calls::default();
        views.clear();
    }

    /// Unfinished work of conversations `convs` a wait could be for, each counted: jobs not
    /// expired whose completion is not queued yet (running, or their reader still draining) or
    /// queued and not claimed. One pass over the jobs for both.
    pub(super) fn unfinished(&self, convs: [u8; 2]) -> [u32; 2] {
        let mut n = [0; 2];
        for (i, j) in self.jobs.iter().enumerate() {
            let Some(c) = convs.iter().position(|&c| c == j.name.conv) else {
                continue;
            };
            if j.registered
                && !j.wait_expired
                && (!j.notified || self.completions.contains(&(i as u32)))
            {
                n[c] += 1;
            }
        }
        n
    }

    /// `background_job_completion_hook`'s claim: atomically remove the queued completions of
    /// `cid` whose jobs are still registered.
    pub(super) fn claim(&mut self, cid: ConvId) -> Vec<Claimed> {
        let jobs = &self.jobs;
        take_map_where(
            &mut self.completions,
            |&i| {
                let j = &jobs[i as usize];
                j.name.conv == cid.0 && j.registered
            },
            |i| {
                let j = &jobs[i as usize];
                Claimed {
                    job: JobRef {
                        index: i,
                        name: j.name,
                    },
                    msg: j.msg.expect("a queued completion has its message"),
                }
            },
        )
    }

    /// Move up to `max` records of the file into a list, in file order within each kind:
    /// regular records first (when `regular`), then steer records (when `steer`). Malformed
    /// lines and anything over the cap stay, in order.
    #[inline]
    pub(super) fn take_file(
        &mut self,
        max: usize,
        regular: bool,
        steer: bool,
    ) -> Vec<PromptRecord> {
        if self.file.is_empty() {
            return Vec::new();
        }
        self.take_records(max, regular, steer)
    }

    /// `take_file` of a file that has lines (out of line: most takes find the file empty).
    #[inline(never)]
    fn take_records(&mut self, max: usize, regular: bool, steer: bool) -> Vec<PromptRecord> {
        let mut out = Vec::new();
        for (kind, wanted) in [(false, regular), (true, steer)] {
            if !wanted {
                continue;
            }
            self.file.retain(|r| match r.msg {
                Some(msg) if r.steer == kind && out.len() < max => {
                    out.push(PromptRecord { msg, steer: kind });
                    false
                }
                _ => true,
            });
        }
        out
    }

    /// Records still on disk (malformed lines excluded).
    pub(super) fn records_on_disk(&self) -> u32 {
        self.file.iter().filter(|r| r.msg.is_some()).count() as u32
    }
}

impl Core for CliCore {
    type Ev = CliEv;
    type Note = Note;

    fn state_code(&self) -> u8 {
        self.state as u8
    }

    /// Blocked in the idle wait, or gone: only a notify, a timeout or outside input moves it.
    fn quiet(&self) -> bool {
        self.ended.is_some() || self.waiter.is_some()
    }

    fn idle_mut(&mut self) -> &mut bool {
        &mut self.idle
    }
}
