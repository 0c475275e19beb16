//! The trace-hash encoding of pi's narration (`sim::hash`, version 1): explicit tags,
//! never the variant order. The tags are those the derived hash wrote before version 1 was
//! written out, so every recorded trace hash still holds.

use super::api::{DeliverAs, SendOptions};
use super::note::{FaultNote, Hook, HostError, Note, Queue, Route, RunNote, Step, TimerOp};
use crate::sim::hash::{Encode, TraceHasher};

impl Encode for Hook {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            Hook::SessionStart => h.tag(0),
            Hook::AgentStart => h.tag(1),
            Hook::TurnEnd => h.tag(2),
            Hook::AgentEnd => h.tag(3),
            Hook::AgentSettled => h.tag(4),
            Hook::SessionCompact => h.tag(5),
            Hook::SessionCompactFailed => h.tag(6),
            Hook::SessionTree => h.tag(7),
            Hook::Input => h.tag(8),
            Hook::BeforeAgentStart => h.tag(9),
            Hook::Message(id) => {
                h.tag(10);
                id.encode(h);
            }
            Hook::Timer(id) => {
                h.tag(11);
                h.u32(*id);
            }
        }
    }
}

impl Encode for DeliverAs {
    fn encode(&self, h: &mut TraceHasher) {
        h.tag(match self {
            DeliverAs::Steer => 0,
            DeliverAs::FollowUp => 1,
            DeliverAs::NextTurn => 2,
        });
    }
}

impl Encode for SendOptions {
    fn encode(&self, h: &mut TraceHasher) {
        h.option(self.deliver_as, |h, d| d.encode(h));
        h.bool(self.trigger_turn);
    }
}

impl Encode for Route {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            Route::NextTurn => h.tag(0),
            Route::Steer => h.tag(1),
            Route::FollowUp => h.tag(2),
            Route::DirectRun(run) => {
                h.tag(3);
                h.u32(*run);
            }
            Route::PreparedRun(run) => {
                h.tag(7);
                h.u32(*run);
            }
            Route::Deferred => h.tag(4),
            Route::PendingCustom => h.tag(5),
            Route::Appended => h.tag(6),
        }
    }
}

impl Encode for Step {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            Step::DeferredWhileSettling => h.tag(0),
            Step::AwaitInput => h.tag(1),
            Step::InputHandledByWake => h.tag(2),
            Step::InputSwallowed => h.tag(3),
            Step::QueuedWhileStreaming(d) => {
                h.tag(4);
                d.encode(h);
            }
            Step::AwaitAuth => h.tag(5),
            Step::PrePromptCompaction => h.tag(6),
            Step::CompactionDone => h.tag(7),
            Step::BeforeAgentStart => h.tag(8),
            Step::AwaitImages => h.tag(9),
            Step::CompactionFailed => h.tag(10),
        }
    }
}

impl Encode for HostError {
    fn encode(&self, h: &mut TraceHasher) {
        h.tag(match self {
            HostError::AlreadyProcessing => 0,
            HostError::AgentBusy => 1,
            HostError::ContinueBusy => 2,
            HostError::CompactionInProgress => 3,
            HostError::AuthFailed => 4,
            HostError::InvalidDeliverAs => 5,
            HostError::ContinueFromReply => 6,
        });
    }
}

impl Encode for RunNote {
    fn encode(&self, h: &mut TraceHasher) {
        match *self {
            RunNote::AgentStart { inner } => {
                h.tag(0);
                h.u32(inner);
            }
            RunNote::Request { req, harness } => {
                h.tag(1);
                h.u32(req);
                h.bool(harness);
            }
            RunNote::ToolCalls => h.tag(2),
            RunNote::TurnEnd => h.tag(3),
            RunNote::AgentEnd { inner } => {
                h.tag(4);
                h.u32(inner);
            }
            RunNote::Retry => h.tag(5),
            RunNote::CompactionStart => h.tag(6),
            RunNote::CompactionDone => h.tag(7),
            RunNote::Continue => h.tag(8),
            RunNote::ContinueScheduled => h.tag(9),
            RunNote::Settle { spurious } => {
                h.tag(10);
                h.bool(spurious);
            }
            RunNote::DeferredActions { count } => {
                h.tag(11);
                h.u32(count);
            }
            RunNote::Done => h.tag(12),
            RunNote::DeferredDropped { count } => {
                h.tag(13);
                h.u32(count);
            }
            RunNote::Preparing => h.tag(14),
            RunNote::Prepared => h.tag(15),
        }
    }
}

