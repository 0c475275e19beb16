//! The user docs cannot rot unnoticed. This file proves five things about README.md,
//! ARCHITECTURE.md, CHANGELOG.md and every page under docs/:
//!
//! 1. every relative link resolves: the file exists, and a `#anchor` names a heading of the target
//!    page (GitHub's slug) or an explicit `<a id="...">`;
//! 2. the README stays a front page: at most 300 lines and 30 KB, and none of the measurement-log
//!    markers (a branch name in backticks, "stop N", "load average", "round (", "Nth round");
//!    ARCHITECTURE.md stays a code map (at most 25 KB, with its entry points) and CHANGELOG.md keeps
//!    its Unreleased section;
//! 3. no tracked file cites a document that is not in the repository (the shared background notes
//!    the host pages replaced);
//! 4. every shell command shown in a ```console block runs: each `$ ` line is executed from the
//!    repository root with the built `wakesim` binary standing for `wakesim`, `cargo run --release
//!    --` and `cargo run --`; its exit code is checked (0, or the `? N` line right after it) and so
//!    is its output where one is shown (trycmd's conventions: a line `...` stands for any number of
//!    lines, `[..]` for any part of a line). The few commands that cannot run inside `cargo test`
//!    are on `NOT_RUN`, each with its reason, and each is checked to be what its reason says;
//! 5. the references are complete against the code: `docs/reference/cli.md` is what clap
//!    generates (`WAKESIM_BLESS=1 cargo test --test docs` rewrites it), and every host, invariant
//!    and fault `wakesim list` prints has its entry.
//!
//! How it fails: each test collects every breach, then panics with the whole list, naming the
//! file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages this file holds to its rules, repository-relative, in a stable order.
fn pages() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for top in ["README.md", "ARCHITECTURE.md", "CHANGELOG.md"] {
        if root().join(top).is_file() {
            out.push(PathBuf::from(top));
        }
    }
    let mut stack = vec![root().join("docs")];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .expect("docs/ is readable")
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "md") {
                out.push(
                    p.strip_prefix(root())
                        .expect("under the root")
                        .to_path_buf(),
                );
            }
        }
    }
    out.sort();
    out
}

fn read(rel: &Path) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{}: {e}", rel.display()))
}

/// Lines outside fenced code blocks, with their 1-based numbers, inline code removed (a link
/// shown as code is not a link).
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut kept = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                kept.push(c);
            }
        }
        out.push((i + 1, kept));
    }
    out
}

/// GitHub's heading slug: lower case, letters, digits, `-` and `_` kept, spaces to `-`, the rest
/// dropped; a repeated slug gets `-1`, `-2`, ...
fn slug(heading: &str) -> String {
    let text: String = heading.replace('`', "");
    // A heading's link text counts, its target does not: `[a](b)` reads as `a`.
    let mut plain = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ']' && chars.peek() == Some(&'(') {
            for d in chars.by_ref() {
                if d == ')' {
                    break;
                }
            }
        } else if c != '[' {
            plain.push(c);
        }
    }
    plain
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor a page defines: its headings' slugs and its explicit `id="..."`s.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            let h = h.trim_start_matches('#');
            if h.starts_with(' ') {
                let s = slug(h);
                let n = seen.entry(s.clone()).or_insert(0);
                out.insert(if *n == 0 {
                    s.clone()
                } else {
                    format!("{s}-{n}")
                });
                *n += 1;
            }
        }
        let mut rest = line;
        while let Some(i) = rest.find("id=\"") {
            let after = &rest[i + 4..];
            if let Some(j) = after.find('"') {
                out.insert(after[..j].to_string());
                rest = &after[j..];
            } else {
                break;
            }
        }
    }
    out
}

