//! pi's faults: what a seed may switch on ([`PiFault`]), its timed faults as a type of their own
//! ([`PiTimed`], matched without a default, so a new timed fault does not compile until it is
//! handled here), and how each timed fault acts on the host. Opportunity faults fire where the
//! model reaches them (`fires`): at prompt steps (`prompt.rs`) and after inner runs (`run.rs`).

use super::api::DeliverAs;
use super::core::{Compacting, Deferred};
use super::host::PiHost;
use super::note::{FaultNote, Hook, Note};
use super::{PiEv, PiKernel, vocab};
use crate::family::common::Core;
use crate::family::common::faults::FaultKind;
use crate::sim::choice::Ratio;
use crate::sim::msg::{MsgId, Payload};
use crate::sim::record::{Actor, Ev};
use crate::sim::sink::Sink;

/// Faults a seed may switch on for the pi hosts (`docs/hosts/pi.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PiFault {
    /// An input handler claims a prompt at step 3: no run, no event (P-5).
    InputSwallowsPrompt,
    /// The auth check at step 8 throws (P-5).
    AuthError,
    /// `_checkCompaction` at step 9 compacts: PREP-COMPACT, isIdle false.
    PrePromptCompaction,
    /// A retryable error after an inner run: backoff, then `continue()` (another inner pair).
    Retries,
    /// The before-settle boundary asks for another `continue()`.
    ExtraContinues,
    /// Threshold or overflow compaction after an inner run, then `continue()`.
    CompactionContinue,
    /// `/compact` while idle: COMPACTING without a run (H-6); may fail.
    ManualCompaction,
    /// `/tree` branch summarization: busy without a run; a cancelled one emits no event (P-10).
    TreeSummarization,
    /// `/new`: the session is replaced; the old ctx goes stale (P-7, P-8).
    SessionReplacement,
    /// The user types a prompt (steer while streaming, prompt() otherwise).
    UserPrompts,
    /// Step 9's compaction fails (`_runAutoCompaction` catches the error: `compaction_end` with
    /// an error message, then `session_compact_failed`); the prompt goes on to
    /// before_agent_start, as after a compaction that is done.
    PromptCompactionFails,
}

impl PiFault {
    pub const ALL: [PiFault; 11] = [
        PiFault::InputSwallowsPrompt,
        PiFault::AuthError,
        PiFault::PrePromptCompaction,
        PiFault::Retries,
        PiFault::ExtraContinues,
        PiFault::CompactionContinue,
        PiFault::ManualCompaction,
        PiFault::TreeSummarization,
        PiFault::SessionReplacement,
        PiFault::UserPrompts,
        PiFault::PromptCompactionFails,
    ];
}

impl FaultKind for PiFault {
    const LIST: &'static [PiFault] = &PiFault::ALL;
    type Timed = PiTimed;

