//! The checkers' bounds derived from a gptme-cli scenario's `[timing]` (issue 15, class 1): a
//! bound looser than the host's own wait cannot catch a missed wait, so each follows from the
//! documented waits (`docs/hosts/gptme.md`, B1):
//!
//! - the idle wait polls its inputs (prompt-queue and control files, subagent queues) once per
//!   `cond.wait`, capped at 1 s (`WAIT_CAP_MS`); a notified waiter's thread wakes within
//!   `wake_ms`, and the file reads take `io_ms`. So outside input that changes during the wait
//!   ends it within the cap plus a wake-up plus the I/O: INPUT-HEARD's `input_ms_max`;
//! - a message owed while the session sits blocked in that wait is an own completion (its
//!   `notify_all` wakes the waiter, or the recheck under the lock sees it), a record or report
//!   the next poll takes (at most one capped wait of idleness), or another conversation's
//!   completion, owed here until its owner claims it (`claim_ms`). So BOUNDED-LATENCY's
//!   `latency_ms_max` is the larger of the poll period and `claim_ms.max`;
//! - the host's own wait is `GPTME_WATCH_IDLE_MAX` (`idle_max_ms`): a `latency_ms_max` at or
//!   above it passes a wait that ignores its input until it times out, and is refused;
//! - a timeout notice ends a wait that reached its deadline, `idle_max_ms` after the hook began;
//!   the wait's first `Waiting` comes one file read (`io_ms`, the lock released for
//!   `wait_input`) after that, so a notice excuses its job (ALIVE-WHILE-OWED) only after a wait
//!   of `idle_max_ms - io_ms.max` at least from its first `Waiting`.

use super::config::CliConfig;
use super::wakes::WAIT_CAP_MS;
use crate::check::DerivedBounds;

/// The bounds of `config`.
pub fn derived(config: &CliConfig) -> DerivedBounds {
    let t = &config.timing;
    let poll = WAIT_CAP_MS + t.wake_ms.max + t.io_ms.max;
    let (latency_ms_max, latency_why) = if t.claim_ms.max > poll {
        (
            t.claim_ms.max,
            format!(
                "another conversation's completion waits for its owner's claim, claim_ms max {} ms",
                t.claim_ms.max
            ),
        )
    } else {
        (
            poll,
            format!(
                "the idle wait's poll period: the {WAIT_CAP_MS} ms cap, a wake-up (wake_ms max {}) and the file I/O (io_ms max {})",
                t.wake_ms.max, t.io_ms.max
            ),
        )
    };
    DerivedBounds {
        latency_ms_max,
        latency_why,
        host_wait_ms: t.idle_max_ms,
        host_wait: "idle_max_ms (GPTME_WATCH_IDLE_MAX)",
        input_ms_max: poll,
        notice_wait_ms_min: t.idle_max_ms.saturating_sub(t.io_ms.max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::common::Span;

    #[test]
    fn the_bounds_follow_the_timing() {
        let mut c = CliConfig::default();
        let d = derived(&c);
        assert_eq!(d.input_ms_max, 1_007);
        assert_eq!(d.latency_ms_max, 5_000, "{}", d.latency_why);
        assert_eq!(d.host_wait_ms, 1_800_000);
        assert_eq!(
            d.notice_wait_ms_min, 1_799_995,
            "GPTME_WATCH_IDLE_MAX less a file read"
        );
        c.timing.claim_ms = Span::new(0, 500);
        c.timing.io_ms = Span::new(0, 50);
        let d = derived(&c);
        assert_eq!(d.input_ms_max, 1_052);
        assert_eq!(d.latency_ms_max, 1_052, "{}", d.latency_why);
        assert_eq!(d.notice_wait_ms_min, 1_799_950);
    }
}
