//! [`ServerHost`], the `World` for the gptme server: the seed's plan (watch events, subagent
//! completions, sessions, timed faults), its delivery passes into the wake logic, and the
//! dispatch of its events to the phases (`watch.rs`, `steps.rs`, `faults.rs`).

use super::api::{Server, ServerWake};
use super::config::ServerConfig;
use super::core::{ServerCore, Session};
use super::faults::ServerFault;
use super::note::{Note, RetryCause};
use super::{CONV, SrvEv, SrvKernel};
use crate::check::Monitor;
use crate::family::common::Core;
use crate::family::common::faults::TimedFaults;
use crate::sim::World;
use crate::sim::record::{Actor, Ev};
use crate::sim::swarm::{self, Mix};
use crate::sim::time::Ms;

/// The gptme server with its wake logic: a `World` for the kernel.
pub struct ServerHost {
    pub(super) core: ServerCore,
    wake: Box<dyn ServerWake>,
    /// Planned subagent completions: which subagent.
    pub(super) completions: Vec<u8>,
    pub(super) timed: TimedFaults<ServerFault>,
    producers_on: Vec<&'static str>,
}

impl ServerHost {
    pub fn new(cfg: ServerConfig, wake: Box<dyn ServerWake>) -> ServerHost {
        ServerHost {
            core: ServerCore::new(cfg),
            wake,
            completions: Vec::new(),
            timed: TimedFaults::default(),
            producers_on: Vec::new(),
        }
    }

    /// This host as `new(cfg.clone(), wake)` would make it, keeping its allocations. Every
    /// field is named: a new field does not compile until it is renewed here.
    pub fn renew(&mut self, cfg: &ServerConfig, new_wake: Box<dyn ServerWake>) {
        let ServerHost {
            core,
            wake,
            completions,
            timed,
            producers_on,
        } = self;
        core.renew(cfg);
        *wake = new_wake;
        completions.clear();
        timed.renew();
        producers_on.clear();
    }

    /// Call into the wake logic with a fresh call budget.
    pub(super) fn call<R>(
        &mut self,
        k: &mut SrvKernel,
        f: impl FnOnce(&mut dyn ServerWake, &mut Server<'_>) -> R,
    ) -> R {
        self.core.calls.reset();
        let gaps = !self.wake.custom_deliver();
        let mut srv = Server {
            core: &mut self.core,
            k,
            gaps,
        };
        f(&mut *self.wake, &mut srv)
    }

    /// One delivery pass: the wakes it issues share its number (NO-SELF-REFUSAL judges them).
    pub(super) fn pass<R>(
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

    pub(super) fn retry(&mut self, k: &mut SrvKernel, cause: RetryCause) {
        self.pass(k, Note::Retry { cid: CONV, cause }, |w, srv| {
            w.retry_deferred_watch_wakes(srv, CONV)
        });
    }

    fn plan(&mut self, k: &mut SrvKernel) {
        self.core.faults.plan(k);
        if self.core.faults.on(ServerFault::SecondSession) {
            self.core.sessions.push(Session::default());
        }
        let p = &self.core.cfg.producers;
        let active = k.limits().active_ms;
        // Swarm: each seed enables a non-empty subset of the configured producer kinds (in this
        // order; bit `i` of the drawn mask is the `i`-th configured one).
        let mut kinds: [&'static str; 2] = [""; 2];
        let mut configured = 0;
        for (name, on) in [
            ("watch", p.events.max > 0),
            ("completion", p.completions.max > 0),
        ] {
            if on {
                kinds[configured] = name;
                configured += 1;
            }
        }
        let mask = if configured == 0 {
            0
        } else {
            swarm::draw_subset(&mut k.choices, configured)
        };
        self.producers_on.clear();
        self.producers_on.extend(
            (kinds[..configured].iter().enumerate())
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, n)| *n),
        );
        let watch_on = self.producers_on.contains(&"watch");
        let completion_on = self.producers_on.contains(&"completion");
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
                let i = self.core.watches.plan(watch, t);
                k.schedule_at(t, SrvEv::Fire(i));
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
}

impl World for ServerHost {
    type Ev = SrvEv;
    type Sink = Monitor<Note>;

    fn mix(&self) -> Mix {
        Mix {
            faults: self.core.faults.mix(),
            fired: self.core.faults.fired(),
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
