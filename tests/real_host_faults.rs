//! The real-host lanes under faults (issue 29): nothing hangs, leaks or lies.
//!
//! What this proves, and how:
//! - misbehaving drivers (`tests/data/real-host-faults/fake_driver.py`, put in place of a real
//!   host's driver in a parsed scenario): one stopped (SIGSTOP) or silent at its start, or whose
//!   install goes quiet, is an error within its start bound, not the install's; one slow or
//!   writing garbage mid-run is an adapter fault; one killed while a saved regression replays is
//!   an adapter fault, not a "stale recording ... met"; a grandchild that left the process group
//!   (`setsid`) is killed with its driver; the driver process itself is gone after each fault;
//! - the real pi driver (Node 22 and pi 0.99.1 from the cache directory, installed on first use,
//!   pre-installed by `.ci/run`): stopped during its start, it is an exit-2 error naming the
//!   bound; a run that escapes virtual time (a real `fs.promises.stat`) is refused by default;
//!   a binary copied out of its build tree runs a real-pi scenario from another directory and
//!   writes nothing into the build tree;
//! - installs (`hosts/launch.mjs --package`, a pinned one-dependency package): wakesim killed
//!   (SIGKILL) half-way leaves no process, no lock and no install that looks complete, and the
//!   next install completes it; an install missing its completion marker is redone; a lock held
//!   by a live unrelated process, or not refreshed, is taken over; an unreachable registry is
//!   one `error` line naming the package, in bounded time;
//! - the long tail: corrupt saved regressions are exit-2 errors in `run` and in
//!   `wakesim::testing`; a seed range of 10^13 with a time budget runs in constant memory;
//!   `.seeds(9..2)` and `.seeds(5..5)` are errors; temporary files of killed writes are listed
//!   and pruned; a path that is not a directory is named as such; an out-of-range bound names
//!   its key; a closed stdout is an error.
//!
//! CPU is kept modest (CI has two cores): each real-pi test runs a seed or two, the installs
//! are of one small package, and the fake driver is a few lines of Python.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{root, tempdir};
use wakesim::adapter::FaultKind;
use wakesim::engine::regression::{Regression, Replayed};
use wakesim::engine::{Outcome, Runner};
use wakesim::family::Registry;
use wakesim::scenario::Scenario;

const DATA: &str = "tests/data/real-host-faults";

// ---------------------------------------------------------------------------------------------
// Helpers.

/// A real-host scenario whose driver is `fake_driver.py MODE PIDFILE`, with these bounds.
fn fake(registry: &Registry, mode: &str, pidfile: &Path, start_ms: u64, line_ms: u64) -> Scenario {
    let path = root().join(DATA).join("fake.toml");
    let text = "name = \"fake\"\nhost = \"pi@0.99.1\"\nwake = { extension = \"g0-stat.ts\" }\n\
                seeds = 2\nsnapshot_seed = 0\n[expect]\nverdict = \"pass\"\n";
    let mut scn = Scenario::parse(&path, text, registry).expect("the fake scenario parses");
    let spec = scn.remote.as_mut().expect("a real host");
    let driver = root().join(DATA).join("fake_driver.py");
    spec.command = vec![
        "python3".into(),
        driver.to_string_lossy().into_owned(),
        mode.into(),
        pidfile.to_string_lossy().into_owned(),
    ];
    spec.cwd = root();
    spec.start_timeout_ms = start_ms;
    spec.timeout_ms = line_ms;
    scn
}

