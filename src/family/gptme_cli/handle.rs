//! [`Cli`], the handle a gptme-CLI wake logic calls: the completion claim, the job registry, the
//! prompt-queue and control files. Every call acts on the host at once and counts against the
//! call budget.

use super::api::Item;
use super::api::{Claimed, ControlFile, JobRef, JobView, PromptRecord};
use super::core::{CliCore, QItem};
use super::note::Note;
use super::{CliKernel, vocab};
use crate::family::common::Core;
use crate::family::common::conv::ConvId;
use crate::sim::msg::{MsgId, Payload};
use crate::sim::record::Actor;
use crate::sim::time::Ms;

/// The handle a CLI wake logic calls. Every call acts on the host at once.
pub struct Cli<'a> {
    pub(super) core: &'a mut CliCore,
    pub(super) k: &'a mut CliKernel,
}

impl Cli<'_> {
    /// `monotonic()` on virtual time.
    pub fn now(&self) -> Ms {
        self.k.now()
    }

    /// The conversation this session runs (its logdir).
    pub fn conversation(&self) -> ConvId {
        ConvId(0)
    }

    /// `gptme -n`: never interactive.
    pub fn interactive(&self) -> bool {
        false
    }

    /// `len(prompt_queue)`: messages the loop will process next.
    pub fn prompt_queue_len(&self) -> usize {
        self.core.queue.len()
    }

    /// Completions a LOOP_CONTINUE hook yielded that still wait in the in-memory prompt queue
    /// (the loop appends one queued message per turn). A STEP_PRE hook that appends a later
    /// completion at once while one of these waits puts the later one first.
    pub fn queued_completions(&mut self) -> usize {
        self.core.calls.count();
        (self.core.queue.iter())
            .filter(|q| matches!(q, QItem::Hook(Item::Completion(_))))
            .count()
    }

    /// `GPTME_WATCH_IDLE_MAX` in ms (the environment's value; 1800 s when unset).
    pub fn idle_max_ms(&self) -> u64 {
        self.core.cfg.timing.idle_max_ms
    }

    /// `background_job_completion_hook`'s claim for conversation `cid`: every queued completion
    /// of a still-registered job of `cid`, removed from the queue (each is delivered once).
    #[inline]
    pub fn claim_completions(&mut self, cid: ConvId) -> Vec<Claimed> {
        self.core.calls.count();
        if self.core.completions.is_empty() {
            return Vec::new();
        }
        self.claim_queued(cid)
    }

    /// `claim_completions` of a non-empty completion queue.
    fn claim_queued(&mut self, cid: ConvId) -> Vec<Claimed> {
        let claimed = self.core.claim(cid);
        if !claimed.is_empty() {
            self.core.note_with(self.k, Actor::Wake, || {
                let ids: Vec<MsgId> = claimed.iter().map(|c| c.msg).collect();
                Note::Claim {
                    cid,
                    payload: Payload::from_slice(&ids),
                }
            });
        }
        claimed
    }

    /// `_background_jobs`: every registered job of every conversation. The views are lent from
    /// a list the host keeps (refilled at each call), so a check allocates nothing.
    pub fn jobs(&mut self) -> &[JobView] {
        self.core.calls.count();
        let CliCore { jobs, views, .. } = &mut *self.core;
        views.clear();
        views.extend(
            (jobs.iter().enumerate())
                .filter(|(_, j)| j.registered)
                .map(|(i, j)| JobView {
                    job: JobRef {
                        index: i as u32,
                        name: j.name,
                    },
                    running: j.running,
                    notified: j.notified,
                    wait_expired: j.wait_expired,
                }),
        );
        views
    }

    /// `job._wait_expired = True`.
    pub fn mark_wait_expired(&mut self, job: JobRef) {
        self.core.calls.count();
        self.core.jobs[job.index as usize].wait_expired = true;
        self.core.mark(self.k, vocab::WAIT_TIMEOUT);
        self.core
            .note(self.k, Actor::Wake, Note::MarkExpired { job: job.name });
    }

    /// Take up to `max` records from `prompt-queue.jsonl`: regular records first, then steer
    /// records. Malformed lines and anything over the cap stay on disk, in order.
    pub fn take_prompts(&mut self, max: usize) -> Vec<PromptRecord> {
        self.core.calls.count();
        let taken = self.core.take_file(max, true, true);
        self.note_taken(taken)
    }

    /// Take records from `prompt-queue.jsonl` so that no steer record can be overtaken: up to
    /// `max` regular records and no steer record, or, with no regular record on disk, the first
    /// steer record alone. The steer records left on disk are the ones STEP_PRE drains next, in
    /// file order, after the one taken (the loop appends it at once: the wait runs only when
    /// the in-memory queue is empty).
    pub fn take_prompts_steer_ordered(&mut self, max: usize) -> Vec<PromptRecord> {
        self.core.calls.count();
        let mut taken = self.core.take_file(max, true, false);
        if taken.is_empty() {
            taken = self.core.take_file(max.min(1), false, true);
        }
        self.note_taken(taken)
    }

    /// Note what a take moved off the disk.
    fn note_taken(&mut self, taken: Vec<PromptRecord>) -> Vec<PromptRecord> {
        if !taken.is_empty() {
            let core = &*self.core;
            core.note_with(self.k, Actor::Wake, || {
                let ids: Vec<MsgId> = taken.iter().map(|r| r.msg).collect();
                Note::TakePrompts {
                    payload: Payload::from_slice(&ids),
                    left: core.records_on_disk(),
                }
            });
        }
        taken
    }

    /// `control.jsonl` of the logdir, when it is non-empty.
    pub fn control_file(&mut self) -> Option<ControlFile> {
        self.core.calls.count();
        self.core.control
    }

    /// The subagent completion or progress queues of this session are non-empty.
    pub fn subagent_pending(&mut self) -> bool {
        self.core.calls.count();
        !self.core.subagents.is_empty()
    }
}