/// The `(target)` of every inline link `[text](target)` in a prose line.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        match after.find(')') {
            Some(j) => {
                out.push(after[..j].trim().to_string());
                rest = &after[j..];
            }
            None => break,
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    let mut anchor_cache: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut count = 0;
    for page in pages() {
        let text = read(&page);
        let dir = page.parent().unwrap_or(Path::new("")).to_path_buf();
        for (n, line) in prose_lines(&text) {
            for target in link_targets(&line) {
                let target = target.split_whitespace().next().unwrap_or("").to_string();
                if target.is_empty()
                    || target.contains("://")
                    || target.starts_with("mailto:")
                    || target.starts_with('<')
                {
                    continue;
                }
                count += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p.to_string(), Some(a.to_string())),
                    None => (target.clone(), None),
                };
                let file = if path.is_empty() {
                    page.clone()
                } else {
                    normalise(&dir.join(&path))
                };
                let abs = root().join(&file);
                if !abs.exists() {
                    broken.push(format!(
                        "{}:{n}: `{target}`: {} does not exist",
                        page.display(),
                        file.display()
                    ));
                    continue;
                }
                if let Some(anchor) = anchor {
                    if !abs.is_file() || abs.extension().is_none_or(|e| e != "md") {
                        broken.push(format!(
                            "{}:{n}: `{target}`: an anchor into a file that is not a Markdown page",
                            page.display()
                        ));
                        continue;
                    }
                    let known = anchor_cache
                        .entry(file.clone())
                        .or_insert_with(|| anchors(&read(&file)));
                    if !known.contains(&anchor) {
                        broken.push(format!(
                            "{}:{n}: `{target}`: {} has no heading or id `{anchor}`",
                            page.display(),
                            file.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        count > 50,
        "only {count} relative links found: is the scan broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `a/b/../c` → `a/c`, without touching the file system (a link may point above `docs/`).
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn the_slug_is_githubs() {
    assert_eq!(slug(" A race, worked through"), "a-race-worked-through");
    assert_eq!(slug(" `[producers]` on pi"), "producers-on-pi");
    assert_eq!(
        slug(" H-5: pi 0.58, the older host"),
        "h-5-pi-058-the-older-host"
    );
    assert_eq!(slug(" See [the guide](x.md) now"), "see-the-guide-now");
    let a = anchors("# T\n## Same\n## Same\n<a id=\"g-1\"></a>\n```\n## not a heading\n```\n");
    assert!(a.contains("same") && a.contains("same-1") && a.contains("g-1"));
    assert!(!a.contains("not-a-heading"));
}

/// Markers of a measurement log, which belong in CHANGELOG.md, not on the front page.
fn log_markers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    const ORDINALS: [&str; 10] = [
        "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
        "tenth",
    ];
    for (n, line) in text.lines().enumerate() {
        let lower = line.to_lowercase();
        let mut hit = |what: &str| out.push(format!("README.md:{}: {what}: {line}", n + 1));
        if lower.contains("branch `") {
            hit("a branch name");
        }
        if lower.contains("load average") {
            hit("a load average");
        }
        if lower.contains("round (") {
            hit("a round");
        }
        for o in ORDINALS {
            if lower.contains(&format!("{o} round")) {
                hit("an Nth round");
            }
        }
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        for w in words.windows(2) {
            if w[0] == "stop" && w[1].chars().all(|c| c.is_ascii_digit()) {
                hit("a stop number");
            }
        }
    }
    out
}

#[test]
fn the_readme_is_a_front_page() {
    let text = read(Path::new("README.md"));
    let lines = text.lines().count();
    assert!(lines <= 300, "README.md has {lines} lines, more than 300");
    assert!(
        text.len() <= 30 * 1024,
        "README.md is {} bytes, more than 30 KB",
        text.len()
    );
    let markers = log_markers(&text);
    assert!(
        markers.is_empty(),
        "README.md holds measurement-log markers (they go to CHANGELOG.md):\n{}",
        markers.join("\n")
    );
    // The checker itself: each marker kind is caught.
    let planted = "on branch `x`\nat stop 21\nload average 3\nthe round (x)\nThird round\nstop";
    assert_eq!(log_markers(planted).len(), 5, "{:?}", log_markers(planted));
}

/// The code map stays a map: rust-analyzer's shape, short enough to read in one sitting.
#[test]
fn the_code_map_is_a_map() {
    let text = read(Path::new("ARCHITECTURE.md"));
    assert!(
        text.len() <= 25 * 1024,
        "ARCHITECTURE.md is {} bytes, more than 25 KB: move type-by-type detail into the modules' docs",
        text.len()
    );
    for heading in [
        "## Entry points",
        "## Code map",
        "## Cross-cutting concerns",
    ] {
        assert!(
            text.lines().any(|l| l == heading),
            "ARCHITECTURE.md has no `{heading}` section"
        );
    }
    let changelog = read(Path::new("CHANGELOG.md"));
    assert!(
        changelog.contains("## [Unreleased]"),
        "CHANGELOG.md keeps an `## [Unreleased]` section (Keep a Changelog)"
    );
}

#[test]
fn no_tracked_file_cites_a_document_outside_the_repository() {
    // Built from parts, so that this file does not cite it.
    let needles = [concat!("..", "/shared"), concat!("wake-", "systems")];
    let names = tracked_files();
    let mut hits = Vec::new();
    let mut files = 0;
    for name in names {
        let Ok(text) = std::fs::read_to_string(root().join(&name)) else {
            continue; // binary, or deleted in the work tree
        };
        files += 1;
        for (n, line) in text.lines().enumerate() {
            if needles.iter().any(|s| line.contains(s)) {
                hits.push(format!("{name}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(files > 100, "only {files} tracked text files read");
    assert!(
        hits.is_empty(),
        "tracked files cite documents users do not have (cite docs/hosts/ or docs/invariants.md):\n{}",
        hits.join("\n")
    );
}

/// The files git tracks; outside a git checkout (a source archive), every file but the ignored
/// directories, which is what a checkout would track.
fn tracked_files() -> Vec<String> {
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output();
    if let Some(out) = listed.ok().filter(|o| o.status.success()) {
        return (out.stdout.split(|b| *b == 0))
            .filter(|n| !n.is_empty())
            .map(|n| String::from_utf8_lossy(n).to_string())
            .collect();
    }
    const SKIP: [&str; 6] = [
        ".git",
        "target",
        "node_modules",
        "__pycache__",
        ".cache",
        ".sandbox",
    ];
    let mut out = Vec::new();
    let mut stack = vec![root()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            if SKIP.contains(&name.as_str()) || name.starts_with(".venv") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(root()) {
                out.push(rel.to_string_lossy().to_string());
            }
        }
    }
    out.sort();
    out
}

/// Why a command shown in the docs is not run by this test.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Why {
    /// One of the two commands of the README that `.ci/run` runs (as written, or the main job's
    /// command on the built-in scenarios): running them here would run the gate inside itself.
    Ci,
    /// A documented long sweep: minutes to hours of CPU; the page that shows it says how long.
    LongSweep,
    /// Not a `wakesim` command: another tool the page shows how to call.
    OtherTool,
}

/// The commands of ```console blocks this test does not run, each with its reason. Anything not
/// listed here runs. An entry that no page shows any more is an error (a stale list).
const NOT_RUN: &[(&str, Why)] = &[
    ("cargo test", Why::Ci),
    ("cargo run --release -- run", Why::Ci),
    (
        "WAKESIM_SEEDS_MULTIPLIER=20 cargo run --release -- run --no-save",
        Why::LongSweep,
    ),
    ("scripts/long-run.sh", Why::LongSweep),
    (
        "WAKESIM_SEEDS_MULTIPLIER=20 wakesim run scenarios/pi scenarios/gptme",
        Why::LongSweep,
    ),
    (
        "WAKESIM_SEEDS_MULTIPLIER=20 wakesim run scenarios/pi scenarios/gptme --search anchored",
        Why::LongSweep,
    ),
    (
        "WAKESIM_SEEDS_MULTIPLIER=20 cargo test --release --test matrix -- --ignored --nocapture",
        Why::LongSweep,
    ),
    ("cargo insta review", Why::OtherTool),
    ("cargo install cargo-insta --locked", Why::OtherTool),
];

/// One `$ ` line of a ```console block with what the page says about it.
struct Shown {
    page: PathBuf,
    line: usize,
    command: String,
    status: Status,
    output: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Status {
    Code(i32),
    Failed,
}

fn shown_commands() -> Vec<Shown> {
    let mut out = Vec::new();
    for page in pages() {
        let text = read(&page);
        let mut in_console = false;
        let mut in_other = false;
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            if t.starts_with("```") {
                if in_console || in_other {
                    in_console = false;
                    in_other = false;
                } else if t.trim_end() == "```console" {
                    in_console = true;
                } else {
                    in_other = true;
                }
                continue;
            }
            if !in_console {
                continue;
            }
            if let Some(cmd) = line.strip_prefix("$ ") {
                out.push(Shown {
                    page: page.clone(),
                    line: i + 1,
                    command: cmd.trim().to_string(),
                    status: Status::Code(0),
                    output: Vec::new(),
                });
            } else if let Some(last) = out.last_mut().filter(|s| s.page == page) {
                let status_line = line.strip_prefix("? ").map(str::trim);
                match status_line {
                    Some(s) if last.output.is_empty() && last.status == Status::Code(0) => {
                        last.status = match s {
                            "failed" => Status::Failed,
                            "success" => Status::Code(0),
                            n => Status::Code(n.parse().unwrap_or_else(|_| {
                                panic!("{}:{}: `? {n}` is not a status", page.display(), i + 1)
                            })),
                        };
                    }
                    _ => last.output.push(line.trim_end().to_string()),
                }
            } else {
                panic!(
                    "{}:{}: a ```console block must start with a `$ ` command line",
                    page.display(),
                    i + 1
                );
            }
        }
    }
    for s in &mut out {
        while s.output.last().is_some_and(String::is_empty) {
            s.output.pop();
        }
    }
    out
}

/// Split a command line as a POSIX shell would for the simple commands the docs show: words,
/// single and double quotes, backslash escapes. Anything a shell would interpret further (pipes,
/// redirections, substitutions, `;`, `&`) is refused: such a command cannot be run as shown.
fn words(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut any = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            '\'' => {
                any = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("an unclosed '".into()),
                    }
                }
            }
            '"' => {
                any = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => cur.push(chars.next().ok_or("a trailing \\")?),
                        Some('$' | '`') => return Err("a substitution inside \"...\"".into()),
                        Some(c) => cur.push(c),
                        None => return Err("an unclosed \"".into()),
                    }
                }
            }
            '\\' => {
                any = true;
                cur.push(chars.next().ok_or("a trailing \\")?);
            }
            '|' | '>' | '<' | ';' | '&' | '$' | '`' | '(' | ')' | '*' | '?' => {
                return Err(format!("`{c}`: the shell would interpret it"));
            }
            c => {
                any = true;
                cur.push(c);
            }
        }
    }
    if any {
        out.push(cur);
    }
    Ok(out)
}

/// Environment settings a shown command makes before its program (`NAME=value ...`).
type Env = Vec<(String, String)>;

/// What a shown command runs: environment settings and the binary's arguments, or why not.
fn plan(command: &str) -> Result<(Env, Vec<String>), String> {
    let mut ws = words(command)?;
    let mut env = Vec::new();
    while let Some(w) = ws.first() {
        match w.split_once('=') {
            Some((k, v))
                if !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_') =>
            {
                env.push((k.to_string(), v.to_string()));
                ws.remove(0);
            }
            _ => break,
        }
    }
    let args = if ws.first().is_some_and(|w| w == "wakesim") {
        ws[1..].to_vec()
    } else if ws.starts_with(&[
        "cargo".into(),
        "run".into(),
        "--release".into(),
        "--".into(),
    ]) {
        ws[4..].to_vec()
    } else if ws.starts_with(&["cargo".into(), "run".into(), "--".into()]) {
        ws[3..].to_vec()
    } else {
        return Err(format!(
            "not a wakesim command (`wakesim`, `cargo run --release --` or `cargo run --`): `{}`",
            ws.first().map_or("", String::as_str)
        ));
    };
    Ok((env, args))
}

/// trycmd's matching: `...` alone on a line stands for any number of lines, `[..]` for any part
/// of a line; trailing spaces do not count.
fn lines_match(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e.trim() == "..." => {
            (0..=actual.len()).any(|k| lines_match(rest, &actual[k..]))
        }
        Some((e, rest)) => actual
            .split_first()
            .is_some_and(|(a, arest)| line_matches(e, a.trim_end()) && lines_match(rest, arest)),
    }
}