/// The pids the fake driver wrote (itself, and its grandchild in `setsid` mode).
fn pids(pidfile: &Path) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(t) = std::fs::read_to_string(pidfile) {
            return t.split_whitespace().map(|p| p.parse().unwrap()).collect();
        }
        assert!(
            Instant::now() < deadline,
            "the fake driver never wrote {pidfile:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Is `pid` a live process (not a zombie)?
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(st) => {
            let state = st.rsplit_once(')').map_or("", |(_, r)| r.trim_start());
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Processes carrying wakesim's adapter token of the wakesim process `wakesim_pid`.
fn tokened(wakesim_pid: u32) -> Vec<i32> {
    let needle = format!("WAKESIM_ADAPTER_OF={wakesim_pid}:");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env
            .split(|&b| b == 0)
            .any(|v| v.starts_with(needle.as_bytes()))
            && alive(pid)
        {
            out.push(pid);
        }
    }
    out
}

/// Wait up to `secs` for `f` to hold.
fn eventually(secs: u64, f: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

fn fault_of(o: &Outcome) -> (FaultKind, String) {
    match o {
        Outcome::AdapterFault(f) => (f.kind, f.detail.clone()),
        other => panic!("expected an adapter fault, got {other:?}"),
    }
}

fn wakesim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("wakesim runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The tree's sources (hosts/, adapters/) modified since `t`, installed packages aside.
fn touched_since(t: std::time::SystemTime) -> Vec<PathBuf> {
    fn walk(p: &Path, t: std::time::SystemTime, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(p) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name == "node_modules" || name == "__pycache__" || name.ends_with(".lock") {
                continue;
            }
            if let Ok(m) = e.metadata() {
                if m.modified().is_ok_and(|m| m > t) {
                    out.push(path.clone());
                }
                if m.is_dir() {
                    walk(&path, t, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    for d in ["hosts", "adapters"] {
        walk(&root().join(d), t, &mut out);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Misbehaving drivers.

#[test]
fn a_driver_stopped_or_silent_at_its_start_is_an_error_within_the_start_bound() {
    let registry = Registry::builtin();
    let dir = tempdir("start");
    for mode in ["stop-at-start", "silent", "installing-then-silent"] {
        let pidfile = dir.join(format!("{mode}.pid"));
        let scn = fake(&registry, mode, &pidfile, 1500, 1000);
        let started = Instant::now();
        let mut runner = Runner::new(&registry);
        let err = runner
            .prepare(&scn)
            .expect_err("a driver that never shakes hands");
        let took = started.elapsed();
        let message = err.to_string();
        assert!(
            message.contains("no line within 1500 ms"),
            "{mode}: {message}"
        );
        if mode == "installing-then-silent" {
            assert!(message.contains("installing a fake host"), "{message}");
        }
        assert!(took < Duration::from_secs(10), "{mode} took {took:?}");
        let pid = pids(&pidfile)[0];
        assert!(
            eventually(5, || !alive(pid)),
            "{mode}: the driver {pid} was left running"
        );
    }
}

#[test]
fn a_slow_or_garbled_driver_mid_run_is_an_adapter_fault() {
    let registry = Registry::builtin();
    let dir = tempdir("midrun");
    for (mode, kind, says) in [
        ("slow", FaultKind::Timeout, "no line within 500 ms"),
        ("garbage", FaultKind::NotJson, "this is not JSON"),
    ] {
        let pidfile = dir.join(format!("{mode}.pid"));
        let scn = fake(&registry, mode, &pidfile, 10_000, 500);
        let mut runner = Runner::new(&registry);
        runner.prepare(&scn).expect("it shakes hands");
        let r = runner.run_seed(&scn, 0, false);
        let (k, detail) = fault_of(&r.outcome);
        assert_eq!(k, kind, "{mode}: {detail}");
        assert!(detail.contains(says), "{mode}: {detail}");
        let pid = pids(&pidfile)[0];
        assert!(
            eventually(5, || !alive(pid)),
            "{mode}: the driver {pid} was left running"
        );
    }
}

#[test]
fn a_driver_killed_while_a_saved_regression_replays_is_an_adapter_fault_not_stale() {
    let registry = Registry::builtin();
    let dir = tempdir("killed-replay");
    // Record a run's choices from a driver that completes it.
    let ok = fake(&registry, "ok", &dir.join("ok.pid"), 10_000, 5_000);
    let mut runner = Runner::new(&registry);
    runner.prepare(&ok).unwrap();
    let recorded = runner.run_seed(&ok, 11, true);
    assert_eq!(recorded.outcome, Outcome::Pass);
    assert_eq!(
        recorded.choices.len(),
        4,
        "the fake driver draws four values a run"
    );
    // Replay them on a driver that dies half-way through the run.
    let dying = fake(
        &registry,
        "die-mid-run",
        &dir.join("die.pid"),
        10_000,
        5_000,
    );
    let reg = Regression {
        path: dir.join("fake-seed-11.toml"),
        scenario: dying,
        seed: 11,
        wakesim: "test".into(),
        expect: None,
        choices: recorded.choices.clone(),
        profile: Default::default(),
    };
    let mut runner = Runner::new(&registry);
    match reg.replay(&mut runner, false) {
        Replayed::Run { result, met } => {
            let (kind, detail) = fault_of(&result.outcome);
            assert_eq!(kind, FaultKind::Exited, "{detail}");
            assert!(!met, "a saved failure cut off by a fault is not met");
        }
        Replayed::Stale { why, met, .. } => {
            panic!("reported as a stale recording ({why}), met: {met}")
        }
    }
}

#[test]
fn a_grandchild_that_left_the_process_group_dies_with_its_driver() {
    let registry = Registry::builtin();
    let dir = tempdir("setsid");
    let pidfile = dir.join("setsid.pid");
    let scn = fake(&registry, "setsid", &pidfile, 10_000, 5_000);
    {
        let mut runner = Runner::new(&registry);
        runner.prepare(&scn).unwrap();
        assert_eq!(runner.run_seed(&scn, 0, false).outcome, Outcome::Pass);
        let grandchild = pids(&pidfile)[1];
        assert!(
            alive(grandchild),
            "the grandchild runs while its driver does"
        );
    }
    // The runner is gone, and with it the driver (one that ran is never parked for reuse).
    let [driver, grandchild] = pids(&pidfile)[..] else {
        panic!("two pids")
    };
    assert!(
        eventually(5, || !alive(driver) && !alive(grandchild)),
        "left running: driver {driver} {}, grandchild {grandchild} {}",
        alive(driver),
        alive(grandchild)
    );
}

// ---------------------------------------------------------------------------------------------
// The real pi driver.

/// A copy of the real-pi G0 scenario and the extension it loads, in `dir` (another "clone").
fn g0_clone(dir: &Path, wake_extra: &str) -> PathBuf {
    let ext = dir.join("adapters/node/examples");
    copy_dir(&root().join("adapters/node/examples"), &ext);
    let scn = root().join("scenarios/real-pi/g0-idle-wake-skips-harness.toml");
    let text = std::fs::read_to_string(scn).unwrap().replace(
        "cwd = \"../..\" }",
        &format!("cwd = \"../..\"{wake_extra} }}"),
    );
    let path = dir.join("scenarios/real-pi/g0.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            if e.file_name() != "node_modules" {
                copy_dir(&e.path(), &target);
            }
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn a_binary_copied_out_of_its_build_tree_runs_real_pi_from_another_directory() {
    let outside = std::env::temp_dir().join(format!("wakesim-relocated-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&outside);
    let bin = outside.join("bin/wakesim");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_wakesim"), &bin).unwrap();
    let clone = outside.join("clone");
    g0_clone(&clone, "");
    let before = std::time::SystemTime::now();
    std::thread::sleep(Duration::from_millis(20));
    let out = Command::new(&bin)
        .args([
            "run",
            "scenarios/real-pi/g0.toml",
            "--seeds",
            "0..2",
            "--no-save",
        ])
        .current_dir(&clone)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("pi@0.99.1"), "{}", text(&out));
    let touched = touched_since(before);
    assert!(
        touched.is_empty(),
        "written into the build tree: {touched:?}"
    );
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn a_run_that_escapes_virtual_time_is_refused_by_default() {
    let out = wakesim_in(
        &root(),
        &[
            "run",
            &format!("{DATA}/g0-stat.toml"),
            "--seeds",
            "0..1",
            "--no-save",
        ],
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("adapter fault"), "{t}");
    assert!(t.contains("escaped virtual time"), "{t}");
    assert!(t.contains("FSREQPROMISE"), "{t}");
}

#[test]
fn the_real_driver_stopped_during_its_start_is_an_error_naming_the_bound_and_leaves_nothing() {
    let dir = tempdir("stop-real");
    let scn = g0_clone(&dir, ", start_timeout_ms = 4000");
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args([
            "run",
            &scn.to_string_lossy(),
            "--seeds",
            "0..1",
            "--no-save",
        ])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let me = child.id();
    // The Node 22 driver (hosts/pi/driver.mjs, started by the launcher): stop it before `hello`.
    let driver = || {
        tokened(me).into_iter().find(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("driver.mjs"))
        })
    };
    assert!(eventually(60, || driver().is_some()), "no driver started");
    let pid = driver().unwrap();
    unsafe_kill(pid, "STOP");
    let out = child.wait_with_output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("no line within 4000 ms"), "{t}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    assert!(
        eventually(5, || tokened(me).is_empty()),
        "left: {:?}",
        tokened(me)
    );
}

fn unsafe_kill(pid: i32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

// ---------------------------------------------------------------------------------------------
// Installs (hosts/launch.mjs).

/// A fresh copy of the pinned one-dependency package.
fn tiny(dir: &Path) -> PathBuf {
    let pkg = dir.join("tiny-package");
    copy_dir(&root().join(DATA).join("tiny-package"), &pkg);
    pkg
}

fn launch(pkg: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("node");
    c.args([
        root().join("hosts/launch.mjs").to_string_lossy().as_ref(),
        "pi",
        "0.99.1",
        "--package",
        pkg.to_string_lossy().as_ref(),
        "--install-only",
    ]);
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdin(Stdio::null()).output().unwrap()
}

fn complete(pkg: &Path) -> bool {
    pkg.join("node_modules/.wakesim-complete").is_file()
        && pkg.join("node_modules/ms/package.json").is_file()
}

#[test]
fn an_install_without_its_completion_marker_is_done_again() {
    let dir = tempdir("half-install");
    let pkg = tiny(&dir);
    // What `npm ci` killed half-way leaves: the package's files, no marker.
    std::fs::create_dir_all(pkg.join("node_modules/ms")).unwrap();
    std::fs::write(pkg.join("node_modules/ms/package.json"), "{}").unwrap();
    let out = launch(&pkg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("wakesim: installing"), "{}", text(&out));
    assert!(text(&out).contains("wakesim: installed"), "{}", text(&out));
    assert!(complete(&pkg));
    let ms = std::fs::read_to_string(pkg.join("node_modules/ms/package.json")).unwrap();
    assert!(ms.contains("\"version\": \"2.1.3\""), "reinstalled: {ms}");
    // Complete now: the next launch installs nothing.
    let again = launch(&pkg, &[]);
    assert!(again.status.success());
    assert!(
        !text(&again).contains("wakesim: installing"),
        "{}",
        text(&again)
    );
}

#[test]
fn a_lock_of_a_live_unrelated_process_or_never_refreshed_is_taken_over() {
    let dir = tempdir("locks");
    let mut sleeper = Command::new("sleep").arg("120").spawn().unwrap();
    let pid = sleeper.id();
    for style in ["another-start-time", "old-and-stale"] {
        let pkg = tiny(&dir.join(style));
        let lock = pkg.with_file_name("tiny-package.lock");
        std::fs::create_dir_all(&lock).unwrap();
        match style {
            // A live process, but not the one that took the lock (another start time).
            "another-start-time" => std::fs::write(
                lock.join("owner.json"),
                format!(r#"{{"pid":{pid},"start":"1"}}"#),
            )
            .unwrap(),
            // An older wakesim's lock: a live pid and no refresh for a minute.
            _ => {
                std::fs::write(lock.join("pid"), pid.to_string()).unwrap();
                let old = std::time::SystemTime::now() - Duration::from_secs(60);
                std::fs::File::open(&lock)
                    .unwrap()
                    .set_modified(old)
                    .unwrap();
            }
        }
        let started = Instant::now();
        let out = launch(&pkg, &[]);
        assert!(out.status.success(), "{style}: {}", text(&out));
        assert!(
            text(&out).contains("taking over the install lock"),
            "{}",
            text(&out)
        );
        assert!(started.elapsed() < Duration::from_secs(60), "{style}");
        assert!(complete(&pkg), "{style}");
        assert!(!lock.exists(), "{style}: the lock is released");
    }
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

#[test]
fn an_unreachable_registry_is_one_error_line_naming_the_package() {
    let dir = tempdir("unreachable");
    let pkg = tiny(&dir);
    let cache = dir.join("empty-npm-cache");
    let started = Instant::now();
    let out = launch(
        &pkg,
        &[
            ("npm_config_registry", "http://127.0.0.1:9/"),
            ("npm_config_cache", cache.to_string_lossy().as_ref()),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(line["type"], "error");
    let message = line["message"].as_str().unwrap();
    assert!(message.contains("tiny-package"), "{message}");
    assert!(message.contains("npm ci failed"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(120));
    assert!(!complete(&pkg));
    assert!(!pkg.with_file_name("tiny-package.lock").exists());
}

#[test]
fn wakesim_killed_or_interrupted_during_an_install_leaves_no_process_no_lock_and_no_install() {
    // SIGKILL: nothing of wakesim runs, its children see it die (parent-death signal, parent
    // watch). SIGINT (Ctrl-C) while the driver starts: the run stops (130), it does not go on.
    for sig in ["KILL", "INT"] {
        let dir = tempdir(&format!("killed-install-{sig}"));
        let pkg = tiny(&dir);
        // A scenario whose extension lives in the package: the launcher installs it first.
        let scn = dir.join("ext.toml");
        std::fs::write(
            &scn,
            "name = \"ext\"\nhost = \"pi@0.99.1\"\n\
             wake = { package = \"tiny-package\", extension = \"ms/index.js\" }\n\
             seeds = 1\nsnapshot_seed = 0\n[expect]\nverdict = \"pass\"\n",
        )
        .unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_wakesim"))
            .args(["run", &scn.to_string_lossy(), "--no-save"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let me = child.id();
        let temp = || {
            std::fs::read_dir(&dir).unwrap().flatten().any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".tmp-tiny-package")
            })
        };
        assert!(eventually(60, temp), "{sig}: the install never started");
        let started = Instant::now();
        unsafe_kill(me as i32, sig);
        let status = child.wait().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{sig}: it went on"
        );
        if sig == "INT" {
            use std::os::unix::process::ExitStatusExt;
            assert!(
                status.code() == Some(130) || status.signal() == Some(2),
                "{sig}: {status:?}"
            );
        }
        assert!(
            eventually(10, || tokened(me).is_empty()),
            "{sig}: left running: {:?}",
            tokened(me)
        );
        assert!(
            eventually(5, || !temp()),
            "{sig}: the temporary directory is removed"
        );
        let lock = pkg.with_file_name("tiny-package.lock");
        assert!(
            eventually(5, || !lock.exists()),
            "{sig}: the lock is released"
        );
        assert!(
            !complete(&pkg),
            "{sig}: a killed install does not look complete"
        );
        // The next install completes it.
        let out = launch(&pkg, &[]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(complete(&pkg));
    }
}

// ---------------------------------------------------------------------------------------------
// The long tail.

/// A copy of the passing model scenario, with a `regressions/` directory.
fn passing(dir: &Path) -> PathBuf {
    let scn = dir.join("passes.toml");
    std::fs::copy(root().join("tests/data/reliab/passes.toml"), &scn).unwrap();
    std::fs::create_dir_all(dir.join("regressions")).unwrap();
    scn
}

#[test]
fn a_corrupt_saved_regression_is_an_error_in_run_and_in_wakesim_testing() {
    let registry = Registry::builtin();
    let good = "format = \"wakesim-regression-1\"\nscenario = \"../passes.toml\"\nseed = 3\n\
                wakesim = \"0.1.0\"\nchoices = [\"fault on:2=0\"]\n";
    let cases: [(&str, &[u8]); 5] = [
        ("truncated", &good.as_bytes()[..70]),
        ("empty", b""),
        ("random", &[0x9f, 0x00, 0xff, 0x13, 0x80, 0x7f, 0xc3]),
        ("bad-choices", b"format = \"wakesim-regression-1\"\nscenario = \"../passes.toml\"\nseed = 3\nwakesim = \"0.1.0\"\nchoices = [\"not a choice\"]\n"),
        ("latin-1", b"# caf\xe9\nformat = \"wakesim-regression-1\"\n"),
    ];
    for (name, bytes) in cases {
        let dir = tempdir(&format!("corrupt-{name}"));
        let scn = passing(&dir);
        let file = dir.join("regressions").join(format!("{name}.toml"));
        std::fs::write(&file, bytes).unwrap();
        let out = wakesim_in(
            &dir,
            &["run", "passes.toml", "--seeds", "0..2", "--no-save"],
        );
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {t}");
        assert!(t.contains(&format!("{name}.toml")), "{name}: {t}");
        let err = wakesim::testing::Check::file(&registry, &scn)
            .seeds(0..2)
            .no_save()
            .try_run()
            .expect_err(name);
        assert!(err.0.contains(&format!("{name}.toml")), "{name}: {}", err.0);
    }
}

#[test]
fn a_huge_seed_range_with_a_time_budget_runs_in_constant_memory() {
    let dir = tempdir("huge-range");
    passing(&dir);
    let started = Instant::now();
    let out = wakesim_in(
        &dir,
        &[
            "run",
            "passes.toml",
            "--seeds",
            "0..10000000000000",
            "--time-budget",
            "1s",
            "--threads",
            "1",
            "--no-save",
        ],
    );
    let t = text(&out);
    // It used to allocate 39 GB of chunk ranges up front and abort (exit 134).
    assert!(matches!(out.status.code(), Some(0 | 1)), "{t}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(t.contains("--time-budget"), "{t}");
}

#[test]
fn an_empty_or_reversed_seed_range_in_wakesim_testing_is_an_error() {
    let registry = Registry::builtin();
    let scn = root().join("tests/data/reliab/passes.toml");
    for (a, b) in [(9, 2), (5, 5)] {
        let err = wakesim::testing::Check::file(&registry, &scn)
            .seeds(a..b)
            .no_save()
            .try_run()
            .expect_err("an empty range judges nothing");
        assert!(
            err.0.contains(&format!(".seeds({a}..{b}) is empty")),
            "{}",
            err.0
        );
    }
}

#[test]
fn temporary_files_of_killed_writes_are_listed_and_pruned() {
    let dir = tempdir("leftovers");
    passing(&dir);
    // A write killed half-way (its process, pid 2^22 - 1 here, is gone).
    let tmp = dir.join("regressions/.passes-seed-3.toml.wakesim-tmp-4194303");
    std::fs::write(&tmp, "format = \"wakes").unwrap();
    let list = wakesim_in(&dir, &["regressions", "list", "passes.toml"]);
    let t = text(&list);
    assert_eq!(list.status.code(), Some(0), "{t}");
    assert!(t.contains("wakesim-tmp-4194303"), "{t}");
    assert!(t.contains("killed half-way"), "{t}");
    let prune = wakesim_in(&dir, &["regressions", "prune", "passes.toml"]);
    assert_eq!(prune.status.code(), Some(0), "{}", text(&prune));
    assert!(text(&prune).contains("removed"), "{}", text(&prune));
    assert!(!tmp.exists());
}

#[test]
fn an_out_path_that_is_not_a_directory_is_named_as_such() {
    let dir = tempdir("not-a-dir");
    passing(&dir);
    std::fs::write(dir.join("a-file"), "").unwrap();
    let out = wakesim_in(
        &dir,
        &[
            "replay",
            "passes.toml",
            "--seed",
            "0",
            "--record",
            "--out",
            "a-file",
        ],
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("`a-file` is not a directory (a file)"), "{t}");
    assert!(!t.contains("os error 17"), "{t}");
}

#[test]
fn an_out_of_range_bound_names_its_key() {
    let dir = tempdir("bound-key");
    let scn = dir.join("b.toml");
    std::fs::write(
        &scn,
        "name = \"b\"\nhost = \"pi@0.99.1\"\n\
         wake = { extension = \"x.ts\", start_timeout_ms = 1000000000000 }\n\
         seeds = 1\nsnapshot_seed = 0\n[expect]\nverdict = \"pass\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("x.ts"), "export default function () {}\n").unwrap();
    let out = wakesim_in(&dir, &["run", "b.toml"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains("`start_timeout_ms` = 1000000000000 is out of range"),
        "{t}"
    );
}

#[test]
fn a_closed_stdout_is_an_error_on_stderr() {
    let dir = tempdir("closed-stdout");
    passing(&dir);
    let out = Command::new("sh")
        .args([
            "-c",
            &format!(
                "exec {} run passes.toml --seeds 0..2 --no-save >&-",
                env!("CARGO_BIN_EXE_wakesim")
            ),
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("stdout is closed"),
        "{}",
        text(&out)
    );
}
