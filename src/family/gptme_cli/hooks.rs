//! LOOP_CONTINUE: the hooks by priority with StopPropagation (the wake logic's, the subagent
//! hook, auto-reply), and the wake logic's hook suspended (`Flow::Unlock` for file I/O,
//! `Flow::Wait` on the conversation's condition) and resumed by I/O, `notify_all` or timeout.

use super::api::{Flow, Item, Resume};
use super::core::QItem;
use super::faults::CliFault;
use super::host::CliHost;
use super::note::{CliState, Note};
use super::{
    AUTO_REPLY_PRIORITY, CliEv, CliKernel, NUDGES_MAX, OTHER, OWN, ResumeKind, SUBAGENT_PRIORITY,
    vocab,
};
use crate::family::common::Core;
use crate::sim::msg::{MsgId, Payload};
use crate::sim::record::{Actor, Ev};

/// A LOOP_CONTINUE hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hook {
    Wake,
    Subagent,
    AutoReply,
}

/// LOOP_CONTINUE in progress.
pub(super) struct HookRun {
    /// Hooks by priority, highest first (the first `hooks` of them), and the next to run.
    order: [(Hook, i32); 3],
    hooks: usize,
    next: usize,
    items: Vec<QItem>,
    /// The current suspension of the wake hook.
    suspension: u32,
    waiting_noted: bool,
    rechecks: u32,
    waited: bool,
}

impl CliHost {
    // ---- LOOP_CONTINUE hooks

    pub(super) fn loop_continue(&mut self, k: &mut CliKernel) {
        let mut order = [
            (Hook::Wake, self.wake.loop_continue_priority()),
            (Hook::Subagent, SUBAGENT_PRIORITY),
            (Hook::AutoReply, AUTO_REPLY_PRIORITY),
        ];
        let hooks = if self.core.faults.on(CliFault::AutoReply) {
            3
        } else {
            2
        };
        // Stable: equal priorities keep registration order.
        order[..hooks].sort_by_key(|(_, p)| std::cmp::Reverse(*p));
        self.run = Some(HookRun {
            order,
            hooks,
            next: 0,
            items: Vec::new(),
            suspension: 0,
            waiting_noted: false,
            rechecks: 0,
            waited: false,
        });
        self.run_hooks(k, None);
    }

    /// Run hooks from the next one; `resumed` is the wake hook's flow after a suspension.
    pub(super) fn run_hooks(&mut self, k: &mut CliKernel, mut resumed: Option<Flow>) {
        loop {
            let Some(run) = self.run.as_mut() else { return };
            let Some(&(hook, priority)) = run.order[..run.hooks].get(run.next) else {
                break;
            };
            match hook {
                Hook::Wake => {
                    let flow = match resumed.take() {
                        Some(f) => f,
                        None => {
                            let name = self.wake.name();
                            self.core
                                .note_with(k, Actor::Wake, || Note::Hook { name, priority });
                            self.call(k, |w, cli| w.loop_continue(cli))
                        }
                    };
                    if !self.wake_flow(k, flow) {
                        return;
                    }
                }
                // Reports are collected only when there are some (mostly there are none).
                Hook::Subagent if !self.core.subagents.is_empty() => {
                    let reports: Vec<MsgId> = self.core.subagents.drain(..).collect();
                    self.core.note_with(k, Actor::Host, || Note::Yield {
                        name: "subagent hook",
                        payload: Payload::from_slice(&reports),
                        input: false,
                        timeout: false,
                        stop: false,
                    });
                    let run = self.run.as_mut().expect("running");
                    run.items.extend(reports.into_iter().map(QItem::Subagent));
                }
                Hook::Subagent => {}
                Hook::AutoReply => {
                    let run = self.run.as_ref().expect("running");
                    if !self.last_reply_tool && self.core.queue.is_empty() && run.items.is_empty() {
                        if self.nudges >= NUDGES_MAX {
                            return self.end(k, vocab::SESSION_COMPLETE);
                        }
                        self.nudges += 1;
                        let count = self.nudges;
                        self.core
                            .note_with(k, Actor::Host, || Note::Nudge { count });
                        let run = self.run.as_mut().expect("running");
                        run.items.push(QItem::Nudge(count));
                    }
                }
            }
            if let Some(run) = self.run.as_mut() {
                run.next += 1;
            }
        }
        let run = self.run.take().expect("running");
        self.core.queue.extend(run.items);
        self.state(CliState::Loop);
        k.schedule(0, CliEv::Loop);
    }

