//! The pi export: a Node project (package.json and its merged lock, the recording, this
//! project's driver and clock with the replay wire and the JS checker, the bug report).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{Opening, Recording, bad, plain, pretty, read, read_json};
use crate::error::Result;
use crate::scenario::Scenario;

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

/// The files of a pi run's export.
pub(super) fn files(
    scn: &Scenario,
    open: Opening<'_>,
    rec: &Recording,
    root: &Path,
    patch: Option<&str>,
) -> Result<Vec<(String, String)>> {
    let Opening {
        spec,
        mut hello,
        params,
        judged,
        verdict,
        violations,
        story,
    } = open;
    // The wake table, its paths inside the export: the extension is a file of its installed
    // package.
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
        "verdict": verdict,
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
        files.push(("fix.patch".into(), (*p).to_string()));
    }
    files.push((
        "README.md".into(),
        readme(&ReportFacts {
            title: &scn.name,
            ext: (&ext_pkg, &ext_version),
            host: (&host_pkg, &host_version),
            violations: &violations,
            params: &scn.check,
            story: &story,
            patch,
        }),
    ));
    Ok(files)
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
