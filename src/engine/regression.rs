//! Regression files: a shrunk (or recorded) run kept forever (proptest-regressions, shuttle).
//!
//! A regression file names the scenario it came from, the seed, the exact choice sequence and
//! the wakesim version. It is replayed strictly: every recorded choice must be drawn again at the
//! same site with the same bound, and all of them consumed.
//!
//! What it must show (as proptest and Hypothesis treat their saved failures):
//! - **No `[expect]`** (what `run` saves and `shrink` writes for a failure its scenario does not
//!   expect): the run must meet its scenario's **current** expectation, judged as one seed of it
//!   (`verdict::allowed`): a pass for a passing scenario, a pass or an allowed failure for a
//!   failing one. A saved failure fails until the bug is fixed, and passes after.
//! - **A pinned `[expect]`** (a *witness*: `shrink` of a failure its scenario expects, and the
//!   committed regressions of the reference bugs): the run must show exactly that.
//!
//! When the model changed so that the sequence no longer fits, the regression is *stale*: it is
//! run again as its seed (judged the same way) with a one-line notice naming the choice, label
//! and bound that changed, never silently replayed as some other run; the gate
//! (`tests/scenarios.rs`) fails on a stale committed regression so that it is re-shrunk.
//!
//! ```toml
//! format = "wakesim-regression/1"
//! scenario = "../pi/g2-two-wakes-during-preparation.toml"   # relative to this file
//! seed = 11
//! wakesim = "0.1.0"
//! choices = ["1/2 fault on", "0/3 fault rate", "3/4 await"]  # value/bound site
//! profile = "boundary"        # optional, from `explore`: delays from the boundary set,
//! messages_max = 2              # and its message cap,
//! interior = 3                  # and its interior points per delay (`--interior`), if any
//!
//! [expect]                       # optional, as in scenario files: pins a witness
//! verdict = "fail"
//! invariant = "single-starter"
//! ```
//!
//! Files are never overwritten: `save_new` writes a temporary file and links it to its name,
//! which fails when the name is taken (the existing file is kept and reported). The name
//! carries the scenario, what broke and the seed: `<stem>-<invariant>-seed-<N>.toml`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::Deserialize;
use toml::Spanned;

use super::runner::Runner;
use super::shrink::shrink;
use super::verdict::{allowed, shows_expected};
use crate::check::Invariant;
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::input::located;
use crate::limits::{EXPLORE_INTERIOR_MAX, SAVE_SHRINK_RUNS_MAX};
use crate::outcome::{Outcome, RunResult};
use crate::scenario::{Expect, RawExpect, Scenario, Scope, absolute, discover};
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
    /// A pinned expectation (a witness); None: the scenario's current expectation.
    pub expect: Option<Expect>,
    pub choices: Vec<Choice>,
    /// The choices were drawn by `explore` (delays from the boundary set only).
    pub profile: Profile,
}

