//! Regression files: a shrunk (or recorded) run kept forever (proptest-regressions, shuttle).
//!
//! A regression file names the scenario it came from, the seed, the exact choice sequence, the
//! expectation and the wakesim version. The gate replays it strictly: every recorded choice must
//! be drawn again at the same site with the same bound, and all of them consumed. When the model
//! changed so that the sequence no longer fits, the regression is reported *stale*, with where it
//! stopped fitting, and never silently replayed as some other run.
//!
//! ```toml
//! format = "wakesim-regression/1"
//! scenario = "../pi/g2-two-wakes-during-preparation.toml"   # relative to this file
//! seed = 11
//! wakesim = "0.1.0"
//! choices = ["1/2 fault on", "0/3 fault rate", "3/4 await"]  # value/bound site
//! profile = "boundary"        # optional, from `explore`: delays from the boundary set,
//! messages_max = 2              # and its message cap
//!
//! [expect]                                                    # as in scenario files
//! verdict = "fail"
//! invariant = "single-starter"
//! ```

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::Deserialize;
use toml::Spanned;

use super::runner::Runner;
use super::verdict::shows_expected;
use crate::check::Invariant;
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::input::located;
use crate::outcome::{Outcome, RunResult};
use crate::scenario::{Expect, RawExpect, Scenario};
use crate::sim::choice::{Choice, Profile};

/// The `format` key that marks a TOML file as a regression.
pub const FORMAT: &str = "wakesim-regression/1";

/// A regression, loaded and validated.
#[derive(Clone, Debug)]
pub struct Regression {
    pub path: PathBuf,
    /// The scenario, loaded from the path the file names.
    pub scenario: Scenario,
    pub seed: u64,
    pub wakesim: String,
    pub expect: Expect,
    pub choices: Vec<Choice>,
    /// The choices were drawn by `explore` (delays from the boundary set only).
    pub profile: Profile,
}

/// How replaying a regression went.
pub enum Replayed {
    /// The recorded choices no longer fit the model: where and how.
    Stale { result: RunResult, why: String },
    /// The run; `met` says whether it showed the expectation.
    Run { result: RunResult, met: bool },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegression {
    format: Spanned<String>,
    scenario: Spanned<String>,
    seed: u64,
    wakesim: String,
    choices: Vec<Spanned<String>>,
    #[serde(default)]
    profile: Option<Spanned<String>>,
    /// Explore's message cap the choices were drawn under.
    #[serde(default)]
    messages_max: Option<u64>,
    expect: Spanned<RawExpect>,
}

/// Does this TOML text claim to be a regression file?
pub fn is_regression(text: &str) -> bool {
    toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|t| {
            t.get("format")
                .and_then(|f| f.as_str().map(|s| s.starts_with("wakesim-regression")))
        })
        .unwrap_or(false)
}

/// Choice labels are `&'static str` sites in the code; labels read from files are interned so
/// that a replay can compare them.
fn intern(label: &str) -> &'static str {
    static LABELS: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
    let mut set = LABELS
        .get_or_init(Default::default)
        .lock()
        .expect("label table");
    if let Some(l) = set.get(label) {
        return l;
    }
    let leaked: &'static str = Box::leak(label.to_string().into_boxed_str());
    set.insert(leaked);
    leaked
}

fn parse_choice(s: &str) -> std::result::Result<Choice, String> {
    let err = || format!("`{s}` is not a choice \"value/bound site\" with value < bound");
    let (vb, label) = s.split_once(' ').ok_or_else(err)?;
    let (v, b) = vb.split_once('/').ok_or_else(err)?;
    let (value, bound): (u64, u64) = (v.parse().map_err(|_| err())?, b.parse().map_err(|_| err())?);
    if value >= bound || label.trim().is_empty() {
        return Err(err());
    }
    Ok(Choice {
        bound,
        value,
        label: intern(label.trim()),
    })
}

