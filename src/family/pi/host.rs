//! [`PiHost`], the `World` for pi: the seed's plan (faults on, producer messages, timed
//! faults), its calls into the wake logic, and the dispatch of its events to the phases
//! (`prompt.rs`, `run.rs`, `faults.rs`).

use super::api::{CompactOutcome, Message, Pi, PiWake, TimerId};
use super::config::PiConfig;
use super::core::PiCore;
use super::faults::PiFault;
use super::note::{Hook, Note};
use super::{PiEv, PiKernel, Version};
use crate::check::Monitor;
use crate::family::common::Core;
use crate::family::common::faults::TimedFaults;
use crate::sim::World;
use crate::sim::msg::MsgKind;
use crate::sim::record::{Actor, Ev};
use crate::sim::swarm::{self, Mix};
use crate::sim::time::Ms;

/// A producer message the seed planned.
pub(super) struct Planned {
    kind: MsgKind,
    source: u8,
}

/// The pi host with its wake logic: a `World` for the kernel.
pub struct PiHost {
    pub(super) core: PiCore,
    pub(super) wake: Box<dyn PiWake>,
    pub(super) producers: Vec<Planned>,
    pub(super) timed: TimedFaults<PiFault>,
    /// The producer kinds this seed enabled.
    pub(super) kinds_on: Vec<MsgKind>,
}

impl PiHost {
    pub fn new(version: impl Into<Version>, cfg: PiConfig, wake: Box<dyn PiWake>) -> PiHost {
        PiHost {
            core: PiCore::new(version.into(), cfg),
            wake,
            producers: Vec::new(),
            timed: TimedFaults::default(),
            kinds_on: Vec::new(),
        }
    }