fn line_matches(expected: &str, actual: &str) -> bool {
    let parts: Vec<&str> = expected.split("[..]").collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() {
        return false;
    }
    let mut at = first.len();
    for mid in &parts[1..parts.len() - 1] {
        match actual[at..].find(mid) {
            Some(i) => at += i + mid.len(),
            None => return false,
        }
    }
    actual[at..].ends_with(last)
}

#[test]
fn the_matcher_is_trycmds() {
    let e = |s: &str| s.lines().map(str::to_string).collect::<Vec<_>>();
    assert!(lines_match(&e("a\n...\nz"), &["a", "b", "c", "z"]));
    assert!(lines_match(&e("a\n...\nz"), &["a", "z"]));
    assert!(!lines_match(&e("a\nz"), &["a", "b", "z"]));
    assert!(lines_match(&e("x [..] y"), &["x 1 2 y"]));
    assert!(lines_match(
        &e("[..]✗ fifo[..]"),
        &["  10 check ✗ fifo: m2"]
    ));
    assert!(!lines_match(&e("x [..] y"), &["x 1 2 z"]));
    assert!(!lines_match(&e("ab[..]ba"), &["aba"]));
    assert_eq!(
        words("a 'b c' \"d\\\"e\" f\\ g").unwrap(),
        ["a", "b c", "d\"e", "f g"]
    );
    assert!(words("a | b").is_err() && words("a > f").is_err());
    let (env, args) = plan("WAKESIM_SEED=3 cargo run --release -- list").unwrap();
    assert_eq!((env.len(), args), (1, vec!["list".to_string()]));
    assert!(plan("npm ci").is_err());
}

