//! B1 without the recheck under the notifier's lock (`docs/hosts/gptme.md` G-8): the waiter
//! drains, releases `_job_lock` for `wait_input`, then waits on the condition without checking
//! again. A job whose reader calls `notify_all` in between finds no waiter; the completion sits
//! queued until the wait times out at `GPTME_WATCH_IDLE_MAX` (this version has no 1 s cap either:
//! the cap came with the recheck). The wait loop is B1's (`b1.rs`) without that fix.

use super::b1::{BackgroundWait, Fixes};

/// B1 without the recheck.
pub fn b1_no_recheck() -> BackgroundWait {
    BackgroundWait::new(Fixes {
        control_fingerprint: true,
        recheck_under_lock: false,
        ordered_completions: false,
        ordered_steers: false,
        planted: super::b1_planted::Planted::None,
    })
}
