//! The JavaScript and Python unit tests, run by `cargo test`: `node --test tests/js/` (the line
//! framing, the drivers' wire, the virtual clock, the Node adapter's realm, the fake peers) and the
//! Python adapter's facade suites (`protocol.py`, `pi.py`, `gptme.py`), which need the standard
//! library only. Node and python3 are on every machine that runs wakesim's adapters; the dev tools
//! (type checkers, linters) and the pinned gptme are not, so their checks are
//! `scripts/lint-js-py.sh`'s, not this test's. A failing suite fails with its own output.
use std::path::Path;
use std::process::Command;

fn run(what: &str, dir: &Path, program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn javascript_unit_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    run(
        "node --test tests/js/",
        root,
        "node",
        &["--test", "tests/js/"],
    );
}

#[test]
fn python_facade_unit_tests() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/python");
    run(
        "the Python adapter's facade suites",
        &dir,
        "python3",
        &[
            "-m",
            "unittest",
            "tests.test_protocol",
            "tests.test_pi",
            "tests.test_gptme",
        ],
    );
}