impl Regression {
    pub fn load(path: &Path, registry: &Registry) -> Result<Regression> {
        let text =
            crate::io::read_text(path, crate::limits::INPUT_BYTES_MAX).map_err(|source| {
                Error::Io {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        Regression::parse(path, &text, registry)
    }

    pub fn parse(path: &Path, text: &str, registry: &Registry) -> Result<Regression> {
        let raw: RawRegression =
            toml::from_str(text).map_err(|e| crate::input::Cx { path, text }.toml(e))?;
        let err = |span: std::ops::Range<usize>, msg: String| located(path, text, span, msg);
        if raw.format.get_ref() != FORMAT {
            return Err(err(
                raw.format.span(),
                format!(
                    "unsupported regression format `{}`, expected `{FORMAT}`",
                    raw.format.get_ref()
                ),
            ));
        }
        let scenario_path = normalize(
            &path
                .parent()
                .unwrap_or(Path::new("."))
                .join(raw.scenario.get_ref()),
        );
        let mut scenario = Scenario::load(&scenario_path, registry).map_err(|e| match e {
            Error::Io { .. } => err(
                raw.scenario.span(),
                format!(
                    "the scenario `{}` cannot be read: {e}",
                    scenario_path.display()
                ),
            ),
            other => other,
        })?;
        if let Some(m) = raw.messages_max {
            scenario = scenario.scoped(m);
        }
        let choices = raw
            .choices
            .iter()
            .map(|c| parse_choice(c.get_ref()).map_err(|m| err(c.span(), m)))
            .collect::<Result<Vec<_>>>()?;
        let expect = raw.expect.get_ref().to_expect(&err, scenario.host)?;
        let profile = match raw
            .profile
            .as_ref()
            .map(|p| (p.get_ref().as_str(), p.span()))
        {
            None | Some(("random", _)) => Profile::default(),
            Some(("boundary", _)) => Profile {
                boundary_only: true,
            },
            Some((other, span)) => {
                return Err(err(
                    span,
                    format!("unknown profile `{other}`, expected random or boundary"),
                ));
            }
        };
        Ok(Regression {
            profile,
            path: path.to_path_buf(),
            scenario,
            seed: raw.seed,
            wakesim: raw.wakesim,
            expect,
            choices,
        })
    }

    /// Replay strictly and judge the expectation.
    pub fn replay(&self, runner: &mut Runner<'_>, tracing: bool) -> Replayed {
        let mut result = runner.run_profiled(
            &self.scenario,
            self.seed,
            self.choices.clone(),
            self.profile,
            tracing,
        );
        result.replay = Some(format!("wakesim replay {}", self.path.display()));
        if let Some(why) = result.stale.clone() {
            return Replayed::Stale { result, why };
        }
        let met = shows_expected(&self.expect, &result.outcome);
        Replayed::Run { result, met }
    }

    /// The TOML text of a regression.
    pub fn render(
        scenario_rel: &str,
        seed: u64,
        expect: &Expect,
        choices: &[Choice],
        comment: &str,
        explored: Option<u64>,
    ) -> String {
        let mut s = String::new();
        for line in comment.lines() {
            s += &format!("# {line}\n");
        }
        s += &format!("format = \"{FORMAT}\"\n");
        s += &format!("scenario = {}\n", toml_str(scenario_rel));
        s += &format!("seed = {seed}\n");
        s += &format!("wakesim = \"{}\"\n", env!("CARGO_PKG_VERSION"));
        if let Some(messages_max) = explored {
            s += "profile = \"boundary\"\n";
            s += &format!("messages_max = {messages_max}\n");
        }
        s += "choices = [\n";
        for c in choices {
            s += &format!(
                "    {},\n",
                toml_str(&format!("{}/{} {}", c.value, c.bound, c.label))
            );
        }
        s += "]\n\n[expect]\n";
        match expect {
            Expect::Pass => s += "verdict = \"pass\"\n",
            Expect::Panic => s += "verdict = \"panic\"\n",
            Expect::StepBudget => s += "verdict = \"step-budget\"\n",
            Expect::AdapterFault => s += "verdict = \"adapter-fault\"\n",
            Expect::Fail { invariant, also } => {
                s += &format!("verdict = \"fail\"\ninvariant = \"{invariant}\"\n");
                if !also.is_empty() {
                    let list: Vec<String> = also.iter().map(|i| format!("\"{i}\"")).collect();
                    s += &format!("also = [{}]\n", list.join(", "));
                }
            }
        }
        s
    }
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// `a/b/../c` → `a/c`, without touching the file system.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir if out.file_name().is_some() && !out.ends_with("..") => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `to` relative to the directory `from`, with forward slashes. Both are made absolute first
/// (against the current directory), so a relative and an absolute path mix correctly.
pub fn relative(from_dir: &Path, to: &Path) -> String {
    let absolute = |p: &Path| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| normalize(&std::env::current_dir().unwrap_or_default().join(p)))
    };
    let from: Vec<_> = absolute(from_dir)
        .components()
        .map(|c| c.as_os_str().to_owned())
        .collect();
    let to: Vec<_> = absolute(to)
        .components()
        .map(|c| c.as_os_str().to_owned())
        .collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// The outcome of a replayed regression, for reports.
pub fn outcome_of(r: &Replayed) -> &Outcome {
    match r {
        Replayed::Stale { result, .. } | Replayed::Run { result, .. } => &result.outcome,
    }
}

/// The expectation a run shows now: a failure of `target` (or of its first invariant) with the
/// others it breaks allowed, a pass, a panic, ...
pub fn expectation_of(r: &RunResult, target: Option<Invariant>) -> Expect {
    match &r.outcome {
        Outcome::Pass => Expect::Pass,
        Outcome::Panic(_) => Expect::Panic,
        Outcome::StepBudget { .. } => Expect::StepBudget,
        Outcome::AdapterFault(_) => Expect::AdapterFault,
        Outcome::Fail(vs) => {
            let invariant = target.unwrap_or(vs[0].invariant);
            Expect::Fail {
                invariant,
                also: (vs.iter().map(|v| v.invariant))
                    .filter(|i| *i != invariant)
                    .collect(),
            }
        }
    }
}

/// `scenarios/pi/x.toml` → `scenarios/regressions`: the `regressions` directory beside the
/// scenario's directory, where regressions are kept by default. Only inside the current
/// directory (the project): for a scenario elsewhere (`/some/dir/x.toml` would give
/// `/some/regressions`, one at the root `/regressions`) the caller must name a directory.
pub fn default_dir(scenario: &Path) -> Result<PathBuf> {
    let parent = scenario.parent().unwrap_or(Path::new("."));
    let dir = parent.parent().unwrap_or(parent).join("regressions");
    let outside = || {
        Error::Usage(format!(
            "{} is outside the current directory, so its regressions have no default place \
             (it would be {}): name a directory with --out DIR",
            scenario.display(),
            dir.display()
        ))
    };
    let base = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let (Ok(base), Ok(cwd)) = (
        base.canonicalize(),
        std::env::current_dir().and_then(|d| d.canonicalize()),
    ) else {
        return Err(outside());
    };
    if base.starts_with(&cwd) {
        Ok(dir)
    } else {
        Err(outside())
    }
}

/// The file a regression of seed `seed` of `scenario` is kept in, in `dir`.
pub fn seed_path(scenario: &Path, dir: &Path, seed: u64) -> PathBuf {
    let stem = scenario
        .file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
    dir.join(format!("{stem}-seed-{seed}.toml"))
}

/// A run to keep as a regression of its scenario file, expecting what it shows now.
pub struct Keep<'a> {
    pub scenario: &'a Path,
    pub seed: u64,
    pub run: &'a RunResult,
    /// The invariant it must keep breaking (default: its first).
    pub target: Option<Invariant>,
    /// The comment the file starts with.
    pub comment: String,
    /// Its choices were drawn by `explore` (delays from the boundary set) with this message cap.
    pub explored: Option<u64>,
}

/// Where [`Keep::write`] put a regression.
#[derive(Debug)]
pub struct Kept {
    /// The file written (or found already holding this very regression).
    pub path: PathBuf,
    /// A different regression already at the first-choice path, kept untouched.
    pub kept_existing: Option<PathBuf>,
    /// The file already held exactly this text: nothing was written.
    pub unchanged: bool,
}

impl Kept {
    /// What to tell the user, one line each.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        if let Some(old) = &self.kept_existing {
            s += &format!("kept {} (a different regression)\n", old.display());
        }
        if self.unchanged {
            s += &format!("{} already holds this regression\n", self.path.display());
        } else {
            s += &format!("wrote {}\n", self.path.display());
        }
        s
    }
}

