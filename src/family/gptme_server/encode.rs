//! The trace-hash encoding of the gptme server's narration (`sim::hash`, version 1): explicit tags,
//! never the variant order. The tags are those the derived hash wrote before version 1 was
//! written out, so every recorded trace hash still holds.

use super::note::{Note, Reply, RetryCause, StepOrigin, WakeResult};
use crate::sim::hash::{Encode, TraceHasher};

impl Encode for StepOrigin {
    fn encode(&self, h: &mut TraceHasher) {
        match *self {
            StepOrigin::Wake(n) => {
                h.tag(0);
                h.u32(n);
            }
            StepOrigin::User => h.tag(1),
            StepOrigin::AfterTools => h.tag(2),
        }
    }
}

impl Encode for WakeResult {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            WakeResult::Accepted {
                session,
                dispatched,
            } => {
                h.tag(0);
                h.u8(*session);
                h.bool(*dispatched);
            }
            WakeResult::Refused(r) => {
                h.tag(1);
                r.encode(h);
            }
        }
    }
}

impl Encode for RetryCause {
    fn encode(&self, h: &mut TraceHasher) {
        match *self {
            RetryCause::StepCompletion(s) => {
                h.tag(0);
                h.u8(s);
            }
            RetryCause::FinishCommand => h.tag(1),
        }
    }
}

impl Encode for Reply {
    fn encode(&self, h: &mut TraceHasher) {
        h.tag(match self {
            Reply::Done => 0,
            Reply::ToolNeedsConfirmation => 1,
            Reply::ToolCalls => 2,
        });
    }
}

impl Encode for Note {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            Note::ServerStart {
                sessions,
                watch_tool,
            } => {
                h.tag(0);
                h.u8(*sessions);
                h.bool(*watch_tool);
            }
            Note::Deliver { cid, msg } => {
                h.tag(1);
                cid.encode(h);
                msg.encode(h);
            }
            Note::Retry { cid, cause } => {
                h.tag(2);
                cid.encode(h);
                cause.encode(h);
            }
            Note::NotifyCompletion { cid, msg } => {
                h.tag(15);
                cid.encode(h);
                msg.encode(h);
            }
            Note::RequestWake {
                cid,
                wake,
                payload,
                result,
            } => {
                h.tag(3);
                cid.encode(h);
                h.u32(*wake);
                payload.encode(h);
                result.encode(h);
            }
            Note::Take { call, payload } => {
                h.tag(4);
                h.str(call);
                payload.encode(h);
            }
            Note::Requeue { msg } => {
                h.tag(5);
                msg.encode(h);
            }
            Note::Defer { msg } => {
                h.tag(6);
                msg.encode(h);
            }
            Note::PutCompletion { msg } => {
                h.tag(7);
                msg.encode(h);
            }
            Note::StepStart { session, origin } => {
                h.tag(8);
                h.u8(*session);
                origin.encode(h);
            }
            Note::StepPre { hook, payload } => {
                h.tag(9);
                h.str(hook);
                payload.encode(h);
            }
            Note::Reply { session, reply } => {
                h.tag(10);
                h.u8(*session);
                reply.encode(h);
            }
            Note::Confirmed { session } => {
                h.tag(11);
                h.u8(*session);
            }
            Note::Storm { watch, cancelled } => {
                h.tag(12);
                h.u8(*watch);
                h.bool(*cancelled);
            }
            Note::UserMessage { session } => {
                h.tag(13);
                h.u8(*session);
            }
            Note::Command { finished } => {
                h.tag(14);
                h.bool(*finished);
            }
            Note::ToolDone { session, continued } => {
                h.tag(16);
                h.u8(*session);
                h.bool(*continued);
            }
            Note::LockGap { call, msg } => {
                h.tag(15);
                h.str(call);
                msg.encode(h);
            }
        }
    }
}
