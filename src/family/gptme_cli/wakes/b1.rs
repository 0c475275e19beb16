//! B1: PR #3843's `background_job_wait_hook` (LOOP_CONTINUE, priority 1500) with the completion
//! drain at STEP_PRE (priority 900), `gptme/tools/shell_background.py` (`docs/hosts/gptme.md`):
//!
//! ```text
//! msgs = completion_hook(); if msgs: yield msgs + StopPropagation
//! if interactive or prompt_queue: return
//! deadline = now + GPTME_WATCH_IDLE_MAX
//! loop:
//!   with _job_lock: msgs = completion_hook(); pending = own jobs not notified, not expired
//!                   if msgs or not pending: break
//!   incoming = wait_input()                       # outside the lock
//!   if incoming: list -> msgs = incoming; "hook" -> no messages; break
//!   with _job_lock: recheck (no lost wakeup); deadline -> expire, timeout notice once; break
//!                   cond(cid).wait(min(remaining, 1 s))
//! if msgs: yield msgs + StopPropagation
//! ```
//!
//! `wait_input` yields to subagent reports ("hook"), takes up to 100 prompt-queue records
//! (regular, then steer), and yields once per `control.jsonl` fingerprint. Two earlier states of
//! the same code are variants here: without the fingerprint (`b1_pre.rs`, G-7) and without the
//! recheck under the notifier's lock (`b1_no_recheck.rs`, G-8).

use super::b1_planted::{Planted, Seen};
use crate::family::gptme_cli::api::{Cli, CliWake, Flow, Item, JobRef, Resume};
use crate::sim::time::Ms;

/// Each wait is capped at 1 s, so a missed notification costs at most that.
pub const WAIT_CAP_MS: u64 = 1_000;
/// `wait_input` takes at most this many prompt-queue records (`MAX_PROMPT_QUEUE_SIZE`).
pub const PROMPTS_MAX: usize = 100;

/// Which fixes the wait has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fixes {
    /// `control.jsonl` interrupts the wait once per `(path, sha256(contents))` (G-7's fix).
    pub control_fingerprint: bool,
    /// The completion check is repeated under the lock the notifier takes, right before
    /// `cond.wait`, and each wait is capped at 1 s (G-8's fix).
    pub recheck_under_lock: bool,
    /// Completions never wait in the prompt queue behind other messages (wakesim's fix of the
    /// gap `b1-step-pre-overtakes-queued-completion` shows): LOOP_CONTINUE claims nothing while
    /// the prompt queue holds a message, and STEP_PRE claims nothing while a completion the
    /// LOOP_CONTINUE hook yielded is still queued, so one job's completion never overtakes an
    /// earlier one's.
    pub ordered_completions: bool,
    /// No steer record waits in the prompt queue behind another message (wakesim's fix of the
    /// gap `b1-steer-overtakes-queued-steer` shows): `wait_input` takes regular records and no
    /// steer record, or the first steer record alone, and leaves the rest on disk for STEP_PRE,
    /// which drains them in file order. Taking two steer records at once (one write of two, or
    /// two writes between polls) queued the second behind the first's whole turn, where a later
    /// steer drained at STEP_PRE overtook it.
    pub ordered_steers: bool,
    /// A bug planted on purpose for the rare-bug suite (`b1_planted.rs`); `None` in every real
    /// variant.
    pub planted: Planted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Idle,
    /// The lock is released for `wait_input`'s file reads.
    Input,
    /// Blocked in `cond.wait`.
    Waiting,
}

/// What `wait_input` found.
enum Incoming {
    Items(Vec<Item>),
    /// Subagent reports are pending: yield to their hook.
    Hook,
}

/// The background wait, with or without each fix.
pub struct BackgroundWait {
    /// Read by `b1_planted.rs` too (`BackgroundWait::planted`).
    pub(super) fixes: Fixes,
    /// `_control_wait_keys`.
    control_keys: Vec<u64>,
    phase: Phase,
    deadline: Ms,
    /// What the planted bugs read of the session (`b1_planted.rs`).
    seen: Seen,
}

impl BackgroundWait {
    pub fn new(fixes: Fixes) -> BackgroundWait {
        BackgroundWait {
            fixes,
            control_keys: Vec::new(),
            phase: Phase::Idle,
            deadline: Ms(0),
            seen: Seen::default(),
        }
    }

    /// B1 as merged: both fixes.
    pub fn fixed() -> BackgroundWait {
        BackgroundWait::new(Fixes {
            control_fingerprint: true,
            recheck_under_lock: true,
            ordered_completions: false,
            ordered_steers: false,
            planted: Planted::None,
        })
    }

    /// B1 with wakesim's ordering fixes (`ordered_completions`, `ordered_steers`): what the
    /// project calls fixed.
    pub fn ordered() -> BackgroundWait {
        BackgroundWait::new(Fixes {
            control_fingerprint: true,
            recheck_under_lock: true,
            ordered_completions: true,
            ordered_steers: true,
            planted: Planted::None,
        })
    }

    fn completions(cli: &mut Cli<'_>) -> Vec<Item> {
        let me = cli.conversation();
        let claimed = cli.claim_completions(me);
        if claimed.is_empty() {
            return Vec::new();
        }
        claimed.into_iter().map(Item::Completion).collect()
    }

