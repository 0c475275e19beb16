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
    for g in [Search::Guided, Search::Coverage] {
        assert_eq!(Search::parse(&g.to_string()), Ok(g));
    }
}

/// A run that reaches a feature anchors it: a later mutant of the block replays that run's
/// choices up to the mark (one to three of them redrawn) and draws the rest afresh, the same
/// way each time it is planned; a run that reached it only inside its replayed prefix
/// anchors nothing new.
#[test]
fn an_anchored_mutant_replays_its_anchors_prefix() {
    let mix = Mix {
        faults: Vec::new(),
        producers: Vec::new(),
        fired: Vec::new(),
    };
    let log = delays(30);
    let mut g = Guide::new(Search::Anchored, 0);
    g.observe(&[], &[(2, 12)], &mix, 1, log.clone());
    assert_eq!(g.corpus_len(), 1, "one window feature with a place");
    let mut mutants = 0;
    for seed in 1..40 {
        let draws =
            |c: &mut Choices| -> Vec<u64> { (0..20).map(|_| c.choose(1_000, "d")).collect() };
        let a = draws(&mut g.choices(seed));
        let Some(_) = g.last.get().0 else {
            continue;
        };
        mutants += 1;
        assert_eq!(
            a,
            draws(&mut g.choices(seed)),
            "seed {seed} is planned alike"
        );
        let kept = (0..12).filter(|&i| a[i] == log[i].value).count();
        assert!(kept >= 9, "seed {seed}: {kept} of the prefix's 12 replayed");
    }
    assert!(mutants >= 10, "{mutants} of 39 seeds mutate the anchor");
    // A mutant that reaches the window again inside its prefix anchors nothing new.
    let _ = g.choices(
        (1..40)
            .find(|&s| {
                let _ = g.choices(s);
                g.last.get().0.is_some()
            })
            .expect("a mutant"),
    );
    g.observe(&[], &[(2, 12)], &mix, 1, log.clone());
    assert_eq!(g.corpus_len(), 1);
}

/// An anchor cut just after a fault fired is extended at about half its picks, one to three of
/// its earlier choices redrawn and the firing kept: then the same site fires again and again
/// (four 1-in-10 firings in a row, which a mutant drawing the rest afresh makes about once in
/// 10,000).
#[test]
fn an_anchor_ending_in_a_firing_is_extended() {
    let mix = Mix {
        faults: Vec::new(),
        producers: Vec::new(),
        fired: Vec::new(),
    };
    let mut log = delays(11);
    log.push(Choice {
        bound: 2,
        value: 1,
        label: "tool_calls",
    });
    let mut g = Guide::new(Search::Anchored, 0);
    g.observe(&[], &[(2, 12)], &mix, 1, log.clone());
    let (mut mutants, mut chains, mut redrawn) = (0, 0, 0);
    for seed in 1..200 {
        let mut c = g.choices(seed);
        if g.last.get().0.is_none() {
            continue;
        }
        mutants += 1;
        let changed = (0..11)
            .filter(|&i| c.choose(1_000, "d") != log[i].value)
            .count();
        let kept = c.chance(crate::sim::choice::Ratio::new(1, 10), "tool_calls");
        let fired = (0..4)
            .filter(|_| c.chance(crate::sim::choice::Ratio::new(1, 10), "tool_calls"))
            .count();
        if kept && fired == 4 {
            chains += 1;
            assert!(changed <= 3, "{changed} of the prefix's choices changed");
            redrawn += u32::from(changed > 0);
        }
    }
    assert!(mutants >= 60, "{mutants} of 199 seeds mutate the anchor");
    assert!(
        chains * 4 >= mutants,
        "{chains} of {mutants} mutants extend the chain"
    );
    assert!(
        redrawn * 10 >= chains * 9,
        "{redrawn} of {chains} extensions redrew the prefix"
    );
}

/// An anchor whose run drew at a fault extends that fault: past the anchor's cut (or its
/// window's next mark) the fault fires about 15 times in 16, where a mutant drawing the
/// rest afresh would fire it once in ten.
#[test]
fn a_window_anchor_extends_a_fault_its_run_drew() {
    let mix = tool_calls_mix();
    let mut log = delays(12);
    log.insert(
        5,
        Choice {
            bound: 2,
            value: 0,
            label: "tool_calls",
        },
    );
    let mut g = Guide::new(Search::Anchored, 0);
    g.observe(&[], &[(2, 13)], &mix, 1, log.clone());
    assert!(g.anchors.iter().all(|a| a.window == Some(2)));
    assert!(g.anchors.iter().all(|a| *a.sites == ["tool_calls"]));
    let (mut mutants, mut fired) = (0, 0);
    for seed in 1..400 {
        let mut c = g.choices(seed);
        if g.last.get().0.is_none() {
            continue;
        }
        mutants += 1;
        for ch in &log {
            if ch.bound == 2 {
                c.chance(crate::sim::choice::Ratio::new(1, 10), ch.label);
            } else {
                c.choose(ch.bound, ch.label);
            }
        }
        fired += (0..4)
            .filter(|_| c.chance(crate::sim::choice::Ratio::new(1, 10), "tool_calls"))
            .count();
    }
    assert!(mutants >= 150, "{mutants} of 399 seeds mutate the anchor");
    assert!(
        fired * 10 >= mutants * 4 * 8,
        "{fired} of {} fired",
        mutants * 4
    );
}

/// `n` draws of a delay site `d`, each in `0..1000`.
fn delays(n: u64) -> Vec<Choice> {
    (0..n)
        .map(|i| Choice {
            bound: 1_000,
            value: (i * 37) % 1_000,
            label: "d",
        })
        .collect()
}

/// A mix with `tool_calls` switched on.
fn tool_calls_mix() -> Mix {
    Mix {
        faults: vec![("tool_calls", crate::sim::choice::Ratio::new(1, 10))],
        producers: Vec::new(),
        fired: vec![("tool_calls", 0)],
    }
}

/// The portfolio is a pure function of the seed and uses all three strategies.
#[test]
fn the_portfolio_is_a_function_of_the_seed() {
    let draws = |c: &mut Choices| -> Vec<u64> {
        c.set_constants(&[1_000]);
        (0..40)
            .map(|i| {
                if i % 2 == 0 {
                    c.delay(0, 2_000, "d")
                } else {
                    u64::from(c.chance(crate::sim::choice::Ratio::new(1, 10), "p"))
                }
            })
            .collect()
    };
    let mut swarm_like = 0;
    for seed in 0..60 {
        let a = draws(&mut portfolio(seed));
        assert_eq!(a, draws(&mut portfolio(seed)), "seed {seed}");
        swarm_like += usize::from(a == draws(&mut Choices::random(seed, Profile::default())));
    }
    assert!(
        (10..=35).contains(&swarm_like),
        "{swarm_like} of 60 are swarm's"
    );
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
