//! Scenario files: TOML, unknown keys rejected, every value checked while it is read so an error
//! names the file, line, column and key.
//!
//! ```toml
//! name = "two wakes during prompt preparation"
//! host = "pi"                      # pi | pi-0.58 | gptme-server | gptme-cli, or a real host
//!                                  # (pi@0.99.1, pi@1.6.0, pi@0.58.3) with wake = { extension = "..." }
//! wake = "pi.is-idle"              # a registered wake logic
//! seeds = 2000                     # seed budget: seeds 0..2000
//! snapshot_seed = 31               # optional: the seed whose timeline is snapshotted
//! regressions = "regressions"      # optional: where `run` saves failures (inside the project)
//! duration_ms = 120000             # producers and faults act this long, then the host settles
//!
//! [producers]
//! messages = { min = 2, max = 6 }
//! spacing_ms = { min = 0, max = 200 }
//! kinds = ["completion", "notification"]
//!
//! [faults]                         # share of seeds with the fault on, or a table
//! input_swallows_prompt = "1/20"
//! retries = { share = "1/2", rate = "1/3", max = 2 }
//!
//! [timing]                         # the host's await points and activities (ms)
//! tool_turns = { min = 0, max = 3 }
//!
//! [check]
//! latency_ms_max = 40000
//!
//! [coverage]                       # race windows the seed budget must reach
//! must_reach = ["wake-while-preparing"]
//! must_reach_share = "1/100"       # a passing scenario warns below this share (default 1/100)
//!
//! [explore]                        # the default scope of `wakesim explore`
//! deviations = 3                   # unusual choices per run (default 3)
//! messages = 2                     # producer messages at most (default 2)
//!
//! [expect]
//! verdict = "fail"                 # pass | fail | panic | step-budget
//! invariant = "single-starter"
//! also = ["no-loss"]               # other invariants this scenario may also break
//! requests = 3                     # optional: every seed makes exactly this many model requests
//! ```
//!
//! `[producers]`, `[faults]` and `[timing]` belong to the host's family: each family declares
//! its own keys (its module's `sections.rs`), and a key of another family is an unknown key.

mod adapter;
pub mod adapter_path;
mod expect;
mod own_driver;
mod raw;
mod remote;

use std::fmt;
use std::path::{Component, Path, PathBuf};

use crate::adapter::AdapterSpec;
use crate::check::{CheckParams, Invariant};
use crate::error::{Error, Result};
use crate::family::pi::PiFamily;
use crate::family::{Config, Family, HostKind, Registry};
use crate::input::Cx;
use crate::limits::Limits;
use crate::remote::RemoteSpec;
use crate::sim::choice::Ratio;
use crate::sim::record::Window;

/// The default of `[coverage] must_reach_share`: a passing scenario that reached a window it
/// names in fewer than 1 seed in 100 is warned about; its pass says little about that window.
pub const MUST_REACH_SHARE_DEFAULT: Ratio = Ratio::new(1, 100);

pub(crate) use expect::RawExpect;

/// What a scenario expects of its seed budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// No seed breaks any invariant, panics or runs out of steps.
    Pass,
    /// Some seed breaks `invariant`; failing seeds break nothing outside `invariant` and `also`.
    Fail {
        invariant: Invariant,
        also: Vec<Invariant>,
    },
    /// The wake logic panics in some seed.
    Panic,
    /// Some seed runs out of its step budget.
    StepBudget,
    /// The adapter of an external wake logic fails (tests of adapters themselves).
    AdapterFault,
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Pass => f.write_str("pass"),
            Expect::Fail { invariant, .. } => write!(f, "fail {invariant}"),
            Expect::Panic => f.write_str("panic"),
            Expect::StepBudget => f.write_str("step-budget"),
            Expect::AdapterFault => f.write_str("adapter-fault"),
        }
    }
}

/// What exploration enumerates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scope {
    pub messages_max: u64,
    pub deviations_max: usize,
    /// Runs at most; past it the scope is reported as not exhausted.
    pub runs_max: u64,
    /// Evenly spaced interior points each delay may also take, besides its boundary set
    /// (`explore --interior N`; 0 by default: delays at their boundaries only).
    pub interior: u64,
}

impl Default for Scope {
    fn default() -> Self {
        Scope {
            messages_max: 2,
            deviations_max: 3,
            runs_max: 200_000,
            interior: 0,
        }
    }
}

/// A validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub path: PathBuf,
    pub name: String,
    pub description: String,
    pub host: HostKind,
    pub wake: String,
    pub seeds: u64,
    /// The seed whose timeline is snapshotted; unset: the first seed showing the expected
    /// failure of a failing scenario, 0 otherwise (`engine::snapshot_seed`).
    pub snapshot_seed: Option<u64>,
    /// The directory its saved failures live in (`regressions`, default `regressions/` beside
    /// the file), always inside the scenario's project.
    pub regressions: PathBuf,
    pub limits: Limits,
    /// The host family's configuration (producers, faults, timing).
    pub config: Config,
    pub check: CheckParams,
    pub expect: Expect,
    /// Model requests every seed must make exactly (`[expect] requests`), for scripted runs.
    pub requests: Option<u32>,
    /// Race windows the seed budget must reach (`[coverage] must_reach`).
    pub must_reach: Vec<Window>,
    /// A passing scenario whose seeds reached a `must_reach` window in fewer than this share of
    /// them gets a warning in its report (`[coverage] must_reach_share`).
    pub must_reach_share: Ratio,
    /// The scope `wakesim explore` enumerates by default (`[explore]`).
    pub explore: Scope,
    /// Whether that scope holds a failing scenario's bug (`[explore] holds_bug`, default true):
    /// `false` where the bug needs more than an enumerable scope (a long real-host interleaving),
    /// so the gate leaves exploring it out and the seeds alone show the bug.
    pub explore_holds_bug: bool,
    /// The adapter of an external wake logic (`wake = { command = [...] }`).
    pub adapter: Option<AdapterSpec>,
    /// A real host (`host = "pi@0.99.1"`, `wake = { extension = "..." }`): its driver runs the
    /// run.
    pub remote: Option<RemoteSpec>,
    /// How a seed becomes its choice stream (`search = ...`; `--search` overrides it): uniform
    /// swarm, the default, or a guided search (`sim::search`). Real hosts run swarm only.
    pub search: crate::sim::search::Search,
}

