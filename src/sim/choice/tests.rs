//! The choice stream's unit tests: replay, boosts, pins, the boundary set, `ahead`.

use super::*;

/// A boosted run is a pure function of its seed and depth, apart from swarm's stream of the
/// same seed, and replays from its log as itself.
#[test]
fn boosted_runs_are_deterministic_and_replay() {
    let boost = Search::Boost { depth: 2 };
    let mut a = Choices::searched(7, boost, Profile::default());
    let mut b = Choices::searched(7, boost, Profile::default());
    let da = draws(&mut a);
    assert_eq!(da, draws(&mut b));
    assert_ne!(da, draws(&mut Choices::random(7, Profile::default())));
    assert_eq!(
        draws(&mut Choices::searched(7, Search::Swarm, Profile::default())),
        draws(&mut Choices::random(7, Profile::default())),
        "swarm is the seed's own stream"
    );
    let mut r = Choices::replay(a.log().to_vec(), Profile::default());
    assert_eq!(draws(&mut r), da);
    assert!(r.divergence().is_none() && r.replay_mismatch().is_none());
}

/// A boosted site makes its rare outcome common: over many seeds at depth 1, a 1-in-100
/// chance comes out about 36% of the time (half the runs boost the site; then it is a fair
/// coin or, for half of them, comes out 15 times in 16), against about 1 in 100 under swarm.
#[test]
fn a_boosted_site_makes_a_rare_chance_common() {
    let (mut boosted, mut swarm) = (0, 0);
    for seed in 0..4000 {
        let mut c = Choices::searched(seed, Search::Boost { depth: 1 }, Profile::default());
        boosted += u32::from(c.chance(Ratio::new(1, 100), "rare"));
        let mut c = Choices::random(seed, Profile::default());
        swarm += u32::from(c.chance(Ratio::new(1, 100), "rare"));
    }
    assert!((1200..1700).contains(&boosted), "{boosted}");
    assert!(swarm < 80, "{swarm}");
}

/// An extending run replays its prefix, then makes its one site fire about 15 times in 16 while
/// every other site draws as before: a 1-in-10 chance at the extended site comes out about 94%
/// of the time, one at any other site about 10%.
#[test]
fn an_extending_run_makes_its_site_fire_and_leaves_the_rest() {
    let prefix = vec![Choice {
        bound: 2,
        value: 1,
        label: "tool_calls",
    }];
    let (mut site, mut other) = (0, 0);
    for seed in 0..2000 {
        let mut c = Choices::extending(prefix.clone(), "tool_calls", seed);
        assert!(
            c.chance(Ratio::new(1, 2), "tool_calls"),
            "the prefix is replayed"
        );
        for _ in 0..4 {
            site += u32::from(c.chance(Ratio::new(1, 10), "tool_calls"));
            other += u32::from(c.chance(Ratio::new(1, 10), "auto_reply"));
        }
    }
    assert_eq!(
        draws(&mut Choices::extending(prefix.clone(), "tool_calls", 7)),
        draws(&mut Choices::extending(prefix.clone(), "tool_calls", 7)),
        "an extending run is a function of its prefix, site and seed"
    );
    assert!((7200..7800).contains(&site), "{site}");
    assert!((600..1000).contains(&other), "{other}");
}

/// A window anchor's mutant extends its site only once armed: at the window's next mark, or
/// at the anchor's cut when the mark does not come first. Before that the site draws as swarm.
#[test]
fn an_extension_from_a_window_arms_at_its_mark_or_at_the_cut() {
    let prefix: Vec<Choice> = (0..3)
        .map(|i| Choice {
            bound: 100,
            value: i,
            label: "d",
        })
        .collect();
    let (mut early, mut marked, mut cut) = (0, 0, 0);
    for seed in 0..2000 {
        // Marked at once: every draw after the mark is extended.
        let mut c = Choices::extending_from(prefix.clone(), "tool_calls", Some(9), 50, seed);
        for _ in 0..3 {
            c.choose(100, "d");
        }
        early += u32::from(c.chance(Ratio::new(1, 10), "tool_calls"));
        c.mark(4);
        early += u32::from(c.chance(Ratio::new(1, 10), "tool_calls"));
        c.mark(9);
        marked += u32::from(c.chance(Ratio::new(1, 10), "tool_calls"));
        // Never marked: armed once the log holds `at` draws.
        let mut c = Choices::extending_from(prefix.clone(), "tool_calls", Some(9), 3, seed);
        for _ in 0..3 {
            c.choose(100, "d");
        }
        cut += u32::from(c.chance(Ratio::new(1, 10), "tool_calls"));
    }
    assert!(
        (250..550).contains(&early),
        "before the mark: {early} of 4000"
    );
    assert!(
        (1800..1960).contains(&marked),
        "after the mark: {marked} of 2000"
    );
    assert!((1800..1960).contains(&cut), "at the cut: {cut} of 2000");
}

