//! TOOL-PAIRING: no model request's context has another entry between a tool call and its
//! result. A message the wake logic sends while a tool runs must land after the turn's tool
//! results: a provider that validates message order rejects the history when it is replayed
//! (pi#8537: pi 0.84.3 pushed a `triggerTurn: false` message straight into the agent's
//! messages, between the assistant's tool call and its result; 0.84.4 defers it to the turn's
//! end). The host reports such a request (`Ev::Interleaved`, the real pi driver reads each
//! request's context); this checker judges it.

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct ToolPairing;

impl Checker for ToolPairing {
    const READS: u32 = reads(&[EvKind::Interleaved]);

    fn invariant(&self) -> Invariant {
        Invariant::ToolPairing
    }

    fn reset(&mut self) {}

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, _view: &View<'_>, out: &mut Vec<Violation>) {
        if let Ev::Interleaved { req, msg } = *ev {
            let what = msg.map_or("an entry".to_string(), |m| m.to_string());
            out.push(Violation {
                invariant: Invariant::ToolPairing,
                t,
                msg,
                detail: format!(
                    "model request #{req} went out with {what} between a tool call and its result: a provider that validates message order rejects this history"
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    //! Controls: a request whose context splits a tool call from its result fires the checker,
    //! naming the message it carries; the same run without the split passes.
    use super::*;
    use crate::check::CheckParams;
    use crate::check::testkit::feed;
    use crate::sim::msg::MsgId;

    /// m1 produced while the agent's tool runs and appended before the tool's result; request 2
    /// (the turn after the tool) reports the split when `split`.
    fn tool_turn(split: bool) -> Vec<(u64, Ev<()>)> {
        let m1 = MsgId(0);
        let mut trace = vec![
            (0, Ev::Idle { idle: false }),
            (
                10,
                Ev::Request {
                    req: 1,
                    harness: true,
                },
            ),
            (500, Ev::Produced { msg: m1 }),
            (500, Ev::Appended { msg: m1 }),
            (
                900,
                Ev::Request {
                    req: 2,
                    harness: true,
                },
            ),
        ];
        if split {
            trace.push((
                900,
                Ev::Interleaved {
                    req: 2,
                    msg: Some(m1),
                },
            ));
        }
        trace.push((1_200, Ev::Idle { idle: true }));
        trace
    }

    #[test]
    fn an_entry_between_a_tool_call_and_its_result_fires() {
        let out = feed(
            &mut ToolPairing,
            CheckParams::default(),
            &tool_turn(true),
            5_000,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].invariant, Invariant::ToolPairing);
        assert_eq!(out[0].msg, Some(MsgId(0)));
        assert!(
            out[0].detail.contains("model request #2"),
            "{}",
            out[0].detail
        );
    }

    #[test]
    fn requests_that_keep_tool_calls_and_results_together_pass() {
        let out = feed(
            &mut ToolPairing,
            CheckParams::default(),
            &tool_turn(false),
            5_000,
        );
        assert!(out.is_empty(), "{out:?}");
    }
}
