use super::*;
use std::time::Duration;

/// Synthetic scenarios hours long, so that what they measure outweighs [`EVIDENCE_SECS`]
/// and the estimates come out at their measured ratios (to half a percent).
const U: f64 = 1000.0;

fn at(t0: Instant, s: f64) -> Instant {
    t0 + Duration::from_secs_f64(s)
}

fn close_to(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() < 0.005 * b.abs()
}

/// A cheap built-in scenario then expensive real-host ones: no ETA before anything is
/// measured; then every prior scaled by how the built-in compared with its own; then the
/// real hosts' priors by how the first real host compared with its. Synthetic costs, times
/// given, no clock read.
#[test]
fn unmeasured_scenarios_cost_their_priors_scaled_by_the_most_alike_measured() {
    let t0 = Instant::now();
    let pi = "real host pi@0.99.1 in real-pi";
    let cheap = Prior::derived(0.0, 0.000_01 * U);
    let host = Prior::derived(20.0 * U, 0.1 * U);
    let mut c = Costs::new(
        vec!["built-in in pi".into(), pi.into(), pi.into()],
        vec![100_000, 10, 10],
        vec![cheap, host, host],
    );
    c.start(0, t0);
    assert_eq!(c.eta(t0), None, "nothing measured");
    assert_eq!(c.eta_text(t0), "?");
    // Half the built-in's seeds in 1 U: twice its prior of 0.5 U, so the rest of it is 1 U
    // and each real host twice its prior (21 U): 85 U in all.
    c.advance(50_000, at(t0, U));
    let eta = c.eta(at(t0, U)).expect("scaled priors");
    assert!(near(eta, (1.0 + 2.0 * 2.0 * 21.0) * U), "{eta}");
    c.advance(50_000, at(t0, 2.0 * U));
    c.start(1, at(t0, 2.0 * U));
    // The first real host's first 5 seeds took 41 U: 2 times its prior of 20.5 U; its 5
    // seeds left cost 2 * 0.5 U, the third scenario 2 * 21 U.
    c.advance(5, at(t0, 43.0 * U));
    let eta = c.eta(at(t0, 43.0 * U)).expect("measured");
    assert!(near(eta, 43.0 * U), "{eta}");
    // The third is skipped: only the second's 5 seeds are left.
    c.close(2, at(t0, 43.0 * U));
    let eta = c.eta(at(t0, 43.0 * U)).expect("measured");
    assert!(near(eta, U), "{eta}");
}

/// The most alike measured scenarios scale a prior: the same kind in the same directory
/// before the same kind elsewhere, and that before the same host at another version.
#[test]
fn a_scenario_is_scaled_by_its_directory_then_its_kind_then_its_host() {
    let t0 = Instant::now();
    let (twins, ext, newer) = (
        "real host pi@0.99.1 in real-pi",
        "real host pi@0.99.1 in real-pi-ext",
        "real host pi@1.6.0 in real-pi-1.6.0",
    );
    let p = Prior::derived(0.0, U);
    let kinds = [twins, ext, ext, newer].map(String::from).to_vec();
    let mut c = Costs::new(kinds, vec![10; 4], vec![p; 4]);
    c.start(0, t0);
    c.advance(10, at(t0, 10.0 * U));
    // The twin as its prior said: the extension scenarios and pi 1.6.0 at their priors.
    c.start(1, at(t0, 10.0 * U));
    let eta = c.eta(at(t0, 10.0 * U)).expect("measured");
    assert!(near(eta, 30.0 * U), "{eta}");
    // The first extension scenario took 5 times its prior: the second too, not pi 1.6.0,
    // which is scaled by every pi scenario (60 U for 20 U of priors).
    c.advance(10, at(t0, 60.0 * U));
    c.start(2, at(t0, 60.0 * U));
    let eta = c.eta(at(t0, 60.0 * U)).expect("measured");
    assert!(near(eta, (50.0 + 30.0) * U), "{eta}");
}

/// One short first scenario of a class does not set the class's cost: a real host that took
/// a third of its 5 s prior moves the next real host's estimate only part of the way, the
/// adapters measured before it having run at their priors.
#[test]
fn one_short_scenario_does_not_set_its_whole_class() {
    let t0 = Instant::now();
    let kinds = [
        "adapter node in external",
        "real host gptme-cli@0.33.0 in a",
        "real host pi@0.99.1 in b",
    ]
    .map(String::from)
    .to_vec();
    let priors = vec![
        Prior::derived(1.0, 0.001),
        Prior::derived(5.0, 0.0),
        Prior::derived(5.0, 0.0),
    ];
    let mut c = Costs::new(kinds, vec![30_000, 10, 10], priors);
    c.start(0, t0);
    c.advance(30_000, at(t0, 31.0));
    c.start(1, at(t0, 31.0));
    c.advance(10, at(t0, 32.67));
    c.close(1, at(t0, 32.67));
    let eta = c.eta(at(t0, 32.67)).expect("measured");
    assert!(eta > 4.0 && eta < 5.0, "{eta}: not a third of 5 s");
}

/// Before its first chunk ends, the running scenario counts what is left of its whole
/// scaled prior (once past it, half the time it has run); after, its seeds still to run,
/// scaled by how its own seeds so far compared with its prior.
#[test]
fn the_running_scenario_counts_its_start_until_its_first_chunk() {
    let t0 = Instant::now();
    let p = Prior::derived(10.0 * U, U);
    let k = || "adapter node in external".to_string();
    let mut c = Costs::new(vec![k(), k()], vec![100, 100], vec![p, p]);
    c.start(0, t0);
    c.advance(100, at(t0, 110.0 * U));
    c.start(1, at(t0, 110.0 * U));
    assert!(near(c.eta(at(t0, 115.0 * U)).unwrap(), 105.0 * U));
    // Past its 110 U with no chunk ended: half as long again as it has run, not nothing.
    assert!(near(c.eta(at(t0, 410.0 * U)).unwrap(), 150.0 * U));
    // Its first 50 seeds took 100 U for 60 U of its prior: its 50 left 5/3 of theirs.
    c.advance(50, at(t0, 210.0 * U));
    let eta = c.eta(at(t0, 210.0 * U)).unwrap();
    assert!(near(eta, 50.0 * U * 5.0 / 3.0), "{eta}");
}