/// Another conversation's work starting arms an extension that waits for it, and not one that
/// waits for any race window.
#[test]
fn foreign_work_arms_only_what_waits_for_it() {
    let fw = crate::sim::feature::FOREIGN_WORK;
    let (mut waiting, mut fresh) = (0, 0);
    for seed in 0..1000 {
        let mut c = Choices::extending_from(Vec::new(), "tool_calls", Some(fw), 1_000, seed);
        c.mark(fw);
        waiting += u32::from(c.chance(Ratio::new(1, 10), "tool_calls"));
        let mut c = Choices::extending_fresh(seed, None);
        c.mark(fw);
        c.chance(Ratio::new(1, 10), "tool_calls");
        fresh += u32::from(c.chance(Ratio::new(1, 10), "tool_calls"));
    }
    assert!(waiting >= 900, "{waiting} of 1000 extended once marked");
    assert!(
        fresh <= 200,
        "{fresh} of 1000: a fresh run is not armed by it"
    );
}

/// A fresh extending run draws as swarm until it is armed (its first window mark, or its change
/// point), then adopts the first rare `chance` that comes out 1 and makes it fire 15 times in
/// 16; a common chance (one in two) is never adopted, and other sites stay uniform.
#[test]
fn a_fresh_extending_run_repeats_its_first_rare_firing_once_armed() {
    let (mut before, mut after, mut other, mut common) = (0, 0, 0, 0);
    for seed in 0..2000 {
        for at in [None, Some(8)] {
            let mut c = Choices::extending_fresh(seed, at);
            for _ in 0..8 {
                before += u32::from(c.chance(Ratio::new(1, 10), "tool_calls"));
            }
            if at.is_none() {
                c.mark(3);
            }
            common += u32::from(c.chance(Ratio::new(1, 2), "reply starts a job"));
            // Until one fires, each is its swarm chance; the first to fire is adopted.
            while !c.chance(Ratio::new(1, 10), "tool_calls") {}
            for _ in 0..4 {
                after += u32::from(c.chance(Ratio::new(1, 10), "tool_calls"));
                other += u32::from(c.chance(Ratio::new(1, 10), "auto_reply"));
                common += u32::from(c.chance(Ratio::new(1, 2), "reply starts a job"));
            }
        }
    }
    assert!((2900..3500).contains(&before), "before: {before} of 32000");
    assert!((14_400..15_600).contains(&after), "after: {after} of 16000");
    assert!((1300..1900).contains(&other), "other: {other} of 16000");
    assert!(
        (9_400..10_600).contains(&common),
        "common: {common} of 20000"
    );
    assert_eq!(
        draws(&mut Choices::extending_fresh(7, Some(3))),
        draws(&mut Choices::extending_fresh(7, Some(3))),
        "a fresh extending run is a function of its seed and change point"
    );
}

