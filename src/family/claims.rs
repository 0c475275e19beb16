//! What each fixed wake variant claims to survive (issue 15, item 4): the faults of its host it
//! is meant to pass with. `wakesim list` shows, per claim and fault, the passing scenarios that
//! switch the fault on (`engine::matrix`); `tests/matrix.rs` fails when a claimed fault is on in
//! no passing scenario, so a bug in that fault's path cannot pass for want of the fault.
//!
//! A fault a variant does not claim is one it is known to fail with, each named with the
//! scenario that shows it in `not_claimed`.

/// One fixed variant's claim: the wake logic on a host, the faults it must survive, and the
/// faults of its host it does not claim, each with why.
#[derive(Clone, Copy, Debug)]
pub struct Claim {
    /// A host name (`wakesim list`): a model host or a real one.
    pub host: &'static str,
    /// The wake logic as a scenario names it (a registered name, or a real host's variant).
    pub wake: &'static str,
    pub survives: &'static [&'static str],
    /// `(fault, why)`: faults of the host the variant does not claim to survive.
    pub not_claimed: &'static [(&'static str, &'static str)],
}

/// Every fixed variant's claim.
pub const CLAIMS: &[Claim] = &[
    Claim {
        host: "pi",
        wake: "pi.reservation",
        survives: &["retries", "extra_continues", "compaction_continue"],
        not_claimed: &[
            (
                "input_swallows_prompt",
                "a failed wake strands (P-5, g3-failed-wake-strands)",
            ),
            (
                "auth_error",
                "a failed wake strands (P-5, g3-failed-wake-strands)",
            ),
            (
                "pre_prompt_compaction",
                "busy without a run takes the host path (P-6)",
            ),
            (
                "prompt_compaction_fails",
                "step 9 compacts only with pre_prompt_compaction",
            ),
            (
                "manual_compaction",
                "busy without a run takes the host path (g3-compaction-takes-host-path)",
            ),
            (
                "tree_summarization",
                "busy without a run takes the host path (P-10, P-6)",
            ),
            (
                "session_replacement",
                "a stale ctx takes the host path, breaking harness and nothing else (P-8, g3-session-replacement-takes-host-path)",
            ),
            (
                "user_prompts",
                "a user prompt races the reservation's wake (P-9)",
            ),
        ],
    },
    Claim {
        host: "pi",
        wake: "pi.gentle-fixed",
        survives: &[
            "input_swallows_prompt",
            "auth_error",
            "pre_prompt_compaction",
            "retries",
            "extra_continues",
            "compaction_continue",
            "manual_compaction",
            "tree_summarization",
            "session_replacement",
            "user_prompts",
            "prompt_compaction_fails",
        ],
        not_claimed: &[],
    },
    Claim {
        host: "gptme-server",
        wake: "gptme.w2-one-wake-per-burst",
        survives: &[
            "watch_tool",
            "user_steps",
            "tool_confirmation",
            "tool_calls",
            "slash_commands",
            "second_session",
            "watch_in_wake_gap",
        ],
        not_claimed: &[
            (
                "persist_failure",
                "nothing retries a refused persist on an idle conversation (w2-persist-failure-overtaken)",
            ),
            (
                "dispatch_failure",
                "persisted but not dispatched: stranded (G-5 residual, w2-dispatch-failure-strands)",
            ),
            (
                "watch_in_take_gap",
                "a newer event wakes the idle conversation ahead of the taken batch (w2-take-gap-overtakes)",
            ),
        ],
    },
    Claim {
        host: "gptme-cli",
        wake: "gptme.b1-ordered",
        survives: &[
            "auto_reply",
            "tool_calls",
            "prompt_writes",
            "malformed_records",
            "prompt_flood",
            "control_writes",
            "stale_control",
            "subagent_reports",
            "foreign_jobs",
            "concurrent_drain",
            "teardown_reset",
            "sigterm",
            "steer_writes",
        ],
        not_claimed: &[],
    },
    Claim {
        host: "gptme-cli@0.35.1",
        wake: "b1",
        survives: &["stale_control"],
        not_claimed: &[
            (
                "auto_reply",
                "not yet run on the real host (its driver acts on it; the real-host lane's work)",
            ),
            ("control_writes", "not yet run on the real host"),
            ("prompt_writes", "not yet run on the real host"),
            ("steer_writes", "not yet run on the real host"),
            ("teardown_reset", "not yet run on the real host"),
            ("tool_calls", "the real host's driver does not act on it"),
            (
                "malformed_records",
                "the real host's driver does not act on it",
            ),
            ("prompt_flood", "the real host's driver does not act on it"),
            (
                "subagent_reports",
                "the real host's driver does not act on it",
            ),
            ("foreign_jobs", "the real host's driver does not act on it"),
            (
                "concurrent_drain",
                "the real host's driver does not act on it",
            ),
            ("sigterm", "the real host's driver does not act on it"),
        ],
    },
];
