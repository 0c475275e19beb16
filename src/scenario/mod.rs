//! Scenario files: TOML, unknown keys rejected, every value checked while it is read so an error
//! names the file, line, column and key.
//!
//! ```toml
//! name = "two wakes during prompt preparation"
//! host = "pi"                      # pi | pi-0.58 | gptme-server | gptme-cli
//! wake = "pi.is-idle"              # a registered wake logic
//! seeds = 2000                     # seed budget: seeds 0..2000
//! snapshot_seed = 31               # the seed whose timeline is snapshotted
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
//! its own keys (`pi.rs`, `gptme.rs`), and a key of another family is an unknown key.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, Visitor};
use toml::Spanned;

use crate::adapter::{
    AdapterSpec, START_TIMEOUT_MS_DEFAULT, TIMEOUT_MS_DEFAULT, TIMEOUT_MS_MAX,
    process::resolve_program,
};
use crate::check::{CheckParams, Invariant};
use crate::error::{Error, Result};
use crate::family::Registry;
use crate::family::common::faults::{FaultKind, FaultSpec};
use crate::family::gptme_cli::config::CliConfig;
use crate::family::gptme_server::config::ServerConfig;
use crate::family::pi::config::PiConfig;
use crate::family::{Family, HostKind};
use crate::input::values::FaultValue;
use crate::limits::Limits;
use crate::sim::record::Window;

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

/// The host-specific part of a scenario: its family's producers, faults and timing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostConfig {
    Pi(PiConfig),
    GptmeServer(ServerConfig),
    GptmeCli(CliConfig),
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
    pub snapshot_seed: u64,
    pub limits: Limits,
    pub config: HostConfig,
    pub check: CheckParams,
    pub expect: Expect,
    /// Model requests every seed must make exactly (`[expect] requests`), for scripted runs.
    pub requests: Option<u32>,
    /// Race windows the seed budget must reach (`[coverage] must_reach`).
    pub must_reach: Vec<Window>,
    /// The scope `wakesim explore` enumerates by default (`[explore]`).
    pub explore: crate::engine::explore::Scope,
    /// The adapter of an external wake logic (`wake = { command = [...] }`).
    pub adapter: Option<AdapterSpec>,
}

impl Scenario {
    /// Read and validate a scenario file against the wake logics in `registry`.
    pub fn load(path: &Path, registry: &Registry) -> Result<Scenario> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Scenario::parse(path, &text, registry)
    }

    /// Validate scenario text; `path` names it in errors.
    pub fn parse(path: &Path, text: &str, registry: &Registry) -> Result<Scenario> {
        Scenario::parse_with(path, text, Wakes::Registry(registry))
    }

    /// Validate scenario text whose `wake` must be one of `wakes`, pi wake logics of a runner
    /// that brings its own (the madsim lane's async ones), which a `Registry` does not hold.
    pub fn parse_for(path: &Path, text: &str, wakes: &[&str]) -> Result<Scenario> {
        Scenario::parse_with(path, text, Wakes::Pi(wakes))
    }

    fn parse_with(path: &Path, text: &str, wakes: Wakes<'_>) -> Result<Scenario> {
        let cx = Cx { path, text };
        // The host decides which family's sections the rest of the file may use.
        let head: Head = toml::from_str(text).map_err(|e| cx.toml(e))?;
        let host = HostKind::from_name(head.host.get_ref()).ok_or_else(|| {
            let names: Vec<_> = HostKind::ALL.iter().map(|h| h.name()).collect();
            cx.err(
                head.host.span(),
                format!(
                    "unknown host `{}`, expected one of {}",
                    head.host.get_ref(),
                    names.join(", ")
                ),
            )
        })?;
        match host.family() {
            Family::Pi => cx.parse_as::<crate::family::pi::sections::PiSections>(host, wakes),
            Family::GptmeServer => {
                cx.parse_as::<crate::family::gptme_server::sections::ServerSections>(host, wakes)
            }
            Family::GptmeCli => {
                cx.parse_as::<crate::family::gptme_cli::sections::CliSections>(host, wakes)
            }
        }
    }
}

/// The wake logics a scenario may name.
#[derive(Clone, Copy)]
enum Wakes<'a> {
    Registry(&'a Registry),
    /// Names of pi wake logics held outside the registry.
    Pi(&'a [&'a str]),
}