impl Encode for TimerOp {
    fn encode(&self, h: &mut TraceHasher) {
        match *self {
            TimerOp::Set { delay_ms } => {
                h.tag(0);
                h.u64(delay_ms);
            }
            TimerOp::Fire => h.tag(1),
            TimerOp::Clear => h.tag(2),
        }
    }
}

impl Encode for FaultNote {
    fn encode(&self, h: &mut TraceHasher) {
        match *self {
            FaultNote::ManualCompactionStart => h.tag(0),
            FaultNote::ManualCompactionEnd { failed } => {
                h.tag(1);
                h.bool(failed);
            }
            FaultNote::TreeStart => h.tag(2),
            FaultNote::TreeEnd { cancelled } => {
                h.tag(3);
                h.bool(cancelled);
            }
            FaultNote::Replaced { session } => {
                h.tag(4);
                h.u32(session);
            }
        }
    }
}

impl Encode for Queue {
    fn encode(&self, h: &mut TraceHasher) {
        h.tag(match self {
            Queue::Steering => 0,
            Queue::FollowUp => 1,
            Queue::PendingCustom => 2,
        });
    }
}

impl Encode for Note {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            Note::SessionStart { session } => {
                h.tag(0);
                h.u32(*session);
            }
            Note::Handler(hook) => {
                h.tag(1);
                hook.encode(h);
            }
            Note::IsIdle { result } => {
                h.tag(2);
                h.option(*result, |h, b| h.bool(b));
            }
            Note::SendMessage {
                custom_type,
                payload,
                opts,
                route,
            } => {
                h.tag(3);
                h.str(custom_type);
                payload.encode(h);
                opts.encode(h);
                route.encode(h);
            }
            Note::SendUserMessage {
                prompt,
                payload,
                text,
                deliver_as,
            } => {
                // A text has a tag of its own, so a note without one (every built-in logic's)
                // keeps the encoding it had before notes carried text.
                h.tag(if text.is_some() { 16 } else { 4 });
                h.u32(*prompt);
                payload.encode(h);
                h.option(*deliver_as, |h, d| d.encode(h));
                if let Some(t) = text {
                    h.str(t);
                }
            }
            Note::UserPrompt { prompt, steer } => {
                h.tag(5);
                h.u32(*prompt);
                h.bool(*steer);
            }
            Note::Step { prompt, step } => {
                h.tag(6);
                h.u32(*prompt);
                step.encode(h);
            }
            Note::TookNextTurn {
                prompt,
                payload,
                items,
                early,
            } => {
                // 0.58's early take has a tag of its own (the 0.99 encoding is unchanged).
                h.tag(if *early { 15 } else { 7 });
                h.u32(*prompt);
                payload.encode(h);
                h.u32(*items);
            }
            Note::Lost { payload } => {
                h.tag(8);
                payload.encode(h);
            }
            Note::Error { prompt, error } => {
                h.tag(9);
                h.option(*prompt, |h, p| h.u32(p));
                error.encode(h);
            }
            Note::Run { run, note } => {
                h.tag(10);
                h.u32(*run);
                note.encode(h);
            }
            Note::Polled {
                run,
                queue,
                payload,
            } => {
                h.tag(11);
                h.u32(*run);
                queue.encode(h);
                payload.encode(h);
            }
            Note::Timer { id, op } => {
                h.tag(12);
                h.u32(*id);
                op.encode(h);
            }
            Note::Fault(f) => {
                h.tag(13);
                f.encode(h);
            }
            Note::DeferredRuns { prompt } => {
                h.tag(14);
                h.option(*prompt, |h, p| h.u32(p));
            }
        }
    }
}
