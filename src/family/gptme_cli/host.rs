//! [`CliHost`], the `World` for the gptme CLI: the seed's plan, its calls into the wake logic,
//! and the dispatch of its events to the phases (`chat_loop.rs`, `hooks.rs`, `jobs.rs`,
//! `faults.rs`).

use super::api::{self, Cli, CliWake};
use super::config::CliConfig;
use super::core::CliCore;
use super::faults::CliFault;
use super::hooks::HookRun;
use super::note::{CliState, Note};
use super::{CONTROL_RECORD_BYTES, CliEv, CliKernel};
use crate::check::Monitor;
use crate::family::common::Core;
use crate::family::common::faults::TimedFaults;
use crate::sim::World;
use crate::sim::record::Actor;
use crate::sim::swarm::Mix;

/// The gptme CLI with its wake logic: a `World` for the kernel.
pub struct CliHost {
    pub(super) core: CliCore,
    pub(super) wake: Box<dyn CliWake>,
    pub(super) timed: TimedFaults<CliFault>,
    pub(super) run: Option<HookRun>,
    pub(super) suspensions: u32,
    pub(super) jobs_planned: u64,
    pub(super) jobs_started: u64,
    pub(super) replies: usize,
    pub(super) steps_in_turn: u64,
    pub(super) turns: u64,
    pub(super) last_reply_tool: bool,
    pub(super) nudges: u8,
    pub(super) subagent_reports: u8,
}

impl CliHost {
    pub fn new(cfg: CliConfig, wake: Box<dyn CliWake>) -> CliHost {
        CliHost {
            core: CliCore::new(cfg),
            wake,
            timed: TimedFaults::default(),
            run: None,
            suspensions: 0,
            jobs_planned: 0,
            jobs_started: 0,
            replies: 0,
            steps_in_turn: 0,
            turns: 0,
            last_reply_tool: false,
            nudges: 0,
            subagent_reports: 0,
        }
    }

    /// This host as `new(cfg.clone(), wake)` would make it, keeping its allocations. Every
    /// field is named: a new field does not compile until it is renewed here.
    pub fn renew(&mut self, cfg: &CliConfig, new_wake: Box<dyn CliWake>) {
        let CliHost {
            core,
            wake,
            timed,
            run,
            suspensions,
            jobs_planned,
            jobs_started,
            replies,
            steps_in_turn,
            turns,
            last_reply_tool,
            nudges,
            subagent_reports,
        } = self;
        core.renew(cfg);
        *wake = new_wake;
        timed.renew();
        *run = None;
        *suspensions = 0;
        *jobs_planned = 0;
        *jobs_started = 0;
        *replies = 0;
        *steps_in_turn = 0;
        *turns = 0;
        *last_reply_tool = false;
        *nudges = 0;
        *subagent_reports = 0;
    }

    /// Call into the wake logic with a fresh call budget.
    pub(super) fn call<R>(
        &mut self,
        k: &mut CliKernel,
        f: impl FnOnce(&mut dyn CliWake, &mut Cli<'_>) -> R,
    ) -> R {
        self.core.calls.reset();
        let mut cli = Cli {
            core: &mut self.core,
            k,
        };
        f(&mut *self.wake, &mut cli)
    }

    pub(super) fn state(&mut self, s: CliState) {
        if self.core.ended.is_none() {
            self.core.state = s;
        }
    }

    fn plan(&mut self, k: &mut CliKernel) {
        self.core.faults.plan(k);
        let jobs = self.core.cfg.producers.jobs;
        self.jobs_planned = jobs.count(k, "jobs");
        self.timed.plan(&self.core.faults, k, CliEv::Timed);
    }
}

impl World for CliHost {
    type Ev = CliEv;
    type Sink = Monitor<Note>;

    fn mix(&self) -> Mix {
        Mix {
            faults: self.core.faults.mix(),
            fired: self.core.faults.fired(),
            producers: Vec::new(),
        }
    }

    fn start(&mut self, k: &mut CliKernel) {
        k.choices.set_constants(&self.wake.constants_ms());
        self.plan(k);
        let stale_control = self.core.faults.on(CliFault::StaleControl);
        if stale_control {
            self.core.control_versions += 1;
            self.core.control = Some(api::ControlFile {
                version: self.core.control_versions,
                size: CONTROL_RECORD_BYTES,
            });
        }
        self.core.note(
            k,
            Actor::Host,
            Note::CliStart {
                auto_reply: self.core.faults.on(CliFault::AutoReply),
                stale_control,
            },
        );
        k.schedule(0, CliEv::Loop);
    }

    fn step(&mut self, k: &mut CliKernel, ev: CliEv) {
        match ev {
            CliEv::Loop => self.loop_top(k),
            CliEv::Close => self.close(k),
            CliEv::Reply => {
                if self.core.ended.is_none() {
                    self.reply(k);
                }
            }
            CliEv::ToolDone => self.tool_done(k),
            CliEv::Resume(s, kind) => self.resume(k, s, kind),
            CliEv::JobExit(i) => self.job_exit(k, i),
            CliEv::Notify(i) => self.notify(k, i),
            CliEv::OwnerClaim(i) => self.owner_claim(k, i),
            CliEv::ConcurrentDrain => self.concurrent_drain(k),
            CliEv::Timed(i) => self.timed_fault(k, i),
        }
        self.core.sync_idle(k);
    }
}
