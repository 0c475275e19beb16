//! The golden trace hashes: a lasting gate that a change to the code base is a refactor.
//!
//! For every scenario file under `scenarios/` (the built-in ones, through their adapter
//! processes the external ones, and through their drivers the real hosts' ones) the test runs a fixed range of seeds, one after another in one
//! runner, and folds the trace hash of each seed into one hash per scenario; a regression file
//! contributes the hash of its replayed run. The list is committed in
//! `tests/data/trace-hashes.txt`. A change that alters any run (an extra draw, a reordered
//! record, a different encoding of a record) changes its scenario's line, and the test names
//! every scenario whose line differs.
//!
//! Regenerating the file is a deliberate act, for a change that is meant to alter runs:
//! `WAKESIM_GOLDEN_WRITE=1 cargo test --test golden` (never under `CI`). With
//! `WAKESIM_GOLDEN_ONLY=PREFIX` as well, only the lines of files whose path starts with `PREFIX`
//! (e.g. `scenarios/gptme/`) are recomputed and rewritten (added or removed); every other line is
//! kept as committed, so a change meant to alter one family's runs needs neither the adapters nor
//! the real hosts of the others, nor their time.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use wakesim::engine::regression::{Regression, Replayed, is_regression};
use wakesim::engine::{Outcome, RunResult, Runner};
use wakesim::family::Registry;
use wakesim::scenario::{Scenario, discover};

/// Seeds each built-in scenario contributes.
const SEEDS: u64 = 2_000;
/// Seeds each external scenario contributes (every seed is a round trip per handler through a
/// Node or Python process, so fewer).
const EXTERNAL_SEEDS: u64 = 30;
/// Seeds each real-host scenario contributes (every seed is a run of the real host in its
/// driver process, milliseconds each, so fewer again).
const REAL_SEEDS: u64 = 10;

const GOLDEN: &str = "tests/data/trace-hashes.txt";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fold of its own (FNV-1a over the hashes' little-endian bytes), so that the golden file
/// does not depend on the hasher it guards.
fn fold(hashes: impl IntoIterator<Item = u64>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for x in hashes {
        for b in x.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn is_external(rel: &Path) -> bool {
    rel.starts_with("scenarios/external")
}

/// A real host's scenario or regression (under `scenarios/real-*/`, and the known-bug pack of
/// `scenarios/known-bugs/`, every one of which runs a real release).
fn is_real(rel: &Path) -> bool {
    let rel = rel.to_string_lossy();
    rel.starts_with("scenarios/real-") || rel.starts_with("scenarios/known-bugs/")
}

/// One line per file of `scenarios/` that `which` selects: `path seeds hash`.
fn lines(which: impl Fn(&Path) -> bool) -> Vec<String> {
    let registry = Registry::builtin();
    let mut runner = Runner::new(&registry);
    let mut out = Vec::new();
    for rel in discover(Path::new("scenarios")).expect("scenarios/ is readable") {
        if !which(&rel) {
            continue;
        }
        let text = std::fs::read_to_string(&rel).expect("readable");
        let line = if is_regression(&text) {
            let reg = Regression::load(&rel, &registry).expect("the regression loads");
            let hash = match reg.replay(&mut runner, false) {
                Replayed::Run { result, .. } | Replayed::Stale { result, .. } => {
                    hashed(&rel, "replay", &result)
                }
            };
            format!("{} replay {:016x}", rel.display(), fold([hash]))
        } else {
            let scn = Scenario::load(&rel, &registry).expect("the scenario loads");
            runner.prepare(&scn).expect("the adapter starts");
            let seeds = if is_external(&rel) {
                EXTERNAL_SEEDS
            } else if is_real(&rel) {
                REAL_SEEDS
            } else {
                SEEDS
            };
            let hashes: Vec<u64> = (0..seeds)
                .map(|seed| {
                    hashed(
                        &rel,
                        &format!("seed {seed}"),
                        &runner.run_seed(&scn, seed, false),
                    )
                })
                .collect();
            format!("{} 0..{seeds} {:016x}", rel.display(), fold(hashes))
        };
        out.push(line);
    }
    out
}

/// A run's trace hash. A run an adapter or driver fault ended (a process that died, or a line later
/// than its wall-clock bound on a loaded machine) has no trace worth comparing: it is named as
/// such, not reported as a moved hash (a real-pi line once "flaked" under load with no cause found).
fn hashed(rel: &Path, which: &str, r: &RunResult) -> u64 {
    if let Outcome::AdapterFault(f) = &r.outcome {
        panic!(
            "{}: {which} ended with an adapter fault, not a trace: {f}",
            rel.display()
        );
    }
    r.trace_hash
}

/// The committed lines that `which` selects.
fn golden(which: impl Fn(&Path) -> bool) -> Vec<String> {
    std::fs::read_to_string(root().join(GOLDEN))
        .expect("tests/data/trace-hashes.txt is readable")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter(|l| which(Path::new(l.split(' ').next().unwrap_or_default())))
        .map(str::to_string)
        .collect()
}

/// Every line that differs, named by its scenario.
fn compare(now: &[String], then: &[String]) -> Result<(), String> {
    let key = |l: &String| l.split(' ').next().unwrap_or_default().to_string();
    let mut report = String::new();
    for l in now {
        match then.iter().find(|g| key(g) == key(l)) {
            Some(g) if g == l => {}
            Some(g) => {
                let _ = writeln!(report, "  {}: was `{g}`, now `{l}`", key(l));
            }
            None => {
                let _ = writeln!(report, "  {}: not in the golden file (`{l}`)", key(l));
            }
        }
    }
    for g in then {
        if !now.iter().any(|l| key(l) == key(g)) {
            let _ = writeln!(report, "  {}: in the golden file but gone", key(g));
        }
    }
    if report.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "trace hashes differ from {GOLDEN}: these runs are no longer the same\n{report}"
        ))
    }
}

