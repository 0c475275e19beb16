//! The madsim lane's regression gate: one test per scenario file under `madsim/scenarios/`.
//!
//! As the kernel lane's gate (`tests/scenarios.rs`): each test runs the scenario's seed budget
//! (times `WAKESIM_SEEDS_MULTIPLIER`) through the lane and asserts its expectation with wakesim's
//! own judging code; a failure prints the lane's replay line. Then it replays `snapshot_seed` and
//! compares its timeline with the committed insta snapshot `snapshots/madsim__<file>.snap` (CI
//! never writes snapshots). A snapshot seed of a failing scenario must show that failure. A
//! sample of seeds runs twice and must give the same trace. There is no exploration step: this
//! lane's schedules are madsim's, not a choice sequence wakesim could enumerate.
//!
//! These files live outside `scenarios/`, whose gate resolves wake logics through the kernel
//! lane's `Registry`, which holds none of the async ones.

use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Failed, Trial};
use wakesim::engine::{describe, shows_expected};
use wakesim::report;
use wakesim::scenario::{Scenario, discover};
use wakesim_madsim::run::{Lane, replay_line};

/// Seeds per scenario the gate runs twice and compares by trace hash.
const DETERMINISM_SAMPLE: u64 = 8;

/// The repository root: the lane's paths are given relative to it, as `cargo run` takes them.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("madsim/ has a parent")
        .to_path_buf()
}

/// `madsim/scenarios/x.toml` → `madsim__x`.
fn snapshot_name(rel: &Path) -> String {
    let stem = rel.file_stem().expect("a file").to_string_lossy();
    format!("madsim__{stem}")
}

fn check(rel: &Path) -> Result<(), Failed> {
    let lane = Lane::builtin();
    let scn = lane.load(&root().join(rel)).map_err(|e| e.to_string())?;
    let scn = Scenario {
        path: rel.to_path_buf(),
        ..scn
    };
    let multiplier = wakesim::cmd::seeds_multiplier().map_err(|e| e.to_string())?;
    let rep = lane.run_scenario(&scn, 0..scn.seeds.saturating_mul(multiplier));
    if !rep.met {
        let mut msg = format!(
            "{}: expected {}, but {}",
            rel.display(),
            scn.expect,
            rep.why.clone().unwrap_or_default()
        );
        if let Some(u) = &rep.unexpected {
            msg += &format!("\n{}", replay_line(rel, u.seed));
        }
        return Err(msg.into());
    }

    // Determinism on a sample, by wakesim's trace hash: each seed in a fresh lane and again after
    // the others (madsim's own check would compare only its draws and its clock).
    for seed in 0..DETERMINISM_SAMPLE {
        let fresh = Lane::builtin().run_seed(&scn, seed, false);
        let warm = lane.run_seed(&scn, seed, false);
        if fresh.trace_hash != warm.trace_hash || fresh.outcome != warm.outcome {
            return Err(format!(
                "{}: nondeterministic: seed {seed} gave traces {:016x} and {:016x}\n{}",
                rel.display(),
                fresh.trace_hash,
                warm.trace_hash,
                replay_line(rel, seed)
            )
            .into());
        }
    }

    let snapshot_seed = wakesim::engine::snapshot_seed(&scn, &rep);
    let r = lane.run_seed(&scn, snapshot_seed, true);
    if !shows_expected(&scn.expect, &r.outcome) {
        return Err(format!(
            "{}: snapshot_seed {} does not show the expected {} (it {}); pick a seed that does, e.g. {}",
            rel.display(),
            snapshot_seed,
            scn.expect,
            describe(&r.outcome),
            rep.first_expected
                .map_or("none found".to_string(), |s| s.to_string()),
        )
        .into());
    }
    let timeline = report::text::timeline_with(&scn, &r, &replay_line(rel, r.seed)).replace(
        &format!("wakesim {}", env!("CARGO_PKG_VERSION")),
        "wakesim [version]",
    );
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(root().join("snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(format!("{} · seed {}", scn.name, snapshot_seed));
    let name = snapshot_name(rel);
    settings.bind(|| insta::assert_snapshot!(name.as_str(), timeline));
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let files = discover(&root().join("madsim/scenarios")).expect("madsim/scenarios/ is readable");
    let trials = files
        .into_iter()
        .map(|f| {
            let rel = f
                .strip_prefix(root())
                .expect("under the root")
                .to_path_buf();
            let name = rel.display().to_string();
            Trial::test(name, move || check(&rel))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
