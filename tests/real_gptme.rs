//! The real gptme 0.35.1 under the Python adapter's deterministic thread scheduler: the
//! scheduler's own tests, the reference's minimal interleavings G-1..G-12 and the README's gptme
//! findings scripted on gptme's own code, and the remote-host driver's protocol tests
//! (`adapters/python/tests/`). The runner installs the pinned venv on first use (under a lock;
//! `.ci/run` does it up front); if it cannot, this test fails with pip's reason, naming the
//! package: nothing is skipped.

use std::process::Command;

#[test]
fn python_suites_on_real_gptme() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .arg("adapters/python/tests/run.py")
        .current_dir(root)
        .output()
        .expect("python3 must be on PATH for the real-gptme suites (.ci/run installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the real-gptme Python suites failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.ends_with(" 0 failed") && !last.starts_with("0 passed"),
        "unexpected summary line {last:?}:\n{stdout}\n{stderr}"
    );
}
