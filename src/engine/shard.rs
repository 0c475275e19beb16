//! Which shard of a fleet runs which seed: `run --shard K/N` (or `--shard auto`, resolved by
//! `cmd`) runs the seeds of every scenario that this module assigns to shard K.
//!
//! A seed of a scenario goes to the shard that Lamping and Veach's jump consistent hash picks
//! for the pair (scenario name, seed). The pair, not the seed alone: otherwise a shard would get
//! the same seeds of every scenario, and one unlucky draw would weigh on every scenario alike.
//! The assignment is a pure function of the scenario's name, the seed and N, so:
//! - adding a scenario, or growing a seed budget, moves no other seed;
//! - going from N to N + 1 shards moves about 1/(N + 1) of the seeds, each to the new shard
//!   (contiguous blocks, or a hash mod N, would move about half of them, or nearly all);
//! - the shards of one run are disjoint and together hold every seed, so `merge` folds their
//!   reports into the report of the whole run. The assignment does not depend on the number of
//!   threads, the machine or the order of scenarios.
//!
//! The encoding below is versioned by [`SCHEME`]: a change to it is a new scheme name, and
//! `merge` refuses shards of different schemes.

use std::ops::Range;

/// The name of the assignment, recorded in each shard's output.
pub const SCHEME: &str = "jump-hash/1";

/// One shard of a fleet: `index` of `count`, 1-based as `--shard K/N` writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// Shard K of N, 1 <= K <= N.
    pub fn new(index: u64, count: u64) -> Option<Shard> {
        (index >= 1 && index <= count && count <= crate::limits::SHARD_COUNT_MAX)
            .then_some(Shard { index, count })
    }

    /// The seeds of `scenario` this shard runs are those `owns` says yes to.
    pub fn owner(&self, scenario: &str) -> Owner {
        Owner {
            key: scenario_key(scenario),
            shard: *self,
        }
    }
}

/// A scenario's seeds as one shard sees them.
#[derive(Clone, Copy, Debug)]
pub struct Owner {
    key: u64,
    shard: Shard,
}

impl Owner {
    /// Does this shard run `seed`?
    #[inline]
    pub fn owns(&self, seed: u64) -> bool {
        bucket(self.key, seed, self.shard.count) + 1 == self.shard.index
    }

    /// How many seeds of `range` this shard runs (a pass over the range: hashing costs a few
    /// nanoseconds a seed, far below a seed's run).
    pub fn count_in(&self, range: Range<u64>) -> u64 {
        range.filter(|s| self.owns(*s)).count() as u64
    }
}

/// The 0-based shard of `count` that runs `seed` of the scenario whose key is `key`.
pub fn bucket(key: u64, seed: u64, count: u64) -> u64 {
    jump(splitmix64(key ^ splitmix64(seed)), count)
}

/// A scenario's key: FNV-1a over its name's bytes (stable across builds and platforms, unlike
/// the standard hasher, which is keyed per process).
pub fn scenario_key(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A bijective mix of 64 bits (Steele, Lea and Flood's SplitMix64 finaliser), so that
/// neighbouring seeds land far apart before the jump hash reads them.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Lamping and Veach's jump consistent hash ("A Fast, Minimal Memory, Consistent Hash
/// Algorithm", 2014): a bucket in 0..count, where growing `count` by one moves a key only to the
/// new bucket, with probability 1/(count + 1). Its floating-point steps are exactly rounded
/// IEEE 754 operations, the same on every platform.
fn jump(mut key: u64, count: u64) -> u64 {
    let (mut b, mut j): (i64, i64) = (-1, 0);
    while j < count as i64 {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_of_a_run_are_disjoint_and_cover_every_seed() {
        for n in 1..=7 {
            for seed in 0..2_000 {
                let owners: Vec<u64> = (1..=n)
                    .filter(|k| Shard::new(*k, n).unwrap().owner("a").owns(seed))
                    .collect();
                assert_eq!(owners.len(), 1, "seed {seed} of {n} shards: {owners:?}");
            }
        }
    }

    #[test]
    fn one_more_shard_moves_about_one_seed_in_n_plus_one_and_only_to_it() {
        let seeds = 0..20_000u64;
        for n in [1u64, 2, 3, 4, 7, 16] {
            let key = scenario_key("scenarios/pi/g1.toml");
            let mut moved = 0u64;
            for s in seeds.clone() {
                let (before, after) = (bucket(key, s, n), bucket(key, s, n + 1));
                if before != after {
                    assert_eq!(after, n, "seed {s} moved from {before} to an old shard");
                    moved += 1;
                }
            }
            let expected = 20_000 / (n + 1);
            // Within 10% of 1/(n+1): a binomial draw of 20,000 is well inside it.
            assert!(
                moved.abs_diff(expected) * 10 < expected,
                "{n} -> {}: {moved} moved, expected about {expected}",
                n + 1
            );
        }
    }

    #[test]
    fn shards_are_balanced_and_scenarios_are_assigned_independently() {
        let n = 4;
        let count = |name: &str, k: u64| Shard::new(k, n).unwrap().owner(name).count_in(0..8_000);
        for k in 1..=n {
            let c = count("a", k);
            assert!(c.abs_diff(2_000) < 200, "shard {k} of {n}: {c} of 8000");
        }
        let same = (0..8_000)
            .filter(|s| bucket(scenario_key("a"), *s, n) == bucket(scenario_key("b"), *s, n))
            .count();
        assert!(same.abs_diff(2_000) < 200, "{same} seeds share a shard");
    }

    #[test]
    fn the_assignment_is_pinned() {
        // The encoding is a contract between the shards of one run (possibly different builds):
        // a change here is a new SCHEME.
        let got: Vec<u64> = (0..12).map(|s| bucket(scenario_key("pi"), s, 4)).collect();
        assert_eq!(got, PINNED);
    }

    const PINNED: [u64; 12] = [3, 3, 3, 0, 0, 2, 0, 3, 3, 1, 3, 0];
}
