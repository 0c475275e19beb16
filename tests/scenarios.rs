//! The regression gate: one test per scenario file under `scenarios/`, and first one per
//! regression file (a shrunk or recorded run, replayed exactly; a stale one fails).
//!
//! Per scenario: its seed budget and expectation, its required race windows, an exhaustive
//! exploration of its scope (which must find a failing scenario's bug, and find nothing in a
//! passing one), a determinism check on a sample of seeds, and its snapshot. In the quick gate
//! (a debug `cargo test` without `WAKESIM_FULL_GATE=1`) an external scenario runs a sample of
//! its seeds and no exploration, see [`quick`]; `.ci/run` runs the full gate.
//!
//! A snapshot that changes on purpose: `cargo insta review` (cargo-insta, see the README).
//!
//! Each test runs the scenario's seed budget (times `WAKESIM_SEEDS_MULTIPLIER`, for nightly runs;
//! a real host's failing scenario its first [`REAL_SEEDS`], a passing one's scope explored only
//! in the release run, the main job running every whole budget) and asserts its expectation; a failure prints the line that replays the offending seed. Then it
//! replays the scenario's `snapshot_seed` and compares its timeline with the committed insta
//! snapshot in `snapshots/` (CI never writes snapshots: commit each accepted `.snap`). For a
//! scenario that expects a failure, the snapshot seed must show that failure, so every snapshot
//! illustrates its race.

mod common;

use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Failed, Trial};
use wakesim::engine::regression::{Regression, Replayed, is_regression};
use wakesim::engine::{Runner, describe, shows_expected};
use wakesim::family::Registry;
use wakesim::report;
use wakesim::scenario::{Scenario, discover};

/// Seeds per scenario the gate runs twice and compares trace by trace.
const DETERMINISM_SAMPLE: u64 = 8;
/// In the quick gate, for an external scenario: each seed's first run starts a fresh adapter
/// process, the dearest thing in the gate.
const DETERMINISM_SAMPLE_QUICK: u64 = 2;

/// Seeds of a real host's *failing* scenario this gate runs (times `WAKESIM_SEEDS_MULTIPLIER`):
/// each seed is a run of the real host in its driver process, milliseconds where a model seed
/// takes microseconds, so the gate takes the first ones (every real scenario's bug, and the race
/// windows it must reach, show within them) and the main job (`wakesim run`) runs the whole
/// budget; a failing one's snapshot seed, which must show its failure, is reached however late
/// (`b1-step-pre-overtakes-queued-completion`: seed 143). A passing scenario keeps its whole
/// budget in the full gate: that is its assurance, and some of its required windows are rare
/// (`g3-passes-without-failed-wake` on 0.99.1 reaches `message-between-inner-runs` only after
/// seed 200).
const REAL_SEEDS: u64 = 100;

/// Whether this gate explores a real host's *passing* scenario exhaustively: tens of thousands of
/// real runs (`g4-fixed-passes`: 31,135), so only the release run of the gate does (`.ci/run`
/// runs this target in both profiles). A failing scenario's exploration stops at its first
/// failing run and is cheap, so both runs do it.
const REAL_PASS_EXPLORED: bool = !cfg!(debug_assertions);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `scenarios/pi/g2-x.toml` → `pi__g2-x`.
fn snapshot_name(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .components()
        .skip(1)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.last_mut() {
        *last = last.trim_end_matches(".toml").to_string();
    }
    parts.join("__")
}

