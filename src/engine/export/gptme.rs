//! The gptme export: a Python project (hash-pinned requirements, the recording, this project's
//! driver and thread scheduler, the Python checker, the pytest file, the bug report).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

use super::{JUDGED, Recording, bad, plain, pretty, read, story};
use crate::error::Result;
use crate::outcome::RunResult;
use crate::remote::tape::Dir;
use crate::scenario::Scenario;

/// A gptme run: a Python project. The driver reads the lines wakesim sent it (the `run` with the
/// generator's material, every `value`) from session.json instead of from wakesim.
pub(super) fn files(
    scn: &Scenario,
    rec: &Recording,
    root: &Path,
    result: &RunResult,
    tape: &[(Dir, String)],
    timeline: fn(&Scenario, &RunResult) -> String,
) -> Result<Vec<(String, String)>> {
    let spec = scn.remote.as_ref().expect("a real host");
    if rec.hello.is_null() {
        return Err(bad(
            "the driver was started before the recording (no hello on the tape)".into(),
        ));
    }
    let hello = rec.hello.clone();
    if hello["wake"]["patch"].is_string() {
        return Err(bad(format!(
            "{}: a gptme run with wake.patch is not exported yet (the patch is a file of this project)",
            scn.path.display()
        )));
    }
    let start = tape
        .iter()
        .rposition(|(d, l)| *d == Dir::ToDriver && l.starts_with(r#"{"type":"run""#))
        .expect("a run (recording() found it)");
    let to_driver: Vec<&str> = tape[start..]
        .iter()
        .filter(|(d, _)| *d == Dir::ToDriver)
        .map(|(_, l)| l.as_str())
        .collect();
    let adapter = root.join("adapters").join("python");
    let pin = read(
        &adapter
            .join("real")
            .join(format!("gptme-{}.txt", spec.version)),
    )?;
    let test_pins = read(
        &root
            .join("export")
            .join("gptme")
            .join("requirements-test.txt"),
    )?;
    let judged: Vec<&str> = JUDGED
        .iter()
        .filter(|i| scn.host.invariants().contains(**i))
        .map(|i| i.name())
        .collect();
    let verdict: Vec<Value> = result
        .outcome
        .violations()
        .iter()
        .filter(|v| JUDGED.contains(&v.invariant))
        .map(|v| json!({"invariant": v.invariant.name(), "t": v.t.0, "msg": v.msg.map(|m| format!("m{}", m.0 + 1))}))
        .collect();
    let host = spec.family.strip_prefix("gptme-").unwrap_or(spec.family);
    let session = json!({
        "format": "reproducer-session/1",
        "package": { "name": "gptme", "version": spec.version, "host": format!("gptme's {host}, wake logic {}", hello["wake"]["variant"].as_str().unwrap_or("?")) },
        "title": scn.name,
        "params": { "latency_ms_max": scn.check.latency_ms_max, "latency_requests_max": scn.check.latency_requests_max },
        "invariants": judged,
        "verdict": verdict,
        "hello": hello,
        "to_driver": to_driver,
        "observed": rec.lines,
    });
    let mut files = vec![
        (
            "requirements.txt".to_string(),
            format!("{pin}\n{test_pins}"),
        ),
        ("session.json".to_string(), pretty(&session)),
        (
            "test_repro.py".to_string(),
            read(&root.join("export/gptme/test_repro.py"))?,
        ),
        (
            "runtime/check.py".to_string(),
            read(&root.join("export/gptme/check.py"))?,
        ),
        (
            ".gitignore".to_string(),
            ".venv/\n__pycache__/\n".to_string(),
        ),
    ];
    let pkg = adapter.join("wakesim_adapter");
    for f in [
        "__init__.py",
        "real_driver.py",
        "real_wire.py",
        "real_gptme.py",
        "real_gptme_patch.py",
        "real_gptme_run.py",
        "sched.py",
        "sched_sync.py",
        "sched_patch.py",
        "plan_server.py",
        "plan_cli.py",
        "real_variants.py",
    ] {
        files.push((format!("runtime/repro_runtime/{f}"), read(&pkg.join(f))?));
    }
    let story = story(&(timeline)(scn, result));
    let mut s = String::new();
    let _ = writeln!(s, "# gptme {}: {}\n", spec.version, scn.name);
    let _ = writeln!(
        s,
        "**Package:** `gptme[server]` {} (from PyPI, unchanged; every dependency hash-pinned in requirements.txt) · **Python:** 3.11\n",
        spec.version
    );
    let _ = writeln!(s, "## What happens\n");
    let judged: Vec<_> = (result.outcome.violations().iter())
        .filter(|v| JUDGED.contains(&v.invariant))
        .collect();
    for v in &judged {
        let _ = writeln!(s, "- at {} ms (virtual): {}", v.t.0, v.detail);
    }
    let _ = writeln!(s, "\n## What should happen\n");
    let mut seen = BTreeSet::new();
    for v in result.outcome.violations() {
        if seen.insert(v.invariant) {
            let _ = writeln!(
                s,
                "- **{}**: {}.",
                v.invariant.name(),
                plain(v.invariant, &scn.check)
            );
        }
    }
    let _ = writeln!(
        s,
        "\n## The minimal story\n\nThe run, on a virtual clock (ms); gptme's threads run one at a time, in a recorded order.\n\n```text\n{story}```\n"
    );
    let _ = writeln!(
        s,
        "## How to run the test\n\nNeeds Python 3.11 and network access to PyPI once.\n\n```console\n$ python3.11 -m venv .venv\n$ .venv/bin/pip install --require-hashes --no-deps -r requirements.txt\n$ .venv/bin/python -m pytest -q\n```\n\n`pytest` replays the recorded run against the installed gptme (`test_repro.py`; the run's decisions are data in `session.json`; `runtime/repro_runtime/` runs gptme's own code under a deterministic thread scheduler on a virtual clock, `runtime/check.py` checks the delivery invariants). It fails, naming the invariant and showing the timeline, while the bug is there."
    );
    files.push(("README.md".to_string(), s));
    Ok(files)
}