impl Wakes<'_> {
    /// Is `wake` a logic for `host`? The error says which ones are.
    fn check(&self, wake: &str, host: HostKind) -> std::result::Result<(), String> {
        let family = host.family();
        match self {
            Wakes::Registry(registry) => match registry.get(wake) {
                Some(e) if e.family() == family => Ok(()),
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
            Wakes::Pi(names) if family == Family::Pi && names.contains(&wake) => Ok(()),
            Wakes::Pi(names) => Err(format!(
                "unknown wake logic `{wake}` for {} hosts, expected one of {}",
                host.name(),
                names.join(", ")
            )),
        }
    }
}

/// The file being read, for errors.
#[derive(Clone, Copy)]
pub(crate) struct Cx<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Cx<'_> {
    pub(crate) fn err(&self, span: std::ops::Range<usize>, message: String) -> Error {
        located(self.path, self.text, span, message)
    }

    /// An error about `key`, found after parsing: located at the key's first `key =`.
    pub(crate) fn key_err(&self, key: &str, message: String) -> Error {
        self.err(key_span(self.text, key), message)
    }

    /// A range whose `max` must stay within `0..=max` (a count, so a typo cannot ask for a run
    /// that never ends).
    pub(crate) fn at_most(
        &self,
        key: &str,
        span: crate::family::common::Span,
        max: u64,
    ) -> Result<crate::family::common::Span> {
        if span.max > max {
            return Err(self.key_err(key, format!("max {} is out of range 0..={max}", span.max)));
        }
        Ok(span)
    }

    fn toml(&self, e: toml::de::Error) -> Error {
        let span = e.span().unwrap_or(0..0);
        self.err(span, e.message().to_string())
    }

    fn parse_as<S: Sections>(&self, host: HostKind, wakes: Wakes<'_>) -> Result<Scenario> {
        let raw: RawScenario<S::Producers, S::Timing> =
            toml::from_str(self.text).map_err(|e| self.toml(e))?;
        raw.validate::<S>(*self, host, wakes)
    }

    /// `[faults]`, checked against the family's fault names.
    fn faults<F: FaultKind>(
        &self,
        raw: &BTreeMap<Spanned<String>, Spanned<FaultValue>>,
    ) -> Result<Vec<(F, FaultSpec)>> {
        raw.iter()
            .map(|(name, value)| {
                let fault = F::from_name(name.get_ref()).ok_or_else(|| {
                    let names: Vec<_> = F::LIST.iter().map(|f| f.name()).collect();
                    self.err(
                        name.span(),
                        format!(
                            "unknown fault `{}`, expected one of {}",
                            name.get_ref(),
                            names.join(", ")
                        ),
                    )
                })?;
                let (rate, max) = fault.defaults();
                let v = value.get_ref();
                Ok((
                    fault,
                    FaultSpec {
                        share: v.share,
                        rate: v.rate.unwrap_or(rate),
                        max: v.max.unwrap_or(max),
                    },
                ))
            })
            .collect()
    }
}

/// A host family's scenario sections: the keys of `[producers]` and `[timing]` (each rejecting
/// unknown keys), its fault names, and how they make the family's configuration.
pub(crate) trait Sections {
    type Producers: DeserializeOwned + Default;
    type Timing: DeserializeOwned + Default;
    type Fault: FaultKind;

    fn config(
        cx: Cx<'_>,
        producers: Self::Producers,
        timing: Self::Timing,
        faults: Vec<(Self::Fault, FaultSpec)>,
    ) -> Result<HostConfig>;
}

pub(crate) fn located(
    path: &Path,
    text: &str,
    span: std::ops::Range<usize>,
    message: String,
) -> Error {
    let start = span.start.min(text.len());
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..start].chars().count() + 1;
    Error::Scenario {
        file: path.to_path_buf(),
        line,
        column,
        key: key_at(text, start),
        message,
    }
}

/// The dotted key whose line holds `offset`: the `[table]` above it, then the key before `=`.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let line = &text[line_start..line_end];
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('#') && !k.starts_with('['));
    let table = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    let header = line.trim();
    if key.is_none() && header.starts_with('[') {
        return Some(
            header
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string(),
        );
    }
    match (table, key) {
        (Some(t), Some(k)) => Some(format!("{t}.{k}")),
        (None, Some(k)) => Some(k),
        (Some(t), None) => Some(t),
        (None, None) => None,
    }
}