    /// Call into the wake logic with a fresh call budget; then run the input handlers of any
    /// prompt the call started.
    pub(super) fn call<R>(
        &mut self,
        k: &mut PiKernel,
        f: impl FnOnce(&mut dyn PiWake, &mut Pi<'_>) -> R,
    ) -> R {
        self.core.calls.reset();
        let mut pi = Pi {
            core: &mut self.core,
            k,
        };
        let r = f(&mut *self.wake, &mut pi);
        self.run_inputs(k);
        r
    }

    /// Call the host from outside its own events, as an async wake task does between two of them
    /// (the madsim lane): `f` gets the same [`Pi`] handle the handlers get, with a fresh call
    /// budget, at the kernel's current time. Input handlers of prompts it starts run before this
    /// returns, as they do after a handler.
    pub fn enter<R>(&mut self, k: &mut PiKernel, f: impl FnOnce(&mut Pi<'_>) -> R) -> R {
        let r = self.call(k, |_, pi| f(pi));
        self.core.sync_idle(k);
        r
    }

    /// Run the input handlers of prompts started since: pi calls them synchronously inside
    /// `prompt()`, before anything else can happen.
    pub(super) fn run_inputs(&mut self, k: &mut PiKernel) {
        while !self.core.inputs_due.is_empty() {
            let id = self.core.inputs_due.remove(0);
            self.prompt_step(k, id);
        }
    }

    /// Deliver an extension event to the wake logic.
    pub(super) fn hook(&mut self, k: &mut PiKernel, hook: Hook) {
        self.core.note(k, Actor::Wake, Note::Handler(hook));
        let ctx = self.core.ctx();
        self.call(k, |w, pi| match hook {
            Hook::SessionStart => w.on_session_start(pi, ctx),
            Hook::AgentStart => w.on_agent_start(pi, ctx),
            Hook::TurnEnd => w.on_turn_end(pi, ctx),
            Hook::AgentEnd => w.on_agent_end(pi, ctx),
            Hook::AgentSettled => w.on_agent_settled(pi, ctx),
            Hook::SessionCompact => w.on_session_compact(pi, ctx, CompactOutcome::Done),
            Hook::SessionCompactFailed => w.on_session_compact(pi, ctx, CompactOutcome::Failed),
            Hook::SessionTree => w.on_session_tree(pi, ctx),
            Hook::BeforeAgentStart => w.on_before_agent_start(pi, ctx),
            Hook::Timer(id) => w.on_timer(pi, TimerId(id)),
            Hook::Input | Hook::Message(_) => unreachable!("delivered by their own paths"),
        });
    }

    fn plan(&mut self, k: &mut PiKernel) {
        self.core.faults.plan(k);
        let active = k.limits().active_ms;
        let p = &self.core.cfg.producers;
        let mask = swarm::draw_subset(&mut k.choices, p.kinds.len());
        // The kinds this seed switched on (no copy of the configuration).
        self.kinds_on.clear();
        self.kinds_on.extend(
            (0..p.kinds.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| p.kinds[i]),
        );
        let kinds = &self.kinds_on;
        let n = p.messages.min + k.choose(p.messages.max - p.messages.min + 1, "messages");
        let mut t = Ms(k.instant(p.start_ms.min, p.start_ms.max, "first message"));
        let mut completed = vec![false; usize::from(p.subagents)];
        let mut last_at: Vec<Option<Ms>> = vec![None; usize::from(p.subagents) + 1];
        for i in 0..n {
            if i > 0 {
                t = t + k.instant(p.spacing_ms.min, p.spacing_ms.max, "spacing");
            }
            if t.0 >= active {
                break;
            }
            let kind = kinds[k.choose(kinds.len() as u64, "kind") as usize];
            // A subagent sends notifications, then one completion, its last message.
            let source = match kind {
                MsgKind::Orchestrator => p.subagents,
                // pi's kinds (config.rs) are completions, notifications and orchestrator
                // messages; a gptme kind in the list would be drawn as a subagent's.
                MsgKind::Completion
                | MsgKind::Notification
                | MsgKind::Watch
                | MsgKind::Job
                | MsgKind::Prompt => {
                    // The `j`-th subagent still open (no list of them built per message).
                    let open = || (0..p.subagents).filter(|s| !completed[*s as usize]);
                    let count = open().count();
                    if count == 0 {
                        continue;
                    }
                    let j = k.choose(count as u64, "subagent") as usize;
                    open().nth(j).expect("j < count")
                }
            };
            if kind == MsgKind::Completion {
                completed[source as usize] = true;
            }
            // One source sends one message at a time: never two at the same instant, whose
            // order a same-instant choice could swap.
            let last = &mut last_at[source as usize];
            if last.is_some_and(|l| l >= t) {
                t = last.expect("checked") + 1;
            }
            *last = Some(t);
            k.schedule_at(t, PiEv::Produce(self.producers.len() as u32));
            self.producers.push(Planned { kind, source });
        }
        self.timed.plan(&self.core.faults, k, PiEv::Timed);
    }
}

impl World for PiHost {
    type Ev = PiEv;
    type Sink = Monitor<Note>;

    fn mix(&self) -> Mix {
        Mix {
            faults: self.core.faults.mix(),
            fired: self.core.faults.fired(),
            producers: self.kinds_on.iter().map(|k| k.name()).collect(),
        }
    }

    fn start(&mut self, k: &mut PiKernel) {
        k.choices.set_constants(&self.wake.constants_ms());
        self.plan(k);
        self.core.emit(k, Actor::Host, Ev::Idle { idle: true });
        let session = self.core.session;
        self.core
            .note(k, Actor::Host, Note::SessionStart { session });
        self.hook(k, Hook::SessionStart);
        self.core.sync_idle(k);
    }

    fn step(&mut self, k: &mut PiKernel, ev: PiEv) {
        match ev {
            PiEv::Produce(i) => {
                let p = &self.producers[i as usize];
                let (kind, source) = (p.kind, p.source);
                let id = k.produce(kind, source, self.core.state() as u8);
                self.core.mark_arrival(k);
                self.core
                    .note(k, Actor::Wake, Note::Handler(Hook::Message(id)));
                let msg = Message { id, kind, source };
                self.call(k, |w, pi| w.on_message(pi, msg));
            }
            PiEv::Prompt(id) => self.prompt_step(k, id),
            PiEv::Run(id) => self.run_step(k, id),
            PiEv::Listen => self.listen_step(k),
            PiEv::Finally => self.core.clear_streaming(k),
            PiEv::Handlers(id) => {
                let d = self.core.handler_delay(k);
                k.resume(d, PiEv::Run(id));
            }
            PiEv::Timer(id) => {
                if std::mem::replace(&mut self.core.timers[id as usize], false) {
                    self.hook(k, Hook::Timer(id));
                }
            }
            PiEv::SessionStart => self.session_start(k),
            PiEv::Timed(i) => self.timed_fault(k, i),
            PiEv::FaultEnd(f) => self.fault_end(k, f),
        }
        self.run_inputs(k);
        self.core.sync_idle(k);
    }
}
