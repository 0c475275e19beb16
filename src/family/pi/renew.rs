//! A kept pi world renewed for another seed (`Family::renew`): every field of [`PiHost`] and
//! [`PiCore`] set to what `PiHost::new` gives it, keeping the vectors' allocations and copying
//! the configuration only when the scenario's differs. Each struct is destructured by name, so
//! a field added to either does not compile until it is renewed here.

use super::Version;
use super::api::PiWake;
use super::config::PiConfig;
use super::core::{Compacting, PiCore};
use super::host::PiHost;
use crate::family::common::Calls;

impl PiHost {
    /// This host as `PiHost::new(generation, cfg.clone(), wake)` would make it, keeping its
    /// allocations.
    pub fn renew(
        &mut self,
        version: impl Into<Version>,
        cfg: &PiConfig,
        new_wake: Box<dyn PiWake>,
    ) {
        let PiHost {
            core,
            wake,
            producers,
            timed,
            kinds_on,
        } = self;
        core.renew(version.into(), cfg);
        *wake = new_wake;
        producers.clear();
        timed.renew();
        kinds_on.clear();
    }
}

impl PiCore {
    /// This core as `PiCore::new(generation, cfg.clone())` would make it, keeping its
    /// allocations.
    fn renew(&mut self, version: Version, cfg: &PiConfig) {
        let PiCore {
            generation,
            v16,
            direct_pending,
            replied,
            cfg: own_cfg,
            faults,
            session,
            replacing,
            run_active,
            agent_active,
            compacting,
            settling,
            deferred,
            next_turn,
            pending_custom,
            steering,
            follow_up,
            run_options,
            prompts,
            live_prompts,
            runs,
            pending_continues,
            listeners,
            listening,
            timers,
            inputs_due,
            requests,
            retry_attempt,
            idle,
            calls,
            last_wake_at,
            chains,
        } = self;
        *generation = version.generation;
        *v16 = version.v16;
        direct_pending.clear();
        *replied = false;
        faults.renew_for(own_cfg, cfg, |c| &c.faults);
        *session = 1;
        *replacing = false;
        *run_active = false;
        *agent_active = None;
        *compacting = Compacting::None;
        *settling = 0;
        deferred.clear();
        next_turn.clear();
        pending_custom.clear();
        steering.clear();
        follow_up.clear();
        *run_options = false;
        prompts.clear();
        *live_prompts = 0;
        runs.clear();
        *pending_continues = 0;
        listeners.clear();
        *listening = None;
        timers.clear();
        inputs_due.clear();
        *requests = 0;
        *retry_attempt = 0;
        *idle = true;
        *calls = Calls::default();
        *last_wake_at = None;
        chains.clear();
    }
}