/// The first pass: only the host (every other key is read by the second pass).
#[derive(Deserialize)]
struct Head {
    host: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario<P, T> {
    name: String,
    #[serde(default)]
    description: String,
    // Read by the first pass; kept so the key is known.
    #[allow(dead_code)]
    host: Spanned<String>,
    wake: Spanned<WakeValue>,
    seeds: Spanned<u64>,
    snapshot_seed: Spanned<u64>,
    #[serde(default)]
    duration_ms: Option<Spanned<u64>>,
    #[serde(default)]
    quiesce_ms_max: Option<u64>,
    #[serde(default)]
    steps_max: Option<Spanned<u64>>,
    #[serde(default)]
    producers: P,
    #[serde(default)]
    faults: BTreeMap<Spanned<String>, Spanned<FaultValue>>,
    #[serde(default)]
    timing: T,
    #[serde(default)]
    check: RawCheck,
    #[serde(default)]
    coverage: RawCoverage,
    #[serde(default)]
    explore: RawExplore,
    expect: Spanned<RawExpect>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawExplore {
    messages: Option<u64>,
    deviations: Option<Spanned<usize>>,
    runs_max: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCoverage {
    #[serde(default)]
    must_reach: Vec<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    latency_ms_max: Option<Spanned<u64>>,
    latency_requests_max: Option<Spanned<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExpect {
    verdict: Spanned<String>,
    #[serde(default)]
    invariant: Option<Spanned<String>>,
    #[serde(default)]
    also: Vec<Spanned<String>>,
    #[serde(default)]
    requests: Option<Spanned<u32>>,
}

/// `wake`: a registered name, or a table naming an external adapter.
enum WakeValue {
    Name(String),
    External(Box<RawExternal>),
}

impl<'de> Deserialize<'de> for WakeValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WakeValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a wake logic's name or a table { command = [...] }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<WakeValue, E> {
                Ok(WakeValue::Name(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<WakeValue, A::Error> {
                RawExternal::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|x| WakeValue::External(Box::new(x)))
            }
        }
        d.deserialize_any(V)
    }
}

/// `wake = { command = [...], cwd = "..", name = "..", constants_ms = [..], timeout_ms = n,
/// start_timeout_ms = n, options = { .. } }`: an adapter process speaking `docs/protocol.md`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExternal {
    command: Spanned<Vec<String>>,
    /// The adapter's working directory, relative to the scenario file's directory (default: that
    /// directory). The program and its arguments are taken relative to it.
    #[serde(default)]
    cwd: Option<Spanned<String>>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    constants_ms: Option<Spanned<Vec<u64>>>,
    #[serde(default)]
    timeout_ms: Option<Spanned<u64>>,
    #[serde(default)]
    start_timeout_ms: Option<Spanned<u64>>,
    #[serde(default)]
    options: Option<toml::Table>,
}

/// Constants a scenario may declare for an external logic.
const CONSTANTS_MAX: usize = 32;

impl RawExternal {
    fn validate(
        &self,
        path: &Path,
        origin: (PathBuf, usize, usize),
        err: &dyn Fn(std::ops::Range<usize>, String) -> Error,
    ) -> Result<AdapterSpec> {
        let command = self.command.get_ref().clone();
        let Some(program) = command.first() else {
            return Err(err(
                self.command.span(),
                "the command is empty: give the program and its arguments".to_string(),
            ));
        };
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let cwd = match &self.cwd {
            Some(c) => {
                let cwd = dir.join(c.get_ref());
                if !cwd.is_dir() {
                    return Err(err(
                        c.span(),
                        format!("`{}` is not a directory", cwd.display()),
                    ));
                }
                cwd
            }
            None => dir,
        };
        if resolve_program(program, &cwd).is_none() {
            let where_ = if program.contains('/') {
                format!("in `{}`", cwd.display())
            } else {
                "on PATH".to_string()
            };
            return Err(err(
                self.command.span(),
                format!("program `{program}` not found {where_}"),
            ));
        }
        let bound = |t: &Option<Spanned<u64>>, default: u64| match t {
            Some(t) => {
                let v = *t.get_ref();
                if v == 0 || v > TIMEOUT_MS_MAX {
                    return Err(err(
                        t.span(),
                        format!("{v} is out of range 1..={TIMEOUT_MS_MAX}"),
                    ));
                }
                Ok(v)
            }
            None => Ok(default),
        };
        let timeout_ms = bound(&self.timeout_ms, TIMEOUT_MS_DEFAULT)?;
        let start_timeout_ms = bound(&self.start_timeout_ms, START_TIMEOUT_MS_DEFAULT)?;
        let constants_ms = match &self.constants_ms {
            Some(c) => {
                let v = c.get_ref();
                if v.len() > CONSTANTS_MAX || v.iter().any(|&ms| ms > DURATION_MS_MAX) {
                    return Err(err(
                        c.span(),
                        format!(
                            "at most {CONSTANTS_MAX} constants, each at most {DURATION_MS_MAX} ms"
                        ),
                    ));
                }
                v.clone()
            }
            None => Vec::new(),
        };
        let options = match &self.options {
            Some(t) => serde_json::to_value(t).unwrap_or_default(),
            None => serde_json::Value::Object(Default::default()),
        };
        Ok(AdapterSpec {
            command,
            cwd,
            constants_ms,
            timeout_ms,
            start_timeout_ms,
            options,
            origin,
        })
    }
}

impl RawExpect {
    /// Validate into an `Expect` for `host`: only the invariants it is judged by can be
    /// expected. `err` locates an error at a span.
    pub(crate) fn to_expect(
        &self,
        err: &dyn Fn(std::ops::Range<usize>, String) -> Error,
        host: HostKind,
    ) -> Result<Expect> {
        let judged = host.invariants();
        let invariant = |s: &Spanned<String>| {
            Invariant::from_name(s.get_ref())
                .filter(|i| judged.contains(i))
                .ok_or_else(|| {
                    let names: Vec<_> = judged.iter().map(|i| i.name()).collect();
                    let what = match Invariant::from_name(s.get_ref()) {
                        Some(_) => format!(
                            "invariant `{}` is not judged on {} hosts",
                            s.get_ref(),
                            host.name()
                        ),
                        None => format!("unknown invariant `{}`", s.get_ref()),
                    };
                    err(
                        s.span(),
                        format!("{what}, expected one of {}", names.join(", ")),
                    )
                })
        };
        match self.verdict.get_ref().as_str() {
            "fail" => {
                let inv = self.invariant.as_ref().ok_or_else(|| {
                    err(
                        self.verdict.span(),
                        "verdict \"fail\" needs `invariant`, the one the scenario must catch"
                            .to_string(),
                    )
                })?;
                let also = self
                    .also
                    .iter()
                    .map(invariant)
                    .collect::<Result<Vec<_>>>()?;
                Ok(Expect::Fail {
                    invariant: invariant(inv)?,
                    also,
                })
            }
            v @ ("pass" | "panic" | "step-budget" | "adapter-fault") => {
                if let Some(inv) = &self.invariant {
                    return Err(err(
                        inv.span(),
                        format!("`invariant` is only for verdict \"fail\", not \"{v}\""),
                    ));
                }
                if let Some(a) = self.also.first() {
                    return Err(err(
                        a.span(),
                        format!("`also` is only for verdict \"fail\", not \"{v}\""),
                    ));
                }
                Ok(match v {
                    "pass" => Expect::Pass,
                    "panic" => Expect::Panic,
                    "adapter-fault" => Expect::AdapterFault,
                    _ => Expect::StepBudget,
                })
            }
            other => Err(err(
                self.verdict.span(),
                format!(
                    "unknown verdict `{other}`, expected one of pass, fail, panic, step-budget, adapter-fault"
                ),
            )),
        }
    }
}

/// Hard limits on scenario values, so a typo cannot ask for a run that never ends.
pub const SEEDS_MAX: u64 = 100_000_000;
pub const DURATION_MS_MAX: u64 = 24 * 3_600_000;
pub const STEPS_MAX: u64 = 10_000_000;
pub const MESSAGES_MAX: u64 = 10_000;

impl<P, T> RawScenario<P, T> {
    fn validate<S: Sections<Producers = P, Timing = T>>(
        self,
        cx: Cx<'_>,
        host: HostKind,
        wakes: Wakes<'_>,
    ) -> Result<Scenario> {
        let err = |span: std::ops::Range<usize>, msg: String| cx.err(span, msg);

        let (wake, adapter) = match self.wake.get_ref() {
            WakeValue::Name(wake) => {
                wakes
                    .check(wake, host)
                    .map_err(|m| err(self.wake.span(), m))?;
                (wake.clone(), None)
            }
            WakeValue::External(x) => {
                let origin = match located(cx.path, cx.text, self.wake.span(), String::new()) {
                    Error::Scenario {
                        file, line, column, ..
                    } => (file, line, column),
                    _ => unreachable!("located gives a scenario error"),
                };
                let spec = x.validate(cx.path, origin, &err)?;
                let label = x.name.clone().unwrap_or_else(|| spec.command.join(" "));
                (label, Some(spec))
            }
        };
        let seeds = *self.seeds.get_ref();
        if seeds == 0 || seeds > SEEDS_MAX {
            return Err(err(
                self.seeds.span(),
                format!("{seeds} is out of range 1..={SEEDS_MAX}"),
            ));
        }
        let snapshot_seed = *self.snapshot_seed.get_ref();

        let mut limits = Limits::default();
        if let Some(d) = &self.duration_ms {
            let v = *d.get_ref();
            if v == 0 || v > DURATION_MS_MAX {
                return Err(err(
                    d.span(),
                    format!("{v} is out of range 1..={DURATION_MS_MAX}"),
                ));
            }
            limits.active_ms = v;
        }
        if let Some(q) = self.quiesce_ms_max {
            limits.quiesce_ms_max = q.min(DURATION_MS_MAX);
        }
        if let Some(s) = &self.steps_max {
            let v = *s.get_ref();
            if v == 0 || v > STEPS_MAX {
                return Err(err(
                    s.span(),
                    format!("{v} is out of range 1..={STEPS_MAX}"),
                ));
            }
            limits.steps_max = v;
        }

        let faults = cx.faults::<S::Fault>(&self.faults)?;
        let config = S::config(cx, self.producers, self.timing, faults)?;

        let mut check = CheckParams::default();
        if let Some(v) = &self.check.latency_ms_max {
            check.latency_ms_max = *v.get_ref();
        }
        if let Some(v) = &self.check.latency_requests_max {
            check.latency_requests_max = *v.get_ref();
        }

        let e = self.expect.get_ref();
        let expect = e.to_expect(&err, host)?;
        let requests = e.requests.as_ref().map(|r| *r.get_ref());

        let must_reach = self
            .coverage
            .must_reach
            .iter()
            .map(|w| {
                Window::from_name(w.get_ref()).ok_or_else(|| {
                    let names: Vec<_> = Window::ALL.iter().map(|w| w.name()).collect();
                    err(
                        w.span(),
                        format!(
                            "unknown race window `{}`, expected one of {}",
                            w.get_ref(),
                            names.join(", ")
                        ),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;

        let mut explore = crate::engine::explore::Scope::default();
        if let Some(m) = self.explore.messages {
            explore.messages_max = m.clamp(1, 16);
        }
        if let Some(d) = &self.explore.deviations {
            if *d.get_ref() > 8 {
                return Err(err(
                    d.span(),
                    format!("{} is out of range 0..=8", d.get_ref()),
                ));
            }
            explore.deviations_max = *d.get_ref();
        }
        if let Some(r) = self.explore.runs_max {
            explore.runs_max = r.max(1);
        }

        Ok(Scenario {
            adapter,
            explore,
            path: cx.path.to_path_buf(),
            name: self.name,
            description: self.description,
            host,
            wake,
            seeds,
            snapshot_seed,
            limits,
            config,
            check,
            expect,
            requests,
            must_reach,
        })
    }
}

/// The span of the first `key =` in the text, for errors found after parsing.
fn key_span(text: &str, key: &str) -> std::ops::Range<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with(key) && trimmed[key.len()..].trim_start().starts_with('=') {
            let start = offset + (line.len() - trimmed.len());
            return start..start + key.len();
        }
        offset += line.len();
    }
    0..0
}

/// Every `*.toml` under `path` (a file or a directory), sorted, recursively.
pub fn discover(path: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "toml") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}
