//! The mutation gate: the test command `scripts/mutants.sh` gives cargo-mutants for each family of
//! fixed wake logics. A mutant of a wake logic is killed when some scenario of `scenarios/pi` or
//! `scenarios/gptme` that names one of the family's logics no longer meets its expectation: its
//! seed budget and verdict, the race windows it must reach, and the exhaustive exploration of its
//! scope (a bug found, or a clean and exhausted scope), exactly as `tests/scenarios.rs` judges them.
//!
//! Left out on purpose: snapshots, strict regression replays and the determinism sample. They fail
//! on any change of a trace, right or wrong, so they would count a harmless reordering of two
//! timer calls as a kill; the score must say whether the gate tells a *wrong* logic apart.
//!
//! Each test prints one `mutant-kill:` line per scenario that tells the mutant apart, with the
//! seeds the gate ran until it could tell (`scripts/mutants.sh` collects them into
//! seeds-to-first-kill): the first seed whose outcome the expectation does not allow, plus one;
//! the whole budget when an expected failure or a race window went missing; the exploration's
//! run count when only it tells. See `gate` for the two stages that keep a mutant cheap.
//! Run one family by hand with `cargo test --release --test mutants -- --include-ignored g4`.
//!
//! Ignored by a plain `cargo test`: on the unmutated tree each test re-checks what
//! `tests/scenarios.rs` checks for the same scenarios (about 90 s of a debug `cargo test`), so it
//! tells something only under a mutant, where `scripts/mutants.sh` runs it.

use std::path::PathBuf;

use wakesim::engine::regression::{self, Replayed};
use wakesim::engine::{Runner, ScenarioReport, describe};
use wakesim::family::Registry;
use wakesim::scenario::{Expect, Scenario, discover};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Seeds every scenario of a family runs first, before any scenario runs the rest of its budget.
const FIRST_SEEDS: u64 = 100;

/// Run `seeds` of a scenario into `rep`, stopping at the first seed its expectation does not
/// allow: that seed already kills the mutant, and a mutant that makes every run long costs one.
fn run_seeds(
    runner: &mut Runner<'_>,
    scn: &Scenario,
    seeds: std::ops::Range<u64>,
    rep: &mut ScenarioReport,
) {
    for seed in seeds {
        let r = runner.run_seed(scn, seed, false);
        rep.add(&r, &scn.expect);
        // A scripted scenario's exact request count, as `run` and tests/scenarios.rs judge it.
        rep.check_requests(&r, scn.requests, &scn.expect);
        if rep.unexpected.is_some() {
            return;
        }
    }
}

/// How the gate tells, when the report (whole budget) or the exploration fails the expectation.
fn verdict(
    runner: &mut Runner<'_>,
    rel: &str,
    scn: &Scenario,
    mut rep: ScenarioReport,
) -> Option<String> {
    rep.judge(&scn.expect, &scn.must_reach);
    if !rep.met {
        let why = rep.why.clone().unwrap_or_default();
        return Some(match &rep.unexpected {
            Some(u) => format!("{rel} · seeds {} · {why}", u.seed + 1),
            None => format!("{rel} · seeds {} · {why}", scn.seeds),
        });
    }
    let stop_when_found = !matches!(scn.expect, Expect::Pass);
    let ex = wakesim::engine::explore::explore_until(runner, scn, scn.explore, stop_when_found);
    match &scn.expect {
        Expect::Pass if ex.failing > 0 => Some(format!(
            "{rel} · explore {} runs · a run of the scope fails",
            ex.runs
        )),
        Expect::Pass if !ex.exhausted => Some(format!(
            "{rel} · explore {} runs · the scope is no longer exhausted",
            ex.runs
        )),
        Expect::Pass => None,
        expect if ex.smallest_expected.is_none() => Some(format!(
            "{rel} · explore {} runs · {expect} no longer found in the scope",
            ex.runs
        )),
        _ => None,
    }
}

/// Stage 0: the scenarios' saved runs (`regressions/*.toml`), each replayed from its recorded
/// choices and judged by its verdict only: a saved failure must still show its pinned failure, a
/// saved pass must still pass (a stale recording is judged on its seed, as `run` judges it).
/// `tests/scenarios.rs` replays them strictly, trace and all, which any change breaks; here only
/// a verdict that the file does not allow kills, so a mutant that makes a documented failure go
/// away is told apart at the run that showed it, not after the scenario's whole budget. Each
/// kill counts the saved runs of its scenario replayed until it (1 for the first).
fn saved_runs(
    runner: &mut Runner<'_>,
    registry: &Registry,
    family: &[(String, Scenario)],
) -> Vec<String> {
    let mut kills = Vec::new();
    for (rel, scn) in family {
        let mut saved = regression::of_scenario(scn, registry).expect("regressions load");
        saved.sort_by(|a, b| a.path.cmp(&b.path));
        for (i, reg) in saved.iter().enumerate() {
            let (result, met) = match reg.replay(runner, false) {
                Replayed::Stale { result, met, .. } | Replayed::Run { result, met } => {
                    (result, met)
                }
            };
            if !met {
                let file = reg.path.file_name().unwrap_or_default().to_string_lossy();
                kills.push(format!(
                    "{rel} · seeds {} · saved run {file}: {}, but it {}",
                    i + 1,
                    reg.expectation_label(),
                    describe(&result.outcome)
                ));
                break;
            }
        }
    }
    kills
}

