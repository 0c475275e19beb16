//! B1-pre: PR #3843's wait before the control-file fingerprint (`docs/hosts/gptme.md`, G-7).
//! `wait_input` yielded "Background wait yielded to pending session input." whenever
//! `control.jsonl` was non-empty; the parent never consumes that file, so a stale one injected
//! the same dummy message at every LOOP_CONTINUE: a model call per loop until the job finished
//! (NO-SPIN). The wait loop is B1's (`b1.rs`) without the fingerprint.

use super::b1::{BackgroundWait, Fixes};

/// B1-pre.
pub fn b1_pre() -> BackgroundWait {
    BackgroundWait::new(Fixes {
        control_fingerprint: false,
        recheck_under_lock: true,
        ordered_completions: false,
        ordered_steers: false,
        planted: super::b1_planted::Planted::None,
    })
}
