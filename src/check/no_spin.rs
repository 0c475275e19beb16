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

#[cfg(test)]
mod tests {
    //! Controls: the same unchanged input interrupting the wait twice fires NO-SPIN at the second;
    //! two different inputs pass.
    use super::*;
    use crate::check::CheckParams;
    use crate::check::testkit::feed;

    #[test]
    fn the_same_input_twice_fires() {
        let events = [
            (10, Ev::InputInterrupt { input: 0xabc }),
            (20, Ev::InputInterrupt { input: 0xabc }),
        ];
        let out = feed(&mut NoSpin::default(), CheckParams::default(), &events, 100);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!((out[0].invariant, out[0].t), (Invariant::NoSpin, Ms(20)));
        assert!(
            out[0].detail.contains("first did at 10 ms"),
            "{}",
            out[0].detail
        );
    }

    #[test]
    fn changed_input_passes() {
        let events = [
            (10, Ev::InputInterrupt { input: 1 }),
            (20, Ev::InputInterrupt { input: 2 }),
        ];
        assert_eq!(
            feed(&mut NoSpin::default(), CheckParams::default(), &events, 100),
            vec![]
        );
    }
}