    fn name(self) -> &'static str {
        match self {
            PiFault::InputSwallowsPrompt => "input_swallows_prompt",
            PiFault::AuthError => "auth_error",
            PiFault::PrePromptCompaction => "pre_prompt_compaction",
            PiFault::Retries => "retries",
            PiFault::ExtraContinues => "extra_continues",
            PiFault::CompactionContinue => "compaction_continue",
            PiFault::ManualCompaction => "manual_compaction",
            PiFault::TreeSummarization => "tree_summarization",
            PiFault::SessionReplacement => "session_replacement",
            PiFault::UserPrompts => "user_prompts",
            PiFault::PromptCompactionFails => "prompt_compaction_fails",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            PiFault::InputSwallowsPrompt => {
                "an input handler claims a prompt at step 3: no run, no event"
            }
            PiFault::AuthError => {
                "the auth check at step 8 throws; the error goes to the error channel"
            }
            PiFault::PrePromptCompaction => {
                "step 9 compacts before the run (PREP-COMPACT, isIdle false)"
            }
            PiFault::Retries => "a retryable error ends an inner run; backoff, then continue()",
            PiFault::ExtraContinues => "the before-settle boundary requests another continue()",
            PiFault::CompactionContinue => "compaction after an inner run, then continue()",
            PiFault::ManualCompaction => "/compact while idle: compacting without a run; may fail",
            PiFault::TreeSummarization => {
                "/tree summarization: busy without a run; cancelled ones emit no event"
            }
            PiFault::SessionReplacement => {
                "/new: session replaced, old ctx stale, old queues dropped"
            }
            PiFault::UserPrompts => {
                "the user submits prompts (steer while streaming; never while another prompt is in flight)"
            }
            PiFault::PromptCompactionFails => {
                "step 9's compaction fails: session_compact_failed, then the prompt goes on"
            }
        }
    }

    fn defaults(self) -> (Ratio, u32) {
        match self {
            PiFault::InputSwallowsPrompt | PiFault::AuthError => (Ratio::new(1, 2), 1),
            PiFault::PrePromptCompaction => (Ratio::new(1, 3), 2),
            PiFault::Retries | PiFault::ExtraContinues => (Ratio::new(1, 3), 3),
            PiFault::CompactionContinue => (Ratio::new(1, 4), 2),
            PiFault::ManualCompaction | PiFault::TreeSummarization => (Ratio::ALWAYS, 2),
            PiFault::SessionReplacement => (Ratio::ALWAYS, 1),
            PiFault::UserPrompts => (Ratio::ALWAYS, 3),
            PiFault::PromptCompactionFails => (Ratio::new(1, 4), 2),
        }
    }

    fn timed(self) -> Option<PiTimed> {
        match self {
            PiFault::ManualCompaction => Some(PiTimed::ManualCompaction),
            PiFault::TreeSummarization => Some(PiTimed::TreeSummarization),
            PiFault::SessionReplacement => Some(PiTimed::SessionReplacement),
            PiFault::UserPrompts => Some(PiTimed::UserPrompts),
            PiFault::InputSwallowsPrompt
            | PiFault::AuthError
            | PiFault::PrePromptCompaction
            | PiFault::Retries
            | PiFault::ExtraContinues
            | PiFault::CompactionContinue
            | PiFault::PromptCompactionFails => None,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// pi's timed faults: what happens to the host at drawn instants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PiTimed {
    ManualCompaction,
    TreeSummarization,
    SessionReplacement,
    UserPrompts,
}

/// A fault that keeps the host busy without a run, until it ends by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Busy {
    /// `/compact`.
    Compaction,
    /// `/tree` branch summarization.
    Tree,
}

impl PiHost {
    /// Try a timed fault again later when the host is not in a state where it can happen.
    fn retry_timed(&mut self, k: &mut PiKernel, i: u32) {
        self.timed.retry(k, i, PiEv::Timed(i));
    }

    /// Occurrence `i` of a timed fault is due.
    pub(super) fn timed_fault(&mut self, k: &mut PiKernel, i: u32) {
        if k.quiescent() {
            return;
        }
        match self.timed.fault(i) {
            PiTimed::ManualCompaction => self.busy_without_run(k, i, Busy::Compaction),
            PiTimed::TreeSummarization => self.busy_without_run(k, i, Busy::Tree),
            PiTimed::SessionReplacement => self.replace_session(k, i),
            PiTimed::UserPrompts => self.user_prompt(k, i),
        }
    }

    /// `/compact` or `/tree` while idle: busy without a run until `fault_end`.
    fn busy_without_run(&mut self, k: &mut PiKernel, i: u32, busy: Busy) {
        let c = &self.core;
        let busy_or_preparing = c.is_streaming()
            || c.compacting != Compacting::None
            || c.live_prompts > 0
            || c.settling > 0
            || c.replacing;
        if busy_or_preparing || c.agent_active.is_some() {
            return self.retry_timed(k, i);
        }
        let (mode, note) = match busy {
            Busy::Compaction => (Compacting::Manual, FaultNote::ManualCompactionStart),
            Busy::Tree => (Compacting::Tree, FaultNote::TreeStart),
        };
        self.core.compacting = mode;
        self.core.note(k, Actor::Fault, Note::Fault(note));
        let s = self.core.cfg.timing.compaction_ms;
        let d = k.delay(s.min, s.max, "compaction");
        k.schedule(d, PiEv::FaultEnd(busy));
    }

    /// `/new`: the session is replaced; its `session_start` comes after an await.
    fn replace_session(&mut self, k: &mut PiKernel, i: u32) {
        if !self.core.quiet() {
            return self.retry_timed(k, i);
        }
        self.core.session += 1;
        self.core.replacing = true;
        let session = self.core.session;
        self.core.note(
            k,
            Actor::Fault,
            Note::Fault(FaultNote::Replaced { session }),
        );
        self.drop_old_session(k);
        let d = self.core.step_delay(k);
        k.schedule(d, PiEv::SessionStart);
    }

