//! The bugs planted in B1 on purpose for the rare-bug suite (`mutants/rare/`,
//! `docs/guide/search.md`), apart from B1's own logic so that mutation testing (which mutates
//! `b1.rs`) does not count their conditions, which no gate scenario runs. `Seen` is what they
//! read of the session; B1 keeps it at its hooks.

use super::b1::{BackgroundWait, Fixes, Phase};
use crate::family::gptme_cli::api::{Cli, Item};

impl BackgroundWait {
    /// B1-ordered (`BackgroundWait::ordered`) with a planted bug: the rare-bug suite's logics.
    /// Here, not in `b1.rs`, so that mutation testing of B1 does not count what no gate
    /// scenario runs (a mutant that dropped `planted` survived the b1 gate).
    pub fn planted(planted: Planted) -> BackgroundWait {
        BackgroundWait::new(Fixes {
            planted,
            ..BackgroundWait::ordered().fixes
        })
    }
}

/// Bugs planted in B1 for the rare-bug suite (`docs/guide/search.md`): each needs two rare
/// events to coincide with a window, and loses what it claimed (NO-LOSS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Planted {
    None,
    /// STEP_PRE drops what it claims from the sixth step of a turn on: five tool calls in a
    /// row, and a completion queued during them.
    LongChain,
    /// The wait's drain drops what it claims once one of the session's waits has timed out: a
    /// job outliving GPTME_WATCH_IDLE_MAX, then another job finishing while a later wait blocks.
    AfterTimeout,
    /// STEP_PRE drops what it claims from the fourth step of a turn that a wait yielded to
    /// outside input (a control write while the session waited): the control write landing in
    /// a wait, three tool calls in a row after it, and a completion queued during them.
    InputChain,
    /// STEP_PRE drops what it claims from the third step of a turn once a wait read a control
    /// file it had already seen (a control write landing in a wait, polled again), two tool
    /// calls in a row after it, and a completion queued during them.
    StaleChain,
    /// STEP_PRE drops what it claims from the fifth step of a turn while another
    /// conversation's job is in the registry: the foreign job, four tool calls in a row, and a
    /// completion queued during them.
    ForeignChain,
    /// STEP_PRE drops what it claims from the third step of a turn a subagent report's hook
    /// started: the report arriving while the session waits, two tool calls in a row in its
    /// turn, and a completion queued during them.
    ReportChain,
}

/// Each planted bug's registered name and summary (`wakes/mod.rs` registers them).
pub(super) const PLANTED: &[(&str, &str, Planted)] = &[
    (
        "gptme.b1-planted-long-chain",
        "planted bug (rare-bug suite): STEP_PRE drops what it claims from a turn's sixth step on",
        Planted::LongChain,
    ),
    (
        "gptme.b1-planted-after-timeout",
        "planted bug (rare-bug suite): the wait drops what it claims once a wait has timed out",
        Planted::AfterTimeout,
    ),
    (
        "gptme.b1-planted-input-chain",
        "planted bug (rare-bug suite): STEP_PRE drops what it claims from the fourth step of a turn a wait yielded to outside input",
        Planted::InputChain,
    ),
    (
        "gptme.b1-planted-stale-chain",
        "planted bug (rare-bug suite): STEP_PRE drops what it claims from a turn's third step on once a wait polled a control file it had already read",
        Planted::StaleChain,
    ),
    (
        "gptme.b1-planted-foreign-chain",
        "planted bug (rare-bug suite): STEP_PRE drops what it claims from a turn's fifth step on while another conversation's job is registered",
        Planted::ForeignChain,
    ),
    (
        "gptme.b1-planted-report-chain",
        "planted bug (rare-bug suite): STEP_PRE drops what it claims from the third step of a turn a subagent report started",
        Planted::ReportChain,
    ),
];

/// What the planted bugs read of the session, kept by B1 at its hooks.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Seen {
    /// Steps since the last LOOP_CONTINUE.
    steps: u32,
    /// The last wait yielded to outside input.
    input_turn: bool,
    /// A wait read a control file it had seen.
    stale: bool,
    /// The last wait yielded to a subagent report's hook.
    report_turn: bool,
}

impl Seen {
    /// A STEP_PRE ran.
    pub(super) fn step(&mut self) {
        self.steps += 1;
    }

    /// A LOOP_CONTINUE started: a new turn.
    pub(super) fn loop_continue(&mut self) {
        self.steps = 0;
        self.input_turn = false;
        self.report_turn = false;
    }

    /// A wait read a control file it had already seen.
    pub(super) fn stale(&mut self) {
        self.stale = true;
    }

    /// A wait yielded to outside input.
    pub(super) fn input(&mut self) {
        self.input_turn = true;
    }

    /// A wait yielded to a subagent report's hook.
    pub(super) fn report(&mut self) {
        self.report_turn = true;
    }
}

impl Planted {
    /// Whether STEP_PRE drops what it claimed.
    pub(super) fn drops_at_step_pre(self, seen: &Seen, cli: &mut Cli<'_>) -> bool {
        match self {
            Planted::None | Planted::AfterTimeout => false,
            Planted::LongChain => seen.steps >= 6,
            Planted::InputChain => seen.input_turn && seen.steps >= 4,
            Planted::StaleChain => seen.stale && seen.steps >= 3,
            Planted::ReportChain => seen.report_turn && seen.steps >= 3,
            Planted::ForeignChain => {
                let me = cli.conversation();
                seen.steps >= 5 && cli.jobs().iter().any(|j| j.job.conversation() != me)
            }
        }
    }

    /// Whether the wait's drain drops the completions it claimed (`claimed`), in `phase`.
    pub(super) fn drops_at_drain(self, claimed: &[Item], phase: Phase, cli: &mut Cli<'_>) -> bool {
        self == Planted::AfterTimeout
            && !claimed.is_empty()
            && phase == Phase::Waiting
            && cli.jobs().iter().any(|j| j.wait_expired)
    }
}
