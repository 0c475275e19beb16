//! `wakesim export`: one failing run of a real host, handed over as a project in the host's own
//! ecosystem that reproduces it without wakesim, Rust or this repository.
//!
//! The run is made once more with a tape on the driver's wire (`remote::tape`): every line
//! wakesim sent (the `hello` with the scenario's resolved sections, the `run`, each `value`
//! answering a `choose`) and every line the driver wrote back. From it the export keeps the
//! decisions in order (`draws`: what the driver asked and what wakesim answered) and the driver's
//! observations, and writes:
//!
//! - `package.json` pinning the host and the extension at the run's versions, with one lock file
//!   merged from the two this project pins them with (`hosts/<family>/<version>/` and the
//!   extension's package directory), `engines.node >= 22`;
//! - `session.json`: the recording (the `hello` with its paths made relative to the export, the
//!   decisions, the driver's observations, wakesim's verdict on them, the checks' parameters);
//! - `runtime/`: this project's driver, virtual clock and fake peer, copied, with a wire that
//!   answers from the recording (`export/pi/wire.mjs`) and the delivery checkers in JS
//!   (`export/pi/check.mjs`); `test/repro.test.mjs`, a node:test file;
//! - `README.md`, a bug report ready to file; with `--patch`, `fix.patch` and `npm run apply-fix`.
//!
//! Nothing written names a path of this machine: the export checks every file it wrote.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::check::Invariant;
use crate::error::{Error, Result};
use crate::outcome::{Outcome, RunResult};
use crate::remote::tape::{self, Dir};
use crate::scenario::Scenario;

/// The invariants the exported checker judges (`export/pi/check.mjs`).
pub const JUDGED: [Invariant; 4] = [
    Invariant::NoLoss,
    Invariant::ExactlyOnce,
    Invariant::Fifo,
    Invariant::BoundedLatency,
];

/// What the export wrote, for the command's summary.
pub struct Exported {
    pub dir: PathBuf,
    pub files: Vec<String>,
    /// wakesim's verdict on the run, the judged invariants' first violations.
    pub violations: Vec<(Invariant, u64, Option<u64>)>,
    /// Violations of invariants the exported checker does not judge (named in the report).
    pub unjudged: Vec<Invariant>,
}

/// The recording of one run, split out of a tape.
pub struct Recording {
    /// wakesim's `hello` (Null when the driver had shaken hands before the tape started).
    pub hello: Value,
    /// Every decision: the driver's `choose` fields and `value`.
    pub draws: Vec<Value>,
    /// The driver's lines after `run` (observations, notes, the mix, the end), `produce` with
    /// the `id` wakesim gave it.
    pub lines: Vec<Value>,
}

fn bad(why: String) -> Error {
    Error::Usage(why)
}

fn parse(line: &str) -> Result<Value> {
    serde_json::from_str(line)
        .map_err(|e| bad(format!("the recorded line is not JSON ({e}): {line}")))
}