#[test]
fn every_console_command_runs_as_shown() {
    let shown = shown_commands();
    assert!(shown.len() >= 10, "only {} commands found", shown.len());
    let ci = read(Path::new(".ci/run"));
    let mut failures = Vec::new();

    // The list of exceptions is itself checked: each entry is shown somewhere, and is what its
    // reason says.
    for (cmd, why) in NOT_RUN {
        if !shown.iter().any(|s| s.command == *cmd) {
            failures.push(format!("NOT_RUN lists `{cmd}`, which no page shows"));
        }
        match why {
            Why::Ci => {
                if !ci.lines().any(|l| l.trim().starts_with(cmd)) {
                    failures.push(format!(
                        "`{cmd}` is listed as run by .ci/run, which does not"
                    ));
                }
            }
            Why::LongSweep => {
                if plan(cmd).is_ok_and(|(_, a)| a.iter().any(|w| w == "--seeds")) {
                    failures.push(format!(
                        "`{cmd}` names its seeds: run it with a small range"
                    ));
                }
            }
            Why::OtherTool => {
                if plan(cmd).is_ok_and(|(_, a)| a.first().is_some_and(|w| w != "--")) {
                    failures.push(format!("`{cmd}` is a wakesim command: it must run"));
                }
            }
        }
    }

    // A shrink shown in the docs writes below target/ (`--out target/doc-shrink`).
    let _ = std::fs::remove_dir_all(root().join("target/doc-shrink"));
    let before = untracked();
    let bin = env!("CARGO_BIN_EXE_wakesim");
    let started = Instant::now();
    let mut ran = 0;
    for s in &shown {
        let at = format!("{}:{}", s.page.display(), s.line);
        if NOT_RUN.iter().any(|(c, _)| *c == s.command) {
            continue;
        }
        let (env, args) = match plan(&s.command) {
            Ok(p) => p,
            Err(why) => {
                failures.push(format!(
                    "{at}: `{}` cannot run: {why} (or list it in NOT_RUN with its reason)",
                    s.command
                ));
                continue;
            }
        };
        ran += 1;
        let mut cmd = Command::new(bin);
        cmd.args(&args)
            .current_dir(root())
            .env_remove("WAKESIM_SEEDS_MULTIPLIER")
            .env_remove("WAKESIM_FULL_GATE")
            .env_remove("WAKESIM_SEED")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &env {
            cmd.env(k, v);
        }
        let t = Instant::now();
        let out = run_bounded(cmd, Duration::from_secs(120));
        let Some(out) = out else {
            failures.push(format!("{at}: `{}` ran past 120 s", s.command));
            continue;
        };
        let code = out.status.code().unwrap_or(-1);
        let ok = match s.status {
            Status::Code(c) => code == c,
            Status::Failed => code != 0,
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let all = format!("{stdout}{stderr}");
        let actual: Vec<&str> = all.lines().collect();
        let shown_ok = s.output.is_empty() || lines_match(&s.output, &actual);
        if !ok || !shown_ok {
            failures.push(format!(
                "{at}: `{}`: exit {code} (expected {:?}){}\n--- shown ---\n{}\n--- printed ---\n{}",
                s.command,
                s.status,
                if shown_ok { "" } else { ", output differs" },
                s.output.join("\n"),
                tail(&all, 60)
            ));
        }
        if t.elapsed() > Duration::from_secs(20) {
            eprintln!(
                "note: {at}: `{}` took {:?}; keep doc commands short",
                s.command,
                t.elapsed()
            );
        }
    }
    let after = untracked();
    for f in after.difference(&before) {
        failures.push(format!("a doc command left a file in the repository: {f}"));
    }
    eprintln!("{ran} doc commands ran in {:?}", started.elapsed());
    assert!(
        failures.is_empty(),
        "{} failure(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Untracked files outside ignored directories (what a doc command might leave behind).
fn untracked() -> BTreeSet<String> {
    let out = Command::new("git")
        .args(["ls-files", "--others", "--exclude-standard"])
        .current_dir(root())
        .output()
        .expect("git ls-files");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Run to its end, or kill it after `limit` (a doc command that hangs must not hang the suite).
fn run_bounded(mut cmd: Command, limit: Duration) -> Option<std::process::Output> {
    let child = cmd.spawn().expect("the wakesim binary starts");
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => Some(out.expect("the command's output")),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &id.to_string()]).status();
            None
        }
    }
}