/// Every scenario naming one of `wakes`, judged; panics listing the ones that fail.
///
/// In three stages, so that a mutant costs what it takes to tell it apart: the saved runs
/// (`saved_runs`); then the first
/// `FIRST_SEEDS` seeds of every scenario (a kill there is exact: the smallest first-killing seed
/// over all scenarios); then, if none killed, each scenario's remaining budget and exploration,
/// smallest budget first, stopping at the first that fails (a mutant that only makes runs long would
/// otherwise cost every passing scenario's whole budget).
fn gate(wakes: &[&str]) {
    let registry = Registry::builtin();
    let mut runner = Runner::new(&registry);
    let mut files = Vec::new();
    for dir in ["scenarios/pi", "scenarios/gptme"] {
        files.extend(discover(&root().join(dir)).expect("scenario dir"));
    }
    files.sort();
    // Saved runs live beside their scenarios (`regressions/`): stage 0 reads them per scenario.
    files.retain(|f| !std::fs::read_to_string(f).is_ok_and(|t| regression::is_regression(&t)));
    let mut family = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(root())
            .expect("under root")
            .display()
            .to_string();
        let scn = Scenario::load(&path, &registry).expect("scenario loads");
        if wakes.contains(&scn.wake.as_str()) {
            family.push((rel, scn));
        }
    }
    assert!(!family.is_empty(), "no scenario names any of {wakes:?}");

    let mut kills = saved_runs(&mut runner, &registry, &family);
    let told = !kills.is_empty();
    let mut reports = Vec::new();
    for (rel, scn) in family.iter().filter(|_| !told) {
        let mut rep = ScenarioReport::new(0..scn.seeds);
        run_seeds(&mut runner, scn, 0..scn.seeds.min(FIRST_SEEDS), &mut rep);
        if let Some(u) = &rep.unexpected {
            kills.push(format!("{rel} · seeds {} · {}", u.seed + 1, u.detail));
        }
        reports.push(rep);
    }
    if kills.is_empty() {
        // Smallest budget first: a scenario that tells the mutant apart only at the end of its
        // budget (an expected failure or a required window gone) costs that budget, so a focused
        // scenario of 50 seeds tells it before a swarm scenario of 10,000 that tells it too.
        let mut rest: Vec<_> = family.iter().zip(reports).collect();
        rest.sort_by_key(|((rel, scn), _)| (scn.seeds, rel.clone()));
        for ((rel, scn), mut rep) in rest {
            run_seeds(
                &mut runner,
                scn,
                scn.seeds.min(FIRST_SEEDS)..scn.seeds,
                &mut rep,
            );
            if let Some(kill) = verdict(&mut runner, rel, scn, rep) {
                kills.push(kill);
                break;
            }
        }
    }
    if kills.is_empty() {
        // The gate's second pass (`Scenario::gate_second_pass`, as tests/scenarios.rs runs it):
        // each scenario's budget under the anchored search, where a seed its expectation does
        // not allow kills.
        let mut second: Vec<_> = (family.iter())
            .filter_map(|(rel, scn)| Some((rel, scn.gate_second_pass()?)))
            .collect();
        second.sort_by_key(|(rel, scn)| (scn.seeds, (*rel).clone()));
        for (rel, scn) in second {
            let mut rep = ScenarioReport::new(0..scn.seeds);
            run_seeds(&mut runner, &scn, 0..scn.seeds, &mut rep);
            if let Some(u) = &rep.unexpected {
                kills.push(format!(
                    "{rel} · anchored seeds {} · {}",
                    u.seed + 1,
                    u.detail
                ));
                break;
            }
        }
    }
    for kill in &kills {
        println!("mutant-kill: {kill}");
    }
    assert!(
        kills.is_empty(),
        "{} of {} scenarios fail:\n{}",
        kills.len(),
        family.len(),
        kills.join("\n")
    );
}

/// G3 (`src/family/pi/wakes/reservation.rs`).
#[test]
#[ignore = "the mutation gate's test: scripts/mutants.sh runs it with --include-ignored"]
fn g3() {
    gate(&["pi.reservation"]);
}

/// gentle-agents' outbox (`src/family/pi/wakes/outbox.rs`), the flush around G0-G3's senders.
#[test]
#[ignore = "the mutation gate's test: scripts/mutants.sh runs it with --include-ignored"]
fn outbox() {
    gate(&[
        "pi.raw-trigger-turn",
        "pi.raw-follow-up",
        "pi.counter",
        "pi.is-idle",
        "pi.reservation",
    ]);
}

/// G4 upstream, with its fixes and without T2/T3 (`src/family/pi/wakes/gentle.rs`).
#[test]
#[ignore = "the mutation gate's test: scripts/mutants.sh runs it with --include-ignored"]
fn g4() {
    gate(&[
        "pi.gentle",
        "pi.gentle-fixed",
        "pi.gentle-pre-t3",
        "pi.gentle-pre-t2",
    ]);
}

/// W2's batched drain (`src/family/gptme_server/wakes/w2.rs`), which W2-subagent's watch part shares.
#[test]
#[ignore = "the mutation gate's test: scripts/mutants.sh runs it with --include-ignored"]
fn w2() {
    gate(&["gptme.w2-one-wake-per-burst", "gptme.w2-subagent"]);
}

/// B1 and its two earlier states (`src/family/gptme_cli/wakes/b1.rs`).
#[test]
#[ignore = "the mutation gate's test: scripts/mutants.sh runs it with --include-ignored"]
fn b1() {
    gate(&[
        "gptme.b1-idle-wait",
        "gptme.b1-ordered",
        "gptme.b1-pre-control-any",
        "gptme.b1-no-recheck",
    ]);
}