/// A fresh extending run switches faults on more often than their share: each `fault on` coin
/// is drawn two or three times (per run) and on if any is, so a share of 1/3 is on in 5/9 or
/// 19/27 of the runs (about 62%); a `chance` under another label, a swarm run's and a pinned
/// run's `fault on` keep the share, and the recorded coin replays as itself.
#[test]
fn a_fresh_extending_run_switches_more_faults_on() {
    let on = crate::sim::swarm::FAULT_ON;
    let third = Ratio::new(1, 3);
    let (mut fresh, mut other, mut swarm, mut pinned) = (0, 0, 0, 0);
    for seed in 0..3000 {
        let mut c = Choices::extending_fresh(seed, None);
        fresh += u32::from(c.chance(third, on));
        other += u32::from(c.chance(third, "tool_calls"));
        let log = c.log().to_vec();
        let mut r = Choices::replay(log.clone(), Profile::default());
        let replayed = [r.chance(third, on), r.chance(third, "tool_calls")];
        assert_eq!(
            replayed.map(u64::from).to_vec(),
            log.iter().map(|c| c.value).collect::<Vec<_>>()
        );
        swarm += u32::from(Choices::random(seed, Profile::default()).chance(third, on));
        pinned += u32::from(Choices::pinned(seed).chance(third, on));
    }
    assert!((1720..1990).contains(&fresh), "fresh: {fresh} of 3000");
    for (what, n) in [("other", other), ("swarm", swarm), ("pinned", pinned)] {
        assert!((880..1120).contains(&n), "{what}: {n} of 3000");
    }
}

/// 200 draws of every kind.
fn draws(c: &mut Choices) -> Vec<u64> {
    c.set_constants(&[60_000]);
    (0..200)
        .map(|i| match i % 4 {
            0 => c.choose(5, "c"),
            1 => c.delay(0, 120_000, "d"),
            2 => c.chance(Ratio::new(1, 3), "p") as u64,
            _ => c.weighted(&[1, 2, 3], "w") as u64,
        })
        .collect()
}

#[test]
fn replay_of_a_recorded_log_gives_the_same_values() {
    let mut a = Choices::random(7, Profile::default());
    let drawn = draws(&mut a);
    let mut b = Choices::replay(a.log().to_vec(), Profile::default());
    let again = draws(&mut b);
    assert_eq!(drawn, again);
    assert_eq!(b.divergence(), None);
    assert_eq!(b.replay_mismatch(), None);
}

#[test]
fn a_chance_draws_what_its_two_weights_draw() {
    for seed in 0..50 {
        let mut a = Choices::random(seed, Profile::default());
        let mut b = Choices::random(seed, Profile::default());
        for (num, den) in [(1, 2), (1, 3), (2, 3), (1, 7), (5, 8), (1, 1_000)] {
            let on = a.chance(Ratio::new(num, den), "p");
            assert_eq!(on, b.weighted(&[den - num, num], "p") == 1, "seed {seed}");
        }
        assert_eq!(a.log(), b.log(), "seed {seed}");
        let mut r = Choices::replay(a.log().to_vec(), Profile::default());
        for (num, den) in [(1, 2), (1, 3), (2, 3), (1, 7), (5, 8), (1, 1_000)] {
            r.chance(Ratio::new(num, den), "p");
        }
        assert_eq!(r.log(), a.log(), "seed {seed}");
    }
}

#[test]
fn delays_hit_the_constants_and_their_neighbours() {
    let mut c = Choices::random(1, Profile::default());
    c.set_constants(&[60_000]);
    let mut seen = [false; 3];
    for _ in 0..2_000 {
        let d = c.delay(0, 120_000, "d");
        if (59_999..=60_001).contains(&d) {
            seen[(d - 59_999) as usize] = true;
        }
    }
    assert_eq!(seen, [true, true, true]);
}

#[test]
fn explore_delays_take_interior_points_only_when_asked() {
    // Every value a boundary-only delay can take: enumerate its classes by replaying each.
    let points = |interior: u64, instant: bool| {
        let profile = Profile {
            boundary_only: true,
            interior,
        };
        let mut out = Vec::new();
        for v in 0.. {
            let mut c = Choices::replay(
                vec![Choice {
                    bound: u64::MAX,
                    value: v,
                    label: "d",
                }],
                profile,
            );
            c.set_constants(&[500]);
            let d = if instant {
                c.instant(0, 1_000, "d")
            } else {
                c.delay(0, 1_000, "d")
            };
            let bound = c.log()[0].bound;
            out.push(d);
            if v + 1 >= bound {
                break;
            }
        }
        out
    };
    assert_eq!(points(0, false), [0, 499, 500, 501, 1_000]);
    assert_eq!(points(3, false), [0, 250, 499, 500, 501, 750, 1_000]);
    // 125, 250, ..., 875 (500 is already a point): instants keep their own grid of 7.
    assert_eq!(points(0, true).len(), 5 + 6);
    // 100, 200, ..., 900: or the interior points, if more.
    assert_eq!(points(9, true).len(), 5 + 8);
}