/// How replaying a regression went.
pub enum Replayed {
    /// The recorded choices no longer fit the model (`why`: where and how); `result` is the run
    /// of its seed instead, `met` its judgement.
    Stale {
        result: RunResult,
        why: String,
        met: bool,
    },
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
    /// Explore's interior points per delay the choices were drawn under (`--interior`).
    #[serde(default)]
    interior: Option<Spanned<u64>>,
    #[serde(default)]
    expect: Option<Spanned<RawExpect>>,
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
        let expect = match &raw.expect {
            Some(e) => Some(e.get_ref().to_expect(&err, scenario.host)?),
            None => None,
        };
        let profile = match raw
            .profile
            .as_ref()
            .map(|p| (p.get_ref().as_str(), p.span()))
        {
            None | Some(("random", _)) => Profile::default(),
            Some(("boundary", _)) => Profile {
                boundary_only: true,
                interior: match &raw.interior {
                    None => 0,
                    Some(n) if *n.get_ref() <= EXPLORE_INTERIOR_MAX => *n.get_ref(),
                    Some(n) => {
                        let message =
                            format!("{} is out of range 0..={EXPLORE_INTERIOR_MAX}", n.get_ref());
                        return Err(err(n.span(), message));
                    }
                },
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

    /// What the replay must show: the pinned expectation, or the scenario's current one.
    pub fn expectation(&self) -> &Expect {
        self.expect.as_ref().unwrap_or(&self.scenario.expect)
    }

    /// Does this outcome meet the regression? A witness must show its pinned expectation; a
    /// saved failure must be an outcome its scenario's expectation allows of one seed.
    pub fn meets(&self, outcome: &Outcome) -> bool {
        match &self.expect {
            Some(pinned) => shows_expected(pinned, outcome),
            None => allowed(&self.scenario.expect, outcome).1,
        }
    }

    /// `expect fail x` for a witness, `the scenario's expect pass` for a saved failure.
    pub fn expectation_label(&self) -> String {
        match &self.expect {
            Some(e) => format!("expect {e}"),
            None => format!("its scenario's expect {}", self.scenario.expect),
        }
    }

    /// Replay strictly and judge; a stale recording is run as its seed instead.
    pub fn replay(&self, runner: &mut Runner<'_>, tracing: bool) -> Replayed {
        let mut result = runner.run_profiled(
            &self.scenario,
            self.seed,
            self.choices.clone(),
            self.profile,
            tracing,
        );
        result.replay = Some(format!("wakesim replay {}", self.path.display()));
        // A run cut off by an adapter fault (a driver killed mid-run) leaves recorded choices
        // unread: that is the fault, not a stale recording, and the seed's rerun would hide it.
        let faulted = matches!(result.outcome, Outcome::AdapterFault(_));
        if let Some(why) = result.stale.clone().filter(|_| !faulted) {
            // The seed's whole run is not the shrunk one the pin was taken from: a witness is
            // judged by its scenario's expectation (whose `also` allows what a longer run adds).
            let result = runner.run_seed(&self.scenario, self.seed, tracing);
            let met = match self.expect {
                Some(_) => shows_expected(&self.scenario.expect, &result.outcome),
                None => self.meets(&result.outcome),
            };
            return Replayed::Stale { result, why, met };
        }
        let met = self.meets(&result.outcome);
        Replayed::Run { result, met }
    }

    /// The TOML text of a regression.
    pub fn render(
        scenario_rel: &str,
        seed: u64,
        expect: Option<&Expect>,
        choices: &[Choice],
        comment: &str,
        explored: Option<Scope>,
    ) -> String {
        let mut s = String::new();
        for line in comment.lines() {
            s += &format!("# {line}\n");
        }
        s += &format!("format = \"{FORMAT}\"\n");
        s += &format!("scenario = {}\n", toml_str(scenario_rel));
        s += &format!("seed = {seed}\n");
        s += &format!("wakesim = \"{}\"\n", env!("CARGO_PKG_VERSION"));
        if let Some(scope) = explored {
            s += "profile = \"boundary\"\n";
            s += &format!("messages_max = {}\n", scope.messages_max);
            if scope.interior > 0 {
                s += &format!("interior = {}\n", scope.interior);
            }
        }
        s += "choices = [\n";
        for c in choices {
            s += &format!(
                "    {},\n",
                toml_str(&format!("{}/{} {}", c.value, c.bound, c.label))
            );
        }
        s += "]\n";
        let Some(expect) = expect else {
            return s;
        };
        s += "\n[expect]\n";
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

pub use crate::scenario::normalize;

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

pub use super::keep::{Keep, Kept, Saved, default_dir, failure_path, save_new, seed_path};

/// The regressions saved for `scn`: the regression files in its `regressions` directory (not
/// below it) that name it. A directory that does not exist holds none.
pub fn of_scenario(scn: &Scenario, registry: &Registry) -> Result<Vec<Regression>> {
    if !scn.regressions.is_dir() {
        return Ok(Vec::new());
    }
    let me = absolute(&scn.path);
    let mut out = Vec::new();
    for f in discover(&scn.regressions)? {
        if f.parent() != Some(scn.regressions.as_path()) {
            continue;
        }
        // A file here that cannot be read, or does not parse as a regression, is an error
        // (exit 2, file:line:column), as `regressions check` says: skipping it would pass a
        // run whose saved failure was never replayed.
        let text = crate::io::read_text(&f, crate::limits::INPUT_BYTES_MAX).map_err(|source| {
            Error::Io {
                path: f.clone(),
                source,
            }
        })?;
        if is_regression(&text) {
            match names_scenario(&f, &text) {
                Some(other) if other != me => continue,
                _ => out.push(Regression::parse(&f, &text, registry)?),
            }
        } else if Scenario::parse(&f, &text, registry).is_err() {
            // Not a scenario kept there either: say what is wrong with it as a regression.
            Regression::parse(&f, &text, registry)?;
        }
    }
    Ok(out)
}

/// The scenario a regression file names, absolute, read without loading it.
fn names_scenario(file: &Path, text: &str) -> Option<PathBuf> {
    let table: toml::Table = toml::from_str(text).ok()?;
    let rel = table.get("scenario")?.as_str()?;
    Some(absolute(&file.parent().unwrap_or(Path::new(".")).join(rel)))
}

/// A failure `run` found, shrunk and (unless asked not to) saved.
pub struct SavedFailure {
    /// None when saving was not asked for (a scenario with no file: `testing`'s inline ones).
    pub saved: Option<Saved>,
    /// The run kept: shrunk, with its trace.
    pub run: RunResult,
    /// Choices before and after shrinking (equal when it could not be shrunk).
    pub choices: (usize, usize),
    pub what: String,
}

/// Save the failure of `seed`, an outcome `scn`'s expectation does not allow, as a regression
/// that follows the scenario's expectation: shrunk while it breaks the first invariant the
/// expectation does not allow (a panic or a step budget is kept as it is), in the scenario's
/// `regressions` directory. None when the seed's outcome is allowed after all (a count of
/// requests, which no single replay judges).
pub fn save_failure(
    runner: &mut Runner<'_>,
    scn: &Scenario,
    seed: u64,
    save: bool,
) -> Result<Option<SavedFailure>> {
    let first = runner.run_seed(scn, seed, true);
    if allowed(&scn.expect, &first.outcome).1 {
        return Ok(None);
    }
    if first.outcome.is_load_fault() {
        // Code that does not load fails every seed alike: there is no schedule to shrink or keep.
        return Ok(Some(SavedFailure {
            choices: (first.choices.len(), first.choices.len()),
            what: first.outcome.label(),
            run: first,
            saved: None,
        }));
    }
    let target = first
        .outcome
        .violations()
        .iter()
        .map(|v| v.invariant)
        .find(|i| !allowed_invariant(&scn.expect, *i));
    let minimal = target.and_then(|i| shrink(runner, scn, seed, Some(i), SAVE_SHRINK_RUNS_MAX));
    let run = minimal.map_or(first.clone(), |m| m.minimal);
    let what = target.map_or(first.outcome.label(), |i| i.name().to_string());
    let path = failure_path(&scn.path, &scn.regressions, &what, seed);
    let comment = format!(
        "wakesim regression: seed {seed} of {}, saved by `wakesim run`: it {}\n{} -> {} choices. It runs first whenever its scenario runs and must meet\nthe scenario's current expectation: it fails until the bug is fixed. `wakesim replay {}` prints it.",
        scn.path.display(),
        super::describe(&first.outcome),
        first.choices.len(),
        run.choices.len(),
        path.display(),
    );
    let keep = Keep {
        scenario: &scn.path,
        seed,
        run: &run,
        target,
        pin: false,
        comment,
        explored: None,
    };
    let saved = if save { Some(keep.save(&path)?) } else { None };
    let kept = run.choices.len();
    Ok(Some(SavedFailure {
        run,
        saved,
        choices: (first.choices.len(), kept),
        what,
    }))
}

/// Is `r` a witness of what `scn` expects (a failure it expects, shown)? Such a run is kept
/// with its expectation pinned; any other run is kept following the scenario's expectation.
pub fn is_witness(scn: &Scenario, r: &RunResult) -> bool {
    !matches!(scn.expect, Expect::Pass) && shows_expected(&scn.expect, &r.outcome)
}

/// May a run of a scenario expecting `expect` break `invariant`?
fn allowed_invariant(expect: &Expect, invariant: Invariant) -> bool {
    matches!(expect, Expect::Fail { invariant: i, also } if *i == invariant || also.contains(&invariant))
}