    /// The user types a prompt: a steer while streaming, `prompt()` otherwise.
    fn user_prompt(&mut self, k: &mut PiKernel, i: u32) {
        // The user submits only when no prompt is in flight (preparing or deferred): a
        // user racing a wake prompt already on its way is pi#6744, which no wake logic
        // can prevent, not a wake race.
        let c = &self.core;
        if c.live_prompts > 0
            || c.deferred.iter().any(|d| matches!(d, Deferred::Prompt(_)))
            || (c.chains.iter()).any(|ch| ch.rest.iter().any(|d| matches!(d, Deferred::Prompt(_))))
            || c.replacing
            || matches!(c.compacting, Compacting::Manual | Compacting::Tree)
        {
            return self.retry_timed(k, i);
        }
        let steer = self.core.is_streaming();
        let behavior = steer.then_some(DeliverAs::Steer);
        let id = self.core.new_prompt(true, Payload::None, behavior);
        self.core
            .note(k, Actor::User, Note::UserPrompt { prompt: id, steer });
        let sent = Ev::PromptSent {
            prompt: id,
            from_wake: false,
        };
        self.core.emit(k, Actor::User, sent);
        self.core.prompt_begin(k, id);
    }

    /// A `/compact` or `/tree` ends: it may fail (compaction) or be cancelled (tree, with no
    /// event).
    pub(super) fn fault_end(&mut self, k: &mut PiKernel, busy: Busy) {
        self.core.compacting = Compacting::None;
        match busy {
            Busy::Compaction => {
                let failed = k.chance(Ratio::new(1, 4), "compaction fails");
                self.core.note(
                    k,
                    Actor::Fault,
                    Note::Fault(FaultNote::ManualCompactionEnd { failed }),
                );
                let hook = if failed {
                    Hook::SessionCompactFailed
                } else {
                    Hook::SessionCompact
                };
                let boundary = Ev::Boundary { tree: false };
                self.core.emit(k, Actor::Host, boundary);
                self.hook(k, hook);
            }
            Busy::Tree => {
                let cancelled = k.chance(Ratio::new(1, 3), "tree cancelled");
                self.core.note(
                    k,
                    Actor::Fault,
                    Note::Fault(FaultNote::TreeEnd { cancelled }),
                );
                if !cancelled {
                    let boundary = Ev::Boundary { tree: true };
                    self.core.emit(k, Actor::Host, boundary);
                    self.hook(k, Hook::SessionTree);
                }
            }
        }
    }

    /// The documented loss of replacement (P-7), at the replacement instant: exactly what the
    /// host itself discards with the old session, its four queues (`_pendingNextTurnMessages`,
    /// `_pendingCustomMessages`, steering, follow-up) and what was appended to the old session
    /// but is in no model request yet, each dropped once, in id order. What the wake logic holds
    /// in its own memory, or sends while the old ctx is stale, stays owed: delivered in the new
    /// session it is no loss, forgotten it is one (NO-LOSS).
    fn drop_old_session(&mut self, k: &mut PiKernel) {
        let c = &mut self.core;
        let mut ids: Vec<MsgId> = Vec::new();
        let queued = c.next_turn.drain(..).chain(c.pending_custom.drain(..));
        let queued = queued
            .chain(c.steering.drain(..))
            .chain(c.follow_up.drain(..));
        for p in queued {
            ids.extend_from_slice(p.ids());
        }
        ids.extend_from_slice(k.sink.ledger().unrequested());
        ids.sort_unstable();
        ids.dedup();
        for msg in ids {
            // Only a message still owed can be dropped: one a request already carried, or that
            // sat in two of the queues, is not dropped again.
            if !k.sink.owed().contains(&msg) {
                continue;
            }
            let reason = vocab::SESSION_REPLACED;
            self.core.emit(k, Actor::Host, Ev::Dropped { msg, reason });
        }
    }

    /// The replacement session starts. The old session's losses were dropped at the replacement
    /// instant (`drop_old_session`); nothing else is excused here.
    pub(super) fn session_start(&mut self, k: &mut PiKernel) {
        self.core.replacing = false;
        let session = self.core.session;
        self.core
            .note(k, Actor::Host, Note::SessionStart { session });
        self.hook(k, Hook::SessionStart);
    }
}