#[test]
fn a_replay_that_no_longer_fits_reports_where() {
    let mut a = Choices::random(3, Profile::default());
    a.choose(4, "x");
    a.choose(4, "y");
    let mut b = Choices::replay(a.log().to_vec(), Profile::default());
    b.choose(4, "x");
    b.choose(9, "y");
    b.choose(2, "z");
    let d = b.divergence().expect("divergence");
    assert_eq!((d.index, d.bound, d.recorded_bound), (1, 9, 4));
    assert_eq!(b.replay_mismatch(), Some((0, 1)));
}

/// A draw made from `ahead`'s material with `below`'s reduction, as a remote driver makes it.
fn below_from(words: &[u64], at: &mut usize, n: u64) -> u64 {
    let mut m = u128::from(words[*at]) * u128::from(n);
    *at += 1;
    let mut low = m as u64;
    if low < n {
        let threshold = n.wrapping_neg() % n;
        while low < threshold {
            m = u128::from(words[*at]) * u128::from(n);
            *at += 1;
            low = m as u64;
        }
    }
    (m >> 64) as u64
}

#[test]
fn draws_made_from_ahead_are_the_draws_the_stream_makes() {
    for seed in 0..20 {
        let mut c = Choices::random(seed, Profile::default());
        c.choose(7, "before");
        let Ahead::Words(words) = c.ahead(64) else {
            panic!("random mode gives words")
        };
        let mut at = 0;
        for i in 0..40u64 {
            let bound = 2 + i % 5;
            let local = below_from(&words, &mut at, bound);
            assert_eq!(c.choose(bound, "o"), local, "seed {seed} draw {i}");
        }
        // A chance reads one `below(den)`.
        let local = u64::from(below_from(&words, &mut at, 3) >= 3 - 1);
        assert_eq!(u64::from(c.chance(Ratio::new(1, 3), "p")), local);
        // Peeking draws nothing: the stream goes on from where it was.
        let mut d = Choices::random(seed, Profile::default());
        d.choose(7, "before");
        let _ = d.ahead(8);
        let mut e = Choices::random(seed, Profile::default());
        e.choose(7, "before");
        assert_eq!(d.choose(1_000, "x"), e.choose(1_000, "x"));
    }
    let mut r = Choices::replay(
        vec![
            Choice {
                bound: 3,
                value: 2,
                label: "a",
            },
            Choice {
                bound: 9,
                value: 8,
                label: "b",
            },
        ],
        Profile::default(),
    );
    assert_eq!(
        r.ahead(8),
        Ahead::Recorded {
            values: vec![2, 8],
            ends: true
        }
    );
    assert_eq!(r.choose(3, "a"), 2);
    assert_eq!(
        r.ahead(0),
        Ahead::Recorded {
            values: vec![],
            ends: false
        }
    );
    assert_eq!(
        r.ahead(1),
        Ahead::Recorded {
            values: vec![8],
            ends: true
        }
    );
    r.choose(4, "b");
    assert_eq!(
        r.ahead(4),
        Ahead::Recorded {
            values: vec![],
            ends: true
        }
    );
}

#[test]
fn uniform_draws_are_stable_across_versions() {
    // Recorded seeds must keep meaning the same runs: pin a few raw draws.
    let mut c = Choices::random(42, Profile::default());
    let v: Vec<u64> = (0..6).map(|_| c.choose(1_000, "pin")).collect();
    assert_eq!(v, pinned_draws());
}

fn pinned_draws() -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    (0..6).map(|_| below(&mut rng, 1_000)).collect()
}