/// docs/reference/cli.md as clap renders the command line: one section per subcommand with its
/// long help.
fn cli_reference() -> String {
    let mut cmd = wakesim::cmd::command().bin_name("wakesim");
    cmd.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
         Generated from the command line's definition (clap): do not edit by hand. Regenerate with\n\
         `WAKESIM_BLESS=1 cargo test --test docs cli_reference`; `cargo test` fails while this page\n\
         differs from what the code prints. Exit codes: 0 when every expectation is met, 1 when one\n\
         is not, 2 for a usage or input error (130 when `run` is interrupted).\n\n",
    );
    // clap's own `help` subcommand is left out: `wakesim help X` is `wakesim X --help`.
    let subs: Vec<clap::Command> = (cmd.get_subcommands())
        .filter(|s| s.get_name() != "help")
        .cloned()
        .collect();
    for s in &subs {
        out.push_str(&format!(
            "- [`wakesim {}`](#wakesim-{}): {}\n",
            s.get_name(),
            s.get_name(),
            s.get_about()
                .map(|a| a.to_string())
                .unwrap_or_default()
                .lines()
                .next()
                .unwrap_or("")
        ));
    }
    out.push_str("\n## wakesim\n\n```text\n");
    out.push_str(cmd.render_long_help().to_string().trim_end());
    out.push_str("\n```\n");
    for mut s in subs {
        out.push_str(&format!("\n## wakesim {}\n\n```text\n", s.get_name()));
        out.push_str(s.render_long_help().to_string().trim_end());
        out.push_str("\n```\n");
    }
    out
}

