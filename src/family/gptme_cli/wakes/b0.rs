//! B0: background jobs before PR #3843 (`docs/hosts/gptme.md`). Completions reached the model
//! only through a hook that ran at the end of the loop, after auto-reply and stuck detection,
//! and nothing waited for a job still running: with nothing queued the noninteractive loop
//! breaks and the atexit reset kills the job (G-6: two model calls, the completion lost).

use crate::family::gptme_cli::api::{Cli, CliWake, Flow, Item};

/// B0: claim whatever completed, never wait.
#[derive(Default)]
pub struct ExitOnEmpty;

impl CliWake for ExitOnEmpty {
    /// Below `auto_reply_hook` (999) and `stuck_detect_hook` (1000).
    fn loop_continue_priority(&self) -> i32 {
        0
    }

    fn name(&self) -> &'static str {
        "completion hook (turn end)"
    }

    fn loop_continue(&mut self, cli: &mut Cli<'_>) -> Flow {
        let me = cli.conversation();
        let items = cli
            .claim_completions(me)
            .into_iter()
            .map(Item::Completion)
            .collect();
        Flow::Return { items, stop: false }
    }
}
