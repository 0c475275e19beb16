//! `wakesim replay --format html`, checked in a real headless browser: the page is loaded by
//! Chromium from a file with every network feature off, its script runs, and the DOM it leaves
//! is queried for the lanes, the message arrows, the violation marks (each naming its invariant
//! and message), the event labels, the host-state legend and the details panel a click opens,
//! counted against the run itself.
//!
//! The browser is obtained on first use, as the real hosts obtain Node 22: from `WAKESIM_CHROMIUM`
//! or the PATH, else (as root, with apt-get) Debian's `chromium` package, installed once under a
//! file lock so parallel test binaries do not race, within a bound. Where no browser can be had
//! the test says so loudly on stderr and passes, so that `cargo test` stays green on a fresh
//! machine; under `CI=true` (`.ci/run` installs Chromium) a missing browser fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wakesim::engine::Runner;
use wakesim::family::Registry;
use wakesim::report::{LineKind, lines};
use wakesim::scenario::Scenario;

const SCENARIO: &str = "scenarios/pi/g2-two-wakes-during-preparation.toml";
const SEED: u64 = 2;
/// How long the browser may take to load and run the page (it is local and small).
const BROWSER_WAIT: Duration = Duration::from_secs(90);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh directory under the target directory, removed first if a past run left it.
fn scratch(name: &str) -> PathBuf {
    let dir = root().join("target").join("tmp").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// How long a first-use install of the browser may take (a download of a few hundred MB).
const INSTALL_WAIT: Duration = Duration::from_secs(900);

/// A browser on the PATH (or named by `WAKESIM_CHROMIUM`).
fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WAKESIM_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Written to the real stderr, past libtest's capture, so a passing test's note is seen.
fn loud(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "\nwakesim tests/html.rs: {message}\n");
}

/// Run `cmd` to its end within `INSTALL_WAIT`, its output appended to `log`; whether it succeeded.
fn bounded(cmd: &mut Command, log: &Path) -> Result<(), String> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("cannot write {}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return match status.success() {
                true => Ok(()),
                false => Err(format!(
                    "{cmd:?} failed ({status}); its output is in {}",
                    log.display()
                )),
            };
        }
        if started.elapsed() > INSTALL_WAIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{cmd:?} did not finish within {INSTALL_WAIT:?}"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Debian's `chromium`, installed with apt-get when this process may (root, apt-get on the
/// PATH, `WAKESIM_NO_INSTALL` unset); the package lists are refreshed once if the first try fails.
fn install_chromium() -> Result<PathBuf, String> {
    if std::env::var_os("WAKESIM_NO_INSTALL").is_some() {
        return Err("WAKESIM_NO_INSTALL is set".into());
    }
    if !rustix::process::geteuid().is_root() {
        return Err("not running as root, so apt-get cannot install it".into());
    }
    let on_path = |name: &str| {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .any(|d| d.join(name).is_file())
    };
    if !on_path("apt-get") {
        return Err("apt-get is not on the PATH (not a Debian-like system)".into());
    }
    let log = root()
        .join("target")
        .join("tmp")
        .join("chromium-install.log");
    let _ = std::fs::remove_file(&log);
    loud(&format!(
        "installing the browser for this test: apt-get install chromium (first use, at most {} min; output in {})",
        INSTALL_WAIT.as_secs() / 60,
        log.display()
    ));
    let started = Instant::now();
    let install = || {
        bounded(
            Command::new("apt-get").args([
                "install",
                "-y",
                "-q",
                "--no-install-recommends",
                "-o",
                "DPkg::Lock::Timeout=300",
                "chromium",
            ]),
            &log,
        )
    };
    if install().is_err() {
        bounded(Command::new("apt-get").args(["update", "-q"]), &log)?;
        install()?;
    }
    let found = find_chromium().ok_or("apt-get installed chromium but it is not on the PATH")?;
    loud(&format!(
        "installed {} in {} s",
        found.display(),
        started.elapsed().as_secs()
    ));
    Ok(found)
}

/// Chromium: found, else installed (one process at a time: a file lock under `target/`), else
/// the reason there is none.
fn chromium() -> Result<PathBuf, String> {
    if let Some(p) = find_chromium() {
        return Ok(p);
    }
    let dir = root().join("target").join("tmp");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let lock =
        std::fs::File::create(dir.join("chromium-install.lock")).map_err(|e| e.to_string())?;
    // Blocks while another test process installs; it is released when `lock` is dropped.
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| format!("cannot lock the browser install: {e}"))?;
    // Another process may have installed it while this one waited.
    if let Some(p) = find_chromium() {
        return Ok(p);
    }
    install_chromium()
}

/// The browser, or `None` after saying loudly why the browser check is skipped; under `CI=true`
/// a missing browser fails the test.
fn browser_or_skip(test: &str) -> Option<PathBuf> {
    match chromium() {
        Ok(p) => Some(p),
        Err(why) => {
            let message = format!(
                "SKIPPED {test}: it needs a headless Chromium and found none on the PATH \
                 (chromium, chromium-browser, google-chrome) or in WAKESIM_CHROMIUM, and could not \
                 install one: {why}. Install it (`apt-get install -y chromium` on Debian) to run it."
            );
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{message} (CI=true: the browser check may not be skipped)");
            }
            loud(&message);
            None
        }
    }
}

