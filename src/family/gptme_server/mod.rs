//! The gptme server host (`wake-systems.md` §1.1.2, §1.1.3): one conversation (logdir A) with one
//! or two sessions, the busy predicate, `request_watch_wake`, step threads that end at drawn
//! times, tool confirmation, slash commands with `finish_command`, the global deferred-delivery
//! queue, the subagent completion queue, STEP_PRE hooks, and the watch storm guards.
//!
//! Every thread interleaving point is a scheduling point: a watch fires (the watch thread's
//! `_fire`), a step thread starts, replies, finishes its tools, a user confirms, a command
//! finishes. What gptme does under its locks runs atomically inside one event.
//!
//! - `core.rs`: the state and the synchronous API ([`api::Server`]);
//! - this file: the scheduled parts (steps, commands, producers, storm guards);
//! - `api.rs`: the public wake-logic trait; `config.rs`: the knobs.

pub mod adapter;
pub mod api;
pub mod config;
pub mod core;
pub mod note;
pub mod sections;
pub mod vocab;
pub mod wakes;

use api::{Server, ServerWake, SubagentCompletion, WatchEvent};
use config::{ServerConfig, ServerFault};
use core::{SPhase, ServerCore, Session};

use crate::adapter::SlotRef;
use crate::check::{Invariant, Monitor};
use crate::error::Result;
use crate::family::common::Core;
use crate::family::common::conv::ConvId;
use crate::family::common::faults::FaultSpec;
use crate::family::common::faults::TimedFaults;
use crate::family::{Family, Host, Registry};
use crate::input::Cx;
use crate::sim::msg::{MsgFrom, MsgId, MsgKind, Payload};
use crate::sim::record::{Actor, Ev, Reason, Window};
use crate::sim::swarm::{self, Mix};
use crate::sim::time::Ms;
use crate::sim::{Kernel, World};
use note::{Note, Reply, RetryCause, StepOrigin};

/// The conversation under test; the only one the server model runs.
const CONV: ConvId = ConvId(0);

/// FIFO streams of logdir A (`MsgInfo::source`): its deferred watch events and its subagent
/// completions are each delivered in order.
const WATCH_STREAM: u8 = 0;
const COMPLETION_STREAM: u8 = 1;

/// The storm guards of `_record_event` (`gptme/tools/watch.py`).
const STORM_WINDOW_MS: u64 = 20_000;
const STORM_EVENTS_MAX: usize = 20;
const CANCEL_WINDOW_MS: u64 = 300_000;
const CANCEL_EVENTS_MAX: usize = 200;
const LIFETIME_EVENTS_MAX: u32 = 1_000;

/// The kernel this host runs on: its events, its narration into the checkers' monitor.
pub type SrvKernel = Kernel<SrvEv, Monitor<Note>>;

/// The server's scheduled events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrvEv {
    /// The i-th planned watch event fires.
    Fire(u32),
    /// The i-th planned subagent completion arrives.
    Completion(u32),
    /// A step thread's next phase.
    Step(u32),
    /// The user confirms the pending tool call of a step.
    Confirm(u32),
    /// The i-th planned timed fault.
    Timed(u32),
    /// The slash command finishes (`finish_command`).
    CommandEnd,
}

/// Per-watch storm-guard state.
#[derive(Clone, Debug, Default)]
struct Guard {
    /// Fire times inside the coalescing window (cleared when it coalesces).
    recent: Vec<Ms>,
    /// Fire times inside the auto-cancel window.
    window: Vec<Ms>,
    lifetime: u32,
    cancelled: bool,
}

/// The gptme server with its wake logic: a `World` for the kernel.
pub struct ServerHost {
    core: ServerCore,
    wake: Box<dyn ServerWake>,
    /// Planned watch events: which watch fires.
    fires: Vec<u8>,
    guards: Vec<Guard>,
    /// Planned subagent completions: which subagent.
    completions: Vec<u8>,
    timed: TimedFaults<ServerFault>,
    producers_on: Vec<&'static str>,
}