/// Split a tape into the last run's recording.
pub fn recording(tape: &[(Dir, String)]) -> Result<Recording> {
    // The hello is on the tape when the driver started while it ran (a driver reused from an
    // earlier run shook hands before): Null otherwise.
    let hello = match tape
        .iter()
        .find(|(d, l)| *d == Dir::ToDriver && l.starts_with(r#"{"type":"hello""#))
    {
        Some((_, line)) => parse(line)?,
        None => Value::Null,
    };
    let start = tape
        .iter()
        .rposition(|(d, l)| *d == Dir::ToDriver && l.starts_with(r#"{"type":"run""#))
        .ok_or_else(|| bad("no run on the tape".into()))?;
    let mut draws = Vec::new();
    let mut lines = Vec::new();
    let mut asked: Option<Value> = None;
    for (dir, line) in &tape[start + 1..] {
        let v = parse(line)?;
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
        match dir {
            // A driver that numbers its messages itself (`"id"`) is not answered.
            Dir::FromDriver if ty == "produce" && v.get("id").is_some() => lines.push(v),
            Dir::FromDriver if ty == "choose" || ty == "produce" => asked = Some(v),
            Dir::FromDriver => lines.push(v),
            Dir::ToDriver => {
                let value = v.get("value").cloned().unwrap_or(Value::Null);
                let Some(mut q) = asked.take() else {
                    return Err(bad(format!("an answer nobody asked for: {line}")));
                };
                let map = q.as_object_mut().expect("a JSON object");
                if map.get("type").and_then(Value::as_str) == Some("produce") {
                    map.insert("id".into(), value);
                    lines.push(q);
                } else {
                    map.remove("type");
                    if !map.contains_key("kind") {
                        map.insert("kind".into(), json!("choose"));
                    }
                    map.insert("value".into(), value);
                    draws.push(q);
                }
            }
        }
    }
    Ok(Recording {
        hello,
        draws,
        lines,
    })
}

/// Where this project's files are: the directory holding `hosts/launch.mjs`.
fn project_root(scn: &Scenario) -> Result<PathBuf> {
    let spec = scn.remote.as_ref().expect("a real host");
    // A checkout above the scenario first (its runtime as edited there), else the copy the binary
    // carries (`build.rs` embeds `hosts/`, `adapters/` and `export/`), so an installed binary
    // exports from any directory.
    if let Some(d) = (spec.cwd.ancestors())
        .find(|d| d.join("hosts").join("launch.mjs").is_file() && d.join("export").is_dir())
    {
        return Ok(d.to_path_buf());
    }
    crate::remote::home::sources()
        .map(Path::to_path_buf)
        .map_err(|e| bad(format!("cannot find this project's export runtime: {e}")))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn read_json(path: &Path) -> Result<Value> {
    let text = read(path)?;
    serde_json::from_str(&text).map_err(|e| bad(format!("{}: not JSON: {e}", path.display())))
}

/// The one dependency a pinned package directory names: (name, version).
fn only_dependency(dir: &Path) -> Result<(String, String)> {
    let pkg = read_json(&dir.join("package.json"))?;
    let deps = pkg.get("dependencies").and_then(Value::as_object);
    match deps.map(|d| d.iter().collect::<Vec<_>>()).as_deref() {
        Some([(name, version)]) => Ok(((*name).clone(), version.as_str().unwrap_or("").into())),
        _ => Err(bad(format!(
            "{}/package.json must pin exactly one dependency",
            dir.display()
        ))),
    }
}

/// One lock file for both pinned trees: the host's, with the extension's packages added (a
/// package both pin must be the same version, else the export cannot be one tree).
fn merged_lock(host: &Value, ext: &Value, root: Value) -> Result<Value> {
    let mut lock = host.clone();
    let packages = lock
        .get_mut("packages")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| bad("the host's package-lock.json has no packages".into()))?;
    for (k, v) in ext
        .get("packages")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if k.is_empty() {
            continue;
        }
        match packages.get(k) {
            Some(old) if old.get("version") != v.get("version") => {
                return Err(bad(format!(
                    "the host and the extension pin {k} at different versions ({} and {})",
                    old.get("version").unwrap_or(&Value::Null),
                    v.get("version").unwrap_or(&Value::Null)
                )));
            }
            Some(_) => {}
            None => {
                packages.insert(k.clone(), v.clone());
            }
        }
    }
    packages.insert(String::new(), root);
    let map = lock.as_object_mut().expect("an object");
    map.insert("name".into(), json!("reproducer"));
    map.insert("version".into(), json!("1.0.0"));
    Ok(lock)
}

/// The options of one export.
pub struct Options<'a> {
    pub out: &'a Path,
    pub patch: Option<&'a Path>,
    /// The seed (for messages).
    pub seed: u64,
    /// The run's timeline as text (the command renders it: reports are a higher layer).
    pub timeline: fn(&Scenario, &RunResult) -> String,
}

/// Run `run` (one seed of a real-host scenario, on this thread) with a tape, and write its
/// reproducer.
pub fn export(
    scn: &Scenario,
    run: impl FnOnce() -> Result<RunResult>,
    opts: &Options<'_>,
) -> Result<Exported> {
    let spec = scn.remote.as_ref().ok_or_else(|| {
        bad(format!(
            "{} runs a model host: export hands over runs of real hosts (host = \"pi@0.99.1\")",
            scn.path.display()
        ))
    })?;
    if spec.family != "pi" && !spec.family.starts_with("gptme") {
        return Err(bad(format!(
            "exporting a {} run is not supported yet (pi's and gptme's are)",
            spec.label()
        )));
    }
    if opts.out.exists()
        && std::fs::read_dir(opts.out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(bad(format!(
            "{} exists and is not empty: export writes a new directory",
            opts.out.display()
        )));
    }
    let patch = match opts.patch {
        Some(p) => Some(read(p)?),
        None => None,
    };
    let root = project_root(scn)?;
    tape::start();
    let result = run();
    let tape = tape::take();
    let result = result?;
    match &result.outcome {
        Outcome::Fail(_) => {}
        Outcome::Pass => {
            return Err(bad(format!(
                "seed {} of {} passes: there is nothing to report",
                opts.seed,
                scn.path.display()
            )));
        }
        other => {
            return Err(bad(format!(
                "seed {} of {} did not run to a verdict: {}",
                opts.seed,
                scn.path.display(),
                crate::engine::describe(other)
            )));
        }
    }
    let rec = recording(&tape)?;
    let violations: Vec<_> = result
        .outcome
        .violations()
        .iter()
        .filter(|v| JUDGED.contains(&v.invariant))
        .map(|v| (v.invariant, v.t.0, v.msg.map(|m| u64::from(m.0))))
        .collect();
    let unjudged: Vec<_> = result
        .outcome
        .violations()
        .iter()
        .map(|v| v.invariant)
        .filter(|i| !JUDGED.contains(i))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if violations.is_empty() {
        return Err(bad(format!(
            "seed {} of {} breaks only {}, which the exported checker does not judge (it judges {})",
            opts.seed,
            scn.path.display(),
            unjudged
                .iter()
                .map(|i| i.name())
                .collect::<Vec<_>>()
                .join(", "),
            JUDGED.map(Invariant::name).join(", ")
        )));
    }

    if spec.family.starts_with("gptme") {
        if patch.is_some() {
            return Err(bad("--patch is not supported for a gptme export yet".into()));
        }
        let files = gptme_files(scn, &rec, &root, &result, &tape, opts.timeline)?;
        return write_files(&root, opts, files, violations, unjudged);
    }

    // The wake table, its paths inside the export: the extension is a file of its installed
    // package.
    if rec.hello.is_null() {
        return Err(bad(
            "the driver was started before the recording (no hello on the tape)".into(),
        ));
    }
    let mut hello = rec.hello.clone();
    let wake = hello
        .get_mut("wake")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| bad("the recorded hello has no wake table".into()))?;
    let package_dir = wake
        .get("package")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .ok_or_else(|| {
            bad(format!(
                "{}: export hands over runs of a published extension (wake.package); this extension is a file of this project",
                scn.path.display()
            ))
        })?;
    let extension = wake
        .get("extension")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let inside = Path::new(&extension)
        .strip_prefix(package_dir.join("node_modules"))
        .map_err(|_| {
            bad(format!(
                "the extension {extension} is not inside its package's node_modules"
            ))
        })?;
    wake.remove("package");
    let deliver = wake
        .get("deliver")
        .and_then(Value::as_str)
        .unwrap_or("factory")
        .to_string();

    let host_dir = root.join("hosts").join(spec.family).join(&spec.version);
    let (host_pkg, host_version) = only_dependency(&host_dir)?;
    let (ext_pkg, ext_version) = only_dependency(&package_dir)?;
    let host_json = read_json(&host_dir.join("package.json"))?;

    // package.json and its lock.
    let mut deps = Map::new();
    deps.insert(host_pkg.clone(), json!(host_version));
    deps.insert(ext_pkg.clone(), json!(ext_version));
    let mut package = json!({
        "name": "reproducer",
        "version": "1.0.0",
        "private": true,
        "description": format!("Reproduces a delivery bug of {ext_pkg} {ext_version} on {host_pkg} {host_version}"),
        "type": "module",
        "engines": { "node": ">=22" },
        "scripts": {
            "test": "node --test test/repro.test.mjs",
            "apply-fix": "node runtime/lib/apply-fix.mjs"
        },
        "dependencies": deps,
    });
    if let Some(o) = host_json.get("overrides") {
        package["overrides"] = o.clone();
    }
    let mut lock_root = json!({
        "name": "reproducer",
        "version": "1.0.0",
        "dependencies": package["dependencies"].clone(),
        "engines": { "node": ">=22" },
    });
    if let Some(o) = host_json.get("overrides") {
        lock_root["overrides"] = o.clone();
    }
    // One tree when the two locks agree on every package they share; else the extension keeps
    // its own tree in `extension/` (its package.json and lock as this project pins them),
    // installed by the root's postinstall, as this project installs it beside the host.
    let host_lock = read_json(&host_dir.join("package-lock.json"))?;
    let ext_lock = read_json(&package_dir.join("package-lock.json"))?;
    let mut own_tree = Vec::new();
    let lock = match merged_lock(&host_lock, &ext_lock, lock_root.clone()) {
        Ok(lock) => lock,
        Err(_) => {
            let mut host_only = Map::new();
            host_only.insert(host_pkg.clone(), json!(host_version));
            package["dependencies"] = Value::Object(host_only.clone());
            package["scripts"]["postinstall"] =
                json!("npm ci --prefix extension --no-audit --no-fund");
            lock_root["dependencies"] = Value::Object(host_only);
            let mut lock = host_lock.clone();
            lock["name"] = json!("reproducer");
            lock["version"] = json!("1.0.0");
            lock["packages"][""] = lock_root;
            own_tree.push((
                "extension/package.json".to_string(),
                read(&package_dir.join("package.json"))?,
            ));
            own_tree.push((
                "extension/package-lock.json".to_string(),
                read(&package_dir.join("package-lock.json"))?,
            ));
            own_tree.push((
                "extension/.npmrc".to_string(),
                "legacy-peer-deps=true\n".to_string(),
            ));
            lock
        }
    };
    let ext_base = if own_tree.is_empty() {
        "node_modules"
    } else {
        "extension/node_modules"
    };
    let ext_rel = Path::new(ext_base).join(inside);
    if let Some(w) = hello.get_mut("wake").and_then(Value::as_object_mut) {
        w.insert(
            "extension".into(),
            json!(ext_rel.to_string_lossy().replace('\\', "/")),
        );
    }
    let ext_dir = format!("{ext_base}/{ext_pkg}");

    let params = json!({
        "latency_ms_max": scn.check.latency_ms_max,
        "latency_requests_max": scn.check.latency_requests_max,
    });
    let judged: Vec<&str> = JUDGED
        .iter()
        .filter(|i| scn.host.invariants().contains(**i))
        .map(|i| i.name())
        .collect();
    let expected: Vec<Value> = violations
        .iter()
        .map(|(i, t, m)| json!({"invariant": i.name(), "t": t, "msg": m.map(|m| format!("m{}", m + 1))}))
        .collect();
    let test_name = format!(
        "{ext_pkg} {ext_version} delivers every message it sends, once, in order, in bounded time"
    );
    let session = json!({
        "format": "reproducer-session/1",
        "test_name": test_name,
        "package": { "name": ext_pkg, "version": ext_version, "dir": ext_dir, "host": format!("{host_pkg} {host_version}") },
        "title": scn.name,
        "params": params,
        "invariants": judged,
        "verdict": expected,
        "hello": hello,
        "draws": rec.draws,
        "observed": rec.lines,
    });

    // The runtime: this project's driver and clock, the replay wire and the checker.
    let mut files: Vec<(String, String)> = Vec::new();
    let hosts = root.join("hosts");
    let exp = root.join("export").join("pi");
    let driver = read(&hosts.join("pi").join("driver.mjs"))?;
    // The driver finds pi in `hosts/pi/<version>/node_modules`; here it is the project's own.
    let from = "path.join(here, version, \"node_modules\")";
    if driver.matches(from).count() != 1 {
        return Err(bad(format!(
            "hosts/pi/driver.mjs no longer finds pi as `{from}`: the export must learn its new layout"
        )));
    }
    let driver = driver.replacen(from, "path.join(here, \"..\", \"..\", \"node_modules\")", 1);
    files.push(("runtime/pi/driver.mjs".into(), driver));
    for f in [
        "peers.mjs",
        "gen058.mjs",
        "watch.mjs",
        "features.mjs",
        "content.mjs",
        "instrument.mjs",
        "services.mjs",
    ] {
        files.push((format!("runtime/pi/{f}"), read(&hosts.join("pi").join(f))?));
    }
    if let Some(peer) = deliver.strip_prefix("peer:") {
        let f = format!("peers/{peer}.mjs");
        files.push((format!("runtime/pi/{f}"), read(&hosts.join("pi").join(&f))?));
    }
    files.push((
        "runtime/lib/vclock.mjs".into(),
        read(&hosts.join("lib").join("vclock.mjs"))?,
    ));
    files.push(("runtime/lib/wire.mjs".into(), read(&exp.join("wire.mjs"))?));
    files.push((
        "runtime/lib/check.mjs".into(),
        read(&exp.join("check.mjs"))?,
    ));
    files.push((
        "runtime/lib/apply-fix.mjs".into(),
        read(&exp.join("apply-fix.mjs"))?,
    ));
    files.push((
        "test/repro.test.mjs".into(),
        read(&exp.join("repro.test.mjs"))?,
    ));
    files.push(("package.json".into(), pretty(&package)));
    files.push(("package-lock.json".into(), pretty(&lock)));
    files.extend(own_tree);
    // The extension's peer dependencies are the host's own packages (pi's loader aliases them):
    // npm must not try to resolve them separately, as this project installs it.
    files.push((".npmrc".into(), "legacy-peer-deps=true\n".into()));
    files.push((
        ".gitignore".into(),
        "node_modules/\nruntime/.cache/\n".into(),
    ));
    files.push(("session.json".into(), pretty(&session)));
    if let Some(p) = &patch {
        files.push(("fix.patch".into(), p.clone()));
    }
    let story = story(&(opts.timeline)(scn, &result));
    // The report states what the test judges; what only this project's checkers see (the
    // harness probe's view, ...) is not the package's story.
    let judged_violations: Vec<crate::check::Violation> = result
        .outcome
        .violations()
        .iter()
        .filter(|v| JUDGED.contains(&v.invariant))
        .cloned()
        .collect();
    files.push((
        "README.md".into(),
        readme(&ReportFacts {
            title: &scn.name,
            ext: (&ext_pkg, &ext_version),
            host: (&host_pkg, &host_version),
            violations: &judged_violations,
            params: &scn.check,
            story: &story,
            patch: patch.as_deref(),
        }),
    ));

    write_files(&root, opts, files, violations, unjudged)
}

/// Write the export's files, after checking that none names this machine's paths.
fn write_files(
    root: &Path,
    opts: &Options<'_>,
    files: Vec<(String, String)>,
    violations: Vec<(Invariant, u64, Option<u64>)>,
    unjudged: Vec<Invariant>,
) -> Result<Exported> {
    // Nothing may name this machine's paths.
    let mut leaks = Vec::new();
    let home = std::env::var("HOME").unwrap_or_default();
    let needles: Vec<String> = [root.to_string_lossy().into_owned(), home]
        .into_iter()
        .filter(|n| n.len() > 1)
        .collect();
    for (name, text) in &files {
        for n in &needles {
            if text.contains(n.as_str()) {
                leaks.push(format!("{name} names {n}"));
            }
        }
    }
    if !leaks.is_empty() {
        return Err(bad(format!(
            "the export would name this machine's paths: {}",
            leaks.join("; ")
        )));
    }
    for (name, text) in &files {
        let path = opts.out.join(name);
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|source| Error::Io {
                path: d.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(&path, text).map_err(|source| Error::Io { path, source })?;
    }
    Ok(Exported {
        dir: opts.out.to_path_buf(),
        files: files.into_iter().map(|(n, _)| n).collect(),
        violations,
        unjudged,
    })
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("JSON");
    s.push('\n');
    s
}

/// The run's timeline rows (`timeline`: the text report the command renders), without its
/// header and replay line.
fn story(timeline: &str) -> String {
    timeline
        .lines()
        .filter(|l| l.starts_with(' ') || l.starts_with("   t(ms)"))
        .fold(String::new(), |mut s, l| {
            let _ = writeln!(s, "{l}");
            s
        })
}

/// What the bug report says.
pub struct ReportFacts<'a> {
    pub title: &'a str,
    pub ext: (&'a str, &'a str),
    pub host: (&'a str, &'a str),
    pub violations: &'a [crate::check::Violation],
    pub params: &'a crate::check::CheckParams,
    pub story: &'a str,
    pub patch: Option<&'a str>,
}

/// The invariant in plain words (as `export/pi/check.mjs` says it).
pub fn plain(i: Invariant, p: &crate::check::CheckParams) -> String {
    match i {
        Invariant::NoLoss => "every message sent to the agent reaches the model (a model request carries it) by the end of the session, unless the host documents dropping it".into(),
        Invariant::ExactlyOnce => "a message enters the conversation at most once".into(),
        Invariant::Fifo => "the messages of one sender enter the conversation in the order they were sent".into(),
        Invariant::BoundedLatency => format!(
            "a message waiting for delivery waits at most {} ms while the agent sits idle (nothing else will move it), and rides one of the next {} model requests while the agent works",
            p.latency_ms_max, p.latency_requests_max
        ),
        other => other.statement().to_string(),
    }
}

fn readme(f: &ReportFacts<'_>) -> String {
    let mut s = String::new();
    let (ext, ev) = f.ext;
    let (host, hv) = f.host;
    let _ = writeln!(s, "# {ext} {ev}: {}\n", f.title);
    let _ = writeln!(
        s,
        "**Package:** `{ext}` {ev} (from npm, unchanged) · **host:** `{host}` {hv} · **Node:** 22 or later\n"
    );
    let _ = writeln!(s, "## What happens\n");
    for v in f.violations {
        let _ = writeln!(s, "- at {} ms (virtual): {}", v.t.0, v.detail);
    }
    let _ = writeln!(s, "\n## What should happen\n");
    let mut seen = BTreeSet::new();
    for v in f.violations {
        if seen.insert(v.invariant) {
            let _ = writeln!(
                s,
                "- **{}**: {}.",
                v.invariant.name(),
                plain(v.invariant, f.params)
            );
        }
    }
    let _ = writeln!(
        s,
        "\n## The minimal story\n\nThe run, on a virtual clock (ms). `m1`, `m2`, ... are the messages the extension is given to deliver (their text carries the marker `[wakesim mN]`); the model is scripted and every service pi awaits resolves after a recorded delay.\n\n```text\n{}```\n",
        f.story
    );
    let _ = writeln!(
        s,
        "## How to run the test\n\nNeeds Node 22 or later (pi's own requirement) and network access to the npm registry once.\n\n```console\n$ npm ci\n$ npm test\n```\n\n`npm test` replays the recorded run against the installed `{ext}` {ev} and `{host}` {hv} (`test/repro.test.mjs`; the decisions of the run are data in `session.json`; `runtime/` holds the host's driver on a virtual clock, the fake peer that plays the extension's outside world, and the checker of the delivery invariants). It fails, naming the invariant and showing the timeline, while the bug is there."
    );
    if let Some(p) = f.patch {
        let _ = writeln!(
            s,
            "\n## A proposed fix\n\n`fix.patch` (a diff against the installed package; `npm run apply-fix` applies it with `patch -p1`, `npm ci` restores the release):\n\n```diff\n{}```\n\n```console\n$ npm run apply-fix\n$ npm test\n```\n\nWith the fix applied the same test passes.",
            p
        );
    }
    s
}

/// A gptme run: a Python project. The driver reads the lines wakesim sent it (the `run` with the
/// generator's material, every `value`) from session.json instead of from wakesim.
fn gptme_files(
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
