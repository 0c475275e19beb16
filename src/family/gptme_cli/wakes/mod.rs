//! gptme-cli wake logics (`docs/hosts/gptme.md`), one file per variant:
//! `background_job_wait_hook` (LOOP_CONTINUE) and `background_job_completion_hook` (STEP_PRE).
//!
//! | name | variant | bug |
//! |---|---|---|
//! | `gptme.b0-exit-on-empty` | B0 | exits with a job running: completion lost (G-6) |
//! | `gptme.b1-pre-control-any` | B1-pre | a stale control.jsonl interrupts every wait (G-7) |
//! | `gptme.b1-idle-wait` | B1 | as merged: fingerprinted control, bounded wait, timeout once; STEP_PRE overtakes a completion queued at LOOP_CONTINUE |
//! | `gptme.b1-ordered` | B1 with wakesim's ordering fix | fixed: STEP_PRE waits for a completion already queued |
//! | `gptme.b1-no-recheck` | B1 without the recheck | a completion between drain and wait is missed (G-8) |

mod b0;
mod b1;
mod b1_no_recheck;
mod b1_planted;
mod b1_pre;

pub use b0::ExitOnEmpty;
pub use b1::{BackgroundWait, Fixes, WAIT_CAP_MS};
pub use b1_no_recheck::b1_no_recheck;
pub use b1_planted::Planted;
pub use b1_pre::b1_pre;

use crate::family::Registry;
use crate::family::gptme_cli::CliFamily;

pub(crate) fn register(r: &mut Registry) {
    r.add::<CliFamily>(
        "gptme.b0-exit-on-empty",
        "B0: before #3843: completions only at loop end; exits with a job still running",
        || Box::new(ExitOnEmpty),
    );
    r.add::<CliFamily>(
        "gptme.b1-pre-control-any",
        "B1 before the fingerprint: a non-empty control.jsonl interrupts every wait",
        || Box::new(b1_pre()),
    );
    r.add::<CliFamily>(
        "gptme.b1-idle-wait",
        "B1 (#3843): STEP_PRE drain, bounded idle wait, fingerprinted control, timeout reported once",
        || Box::new(BackgroundWait::fixed()),
    );
    r.add::<CliFamily>(
        "gptme.b1-ordered",
        "B1 with wakesim's ordering fix: STEP_PRE claims nothing while a completion yielded at LOOP_CONTINUE is still queued",
        || Box::new(BackgroundWait::ordered()),
    );
    // The rare-bug suite's planted bugs (docs/guide/search.md): not fixes, not findings.
    for &(name, summary, planted) in b1_planted::PLANTED {
        r.add::<CliFamily>(name, summary, move || {
            Box::new(BackgroundWait::planted(planted))
        });
    }
    r.add::<CliFamily>(
        "gptme.b1-no-recheck",
        "B1 without the recheck under the notifier's lock (nor the 1 s cap): a completion between drain and wait is missed",
        || Box::new(b1_no_recheck()),
    );
}
