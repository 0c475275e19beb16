//! gptme wake logics (`wake-systems.md` §1.2), one file per variant.
//!
//! Server (`gptme-server` hosts), `SessionManager.retry_deferred_watch_wakes`:
//!
//! | name | variant | bug |
//! |---|---|---|
//! | `gptme.w0-drop-refused` | W0 | the refused event is dropped: lost (G-2) |
//! | `gptme.w1-per-event-drain` | W1 | the drain's second wake is refused by its first: stranded (G-1) |
//! | `gptme.w2-one-wake-per-burst` | W2 | fixed: one wake per burst, the batch requeued in order |
//! | `gptme.w2-subagent` | W2-subagent | subagent completions one per wake: reordered when refused (G-4) |
//!
//! CLI (`gptme-cli` hosts), `background_job_wait_hook`:
//!
//! | name | variant | bug |
//! |---|---|---|
//! | `gptme.b0-exit-on-empty` | B0 | exits with a job running: completion lost (G-6) |
//! | `gptme.b1-pre-control-any` | B1-pre | a stale control.jsonl interrupts every wait (G-7) |
//! | `gptme.b1-idle-wait` | B1 | fixed: fingerprinted control, bounded wait, timeout once |
//! | `gptme.b1-no-recheck` | B1 without the recheck | a completion between drain and wait is missed (G-8) |

mod b0;
mod b1;
mod b1_no_recheck;
mod b1_pre;
mod w0;
mod w1;
mod w2;
mod w2_subagent;

pub use b0::ExitOnEmpty;
pub use b1::{BackgroundWait, Fixes, WAIT_CAP_MS};
pub use b1_no_recheck::b1_no_recheck;
pub use b1_pre::b1_pre;
pub use w0::w0;
pub use w1::PerEventDrain;
pub use w2::OneWakePerBurst;
pub use w2_subagent::WithSubagentCompletions;

use super::Registry;

pub(super) fn register(r: &mut Registry) {
    r.add_gptme_server(
        "gptme.w0-drop-refused",
        "W0: one wake per event; a refused event is dropped (requeues batch[i+1:])",
        || Box::new(w0()),
    );
    r.add_gptme_server(
        "gptme.w1-per-event-drain",
        "W1: one wake per event; the drain's own first wake makes it refuse the rest (seed 000)",
        || Box::new(PerEventDrain::w1()),
    );
    r.add_gptme_server(
        "gptme.w2-one-wake-per-burst",
        "W2: the whole batch in one wake; a refused batch goes back in order (the fix)",
        || Box::new(OneWakePerBurst),
    );
    r.add_gptme_server(
        "gptme.w2-subagent",
        "W2 plus subagent completions one per wake; a refused first completion goes behind the rest",
        || Box::new(WithSubagentCompletions),
    );
    r.add_gptme_cli(
        "gptme.b0-exit-on-empty",
        "B0: before #3843: completions only at loop end; exits with a job still running",
        || Box::new(ExitOnEmpty),
    );
    r.add_gptme_cli(
        "gptme.b1-pre-control-any",
        "B1 before the fingerprint: a non-empty control.jsonl interrupts every wait",
        || Box::new(b1_pre()),
    );
    r.add_gptme_cli(
        "gptme.b1-idle-wait",
        "B1 (#3843): STEP_PRE drain, bounded idle wait, fingerprinted control, timeout reported once",
        || Box::new(BackgroundWait::fixed()),
    );
    r.add_gptme_cli(
        "gptme.b1-no-recheck",
        "B1 without the recheck under the notifier's lock (nor the 1 s cap): a completion between drain and wait is missed",
        || Box::new(b1_no_recheck()),
    );
}
