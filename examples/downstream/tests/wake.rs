//! The crate's wake logic under wakesim, as a user's `cargo test` runs it.

use std::process::Command;

use wakesim::testing::{Check, check};
use wakesim_downstream::registry;

/// The fixed logic passes the scenario: the whole downstream test.
#[test]
fn the_reserved_wake_passes() {
    check(&registry(), "scenarios/reserved.toml");
}

/// An inline scenario: the naive logic's failure comes back as an error with its story.
#[test]
fn an_inline_scenario_reports_the_naive_wakes_race() {
    let text = std::fs::read_to_string("scenarios/naive.toml").expect("the scenario");
    let failure = Check::inline(&registry(), "naive-inline.toml", &text)
        .try_run()
        .expect_err("the naive wake races");
    let message = failure.to_string();
    assert!(message.contains("expected pass, but seed"), "{message}");
    assert!(message.contains("✗ single-starter"), "{message}");
    assert!(message.contains("reproduce: WAKESIM_SEED="), "{message}");
}

/// The env var `the_naive_wake_fails` reads its scenario from; unset, it has nothing to check.
const SCENARIO_ENV: &str = "DOWNSTREAM_NAIVE_SCENARIO";

/// The naive logic's check, failing on purpose: `the_reproduce_command_reproduces_the_failure`
/// runs it (in this test binary) on a copy of `scenarios/naive.toml`, so that the failure it saves
/// does not land in the repository. Alone (no env var) it checks nothing.
#[test]
fn the_naive_wake_fails() {
    if let Ok(path) = std::env::var(SCENARIO_ENV) {
        check(&registry(), path);
    }
}

/// The failure's output names a command; run as printed (its test filter and flags, its
/// `WAKESIM_SEED`, on this test binary, which is what `cargo test -p ...` runs), it fails the
/// same way, at the same seed.
#[test]
fn the_reproduce_command_reproduces_the_failure() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("downstream-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let scenario = dir.join("naive.toml");
    std::fs::copy("scenarios/naive.toml", &scenario).expect("copy");
    let exe = std::env::current_exe().expect("this test binary");
    let run = |args: &[&str], seed: Option<&str>| {
        let mut cmd = Command::new(&exe);
        cmd.args(args)
            .env(SCENARIO_ENV, &scenario)
            .env_remove("WAKESIM_SEED");
        if let Some(s) = seed {
            cmd.env("WAKESIM_SEED", s);
        }
        let out = cmd.output().expect("the test binary runs");
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };

    let (ok, first) = run(&["the_naive_wake_fails", "--exact"], None);
    assert!(!ok, "{first}");
    assert!(first.contains("✗ single-starter"), "{first}");
    let saved: Vec<_> = std::fs::read_dir(dir.join("regressions"))
        .expect("the failure is saved beside the scenario")
        .collect();
    assert_eq!(saved.len(), 1);

    // reproduce: WAKESIM_SEED=3 cargo test -p wakesim-downstream the_naive_wake_fails -- --exact
    let line = first
        .lines()
        .find_map(|l| l.trim().strip_prefix("reproduce: "))
        .expect("a reproduce line");
    let (seed, rest) = line
        .strip_prefix("WAKESIM_SEED=")
        .and_then(|l| l.split_once(' '))
        .expect("the seed first");
    let rest = rest
        .strip_prefix("cargo test -p wakesim-downstream ")
        .expect("cargo test of this package");
    let (filter, flags) = rest.split_once(" -- ").expect("the test's flags");
    let mut args = vec![filter];
    args.extend(flags.split_whitespace());
    let (ok, again) = run(&args, Some(seed));
    assert!(!ok, "{again}");
    assert!(
        again.contains(&format!("seed {seed} (WAKESIM_SEED) is not allowed")),
        "{again}"
    );
    assert!(again.contains("✗ single-starter"), "{again}");

    // The saved failure now runs first, and fails first.
    let (ok, third) = run(&["the_naive_wake_fails", "--exact"], None);
    assert!(!ok);
    assert!(third.contains("the saved failure"), "{third}");
    let _ = std::fs::remove_dir_all(&dir);
}