/// Remembered costs give an ETA before anything is measured, and a file not remembered
/// (new, or changed since) takes its derived prior scaled as its remembered neighbours'
/// costs compared with theirs.
#[test]
fn remembered_costs_time_the_run_from_the_start_and_calibrate_new_files() {
    let kinds = [
        "real host pi@0.99.1 in a",
        "real host pi@0.99.1 in a",
        "built-in in b",
    ]
    .map(String::from)
    .to_vec();
    let planned = vec![10, 10, 1000];
    let derived = vec![Prior::derived(U, 0.1 * U); 3];
    let was = Prior {
        fixed: 6.0 * U,
        per_seed: 0.4 * U,
        remembered: true,
    };
    let priors = calibrate(&kinds, &planned, &derived, &[Some(was), None, None]);
    // 10 U remembered for 2 U derived: the new neighbour 5 times its derived prior, and so
    // is the built-in (only real hosts are remembered: any kind is alike at the last level).
    assert_eq!(priors[0], was);
    assert!(close_to(priors[1].secs(10.0), 10.0 * U) && !priors[1].remembered);
    assert!(close_to(priors[2].secs(1000.0), 5.0 * 101.0 * U));
    let mut c = Costs::new(kinds, planned, priors);
    assert_eq!(
        c.eta_known(Instant::now()),
        (10.0 * U, 2),
        "a lower bound, 2 untimed"
    );
    let t0 = Instant::now();
    c.start(0, t0);
    c.advance(10, at(t0, 20.0 * U));
    // Twice the remembered cost: every other scenario twice its prior.
    let eta = c.eta(at(t0, 20.0 * U)).unwrap();
    assert!(near(eta, 2.0 * (10.0 + 505.0) * U), "{eta}");
}

/// A finished scenario's cost splits into a fixed part and a part per seed by its chunks:
/// the seeds after the first chunk over the time after it; one chunk splits as its prior.
#[test]
fn a_measured_cost_splits_its_start_from_its_seeds() {
    let t0 = Instant::now();
    let p = Prior::derived(3.0, 0.1);
    let k = || "built-in in pi".to_string();
    let mut c = Costs::new(vec![k(), k(), k()], vec![300, 30, 30], vec![p; 3]);
    c.start(0, t0);
    c.advance(100, at(t0, 12.0));
    c.advance(100, at(t0, 22.0));
    c.advance(100, at(t0, 32.0));
    c.start(1, at(t0, 33.0));
    c.advance(30, at(t0, 45.0));
    c.close(1, at(t0, 45.0));
    let m = c.measured(0).expect("ran");
    assert_eq!(m.seeds, 300);
    assert!(close_to(m.per_seed, 0.1) && close_to(m.fixed, 3.0), "{m:?}");
    // 12 s for one chunk of 30 seeds, split 3 : 3 as the prior's 3 s + 3 s.
    let m = c.measured(1).expect("ran");
    assert!(close_to(m.fixed, 6.0) && close_to(m.per_seed, 0.2), "{m:?}");
    assert_eq!(c.measured(2), None, "never ran");
}

/// The derived prior reads the scenario file: a real host's extension package from npm costs
/// more a seed than a model twin's extension, more tool turns a run more, and every real
/// host more than an adapter, more than a built-in wake logic.
#[test]
fn the_derived_prior_reads_host_wake_logic_and_producers() {
    let reg = crate::family::Registry::builtin();
    let load = |p: &str| {
        Scenario::load(std::path::Path::new(p), &reg).unwrap_or_else(|e| panic!("{p}: {e}"))
    };
    let ext = prior(&load("scenarios/real-pi-ext/collab-inbox-wakes-idle.toml"));
    let twin = prior(&load("scenarios/real-pi/g0-idle-wake-skips-harness.toml"));
    let adapter = prior(&load(
        "scenarios/external/node-g0-idle-wake-skips-harness.toml",
    ));
    let builtin = prior(&load("scenarios/pi/g0-idle-wake-skips-harness.toml"));
    assert!(ext.per_seed > twin.per_seed, "{ext:?} {twin:?}");
    assert!(
        twin.per_seed > 5.0 * adapter.per_seed,
        "{twin:?} {adapter:?}"
    );
    assert!(
        adapter.per_seed > 5.0 * builtin.per_seed,
        "{adapter:?} {builtin:?}"
    );
    let (few, many) = (
        real_host_prior("pi", 1.0, None),
        real_host_prior("pi", 21.0, None),
    );
    assert!(
        close_to(many.per_seed, 3.0 * few.per_seed),
        "{many:?} {few:?}"
    );
    let subagents = real_host_prior("pi", 1.0, Some("pi-subagents"));
    let processes = real_host_prior("pi", 1.0, Some("pi-processes"));
    let unknown = real_host_prior("pi", 1.0, Some("pi-mine"));
    assert!(subagents.per_seed > unknown.per_seed && unknown.per_seed > processes.per_seed);
    assert!(processes.per_seed > few.per_seed, "{processes:?}");
}

#[test]
fn human_secs_reads_as_a_duration() {
    assert_eq!(human_secs(12.4), "12s");
    assert_eq!(human_secs(200.0), "3m 20s");
    assert_eq!(human_secs(3720.0), "1h 02m");
}
