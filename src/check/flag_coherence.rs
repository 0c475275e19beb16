//! FLAG-COHERENCE: the session run flag stays true while an agent-core run is active, and
//! `agent_settled` never fires during one (pi H-1: a rejected prompt's settlement clears the flag
//! under the winner's run and emits a spurious `agent_settled`).

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct FlagCoherence {
    agent_on: bool,
}

impl Checker for FlagCoherence {
    const READS: u32 = reads(&[EvKind::AgentRun, EvKind::RunFlag, EvKind::Settled]);

    fn invariant(&self) -> Invariant {
        Invariant::FlagCoherence
    }

    fn reset(&mut self) {
        self.agent_on = false;
    }

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, _view: &View<'_>, out: &mut Vec<Violation>) {
        let detail = match *ev {
            Ev::AgentRun { on } => {
                self.agent_on = on;
                return;
            }
            Ev::RunFlag { on: false } if self.agent_on => {
                "the run flag was cleared while an agent run is still active: the host now reads idle mid-run"
            }
            Ev::Settled if self.agent_on => "agent_settled was emitted during an active agent run",
            _ => return,
        };
        out.push(Violation {
            invariant: Invariant::FlagCoherence,
            t,
            msg: None,
            detail: detail.to_string(),
        });
    }
}

#[cfg(test)]
mod tests {
    //! Controls: the run flag cleared, or agent_settled emitted, while an agent run is on fires
    //! FLAG-COHERENCE; the same after the agent run ended passes.
    use super::*;
    use crate::check::CheckParams;
    use crate::check::testkit::feed;

    #[test]
    fn the_flag_cleared_or_settled_mid_run_fires() {
        let cleared = [
            (0, Ev::AgentRun { on: true }),
            (0, Ev::RunFlag { on: true }),
            (10, Ev::RunFlag { on: false }),
        ];
        let out = feed(
            &mut FlagCoherence::default(),
            CheckParams::default(),
            &cleared,
            100,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(
            (out[0].invariant, out[0].t),
            (Invariant::FlagCoherence, Ms(10))
        );
        let settled = [(0, Ev::AgentRun { on: true }), (10, Ev::Settled)];
        let out = feed(
            &mut FlagCoherence::default(),
            CheckParams::default(),
            &settled,
            100,
        );
        assert!(out[0].detail.contains("agent_settled"), "{out:?}");
    }

    #[test]
    fn the_flag_cleared_after_the_run_passes() {
        let events = [
            (0, Ev::AgentRun { on: true }),
            (0, Ev::RunFlag { on: true }),
            (10, Ev::AgentRun { on: false }),
            (10, Ev::RunFlag { on: false }),
            (12, Ev::Settled),
        ];
        assert_eq!(
            feed(
                &mut FlagCoherence::default(),
                CheckParams::default(),
                &events,
                100
            ),
            vec![]
        );
    }
}
