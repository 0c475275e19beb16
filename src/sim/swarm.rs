//! Swarm testing (TigerBeetle's VOPR, FoundationDB's BUGGIFY): each seed draws its own mix of
//! faults and producers within the scenario's bounds, so some seeds hammer one window with one
//! fault at a high rate while others combine several at low rates. The mix is part of the run:
//! drawn from the seed's choice stream, logged in the timeline header and the JSON.

use std::fmt;

use crate::sim::choice::{Choices, Ratio};

/// What one seed switched on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mix {
    /// Each fault switched on, with the rate this seed drew for it.
    pub faults: Vec<(&'static str, Ratio)>,
    /// The producer kinds this seed enabled.
    pub producers: Vec<&'static str>,
    /// Each opportunity fault switched on, with how many times it fired in the run (for
    /// coverage; not shown in the header, which is drawn before the run).
    pub fired: Vec<(&'static str, u32)>,
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.faults.is_empty() {
            f.write_str("faults: none")?;
        } else {
            f.write_str("faults: ")?;
            for (i, (name, rate)) in self.faults.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{name} {rate}")?;
            }
        }
        if !self.producers.is_empty() {
            write!(f, " · producers: {}", self.producers.join(", "))?;
        }
        Ok(())
    }
}

/// Levels a fault's rate is drawn from for a seed: a quarter, a half, or all of the scenario's
/// rate. Level 0, the simplest, is the lowest rate.
pub const RATE_LEVELS: u64 = 3;

/// The label of the draw that switches a fault on for a seed (`draw_fault`).
pub const FAULT_ON: &str = "fault on";

/// Is the fault on for this seed, and at what rate? `share` is the share of seeds with it on;
/// the rate is `rate` scaled by a drawn level. Certain rates (0 or 1) are not scaled.
pub fn draw_fault(choices: &mut Choices, share: Ratio, rate: Ratio) -> Option<Ratio> {
    if !choices.chance(share, FAULT_ON) {
        return None;
    }
    if rate.num == 0 || rate.num >= rate.den {
        return Some(rate);
    }
    let level = choices.choose(RATE_LEVELS, "fault rate");
    let scale = 1 << (RATE_LEVELS - 1 - level);
    Some(Ratio::new(rate.num, rate.den.saturating_mul(scale)))
}

/// A non-empty subset of `n` items (bit i set = item i on). Value 0, the simplest, is the first
/// item alone.
pub fn draw_subset(choices: &mut Choices, n: usize) -> u64 {
    assert!((1..=16).contains(&n), "a subset of 1 to 16 items, not {n}");
    if n <= 1 {
        return 1;
    }
    choices.choose((1u64 << n) - 1, "producer kinds") + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::choice::Profile;

    #[test]
    fn seeds_draw_different_mixes_within_bounds() {
        let mut rates = std::collections::BTreeSet::new();
        let mut subsets = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let mut c = Choices::random(seed, Profile::default());
            if let Some(r) = draw_fault(&mut c, Ratio::new(1, 2), Ratio::new(1, 3)) {
                assert!(r.num * 3 <= r.den, "rate {r} above the scenario's 1/3");
                rates.insert((r.num, r.den));
            }
            let s = draw_subset(&mut c, 3);
            assert!((1..8).contains(&s));
            subsets.insert(s);
        }
        assert_eq!(rates.len(), 3, "all three levels drawn: {rates:?}");
        assert_eq!(subsets.len(), 7, "every non-empty subset drawn");
    }
}
