//! NO-SPIN (`docs/hosts/gptme.md` G-7): the same unchanged outside input interrupts an idle wait
//! at most once. gptme's background wait yielded to a non-empty `control.jsonl` on every loop
//! before it fingerprinted the file: a stale file the parent never consumes injected the same
//! dummy message into every turn. A rewrite (new contents, even of the same size) is new input.

use super::{Checker, EvKind, Invariant, View, Violation, reads};
use crate::sim::record::Ev;
use crate::sim::time::Ms;

#[derive(Default)]
pub struct NoSpin {
    /// Fingerprints that interrupted a wait, with when they first did.
    seen: Vec<(u64, Ms)>,
}

impl Checker for NoSpin {
    const READS: u32 = reads(&[EvKind::InputInterrupt]);

    fn invariant(&self) -> Invariant {
        Invariant::NoSpin
    }

    fn reset(&mut self) {
        self.seen.clear();
    }

    #[inline(always)]
    fn observe<N>(&mut self, t: Ms, ev: &Ev<N>, _view: &View<'_>, out: &mut Vec<Violation>) {
        let Ev::InputInterrupt { input } = *ev else {
            return;
        };
        match self.seen.iter().find(|(i, _)| *i == input) {
            Some((_, first)) => out.push(Violation {
                invariant: Invariant::NoSpin,
                t,
                msg: None,
                detail: format!(
                    "the same unchanged input (fingerprint {input:016x}) interrupted the idle wait again; it first did at {} ms: the wait injects a dummy turn for input nothing consumes",
                    first.0
                ),
            }),
            None => self.seen.push((input, t)),
        }
    }
}