/// insta settings for the top-level `snapshots/` directory.
fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(root().join("snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings
}

/// A timeline or story without the version, so a version bump does not touch every snapshot.
fn versionless(text: &str) -> String {
    text.replace(
        &format!("wakesim {}", env!("CARGO_PKG_VERSION")),
        "wakesim [version]",
    )
}

/// Seeds of an external scenario the quick gate runs (see [`quick`]).
const EXTERNAL_SAMPLE_SEEDS: u64 = 200;

/// Does this run of the gate take only a sample of an external scenario (a wake logic behind an
/// adapter process)? In a debug `cargo test`, the gate people run all day, yes: there the process
/// boundary, not the simulator, sets the pace (most of the gate's time went to them), and each
/// external scenario's built-in twin runs its full budget and its exploration in this same gate,
/// while `tests/external.rs` checks module and twin trace for trace. The full gate (a release
/// build or `WAKESIM_FULL_GATE=1`, both in `.ci/run`), a seed multiplier and the main job
/// (`wakesim run`) run every seed and explore the scope.
/// A real host's scenario (its driver process sets the pace even more) is sampled alike.
fn quick(scn: &Scenario, multiplier: u64) -> bool {
    (scn.adapter.is_some() || scn.remote.is_some()) && multiplier == 1 && !common::full_gate()
}

fn check(rel: &Path) -> Result<(), Failed> {
    let registry = Registry::builtin();
    let scn = Scenario::load(rel, &registry).map_err(|e| e.to_string())?;
    let multiplier = wakesim::cmd::seeds_multiplier().map_err(|e| e.to_string())?;
    let mut runner = Runner::new(&registry);
    let quick = quick(&scn, multiplier);
    let real = scn.remote.is_some();
    let passing = matches!(scn.expect, wakesim::scenario::Expect::Pass);
    // A failing scenario's sample reaches its snapshot seed, which must show the failure: a
    // rare one (`python-w2-subagent-completions-reordered`: seed 363) is still seen.
    let reach = |seeds: u64| match (passing, scn.snapshot_seed) {
        (false, Some(s)) => seeds.max(s + 1),
        _ => seeds,
    };
    let budget = match (quick, real) {
        (true, false) => scn.seeds.min(reach(EXTERNAL_SAMPLE_SEEDS)),
        (true, true) => scn.seeds.min(reach(REAL_SEEDS)),
        (false, true) if !passing => scn.seeds.min(reach(REAL_SEEDS)).saturating_mul(multiplier),
        (false, _) => scn.seeds.saturating_mul(multiplier),
    };
    let mut rep = runner.run_range(&scn, 0..budget);
    // A sample need not reach every required window; the full gate judges those.
    rep.judge(&scn.expect, if quick { &[] } else { &scn.must_reach });
    if !rep.met {
        let mut msg = format!(
            "{}: expected {}, but {}",
            rel.display(),
            scn.expect,
            rep.why.clone().unwrap_or_default()
        );
        if let Some(u) = &rep.unexpected {
            msg += &format!("\n{}", report::replay_line(rel, u.seed));
        }
        return Err(msg.into());
    }
    // The second pass: the same budget under the anchored search, which reaches rare
    // coincidences sooner. A failing scenario's bug need not show there (swarm's seeds showed
    // it), but nothing its expectation does not allow may.
    if let Some(second) = scn.gate_second_pass().filter(|_| !quick) {
        let rep2 = runner.run_range(&second, 0..budget);
        if let Some(u) = &rep2.unexpected {
            return Err(format!(
                "{}: expected {}, but under the anchored search {}\n{}",
                rel.display(),
                scn.expect,
                u.detail,
                report::seed_replay_line(&second, u.seed)
            )
            .into());
        }
    }

    // Exhaustive exploration of the scenario's scope finds its bug, or proves the scope clean.
    let stop_when_found = !matches!(scn.expect, wakesim::scenario::Expect::Pass);
    // A scope its file declares too small for the bug (`holds_bug = false`) is not explored.
    let ex = match quick || (real && passing && !REAL_PASS_EXPLORED) || !scn.explore_holds_bug {
        true => None,
        false => Some(wakesim::engine::explore::explore_until(
            &mut runner,
            &scn,
            scn.explore,
            stop_when_found,
        )),
    };
    if let Some(ex) = &ex {
        explored(rel, &scn, ex)?;
    }
    let sample = match quick {
        true => DETERMINISM_SAMPLE_QUICK,
        false => DETERMINISM_SAMPLE,
    };
    determinism_and_snapshot(rel, &registry, &mut runner, &scn, &rep, sample)
}

/// What exploring the scope must find: the scenario's bug, or nothing in a passing one.
fn explored(
    rel: &Path,
    scn: &Scenario,
    ex: &wakesim::engine::explore::Explored,
) -> Result<(), Failed> {
    match &scn.expect {
        wakesim::scenario::Expect::Pass if ex.failing > 0 || !ex.exhausted => {
            let why = ex
                .smallest
                .as_ref()
                .map_or("the scope was not exhausted".to_string(), |r| {
                    describe(&r.outcome)
                });
            return Err(format!(
                "{}: explore ({} runs, exhausted: {}) found a failing run: {why}",
                rel.display(),
                ex.runs,
                ex.exhausted
            )
            .into());
        }
        wakesim::scenario::Expect::Pass => {}
        expect if ex.smallest_expected.is_none() => {
            return Err(format!(
                "{}: explore did not find {expect} in its scope ({} runs, exhausted: {})",
                rel.display(),
                ex.runs,
                ex.exhausted
            )
            .into());
        }
        _ => {}
    }
    Ok(())
}

/// The determinism self-check and the snapshot of `snapshot_seed`'s timeline.
fn determinism_and_snapshot(
    rel: &Path,
    registry: &Registry,
    runner: &mut Runner<'_>,
    scn: &Scenario,
    rep: &wakesim::engine::ScenarioReport,
    sample: u64,
) -> Result<(), Failed> {
    // Determinism self-check on a sample: each seed twice, in a fresh and a warm runner.
    let divergences = wakesim::engine::determinism::check_determinism(registry, scn, 0..sample);
    if let Some(d) = divergences.first() {
        return Err(format!("{}: nondeterministic: {d}", rel.display()).into());
    }

    let snapshot_seed = wakesim::engine::snapshot_seed(scn, rep);
    let r = runner.run_seed(scn, snapshot_seed, true);
    if !shows_expected(&scn.expect, &r.outcome) {
        return Err(format!(
            "{}: snapshot_seed {} does not show the expected {} (it {}); pick a seed that does, e.g. {}",
            rel.display(),
            snapshot_seed,
            scn.expect,
            describe(&r.outcome),
            rep.first_expected.map_or("none found".to_string(), |s| s.to_string()),
        )
        .into());
    }
    let timeline = versionless(&report::text::timeline(scn, &r));
    let mut settings = snapshot_settings();
    settings.set_description(format!("{} · seed {}", scn.name, snapshot_seed));
    let name = snapshot_name(rel);
    // A mismatch panics with insta's diff; libtest-mimic reports the panic as this test's failure.
    settings.bind(|| insta::assert_snapshot!(name.as_str(), timeline));
    Ok(())
}

fn check_regression(rel: &Path) -> Result<(), Failed> {
    let registry = Registry::builtin();
    let reg = Regression::load(rel, &registry).map_err(|e| e.to_string())?;
    let mut runner = Runner::new(&registry);
    let (r, met) = match reg.replay(&mut runner, true) {
        // `run` re-runs a stale recording as its seed; the gate wants its committed ones current.
        Replayed::Stale { why, .. } => {
            return Err(format!(
                "{} is stale: {why}; the model no longer consumes its choices the same way. Re-shrink: wakesim shrink {} --seed {}",
                rel.display(),
                reg.scenario.path.display(),
                reg.seed
            )
            .into());
        }
        Replayed::Run { result, met } => (result, met),
    };
    if !met {
        return Err(format!(
            "{}: {}, but it {}\nreproduce: wakesim replay {}",
            rel.display(),
            reg.expectation_label(),
            describe(&r.outcome),
            rel.display()
        )
        .into());
    }
    let target = match reg.expectation() {
        wakesim::scenario::Expect::Fail { invariant, .. } => Some(*invariant),
        _ => None,
    };
    let story = versionless(&report::text::story(&reg.scenario, &r, target));
    let mut settings = snapshot_settings();
    settings.set_description(format!(
        "regression: {} · {}",
        reg.scenario.name,
        reg.expectation()
    ));
    let name = snapshot_name(rel);
    settings.bind(|| insta::assert_snapshot!(name.as_str(), story));
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    // Paths relative to the root, as users paste them: run from there.
    std::env::set_current_dir(root()).expect("the crate root");
    let files = discover(Path::new("scenarios")).expect("scenarios/ is readable");
    let (regressions, scenarios): (Vec<PathBuf>, Vec<PathBuf>) = files
        .into_iter()
        .partition(|f| std::fs::read_to_string(f).is_ok_and(|t| is_regression(&t)));
    // Regressions first: cheap, exact, and the first thing a reviewer wants to see fail.
    let trials = regressions
        .into_iter()
        .map(|rel| Trial::test(rel.display().to_string(), move || check_regression(&rel)))
        .chain(
            scenarios
                .into_iter()
                .map(|rel| Trial::test(rel.display().to_string(), move || check(&rel))),
        )
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
