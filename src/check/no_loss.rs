//! NO-LOSS: every produced message that no documented guard dropped reaches a model request by the
//! end of the run (after the quiescent phase).

use super::{Checker, Invariant, View, Violation, reads};
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct NoLoss;

impl Checker for NoLoss {
    const READS: u32 = reads(&[]);

    fn invariant(&self) -> Invariant {
        Invariant::NoLoss
    }

    fn reset(&mut self) {}

    #[inline(always)]
    fn observe<N>(&mut self, _t: Ms, _ev: &Ev<N>, _view: &View<'_>, _out: &mut Vec<Violation>) {}

    fn finish(&mut self, t: Ms, view: &View<'_>, out: &mut Vec<Violation>) {
        let owed = view.ledger.owed();
        let Some(&first) = owed.first() else { return };
        let info = &view.messages[first.0 as usize];
        let where_ = match view.ledger.get(first).appended_at {
            Some(at) => format!("appended at {} ms but no model request followed", at.0),
            None => "never entered the conversation".to_string(),
        };
        let more = match owed.len() {
            1 => String::new(),
            n => format!(" ({} more undelivered)", n - 1),
        };
        out.push(Violation {
            invariant: Invariant::NoLoss,
            t,
            msg: Some(first),
            detail: format!(
                "{first} ({}, produced at {} ms) {where_} by the end of the run{more}",
                info.source_name(),
                info.produced_at.0
            ),
        });
    }
}
