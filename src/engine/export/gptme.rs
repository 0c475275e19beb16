//! The gptme export: a Python project (hash-pinned requirements, the recording, this project's
//! driver and thread scheduler, the Python checker, the pytest file, the bug report).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

use super::{Opening, Recording, bad, plain, pretty, read};
use crate::error::Result;
use crate::scenario::Scenario;

/// Every decision of the run in the order it was made, each as its site asked it: `{label, kind,
/// bound}` (a thread order, kind `order`, or a uniform choice, `choose`), `{label, kind, lo, hi}`
/// (a `delay` or an `instant`), `{label, kind: "chance", num, den}`, with its `value`. The
/// driver made its uniform draws and chances itself from the generator's words wakesim sent
/// ahead, and reported them in the next `choose` or `end` line (`drawn`, made before that line):
/// they are unfolded here, so the replay needs no words (a patched gptme draws another number
/// of them, and words would shift every later decision; decisions are answered at their site).
fn decisions(rec: &Recording) -> Result<Vec<Value>> {
    fn drawn(line: &Value, out: &mut Vec<Value>) -> Result<()> {
        for d in line
            .get("drawn")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let label = d.get(0).and_then(Value::as_str);
            let n = |i: usize| d.get(i).and_then(Value::as_u64);
            let v = match (label, d.as_array().map(Vec::len)) {
                (Some(l), Some(3)) => {
                    let kind = if l.starts_with("py.thread.") { "order" } else { "choose" };
                    n(1).zip(n(2))
                        .map(|(bound, value)| json!({"label": l, "kind": kind, "bound": bound, "value": value}))
                }
                (Some(l), Some(4)) => n(1).zip(n(2)).zip(n(3)).map(|((num, den), value)| {
                    json!({"label": l, "kind": "chance", "num": num, "den": den, "value": value})
                }),
                _ => None,
            };
            out.push(
                v.ok_or_else(|| bad(format!("a drawn decision the export cannot read: {d}")))?,
            );
        }
        Ok(())
    }
    let mut out = Vec::new();
    for d in &rec.draws {
        drawn(d, &mut out)?;
        let mut d = d.clone();
        if let Some(map) = d.as_object_mut() {
            map.remove("drawn");
            map.remove("ahead");
        }
        out.push(d);
    }
    for l in &rec.lines {
        if l.get("type").and_then(Value::as_str) == Some("end") {
            drawn(l, &mut out)?;
        }
    }
    Ok(out)
}

/// A gptme run: a Python project. The driver answers its questions from the recorded
/// decisions (`session.json`'s `decisions`: `real_gptme_replay.py`) instead of asking wakesim.
pub(super) fn files(
    scn: &Scenario,
    open: Opening<'_>,
    rec: &Recording,
    root: &Path,
    patch: Option<&str>,
) -> Result<Vec<(String, String)>> {
    let Opening {
        spec,
        hello,
        params,
        judged,
        verdict,
        violations,
        story,
    } = open;
    if hello["wake"]["patch"].is_string() {
        return Err(bad(format!(
            "{}: a gptme run with wake.patch is not exported yet (the patch is a file of this project)",
            scn.path.display()
        )));
    }
    let decisions = decisions(rec)?;
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
    let host = spec.family.strip_prefix("gptme-").unwrap_or(spec.family);
    let session = json!({
        "format": "reproducer-session/1",
        "package": { "name": "gptme", "version": spec.version, "host": format!("gptme's {host}, wake logic {}", hello["wake"]["variant"].as_str().unwrap_or("?")) },
        "title": scn.name,
        "params": params,
        "invariants": judged,
        "verdict": verdict,
        "hello": hello,
        "decisions": decisions,
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
        "real_gptme_jobs.py",
        "real_gptme_run.py",
        "real_gptme_replay.py",
        "sched.py",
        "sched_sync.py",
        "sched_patch.py",
        "plan_server.py",
        "plan_cli.py",
        "real_variants.py",
    ] {
        files.push((format!("runtime/repro_runtime/{f}"), read(&pkg.join(f))?));
    }
    files.push((
        "runtime/apply_fix.py".to_string(),
        read(&root.join("export/gptme/apply_fix.py"))?,
    ));
    if let Some(p) = patch {
        files.push(("fix.patch".to_string(), p.to_string()));
    }
    let mut s = String::new();
    let _ = writeln!(s, "# gptme {}: {}\n", spec.version, scn.name);
    let _ = writeln!(
        s,
        "**Package:** `gptme[server]` {} (from PyPI, unchanged; every dependency hash-pinned in requirements.txt) · **Python:** 3.11\n",
        spec.version
    );
    let _ = writeln!(s, "## What happens\n");
    for v in &violations {
        let _ = writeln!(s, "- at {} ms (virtual): {}", v.t.0, v.detail);
    }
    let _ = writeln!(s, "\n## What should happen\n");
    let mut seen = BTreeSet::new();
    for v in &violations {
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
    if let Some(p) = patch {
        let _ = writeln!(
            s,
            "\n## A proposed fix\n\n`fix.patch` (a diff against the installed package, its paths as in gptme's repository; `python runtime/apply_fix.py` applies it to the venv's gptme with `patch -p1`, or `git apply`; `pip install --force-reinstall --no-deps --require-hashes -r requirements.txt` restores the release):\n\n```diff\n{p}```\n\n```console\n$ .venv/bin/python runtime/apply_fix.py\n$ .venv/bin/python -m pytest -q\n```\n\nWith the fix applied the same test passes. (The replay then follows the recorded schedule as far as the fixed code asks the same questions, and takes the simplest answer where it asks others: the check that the replay is the recorded run is skipped.)"
        );
    }
    files.push(("README.md".to_string(), s));
    Ok(files)
}