impl Scenario {
    /// The gate's second pass over a built-in model's scenario (`tests/scenarios.rs`,
    /// `tests/mutants.rs`): the same file under the anchored search, which on the rare-bug suite
    /// needs 2.6 to 5.8 times fewer seeds than swarm and never more (docs/guide/search.md).
    /// `None` for a file that sets another search, an adapter's and a real host's (they run
    /// swarm only).
    pub fn gate_second_pass(&self) -> Option<Scenario> {
        let model = self.adapter.is_none() && self.remote.is_none();
        (model && self.search.is_swarm()).then(|| Scenario {
            search: crate::sim::search::Search::Anchored,
            ..self.clone()
        })
    }

    /// Read and validate a scenario file against the wake logics in `registry`.
    pub fn load(path: &Path, registry: &Registry) -> Result<Scenario> {
        let text =
            crate::io::read_text(path, crate::limits::INPUT_BYTES_MAX).map_err(|source| {
                Error::Io {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        Scenario::parse(path, &text, registry)
    }

    /// Validate scenario text; `path` names it in errors.
    pub fn parse(path: &Path, text: &str, registry: &Registry) -> Result<Scenario> {
        raw::parse(Cx { path, text }, Wakes::Registry(registry))
    }

    /// Validate scenario text whose `wake` must be one of `wakes`, pi wake logics of a runner
    /// that brings its own (the madsim lane's async ones), which a `Registry` does not hold.
    pub fn parse_for(path: &Path, text: &str, wakes: &[&str]) -> Result<Scenario> {
        raw::parse(Cx { path, text }, Wakes::Pi(wakes))
    }

    /// The scenario restricted to explore's scope: every producer count at most
    /// `messages_max` (a real host's driver reads the scoped sections too).
    pub fn scoped(&self, messages_max: u64) -> Scenario {
        let family = self.host.family();
        let config = family.scoped(&self.config, messages_max);
        let remote = self.remote.clone().map(|mut spec| {
            spec.sections = family.real_sections(&config);
            spec
        });
        Scenario {
            config,
            remote,
            ..self.clone()
        }
    }
}

/// The wake logics a scenario may name.
#[derive(Clone, Copy)]
pub(crate) enum Wakes<'a> {
    Registry(&'a Registry),
    /// Names of pi wake logics held outside the registry.
    Pi(&'a [&'a str]),
}

impl Wakes<'_> {
    /// Is `wake` a logic for `host`? The error says which ones are.
    pub(crate) fn check(&self, wake: &str, host: HostKind) -> std::result::Result<(), String> {
        let family = host.family().name();
        match self {
            Wakes::Registry(registry) => match registry.get(wake) {
                Some(e) if e.family().name() == family => Ok(()),
                Some(e) => Err(format!(
                    "wake logic `{wake}` is written for {} hosts, not {}; expected one of {}",
                    e.family().name(),
                    host.name(),
                    registry.names_of(family).join(", ")
                )),
                None => Err(format!(
                    "unknown wake logic `{wake}`, expected one of {}",
                    registry.names_of(family).join(", ")
                )),
            },
            Wakes::Pi(names) if family == PiFamily::NAME && names.contains(&wake) => Ok(()),
            Wakes::Pi(names) => Err(format!(
                "unknown wake logic `{wake}` for {} hosts, expected one of {}",
                host.name(),
                names.join(", ")
            )),
        }
    }
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

/// `p` made absolute against the current directory and normalised (no file system access
/// beyond the current directory, so it works for files not written yet).
pub fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        normalize(p)
    } else {
        normalize(&std::env::current_dir().unwrap_or_default().join(p))
    }
}

/// The project a scenario file belongs to: the nearest directory above it holding `Cargo.toml`
/// or `.git`, else the file's own directory. Files wakesim writes for a scenario (its saved
/// failures) stay inside it.
pub fn project_root(scenario: &Path) -> PathBuf {
    let dir = absolute(scenario.parent().unwrap_or(Path::new(".")));
    (dir.ancestors())
        .find(|d| d.join("Cargo.toml").exists() || d.join(".git").exists())
        .map_or(dir.clone(), Path::to_path_buf)
}

/// Is `path` (once absolute and normalised) inside `root`?
pub fn within(root: &Path, path: &Path) -> bool {
    absolute(path).starts_with(absolute(root))
}

/// Every `*.toml` under `path` (a file or a directory), sorted, recursively. Each directory
/// is entered once, however many symbolic links lead to it (a link cycle ends), and each file is
/// listed once. A `*.toml` that is not a regular file (a FIFO, a broken or looping link) is
/// listed, so that reading it reports what it is instead of it being skipped silently.
pub fn discover(path: &Path) -> Result<Vec<PathBuf>> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let meta = std::fs::metadata(path).map_err(io(path))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut seen_dirs = std::collections::BTreeSet::new();
    let mut seen_files = std::collections::BTreeSet::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if !seen_dirs.insert(dir.canonicalize().map_err(io(&dir))?) {
            continue;
        }
        for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
            let p = entry.map_err(io(&dir))?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "toml")
                && seen_files.insert(p.canonicalize().unwrap_or_else(|_| p.clone()))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}
