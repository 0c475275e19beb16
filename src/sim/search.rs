//! How a run's seed becomes its choice stream: the search strategy.
//!
//! `Swarm` is wakesim's uniform swarm sampling, the meaning `--seed N` has always had: the
//! choices are drawn from `ChaCha8Rng::seed_from_u64(N)` as each site asks (every snapshot,
//! golden trace hash and replay line rests on it, and a run whose search is `Swarm` is that run,
//! byte for byte).
//!
//! `Boost` is a guided search over the same choice stream, for bugs that need rare draws to
//! coincide. Uniform sampling pays the product of the rare draws' probabilities: a fault that
//! fires at 1 opportunity in 12, twice, inside a window reached by 1 seed in 5, is a seed in
//! 720. A boosted run picks, as each draw site (a choice's label) is first met, whether that site
//! is boosted, for at most `depth` sites in all (PCT's bug depth, Burckhardt et al., ASPLOS
//! 2010: a bug of depth d needs d ordering decisions to line up, and a run that makes d of its
//! decisions extreme meets it with a probability that does not shrink with the product of their
//! rates). The swarm mix's own draws (which faults are on, their rates, the producer kinds) are
//! never boosted. At a boosted site a `chance` is a fair coin, or, at half the boosted sites,
//! comes out its rare way 15 times in 16 (so a rare fault can fire many times in a row), and a
//! delay's or instant's uniform draws fall in one eighth of its range (its focus), so the events
//! it times cluster. Every other draw is the uniform one. Which sites a run boosts is drawn too, so one seed range tries
//! many combinations: the strategy is a pure function of (scenario, seed, depth), its stream
//! seeded apart from swarm's (`BOOST_STREAM`), so `--search boost --seed N` is a different run
//! from `--seed N`, and replays as exactly itself.
//!
//! A boosted run records its draws like any other run (value 0 still the simplest option, a
//! boosted coin recorded as the `chance` it answers), so its recorded choices replay, shrink
//! and save as regressions without the search.

use std::fmt;

/// The search strategy that turns a seed into a choice stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Search {
    /// Uniform swarm sampling: the seed's own stream (the default).
    #[default]
    Swarm,
    /// Rare-draw boosting at up to `depth` draw sites per run.
    Boost { depth: u32 },
}

/// The depth `boost` has when none is given.
pub const BOOST_DEPTH_DEFAULT: u32 = 3;
/// The largest depth accepted (a run rarely has more draw sites than this).
pub const BOOST_DEPTH_MAX: u32 = 16;

/// Mixed into a boosted run's seed so that its stream is not swarm's stream of any seed.
pub const BOOST_STREAM: u64 = 0x6f62_7374_5f77_616b;

impl Search {
    /// `swarm`, `boost` or `boost:D` (D in 1..=16); the error says what is accepted.
    pub fn parse(s: &str) -> Result<Search, String> {
        let s = s.trim();
        if s == "swarm" {
            return Ok(Search::Swarm);
        }
        if s == "boost" {
            return Ok(Search::Boost {
                depth: BOOST_DEPTH_DEFAULT,
            });
        }
        if let Some(d) = s.strip_prefix("boost:") {
            return match d.parse::<u32>() {
                Ok(depth) if (1..=BOOST_DEPTH_MAX).contains(&depth) => Ok(Search::Boost { depth }),
                _ => Err(format!(
                    "`{s}`: a boost's depth is an integer from 1 to {BOOST_DEPTH_MAX}"
                )),
            };
        }
        Err(format!(
            "`{s}` is not a search: `swarm` (uniform, the default), `boost` or `boost:D` (rare draws boosted at up to D sites a run, D from 1 to {BOOST_DEPTH_MAX}; {BOOST_DEPTH_DEFAULT} when left out)"
        ))
    }

    /// Whether this is the default, uniform swarm.
    pub fn is_swarm(self) -> bool {
        self == Search::Swarm
    }
}

impl fmt::Display for Search {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Search::Swarm => f.write_str("swarm"),
            Search::Boost { depth } => write!(f, "boost:{depth}"),
        }
    }
}

/// The seed of a boosted run's generator: the run's seed mixed with `BOOST_STREAM` (SplitMix64's
/// finaliser, so neighbouring seeds are unrelated streams).
pub fn boost_seed(seed: u64) -> u64 {
    let mut z = seed ^ BOOST_STREAM;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_each_search() {
        assert_eq!(Search::parse("swarm"), Ok(Search::Swarm));
        assert_eq!(Search::parse("boost"), Ok(Search::Boost { depth: 3 }));
        assert_eq!(Search::parse("boost:5"), Ok(Search::Boost { depth: 5 }));
        for bad in ["boost:0", "boost:17", "boost:x", "pct", ""] {
            assert!(Search::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Search::Boost { depth: 2 }.to_string(), "boost:2");
        assert_eq!(Search::parse(&Search::Swarm.to_string()), Ok(Search::Swarm));
    }

    #[test]
    fn boosted_streams_are_apart_from_swarm() {
        let seeds: std::collections::BTreeSet<u64> = (0..1000).map(boost_seed).collect();
        assert_eq!(seeds.len(), 1000);
        assert!(
            (0..1000).all(|s| boost_seed(s) >= 1000),
            "no boosted stream is a small seed's"
        );
    }
}
