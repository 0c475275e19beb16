//! `wakesim replay --format html`, checked in a real headless browser: the page is loaded by
//! Chromium from a file with every network feature off, its script runs, and the DOM it leaves
//! is queried for the lanes, the message arrows, the violation marks and the host-state bands,
//! counted against the run itself. Chromium is required: `.ci/run` installs it; without it this
//! test fails and says how to install it.

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

/// Chromium, from `WAKESIM_CHROMIUM` or the PATH.
fn chromium() -> PathBuf {
    if let Ok(p) = std::env::var("WAKESIM_CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "this test needs a headless Chromium and found none on the PATH (chromium, \
         chromium-browser, google-chrome) or in WAKESIM_CHROMIUM. Install it: \
         `apt-get install -y chromium` on Debian (.ci/run does)"
    );
}

/// Load `page` in headless Chromium and return the DOM after its scripts ran.
fn dump_dom(page: &Path, profile: &Path) -> String {
    let browser = chromium();
    let mut child = Command::new(&browser)
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
        .arg(format!("file://{}", page.display()))
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
    let dom = dump_dom(&page, &dir.join("profile"));

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
    for lane in ["producer", "wake logic", "host"] {
        assert!(
            dom.contains(&format!("data-actor=\"{lane}\"")),
            "lane {lane}"
        );
    }
}
