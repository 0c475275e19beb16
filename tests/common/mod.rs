//! Helpers the integration test crates share: paths, loading scenarios, running the binary,
//! snapshot settings.

#![allow(dead_code)] // each test crate uses its own subset

use std::path::{Path, PathBuf};
use std::process::Command;

use wakesim::family::Registry;
use wakesim::scenario::Scenario;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A scenario file of the repository, its path reported relative to the root.
pub fn scenario(rel: &str, registry: &Registry) -> Scenario {
    let scn =
        Scenario::load(&root().join(rel), registry).unwrap_or_else(|e| panic!("{rel} loads: {e}"));
    Scenario {
        path: PathBuf::from(rel),
        ..scn
    }
}

/// One seed of a repository scenario, traced.
pub fn run_traced(rel: &str, seed: u64) -> wakesim::engine::RunResult {
    let registry = Registry::builtin();
    let scn = scenario(rel, &registry);
    wakesim::engine::Runner::new(&registry).run_seed(&scn, seed, true)
}

/// Whether the run broke the named invariant.
pub fn broke(r: &wakesim::engine::RunResult, invariant: &str) -> bool {
    r.outcome
        .violations()
        .iter()
        .any(|v| v.invariant.name() == invariant)
}

/// A scenario written in the test.
pub fn inline(text: &str, registry: &Registry) -> Scenario {
    Scenario::parse(Path::new("inline.toml"), text, registry).expect("inline scenario parses")
}

/// Run the built `wakesim` binary from the repository root.
pub fn wakesim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("wakesim runs")
}

/// Run the built `wakesim` binary from the repository root with its real-host drivers in strict
/// mode: a run that creates a real timer, I/O or thread-pool job (a completion at a wall-clock
/// moment, which load would move among the virtual steps) fails. The pi driver is always strict
/// now; `WAKESIM_DRIVER_STRICT=1` is kept for drivers that read it.
pub fn wakesim_strict(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args(args)
        .env("WAKESIM_DRIVER_STRICT", "1")
        .current_dir(root())
        .output()
        .expect("wakesim runs")
}

/// A fresh directory under cargo's `target/tmp`, per test process: inside the project, where
/// wakesim agrees to write regressions of the repository's scenarios.
pub fn tempdir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("wakesim-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// insta, writing to the top-level `snapshots/`.
pub fn insta_settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(root().join("snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s
}

/// Run every scenario file under `dir` (each with one error): each must exit 2 with an error that
/// starts with its path and no output on stdout. Returns the errors, in file order, for a snapshot.
pub fn bad_file_errors(dir: &str, at_least: usize) -> String {
    let mut files: Vec<_> = std::fs::read_dir(root().join(dir))
        .expect("bad dir")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert!(files.len() >= at_least);
    let mut all = String::new();
    for f in &files {
        let rel = f.strip_prefix(root()).expect("under root");
        let out = wakesim(&["run", rel.to_str().expect("utf-8")]);
        assert_eq!(out.status.code(), Some(2), "{}", rel.display());
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        let prefix = format!("error: {}:", rel.display());
        assert!(err.starts_with(&prefix), "{err}");
        assert!(out.stdout.is_empty(), "no partial run on bad input");
        all += &err;
    }
    all
}

/// Is this the full gate? A debug `cargo test` is the quick gate people run all day: checks whose
/// cost is adapter processes (a fresh one per seed, hundreds of seeds through one) take a sample
/// there. `WAKESIM_FULL_GATE=1` or a release build (`.ci/run`'s second pass) runs them whole.
pub fn full_gate() -> bool {
    !cfg!(debug_assertions) || std::env::var_os("WAKESIM_FULL_GATE").is_some()
}

/// The seeds of `seeds` a check takes: all in the full gate; in the quick gate every
/// `stride`-th one and the last.
pub fn sample(seeds: std::ops::Range<u64>, stride: u64) -> Vec<u64> {
    let last = seeds.end.saturating_sub(1);
    seeds
        .filter(|s| full_gate() || s % stride == 0 || *s == last)
        .collect()
}