fn writing() -> bool {
    std::env::var_os("WAKESIM_GOLDEN_WRITE").is_some() && std::env::var_os("CI").is_none()
}

fn gate(which: fn(&Path) -> bool) {
    // Paths relative to the root, as the golden file names them.
    std::env::set_current_dir(root()).expect("the crate root");
    let now = lines(which);
    if writing() {
        return;
    }
    if let Err(e) = compare(&now, &golden(which)) {
        panic!("{e}");
    }
}

#[test]
fn built_in_scenarios_and_regressions_keep_their_trace_hashes() {
    gate(|p| !is_external(p) && !is_real(p));
}

#[test]
fn real_host_scenarios_and_regressions_keep_their_trace_hashes() {
    gate(is_real);
}

#[test]
fn external_scenarios_keep_their_trace_hashes() {
    gate(is_external);
}

/// With `WAKESIM_GOLDEN_WRITE=1`, writes the golden file (both halves, in file order).
#[test]
fn write_the_golden_file_when_asked() {
    if !writing() {
        return;
    }
    std::env::set_current_dir(root()).expect("the crate root");
    if let Some(prefix) = std::env::var_os("WAKESIM_GOLDEN_ONLY") {
        let prefix = prefix.to_string_lossy().into_owned();
        let ours = |p: &Path| p.to_string_lossy().starts_with(prefix.as_str());
        let text = std::fs::read_to_string(root().join(GOLDEN)).expect("readable");
        let key = |l: &str| l.split(' ').next().unwrap_or_default().to_string();
        let mut fresh = lines(ours);
        let mut out = String::new();
        for l in text.lines() {
            if l.starts_with('#') || l.trim().is_empty() || !ours(Path::new(&key(l))) {
                out += l;
            } else if let Some(i) = fresh.iter().position(|f| key(f) == key(l)) {
                out += &fresh.remove(i);
            } else {
                continue; // its file is gone
            }
            out.push('\n');
        }
        for l in fresh {
            out += &l; // a new file
            out.push('\n');
        }
        std::fs::write(root().join(GOLDEN), out).expect("written");
        return;
    }
    let mut text = format!(
        "# Golden trace hashes (tests/golden.rs): per scenario file, the FNV-1a fold of the trace\n\
         # hashes of seeds 0..{SEEDS} (external scenarios 0..{EXTERNAL_SEEDS}, real hosts'\n\
         # 0..{REAL_SEEDS}), run in order in one\n\
         # runner; per regression file, its replayed run. Trace-hash encoding: version 1.\n"
    );
    for l in lines(|_| true) {
        text += &l;
        text.push('\n');
    }
    std::fs::write(root().join(GOLDEN), text).expect("written");
}