    /// Own jobs neither notified nor expired.
    fn pending(cli: &mut Cli<'_>) -> Vec<JobRef> {
        let me = cli.conversation();
        cli.jobs()
            .iter()
            .filter(|j| j.job.conversation() == me && !j.notified && !j.wait_expired)
            .map(|j| j.job)
            .collect()
    }

    fn finish(&mut self, items: Vec<Item>) -> Flow {
        self.phase = Phase::Idle;
        Flow::yield_and_stop(items)
    }

    /// The top of the loop, under the lock.
    fn drain(&mut self, cli: &mut Cli<'_>) -> Flow {
        let msgs = BackgroundWait::completions(cli);
        if self.fixes.planted.drops_at_drain(&msgs, self.phase, cli) {
            return self.finish(Vec::new());
        }
        if !msgs.is_empty() || BackgroundWait::pending(cli).is_empty() {
            return self.finish(msgs);
        }
        self.phase = Phase::Input;
        Flow::Unlock
    }

    fn wait_input(&mut self, cli: &mut Cli<'_>) -> Option<Incoming> {
        if cli.subagent_pending() {
            return Some(Incoming::Hook);
        }
        let prompts = if self.fixes.ordered_steers {
            cli.take_prompts_steer_ordered(PROMPTS_MAX)
        } else {
            cli.take_prompts(PROMPTS_MAX)
        };
        if !prompts.is_empty() {
            return Some(Incoming::Items(
                prompts.into_iter().map(Item::Prompt).collect(),
            ));
        }
        let control = cli.control_file()?;
        if self.fixes.control_fingerprint {
            let key = control.fingerprint();
            if self.control_keys.contains(&key) {
                self.seen.stale();
                return None;
            }
            self.control_keys.push(key);
        }
        self.seen.input();
        Some(Incoming::Items(vec![Item::InputPending(control)]))
    }

    /// The deadline passed: the pending jobs are no longer waited for; report them once.
    fn time_out(&mut self, cli: &mut Cli<'_>, pending: Vec<JobRef>) -> Flow {
        for j in &pending {
            cli.mark_wait_expired(*j);
        }
        self.finish(vec![Item::Timeout(pending)])
    }
}

impl CliWake for BackgroundWait {
    fn constants_ms(&self) -> Vec<u64> {
        vec![WAIT_CAP_MS]
    }

    fn loop_continue_priority(&self) -> i32 {
        1500
    }

    fn name(&self) -> &'static str {
        "background_job_wait_hook"
    }

    fn step_pre_name(&self) -> &'static str {
        "background_job_completion_hook (900)"
    }

    fn step_pre(&mut self, cli: &mut Cli<'_>) -> Vec<Item> {
        if self.fixes.ordered_completions && cli.queued_completions() > 0 {
            return Vec::new();
        }
        self.seen.step();
        let claimed = BackgroundWait::completions(cli);
        if self.fixes.planted.drops_at_step_pre(&self.seen, cli) {
            return Vec::new();
        }
        claimed
    }

    fn loop_continue(&mut self, cli: &mut Cli<'_>) -> Flow {
        self.seen.loop_continue();
        // With the ordering fix, nothing is claimed while the prompt queue holds a message: a
        // completion yielded now would wait behind it, one message per turn, while this
        // session's STEP_PRE or another session's drain appends a later one at once. Left in
        // the completion queue, it is claimed by the STEP_PRE of the step that message starts.
        if self.fixes.ordered_completions && cli.prompt_queue_len() > 0 {
            return Flow::nothing();
        }
        let msgs = BackgroundWait::completions(cli);
        if !msgs.is_empty() {
            return self.finish(msgs);
        }
        if cli.interactive() || cli.prompt_queue_len() > 0 {
            return Flow::nothing();
        }
        self.deadline = cli.now() + cli.idle_max_ms();
        self.drain(cli)
    }

    fn resume(&mut self, cli: &mut Cli<'_>, _why: Resume) -> Flow {
        match self.phase {
            Phase::Idle => Flow::nothing(),
            Phase::Waiting => self.drain(cli),
            Phase::Input => {
                match self.wait_input(cli) {
                    Some(Incoming::Items(items)) => return self.finish(items),
                    Some(Incoming::Hook) => {
                        self.seen.report();
                        return self.finish(Vec::new());
                    }
                    None => {}
                }
                let now = cli.now();
                if self.fixes.recheck_under_lock {
                    let msgs = BackgroundWait::completions(cli);
                    let pending = BackgroundWait::pending(cli);
                    if !msgs.is_empty() || pending.is_empty() {
                        return self.finish(msgs);
                    }
                    if now >= self.deadline {
                        return self.time_out(cli, pending);
                    }
                    self.phase = Phase::Waiting;
                    let remaining = (self.deadline - now).0;
                    Flow::Wait {
                        timeout_ms: remaining.min(WAIT_CAP_MS),
                    }
                } else {
                    // No recheck: a completion queued since the drain above (its notify_all
                    // found no waiter) is noticed only when this wait runs out.
                    if now >= self.deadline {
                        let pending = BackgroundWait::pending(cli);
                        return self.time_out(cli, pending);
                    }
                    self.phase = Phase::Waiting;
                    Flow::Wait {
                        timeout_ms: (self.deadline - now).0,
                    }
                }
            }
        }
    }

    fn on_reset_all(&mut self) {
        self.control_keys.clear();
    }
}
