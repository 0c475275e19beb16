//! Background jobs (`gptme/tools/shell_background.py`): a job starts, its process exits, its
//! reader calls `_notify_completion` (queue the completion, notify the condition); another
//! session's concurrent drain; conversation B's owner claiming its own completion.

use super::core::Job;
use super::faults::CliFault;
use super::host::CliHost;
use super::note::{JobName, Note};
use super::{CliEv, CliKernel, JOB_STREAM, OWN, vocab};
use crate::family::common::Core;
use crate::family::common::conv::ConvId;
use crate::sim::msg::{MsgFrom, MsgId, MsgKind, Payload};
use crate::sim::record::{Actor, Ev, WorkOp};

impl CliHost {
    // ---- background threads

    pub(super) fn start_job(&mut self, k: &mut CliKernel, conv: u8) -> u32 {
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
        if conv != OWN {
            k.choices.search_mark(crate::sim::feature::FOREIGN_WORK);
        }
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

    pub(super) fn job_exit(&mut self, k: &mut CliKernel, index: u32) {
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
    pub(super) fn notify(&mut self, k: &mut CliKernel, index: u32) {
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
    pub(super) fn concurrent_drain(&mut self, k: &mut CliKernel) {
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

    pub(super) fn owner_claim(&mut self, k: &mut CliKernel, index: u32) {
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
}