impl Keep<'_> {
    /// Write the regression file at `path` (its directory made if need be), atomically and
    /// never over another file: an existing file at `path` is kept, and the new regression gets
    /// a distinct name carrying its expectation (`-<invariant>`, then `-2`, `-3`, ...).
    pub fn write(&self, path: &Path) -> Result<Kept> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::Io { path, source }
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let expect = expectation_of(self.run, self.target);
        let rel = relative(dir, self.scenario);
        let text = Regression::render(
            &rel,
            self.seed,
            &expect,
            &self.run.choices,
            &self.comment,
            self.explored,
        );
        let mut kept_existing = None;
        for candidate in candidates(path, &expect) {
            if let Ok(old) = std::fs::read(&candidate) {
                if old == text.as_bytes() {
                    return Ok(Kept {
                        path: candidate,
                        kept_existing,
                        unchanged: true,
                    });
                }
                kept_existing.get_or_insert_with(|| candidate.clone());
                continue;
            }
            match crate::io::write_new(&candidate, text.as_bytes()) {
                Ok(()) => {
                    return Ok(Kept {
                        path: candidate,
                        kept_existing,
                        unchanged: false,
                    });
                }
                // Another writer took the name in between: try the next one.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(&candidate)(e)),
            }
        }
        Err(Error::Usage(format!(
            "{}: every name for this regression is taken; remove old ones",
            path.display()
        )))
    }
}

/// The names a regression first meant for `path` may take: `path`, then with its expectation
/// (`x-seed-3-no-loss.toml`), then numbered.
fn candidates(path: &Path, expect: &Expect) -> impl Iterator<Item = PathBuf> {
    let stem = path
        .file_stem()
        .map_or("regression".into(), |s| s.to_string_lossy().into_owned());
    let label = match expect {
        Expect::Fail { invariant, .. } => invariant.name().to_string(),
        other => other.to_string(),
    };
    let at = |name: String| path.with_file_name(name);
    std::iter::once(path.to_path_buf())
        .chain(std::iter::once(at(format!("{stem}-{label}.toml"))))
        .chain((2..100).map(move |n| at(format!("{stem}-{label}-{n}.toml"))))
}