#[test]
fn cli_reference_is_generated_from_clap() {
    let path = root().join("docs/reference/cli.md");
    let want = cli_reference();
    if std::env::var_os("WAKESIM_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/reference/cli.md differs from what clap prints; regenerate it with \
         `WAKESIM_BLESS=1 cargo test --test docs cli_reference` and commit it"
    );
}

/// `wakesim list --format json`'s lines of one type: their `name` fields.
fn listed(kind: &str) -> Vec<(String, Option<String>)> {
    let out = Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args(["list", "--format", "json"])
        .current_dir(root())
        .output()
        .expect("wakesim list");
    assert!(out.status.success());
    let mut v = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let j: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if j["type"] == kind {
            v.push((
                j["name"].as_str().expect("a name").to_string(),
                j["family"].as_str().map(str::to_string),
            ));
        }
    }
    assert!(!v.is_empty(), "`wakesim list` printed no {kind}");
    v
}

#[test]
fn the_references_name_every_host_invariant_and_fault() {
    let mut missing = Vec::new();
    let hosts = read(Path::new("docs/hosts/index.md"));
    for (h, _) in listed("host") {
        if !hosts.contains(&format!("| `{h}` |")) {
            missing.push(format!("docs/hosts/index.md: host `{h}`"));
        }
    }
    let inv = read(Path::new("docs/invariants.md"));
    for (i, _) in listed("invariant") {
        if !inv.contains(&format!("\n## {i}\n")) {
            missing.push(format!("docs/invariants.md: a section `## {i}`"));
        }
    }
    let faults = read(Path::new("docs/reference/faults.md"));
    for (f, family) in listed("fault") {
        let family = family.expect("a fault's family");
        let row = format!("| `{f}` | {family} |");
        if !faults.contains(&row) {
            missing.push(format!("docs/reference/faults.md: a row `{row}`"));
        }
    }
    let windows = listed("window");
    for (w, _) in windows {
        if !hosts.contains(&format!("| `{w}` |")) {
            missing.push(format!("docs/hosts/index.md: race window `{w}`"));
        }
    }
    assert!(
        missing.is_empty(),
        "missing from the references:\n{}",
        missing.join("\n")
    );
}