impl ServerHost {
    pub fn new(cfg: ServerConfig, wake: Box<dyn ServerWake>) -> ServerHost {
        let watches = usize::from(cfg.producers.watches);
        ServerHost {
            core: ServerCore::new(cfg),
            wake,
            fires: Vec::new(),
            guards: vec![Guard::default(); watches],
            completions: Vec::new(),
            timed: TimedFaults::default(),
            producers_on: Vec::new(),
        }
    }

    /// Call into the wake logic with a fresh call budget.
    fn call<R>(
        &mut self,
        k: &mut SrvKernel,
        f: impl FnOnce(&mut dyn ServerWake, &mut Server<'_>) -> R,
    ) -> R {
        self.core.calls.reset();
        let mut srv = Server {
            core: &mut self.core,
            k,
        };
        f(&mut *self.wake, &mut srv)
    }

    /// One delivery pass: the wakes it issues share its number (NO-SELF-REFUSAL judges them).
    fn pass<R>(
        &mut self,
        k: &mut SrvKernel,
        note: Note,
        f: impl FnOnce(&mut dyn ServerWake, &mut Server<'_>) -> R,
    ) -> R {
        self.core.passes += 1;
        let pass = self.core.passes;
        self.core.pass = pass;
        self.core.retrying = matches!(note, Note::Retry { .. });
        self.core.emit(k, Actor::Host, Ev::Pass { pass, on: true });
        self.core.note(k, Actor::Wake, note);
        let r = self.call(k, f);
        self.core.emit(k, Actor::Host, Ev::Pass { pass, on: false });
        r
    }

    fn retry(&mut self, k: &mut SrvKernel, cause: RetryCause) {
        self.pass(k, Note::Retry { cid: CONV, cause }, |w, srv| {
            w.retry_deferred_watch_wakes(srv, CONV)
        });
    }

    fn plan(&mut self, k: &mut SrvKernel) {
        self.core.faults.plan(k);
        if self.core.faults.on(ServerFault::SecondSession) {
            self.core.sessions.push(Session::default());
        }
        let p = self.core.cfg.producers.clone();
        let active = k.limits().active_ms;
        // Swarm: each seed enables a non-empty subset of the configured producer kinds.
        let kinds: Vec<(&'static str, bool)> = [
            ("watch", p.events.max > 0),
            ("completion", p.completions.max > 0),
        ]
        .into_iter()
        .filter(|(_, configured)| *configured)
        .collect();
        let mask = if kinds.is_empty() {
            0
        } else {
            swarm::draw_subset(&mut k.choices, kinds.len())
        };
        let on = |name: &str| {
            kinds
                .iter()
                .position(|(n, _)| *n == name)
                .is_some_and(|i| mask & (1 << i) != 0)
        };
        let (watch_on, completion_on) = (on("watch"), on("completion"));
        self.producers_on = kinds
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .map(|(_, (n, _))| *n)
            .collect();
        if watch_on {
            let n = p.events.count(k, "events");
            let mut t = Ms(p.start_ms.instant(k, "first event"));
            for i in 0..n {
                if i > 0 {
                    t = t + p.spacing_ms.instant(k, "spacing");
                }
                if t.0 >= active {
                    break;
                }
                let watch = k.choose(u64::from(p.watches), "watch") as u8;
                k.schedule_at(t, SrvEv::Fire(self.fires.len() as u32));
                self.fires.push(watch);
            }
        }
        if completion_on {
            let n = p.completions.count(k, "completions").min(26);
            for agent in 0..n {
                let at = p.completion_ms.instant(k, "completion time");
                if at >= active {
                    continue;
                }
                k.schedule_at(Ms(at), SrvEv::Completion(self.completions.len() as u32));
                self.completions.push(agent as u8);
            }
        }
        self.timed.plan(&self.core.faults, k, SrvEv::Timed);
    }

    /// `_fire` → `_record_event`: the storm guards. Returns the drop reason when the event is not
    /// delivered.
    fn storm_guard(&mut self, now: Ms, watch: u8) -> Option<Reason> {
        let g = &mut self.guards[usize::from(watch)];
        g.lifetime += 1;
        g.window.retain(|t| now.0 < t.0 + CANCEL_WINDOW_MS);
        g.window.push(now);
        if g.window.len() > CANCEL_EVENTS_MAX || g.lifetime > LIFETIME_EVENTS_MAX {
            g.cancelled = true;
            return Some(vocab::STORM_CANCELLED);
        }
        g.recent.retain(|t| now.0 < t.0 + STORM_WINDOW_MS);
        g.recent.push(now);
        if g.recent.len() > STORM_EVENTS_MAX {
            g.recent.clear();
            return Some(vocab::STORM_COALESCED);
        }
        None
    }

    fn fire(&mut self, k: &mut SrvKernel, i: u32) {
        let watch = self.fires[i as usize];
        if self.guards[usize::from(watch)].cancelled {
            return;
        }
        let from = MsgFrom {
            kind: MsgKind::Watch,
            source: WATCH_STREAM,
            origin: watch,
            conv: CONV.0,
            stream: Some("the watch events of logdir A"),
        };
        let msg = k.produce_from(from, self.core.state() as u8);
        if let Some(reason) = self.storm_guard(k.now(), watch) {
            self.core.mark(k, vocab::STORM_GUARD);
            let cancelled = reason == vocab::STORM_CANCELLED;
            self.core
                .note(k, Actor::Host, Note::Storm { watch, cancelled });
            self.core.emit(k, Actor::Host, Ev::Dropped { msg, reason });
            return;
        }
        let event = WatchEvent {
            logdir: CONV,
            watch,
            msg,
        };
        self.pass(k, Note::Deliver { cid: CONV, msg }, |w, srv| {
            w.deliver(srv, CONV, event)
        });
    }

    fn completion(&mut self, k: &mut SrvKernel, i: u32) {
        let agent = self.completions[i as usize];
        let from = MsgFrom {
            kind: MsgKind::Completion,
            source: COMPLETION_STREAM,
            origin: agent,
            conv: CONV.0,
            stream: Some("the subagent completions of logdir A"),
        };
        let msg = k.produce_from(from, self.core.state() as u8);
        self.core.completions.push_back(SubagentCompletion {
            logdir: CONV,
            agent,
            msg,
        });
        // [inference] The notifier retries so that an idle parent is woken (the retry is where
        // W2-subagent delivers completions).
        self.retry(k, RetryCause::SubagentCompletion);
    }

    fn step_phase(&mut self, k: &mut SrvKernel, id: u32) {
        let i = id as usize;
        let session = self.core.steps[i].session;
        let timing = self.core.cfg.timing;
        match self.core.steps[i].phase {
            SPhase::Start => {
                let origin = self.core.sessions[session]
                    .generating
                    .unwrap_or(StepOrigin::AfterTools);
                self.core.note(
                    k,
                    Actor::Host,
                    Note::StepStart {
                        session: session as u8 + 1,
                        origin,
                    },
                );
                self.step_pre(k);
                self.core.requests += 1;
                let req = self.core.requests;
                self.core
                    .emit(k, Actor::Host, Ev::Request { req, harness: true });
                self.core.steps[i].phase = SPhase::Reply;
                let d = timing.model_ms.delay(k, "model");
                k.schedule(d, SrvEv::Step(id));
            }
            SPhase::Reply => {
                self.core.sessions[session].last_activity = k.now();
                let s = session as u8 + 1;
                if self.core.faults.fires(k, ServerFault::ToolConfirmation) {
                    let sess = &mut self.core.sessions[session];
                    sess.pending_tools = true;
                    sess.generating = None;
                    self.core.note(
                        k,
                        Actor::Host,
                        Note::Reply {
                            session: s,
                            reply: Reply::ToolNeedsConfirmation,
                        },
                    );
                    self.end_step(id);
                    let d = timing.confirm_ms.delay(k, "confirmation");
                    k.schedule(d, SrvEv::Confirm(id));
                    self.retry(k, RetryCause::StepCompletion(s));
                } else if self.core.faults.fires(k, ServerFault::ToolCalls) {
                    self.core.note(
                        k,
                        Actor::Host,
                        Note::Reply {
                            session: s,
                            reply: Reply::ToolCalls,
                        },
                    );
                    self.core.sessions[session].executing_tools = true;
                    self.core.steps[i].phase = SPhase::Tools;
                    let d = timing.tool_ms.delay(k, "tools");
                    k.schedule(d, SrvEv::Step(id));
                } else {
                    self.core.sessions[session].generating = None;
                    self.core.note(
                        k,
                        Actor::Host,
                        Note::Reply {
                            session: s,
                            reply: Reply::Done,
                        },
                    );
                    self.end_step(id);
                    self.retry(k, RetryCause::StepCompletion(s));
                }
            }
            SPhase::Tools => {
                let sess = &mut self.core.sessions[session];
                sess.executing_tools = false;
                if sess.generating.is_none() {
                    sess.generating = Some(StepOrigin::AfterTools);
                }
                self.core.steps[i].phase = SPhase::Start;
                k.schedule(0, SrvEv::Step(id));
            }
            SPhase::Done => {}
        }
    }

    fn end_step(&mut self, id: u32) {
        self.core.steps[id as usize].phase = SPhase::Done;
        self.core.live_steps -= 1;
    }

    /// STEP_PRE hooks of a step: the subagent hook takes this parent's completions; the watch
    /// tool's `_watch_drain_hook` (priority 940, when loaded) takes its deferred events; each
    /// yields one system message per item, appended before the model request.
    fn step_pre(&mut self, k: &mut SrvKernel) {
        let done: Vec<MsgId> = self
            .core
            .take_completions(CONV)
            .iter()
            .map(|c| c.msg)
            .collect();
        self.step_pre_appends(k, "subagent completions", &done);
        if self.core.faults.on(ServerFault::WatchTool) {
            let events: Vec<MsgId> = self
                .core
                .take_watch(Some(CONV))
                .iter()
                .map(|e| e.msg)
                .collect();
            self.step_pre_appends(k, "_watch_drain_hook", &events);
        }
    }

    /// A STEP_PRE hook yielded one system message per item: append them.
    fn step_pre_appends(&mut self, k: &mut SrvKernel, hook: &'static str, ids: &[MsgId]) {
        if ids.is_empty() {
            return;
        }
        let payload = Payload::from_slice(ids);
        self.core.append(k, &payload);
        self.core
            .note(k, Actor::Host, Note::StepPre { hook, payload });
    }

    fn confirm(&mut self, k: &mut SrvKernel, id: u32) {
        let session = self.core.steps[id as usize].session;
        let sess = &mut self.core.sessions[session];
        sess.pending_tools = false;
        sess.executing_tools = true;
        sess.generating = Some(StepOrigin::AfterTools);
        self.core.note(
            k,
            Actor::User,
            Note::Confirmed {
                session: session as u8 + 1,
            },
        );
        let nid = self.core.start_step(k, session);
        // The confirmed tool executes first, then the step thread continues with a step.
        self.core.steps[nid as usize].phase = SPhase::Tools;
    }

    fn timed_fault(&mut self, k: &mut SrvKernel, i: u32) {
        if k.quiescent() {
            return;
        }
        match self.timed.fault(i) {
            ServerFault::UserSteps => {
                let n = self.core.sessions.len() as u64;
                let session = k.choose(n, "session") as usize;
                let s = self.core.sessions[session];
                if s.generating.is_some() || s.pending_tools || s.executing_tools {
                    return self.timed.retry(k, i, SrvEv::Timed(i));
                }
                self.core.sessions[session].generating = Some(StepOrigin::User);
                self.core.sessions[session].last_activity = k.now();
                self.core.note(
                    k,
                    Actor::User,
                    Note::UserMessage {
                        session: session as u8 + 1,
                    },
                );
                self.core.start_step(k, session);
            }
            ServerFault::SlashCommands => {
                if self.core.command {
                    return self.timed.retry(k, i, SrvEv::Timed(i));
                }
                self.core.command = true;
                self.core
                    .note(k, Actor::User, Note::Command { finished: false });
                let d = self.core.cfg.timing.command_ms.delay(k, "command");
                k.schedule(d, SrvEv::CommandEnd);
            }
            f => unreachable!("{f:?} is not a timed fault"),
        }
    }
}

impl World for ServerHost {
    type Ev = SrvEv;
    type Sink = Monitor<Note>;

    fn mix(&self) -> Mix {
        Mix {
            faults: self.core.faults.mix(),
            producers: self.producers_on.clone(),
        }
    }

    fn start(&mut self, k: &mut SrvKernel) {
        k.choices.set_constants(&self.wake.constants_ms());
        self.plan(k);
        self.core.emit(k, Actor::Host, Ev::Idle { idle: true });
        let sessions = self.core.sessions.len() as u8;
        self.core.note(
            k,
            Actor::Host,
            Note::ServerStart {
                sessions,
                watch_tool: self.core.faults.on(ServerFault::WatchTool),
            },
        );
    }

    fn step(&mut self, k: &mut SrvKernel, ev: SrvEv) {
        match ev {
            SrvEv::Fire(i) => self.fire(k, i),
            SrvEv::Completion(i) => self.completion(k, i),
            SrvEv::Step(id) => self.step_phase(k, id),
            SrvEv::Confirm(id) => self.confirm(k, id),
            SrvEv::Timed(i) => self.timed_fault(k, i),
            SrvEv::CommandEnd => {
                self.core.command = false;
                self.core
                    .note(k, Actor::Host, Note::Command { finished: true });
                self.retry(k, RetryCause::FinishCommand);
            }
        }
        self.core.sync_idle(k);
    }
}

/// The gptme-server family: gptme's server, its wake logic written against [`ServerWake`].
pub struct ServerFamily;

impl Family for ServerFamily {
    const NAME: &'static str = "gptme-server";
    const HOSTS: &'static [(Host, ())] = &[(
        // Conversations with sessions, `request_watch_wake`, the deferred watch queue and its
        // retry (`gptme/server/session_models.py` @0b19447c, `gptme/tools/watch.py`).
        Host {
            name: "gptme-server",
            version_label: "gptme-server@0b19447c",
            describe: "gptme server: busy predicate over sessions, request_watch_wake sets generating before it returns, step threads, deferred watch queue, storm guards",
        },
        (),
    )];
    /// `wake-systems.md` §1.3, §4.
    const INVARIANTS: &'static [Invariant] = &[
        Invariant::NoLoss,
        Invariant::ExactlyOnce,
        Invariant::Fifo,
        Invariant::BoundedLatency,
        Invariant::NoSelfRefusal,
    ];
    const WINDOWS: &'static [Window] = vocab::WINDOWS;
    const COMPACT_RUNS: bool = true;

    type Variant = ();
    type Fault = ServerFault;
    type Note = Note;
    type Config = ServerConfig;
    type Producers = sections::RawServerProducers;
    type Timing = sections::RawServerTiming;
    type Wake = dyn ServerWake;
    type World = ServerHost;

    fn state_name(code: u8) -> &'static str {
        note::state_name(code)
    }

    fn config(
        cx: Cx<'_>,
        producers: sections::RawServerProducers,
        timing: sections::RawServerTiming,
        faults: Vec<(ServerFault, FaultSpec)>,
    ) -> Result<ServerConfig> {
        sections::config(cx, producers, timing, faults)
    }

    fn scope(config: &mut ServerConfig, messages_max: u64) {
        config.producers.events.cap(messages_max);
        config.producers.completions.cap(messages_max);
    }

    fn world(_: (), config: &ServerConfig, wake: Box<dyn ServerWake>) -> ServerHost {
        ServerHost::new(config.clone(), wake)
    }

    fn external(slot: SlotRef, constants_ms: Vec<u64>) -> Box<dyn ServerWake> {
        Box::new(adapter::ExternalServer::new(slot, constants_ms))
    }
}

impl Registry {
    /// Add (or replace) a gptme-server wake logic under `name`.
    pub fn with_gptme_server(
        self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<dyn ServerWake> + Send + Sync + 'static,
    ) -> Registry {
        self.with::<ServerFamily>(name, summary, make)
    }
}
