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
//! A gptme run is a Python project (`gptme.rs`): hash-pinned requirements, `session.json` with
//! the run's decisions (every draw at its named site, the ones the driver drew itself from
//! wakesim's words unfolded), this project's driver and scheduler with a wire that answers each
//! question from them (`real_gptme_replay.py`), the Python checker, a pytest file; with
//! `--patch`, `fix.patch` and `runtime/apply_fix.py`. Both writers open alike (`opening`).
//!
//! Nothing written names a path of this machine: the export checks every file it wrote.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::check::Invariant;
use crate::error::{Error, Result};
use crate::outcome::{Outcome, RunResult};
use crate::remote::tape::{self, Dir};
use crate::scenario::Scenario;

mod gptme;
mod pi;

pub use pi::ReportFacts;

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

/// What both writers open with, from the run and its recording.
pub(super) struct Opening<'a> {
    pub spec: &'a crate::remote::RemoteSpec,
    /// The recorded `hello` (the writer makes its paths relative to the export).
    pub hello: Value,
    /// The checks' parameters, as the exported checker reads them.
    pub params: Value,
    /// The invariants the exported checker judges, of those the host is held to.
    pub judged: Vec<&'static str>,
    /// wakesim's verdict: the judged invariants' first violations, as `session.json` says it.
    pub verdict: Vec<Value>,
    /// The same violations (the report's "What happens").
    pub violations: Vec<crate::check::Violation>,
    /// The run's timeline rows (the report's minimal story).
    pub story: String,
}

fn opening<'a>(
    scn: &'a Scenario,
    rec: &Recording,
    result: &RunResult,
    timeline: fn(&Scenario, &RunResult) -> String,
) -> Result<Opening<'a>> {
    let spec = scn.remote.as_ref().expect("a real host");
    if rec.hello.is_null() {
        return Err(bad(
            "the driver was started before the recording (no hello on the tape)".into(),
        ));
    }
    // The report states what the test judges; what only this project's checkers see (the
    // harness probe's view, ...) is not the package's story.
    let violations: Vec<crate::check::Violation> = (result.outcome.violations().iter())
        .filter(|v| JUDGED.contains(&v.invariant))
        .cloned()
        .collect();
    Ok(Opening {
        spec,
        hello: rec.hello.clone(),
        params: json!({
            "latency_ms_max": scn.check.latency_ms_max,
            "latency_requests_max": scn.check.latency_requests_max,
        }),
        judged: JUDGED
            .iter()
            .filter(|i| scn.host.invariants().contains(**i))
            .map(|i| i.name())
            .collect(),
        verdict: violations
            .iter()
            .map(|v| json!({"invariant": v.invariant.name(), "t": v.t.0, "msg": v.msg.map(|m| format!("m{}", m.0 + 1))}))
            .collect(),
        violations,
        story: story(&(timeline)(scn, result)),
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
    if let (Some(path), Some(text)) = (opts.patch, &patch) {
        let named: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("+++ b/"))
            .collect();
        if named.is_empty() {
            return Err(bad(format!(
                "{}: not a unified diff (no `+++ b/...` line)",
                path.display()
            )));
        }
        // gptme's fix is applied in the venv's site-packages: its paths start at the package,
        // as in gptme's repository.
        if spec.family.starts_with("gptme") && !named.iter().all(|n| n.starts_with("gptme/")) {
            return Err(bad(format!(
                "{}: a gptme fix names its files as in gptme's repository (`+++ b/gptme/server/session_models.py`); it names {}",
                path.display(),
                named.join(", ")
            )));
        }
    }
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

    let open = opening(scn, &rec, &result, opts.timeline)?;
    let files = if spec.family.starts_with("gptme") {
        gptme::files(scn, open, &rec, &root, patch.as_deref())?
    } else {
        pi::files(scn, open, &rec, &root, patch.as_deref())?
    };
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
    // The export is the package's bug report, not this project's: every name of this project
    // in the runtime it copies (comments, marker texts, driver names, environment variables) is
    // made neutral, in every file alike, so the replay still matches its recording.
    let files: Vec<(String, String)> = files
        .into_iter()
        .map(|(name, text)| (neutral(&name), neutral(&text)))
        .collect();
    // Nothing may name this machine's paths.
    let mut leaks = Vec::new();
    let home = std::env::var("HOME").unwrap_or_default();
    let cache = crate::remote::home::cache_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let needles: Vec<String> = [root.to_string_lossy().into_owned(), home, cache]
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

/// The word that stands for this project's name in an export.
const NEUTRAL: &str = "harness";

/// `text` with every occurrence of this project's name, in any case, replaced by [`NEUTRAL`] in
/// the same case (all capitals, a capital first, or lower case). The two words have the same
/// length, so nothing that measures a text (pi's token estimate of a message) changes.
pub fn neutral(text: &str) -> String {
    const NAME: &[u8] = b"wakesim";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut i = 0;
    while i + NAME.len() <= bytes.len() {
        let w = &bytes[i..i + NAME.len()];
        if w.eq_ignore_ascii_case(NAME) {
            out.push_str(&text[last..i]);
            if w.iter().all(u8::is_ascii_uppercase) {
                out.push_str(&NEUTRAL.to_ascii_uppercase());
            } else if w[0].is_ascii_uppercase() {
                out.push_str("Harness");
            } else {
                out.push_str(NEUTRAL);
            }
            i += NAME.len();
            last = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[last..]);
    out
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

#[cfg(test)]
mod tests {
    use super::neutral;

    #[test]
    fn the_projects_name_is_replaced_in_its_case_and_length() {
        let text = "[wakesim m1] WAKESIM_HOST_CACHE Wakesim's wakesimKind ünï wAkEsIm";
        let out = neutral(text);
        assert_eq!(
            out,
            "[harness m1] HARNESS_HOST_CACHE Harness's harnessKind ünï harness"
        );
        assert_eq!(out.len(), text.len());
        assert_eq!(neutral("nothing here"), "nothing here");
    }
}
