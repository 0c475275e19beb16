//! The trace-hash encoding of the gptme CLI's narration (`sim::hash`, version 1): explicit tags,
//! never the variant order. The tags are those the derived hash wrote before version 1 was
//! written out, so every recorded trace hash still holds.

use super::note::{CliReply, JobName, Note, Popped};
use crate::sim::hash::{Encode, TraceHasher};

impl Encode for CliReply {
    fn encode(&self, h: &mut TraceHasher) {
        match *self {
            CliReply::Text => h.tag(0),
            CliReply::Tool => h.tag(1),
            CliReply::Job(n) => {
                h.tag(2);
                h.u32(n);
            }
        }
    }
}

impl Encode for JobName {
    fn encode(&self, h: &mut TraceHasher) {
        h.u8(self.conv);
        h.u32(self.id);
    }
}

impl Encode for Popped {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            Popped::Initial => h.tag(0),
            Popped::Completion(job, msg) => {
                h.tag(1);
                job.encode(h);
                msg.encode(h);
            }
            Popped::Prompt(msg, steer) => {
                h.tag(2);
                msg.encode(h);
                h.bool(*steer);
            }
            Popped::InputPending => h.tag(3),
            Popped::Timeout(jobs) => {
                h.tag(4);
                jobs.encode(h);
            }
            Popped::Nudge(n) => {
                h.tag(5);
                h.u8(*n);
            }
            Popped::Subagent(msg) => {
                h.tag(6);
                msg.encode(h);
            }
        }
    }
}

impl Encode for Note {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            Note::StepPre { hook, payload } => {
                h.tag(9);
                h.str(hook);
                payload.encode(h);
            }
            Note::CliStart {
                auto_reply,
                stale_control,
            } => {
                h.tag(15);
                h.bool(*auto_reply);
                h.bool(*stale_control);
            }
            Note::Pop(p) => {
                h.tag(16);
                p.encode(h);
            }
            Note::DrainFile { payload } => {
                h.tag(17);
                payload.encode(h);
            }
            Note::Closing { reopened } => {
                h.tag(18);
                h.bool(*reopened);
            }
            Note::CliReply { reply } => {
                h.tag(19);
                reply.encode(h);
            }
            Note::JobExits { job } => {
                h.tag(20);
                job.encode(h);
            }
            Note::Notify { job, msg, woke } => {
                h.tag(21);
                job.encode(h);
                msg.encode(h);
                h.bool(*woke);
            }
            Note::LateCallback { job } => {
                h.tag(22);
                job.encode(h);
            }
            Note::Hook { name, priority } => {
                h.tag(23);
                h.str(name);
                h.i32(*priority);
            }
            Note::Yield {
                name,
                payload,
                input,
                timeout,
                stop,
            } => {
                h.tag(24);
                h.str(name);
                payload.encode(h);
                h.bool(*input);
                h.bool(*timeout);
                h.bool(*stop);
            }
            Note::Claim { cid, payload } => {
                h.tag(25);
                cid.encode(h);
                payload.encode(h);
            }
            Note::TakePrompts { payload, left } => {
                h.tag(26);
                payload.encode(h);
                h.u32(*left);
            }
            Note::MarkExpired { job } => {
                h.tag(27);
                job.encode(h);
            }
            Note::Wait { timeout_ms, own } => {
                h.tag(28);
                h.u64(*timeout_ms);
                h.u32(*own);
            }
            Note::Woken { rechecks } => {
                h.tag(29);
                h.u32(*rechecks);
            }
            Note::WaitEnded { rechecks } => {
                h.tag(30);
                h.u32(*rechecks);
            }
            Note::Nudge { count } => {
                h.tag(31);
                h.u8(*count);
            }
            Note::Reset { cid } => {
                h.tag(32);
                h.option(cid.as_ref(), |h, c| c.encode(h));
            }
            Note::Killed { job, running } => {
                h.tag(33);
                job.encode(h);
                h.bool(*running);
            }
            Note::Purged { msg } => {
                h.tag(34);
                msg.encode(h);
            }
            Note::Writer {
                payload,
                steer,
                malformed,
                refused,
            } => {
                h.tag(35);
                payload.encode(h);
                h.bool(*steer);
                h.bool(*malformed);
                h.bool(*refused);
            }
            Note::ControlWrite { size, same_size } => {
                h.tag(36);
                h.u32(*size);
                h.bool(*same_size);
            }
            Note::ForeignJob { job } => {
                h.tag(37);
                job.encode(h);
            }
            Note::OwnerClaims { job, msg } => {
                h.tag(38);
                job.encode(h);
                h.option(msg.as_ref(), |h, m| m.encode(h));
            }
            Note::ConcurrentDrain { payload } => {
                h.tag(39);
                payload.encode(h);
            }
            Note::Sigterm => h.tag(40),
        }
    }
}