    /// Act on the wake hook's flow. True when the hook is done (the next hook runs).
    fn wake_flow(&mut self, k: &mut CliKernel, flow: Flow) -> bool {
        match flow {
            Flow::Return { items, stop } => {
                let run = self.run.as_mut().expect("running");
                let waited = run.waited;
                if waited && run.rechecks > 0 {
                    let rechecks = run.rechecks;
                    self.core
                        .note_with(k, Actor::Host, || Note::WaitEnded { rechecks });
                }
                if waited {
                    self.core.emit(k, Actor::Host, Ev::WaitEnded);
                }
                let name = self.wake.name();
                self.core.note_with(k, Actor::Wake, || {
                    let ids: Vec<MsgId> = items.iter().filter_map(Item::msg).collect();
                    Note::Yield {
                        name,
                        payload: Payload::from_slice(&ids),
                        input: items.iter().any(|i| matches!(i, Item::InputPending(_))),
                        timeout: items.iter().any(|i| matches!(i, Item::Timeout(_))),
                        stop,
                    }
                });
                for i in &items {
                    if let Item::InputPending(c) = i {
                        let input = c.fingerprint();
                        self.core.emit(k, Actor::Host, Ev::InputInterrupt { input });
                    }
                }
                let run = self.run.as_mut().expect("running");
                run.items.extend(items.into_iter().map(QItem::Hook));
                if stop {
                    run.next = run.hooks;
                }
                true
            }
            Flow::Unlock => {
                self.suspensions += 1;
                let s = self.suspensions;
                self.run.as_mut().expect("running").suspension = s;
                self.core.hook_unlocked = true;
                let d = self.core.cfg.timing.io_ms.delay(k, "file io");
                k.schedule(d, CliEv::Resume(s, ResumeKind::Io));
                false
            }
            Flow::Wait { timeout_ms } => {
                self.suspensions += 1;
                let s = self.suspensions;
                let [own, foreign] = self.core.unfinished([OWN, OTHER]);
                if own > 0 {
                    k.choices.search_mark(crate::sim::feature::WAIT_FOR_WORK);
                }
                self.core.emit(k, Actor::Host, Ev::Waiting { own, foreign });
                let run = self.run.as_mut().expect("running");
                run.suspension = s;
                run.waited = true;
                let note = !run.waiting_noted;
                run.waiting_noted = true;
                self.core.waiter = Some(s);
                self.state(CliState::Waiting);
                if note {
                    self.core
                        .note_with(k, Actor::Host, || Note::Wait { timeout_ms, own });
                }
                k.schedule(timeout_ms, CliEv::Resume(s, ResumeKind::TimedOut));
                false
            }
        }
    }

    pub(super) fn resume(&mut self, k: &mut CliKernel, s: u32, kind: ResumeKind) {
        let Some(run) = self.run.as_mut() else { return };
        if run.suspension != s {
            return;
        }
        let why = match kind {
            ResumeKind::Io => {
                self.core.hook_unlocked = false;
                Resume::Io
            }
            ResumeKind::TimedOut => {
                if self.core.waiter != Some(s) {
                    return; // notified first
                }
                self.core.waiter = None;
                run.rechecks += 1;
                Resume::TimedOut
            }
            ResumeKind::Notified => {
                let rechecks = run.rechecks;
                run.waiting_noted = false;
                run.rechecks = 0;
                self.core
                    .note_with(k, Actor::Host, || Note::Woken { rechecks });
                Resume::Notified
            }
        };
        self.state(CliState::Loop);
        let flow = self.call(k, |w, cli| w.resume(cli, why));
        self.run_hooks(k, Some(flow));
    }

    /// `cond(cid).notify_all()`: wake the waiter blocked on A's condition.
    pub(super) fn notify_waiter(&mut self, k: &mut CliKernel) -> bool {
        let Some(s) = self.core.waiter.take() else {
            return false;
        };
        let d = self.core.cfg.timing.wake_ms.delay(k, "thread wake");
        k.schedule(d, CliEv::Resume(s, ResumeKind::Notified));
        true
    }
}
