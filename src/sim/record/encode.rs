//! The trace-hash encoding of records (see `sim::hash`): explicit tags per type and variant,
//! never the variant order, so reordering a type cannot change a hash.

use super::{Actor, EndCause, Ev, Note, Reason, Record, Refusal, Starter, Window, WorkOp};
use crate::sim::hash::{Encode, TraceHasher};

impl Encode for Actor {
    fn encode(&self, h: &mut TraceHasher) {
        h.tag(match self {
            Actor::Producer => 0,
            Actor::Wake => 1,
            Actor::Host => 2,
            Actor::Fault => 3,
            Actor::User => 4,
            Actor::Check => 5,
        });
    }
}

impl Encode for Reason {
    fn encode(&self, h: &mut TraceHasher) {
        h.tag(u64::from(self.code));
    }
}

impl Encode for Starter {
    fn encode(&self, h: &mut TraceHasher) {
        let (tag, n) = match *self {
            Starter::Prompt(n) => (0, n),
            Starter::Direct(n) => (1, n),
            Starter::Continue(n) => (2, n),
        };
        h.tag(tag);
        h.u32(n);
    }
}

impl Encode for Refusal {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            Refusal::Wake(n) => {
                h.tag(0);
                h.u32(*n);
            }
            Refusal::Other(reason) => reason.encode(h),
        }
    }
}

impl Encode for WorkOp {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            WorkOp::Started => h.tag(0),
            WorkOp::Finished(msg) => {
                h.tag(1);
                msg.encode(h);
            }
            WorkOp::Killed => h.tag(2),
        }
    }
}

impl Encode for EndCause {
    fn encode(&self, h: &mut TraceHasher) {
        h.tag(u64::from(self.code));
    }
}

impl Encode for Window {
    fn encode(&self, h: &mut TraceHasher) {
        h.tag(u64::from(self.code));
    }
}

impl<N: Note> Encode for Ev<N> {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            Ev::Produced { msg } => {
                h.tag(0);
                msg.encode(h);
            }
            Ev::Appended { msg } => {
                h.tag(1);
                msg.encode(h);
            }
            Ev::Request { req, harness } => {
                h.tag(2);
                h.u32(*req);
                h.bool(*harness);
            }
            Ev::Dropped { msg, reason } => {
                h.tag(3);
                msg.encode(h);
                reason.encode(h);
            }
            Ev::Idle { idle } => {
                h.tag(4);
                h.bool(*idle);
            }
            Ev::Starter { who, accepted } => {
                h.tag(5);
                who.encode(h);
                h.bool(*accepted);
            }
            Ev::RunFlag { on } => {
                h.tag(6);
                h.bool(*on);
            }
            Ev::AgentRun { on } => {
                h.tag(7);
                h.bool(*on);
            }
            Ev::Settled => h.tag(8),
            Ev::Mark(w) => {
                h.tag(9);
                w.encode(h);
            }
            Ev::Note(note) => {
                h.tag(N::TAG);
                note.encode(h);
            }
            Ev::Pass { pass, on } => {
                h.tag(11);
                h.u32(*pass);
                h.bool(*on);
            }
            Ev::Wake {
                pass,
                wake,
                msgs,
                refused,
            } => {
                h.tag(12);
                h.u32(*pass);
                h.u32(*wake);
                msgs.encode(h);
                h.option(refused.as_ref(), |h, r| r.encode(h));
            }
            Ev::Work {
                work,
                shown,
                conv,
                op,
            } => {
                h.tag(13);
                h.u32(*work);
                h.u32(*shown);
                h.u8(*conv);
                op.encode(h);
            }
            Ev::WorkNoticed { work } => {
                h.tag(14);
                h.u32(*work);
            }
            Ev::Waiting { own, foreign } => {
                h.tag(15);
                h.u32(*own);
                h.u32(*foreign);
            }
            Ev::InputInterrupt { input } => {
                h.tag(16);
                h.u64(*input);
            }
            Ev::SessionEnd { cause } => {
                h.tag(17);
                cause.encode(h);
            }
            Ev::OwnerClaimed { msg } => {
                h.tag(18);
                msg.encode(h);
            }
            // 19 and 20 are note tags (`Note::TAG`) of families and of the remote lane.
            Ev::Deadlock { threads } => {
                h.tag(21);
                h.u32(*threads);
            }
            Ev::PromptSent { prompt, from_wake } => {
                h.tag(22);
                h.u32(*prompt);
                h.bool(*from_wake);
            }
            Ev::InputChanged { input } => {
                h.tag(23);
                h.u64(*input);
            }
            Ev::WaitEnded => h.tag(24),
            Ev::Boundary { tree } => {
                h.tag(25);
                h.bool(*tree);
            }
            Ev::Interleaved { req, msg } => {
                h.tag(26);
                h.u32(*req);
                h.option(msg.as_ref(), |h, m| m.encode(h));
            }
        }
    }
}

impl<N: Note> Encode for Record<N> {
    fn encode(&self, h: &mut TraceHasher) {
        h.u64(self.t.0);
        self.actor.encode(h);
        h.u8(self.state);
        self.ev.encode(h);
    }
}