/// Load `page` in headless Chromium and return the DOM after its scripts ran.
fn dump_dom(browser: &Path, page: &Path, profile: &Path) -> String {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        // `#selftest`: the page clicks its first violation itself, as a person would.
        .arg(format!("file://{}#selftest", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", browser.display()));
    // Read stdout on a thread so a full pipe never stalls the browser; bound the wait.
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > BROWSER_WAIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} did not finish within {BROWSER_WAIT:?}",
                browser.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let dom = reader.join().expect("reader");
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    assert!(
        status.success(),
        "{} failed: {status}\n{err}",
        browser.display()
    );
    dom
}

/// The value of `name="..."` in the dumped `<body ...>` tag.
fn body_attr(dom: &str, name: &str) -> Option<String> {
    let body = &dom[dom.find("<body")?..];
    let tag = &body[..body.find('>')?];
    let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
    Some(tag[at..at + tag[at..].find('"')?].to_string())
}

fn count(dom: &str, name: &str) -> usize {
    body_attr(dom, name)
        .unwrap_or_else(|| panic!("the page's script did not set {name}; DOM:\n{dom}"))
        .parse()
        .expect("a count")
}

#[test]
fn the_html_timeline_renders_in_a_headless_browser_with_lanes_arrows_and_violations() {
    let dir = scratch("html-timeline");
    let out = Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args([
            "replay",
            SCENARIO,
            "--seed",
            &SEED.to_string(),
            "--format",
            "html",
        ])
        .current_dir(root())
        .output()
        .expect("wakesim runs");
    assert_eq!(out.status.code(), Some(1), "seed {SEED} fails");
    let html = String::from_utf8(out.stdout).expect("utf-8");

    // Self-contained: nothing for the browser to fetch.
    for external in [
        "<script src",
        "<link",
        "<img",
        "@import",
        "url(http",
        "src=\"http",
    ] {
        assert!(!html.contains(external), "the page loads `{external}`");
    }

    // What the page must show, from the run itself.
    let registry = Registry::builtin();
    let scn = Scenario::load(&root().join(SCENARIO), &registry).expect("scenario");
    let r = Runner::new(&registry).run_seed(&scn, SEED, true);
    let rows = lines(scn.host, &r.trace, &r.messages, r.outcome.violations());
    let violations = rows
        .iter()
        .filter(|l| l.kind == LineKind::Violation)
        .count();
    let messages: usize = rows.iter().map(|l| l.produced.len()).sum();
    assert!(
        violations > 0 && messages > 0,
        "a failing run with messages"
    );

    let page = dir.join("timeline.html");
    std::fs::write(&page, &html).expect("write page");
    let Some(browser) = browser_or_skip("the_html_timeline_renders_in_a_headless_browser") else {
        return;
    };
    let dom = dump_dom(&browser, &page, &dir.join("profile"));

    assert_eq!(body_attr(&dom, "data-ready").as_deref(), Some("1"));
    assert_eq!(count(&dom, "data-lanes"), 3, "producer, wake logic, host");
    assert_eq!(count(&dom, "data-events"), rows.len(), "one mark per line");
    assert_eq!(
        count(&dom, "data-arrows"),
        messages,
        "one arrow per message"
    );
    assert_eq!(count(&dom, "data-violations"), violations);
    assert!(count(&dom, "data-bands") >= 2, "host states as bands");
    // Hover text: every line's full text is on its mark.
    let first = rows
        .iter()
        .find(|l| l.kind != LineKind::Violation)
        .expect("a line");
    assert!(
        dom.contains(&format!("{} ms · {} · ", first.t, first.actor.name())),
        "the first line's hover text"
    );
    // Every event but the violations has its label on the page, not only on hover.
    assert_eq!(count(&dom, "data-labels"), rows.len() - violations);
    // Each violation mark names its invariant and message on the page.
    for v in rows.iter().filter(|l| l.kind == LineKind::Violation) {
        let (invariant, message) = v
            .text
            .trim_start_matches("✗ ")
            .split_once(": ")
            .expect("✗ invariant: message");
        assert!(
            dom.contains(&format!("data-invariant=\"{invariant}\"")),
            "the mark of {invariant}"
        );
        let shown: String = message.chars().take(20).collect();
        assert!(
            dom.contains(&format!("{invariant}: {shown}")),
            "the label of {}",
            v.text
        );
    }
    // A legend names each host state's band colour.
    let mut states: Vec<&str> = rows
        .iter()
        .map(|l| l.state)
        .filter(|s| !s.is_empty())
        .collect();
    states.sort();
    states.dedup();
    assert_eq!(
        count(&dom, "data-legend-states"),
        states.len(),
        "one legend entry per state"
    );
    for st in &states {
        assert!(
            dom.contains(&format!("class=\"state\" data-state=\"{st}\"")),
            "legend for {st}"
        );
    }
    // The click put the first violation's full line in the details panel.
    let v = rows
        .iter()
        .find(|l| l.kind == LineKind::Violation)
        .expect("a violation");
    let clicked = body_attr(&dom, "data-clicked").expect("the page clicked");
    assert!(
        clicked.contains(&v.t.to_string())
            && clicked.contains(v.text.trim_start_matches("✗ ").split(':').next().unwrap()),
        "{clicked}"
    );
    for lane in ["producer", "wake logic", "host"] {
        assert!(
            dom.contains(&format!("data-actor=\"{lane}\"")),
            "lane {lane}"
        );
    }
}
