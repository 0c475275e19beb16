//! Scenario files: TOML, unknown keys rejected, every value checked while it is read so an error
//! names the file, line, column and key.
//!
//! ```toml
//! name = "two wakes during prompt preparation"
//! host = "pi"                      # pi | pi-0.58
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
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use toml::Spanned;

use crate::check::{CheckParams, Invariant};
use crate::error::{Error, Result};
use crate::external::{
    AdapterSpec, START_TIMEOUT_MS_DEFAULT, TIMEOUT_MS_DEFAULT, TIMEOUT_MS_MAX,
    process::resolve_program,
};
use crate::host::HostKind;
use crate::host::pi::config::{FaultSpec, PiConfig, PiFault, PiTiming, Producers, Span};
use crate::kernel::Limits;
use crate::kernel::choice::Ratio;
use crate::trace::{MsgKind, Window};
use crate::wake::Registry;

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

/// A validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub path: PathBuf,
    pub name: String,
    pub description: String,
    pub host: HostKind,
    /// The wake logic's name: a registered one, or the label of an external one.
    pub wake: String,
    /// The adapter of an external wake logic (`wake = { command = [...] }`).
    pub adapter: Option<AdapterSpec>,
    pub seeds: u64,
    pub snapshot_seed: u64,
    pub limits: Limits,
    pub pi: PiConfig,
    pub check: CheckParams,
    pub expect: Expect,
    /// Race windows the seed budget must reach (`[coverage] must_reach`).
    pub must_reach: Vec<Window>,
    /// The scope `wakesim explore` enumerates by default (`[explore]`).
    pub explore: crate::explore::Scope,
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
        Scenario::parse_for(path, text, &registry.names())
    }

    /// Validate scenario text whose `wake` must be one of `wakes`: for runners with wake logics
    /// of their own (the madsim lane's async ones), which a `Registry` does not hold.
    pub fn parse_for(path: &Path, text: &str, wakes: &[&str]) -> Result<Scenario> {
        let raw: RawScenario = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            located(path, text, span, e.message().to_string())
        })?;
        raw.validate(path, text, wakes)
    }
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: String,
    #[serde(default)]
    description: String,
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
    producers: RawProducers,
    #[serde(default)]
    faults: BTreeMap<Spanned<String>, Spanned<FaultValue>>,
    #[serde(default)]
    timing: RawTiming,
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
struct RawProducers {
    messages: Option<SpanValue>,
    start_ms: Option<SpanValue>,
    spacing_ms: Option<SpanValue>,
    kinds: Option<Spanned<Vec<MsgKindName>>>,
    subagents: Option<Spanned<u8>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTiming {
    step_ms: Option<SpanValue>,
    handler_ms: Option<SpanValue>,
    model_ms: Option<SpanValue>,
    tool_ms: Option<SpanValue>,
    tool_turns: Option<SpanValue>,
    compaction_ms: Option<SpanValue>,
    retry_ms: Option<SpanValue>,
    user_delay_ms: Option<SpanValue>,
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
    /// Validate into an `Expect`; `err` locates an error at a span.
    pub(crate) fn to_expect(
        &self,
        err: &dyn Fn(std::ops::Range<usize>, String) -> Error,
    ) -> Result<Expect> {
        let invariant = |s: &Spanned<String>| {
            Invariant::from_name(s.get_ref()).ok_or_else(|| {
                let names: Vec<_> = Invariant::ALL.iter().map(|i| i.name()).collect();
                err(
                    s.span(),
                    format!(
                        "unknown invariant `{}`, expected one of {}",
                        s.get_ref(),
                        names.join(", ")
                    ),
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
                    "step-budget" => Expect::StepBudget,
                    _ => Expect::AdapterFault,
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

/// A message kind, checked by name.
struct MsgKindName(MsgKind);

impl<'de> Deserialize<'de> for MsgKindName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        MsgKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .map(MsgKindName)
            .ok_or_else(|| {
                let names: Vec<_> = MsgKind::ALL.iter().map(|k| k.name()).collect();
                de::Error::custom(format!(
                    "unknown message kind `{s}`, expected one of {}",
                    names.join(", ")
                ))
            })
    }
}

/// `{ min = a, max = b }` with `a <= b`, or a single integer.
#[derive(Clone, Copy)]
struct SpanValue(Span);

impl<'de> Deserialize<'de> for SpanValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SpanValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-negative integer or a table { min = .., max = .. }")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<SpanValue, E> {
                let v = u64::try_from(v).map_err(|_| E::custom(format!("{v} is negative")))?;
                Ok(SpanValue(Span::new(v, v)))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<SpanValue, A::Error> {
                let (mut min, mut max) = (None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "min" => min = Some(map.next_value::<u64>()?),
                        "max" => max = Some(map.next_value::<u64>()?),
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown field `{other}`, expected `min` or `max`"
                            )));
                        }
                    }
                }
                let min = min.ok_or_else(|| de::Error::missing_field("min"))?;
                let max = max.ok_or_else(|| de::Error::missing_field("max"))?;
                if min > max {
                    return Err(de::Error::custom(format!(
                        "min ({min}) is greater than max ({max})"
                    )));
                }
                Ok(SpanValue(Span::new(min, max)))
            }
        }
        d.deserialize_any(V)
    }
}

/// `"num/den"` with `0 <= num <= den`, `den > 0`.
#[derive(Clone, Copy)]
struct RatioValue(Ratio);

fn parse_ratio(s: &str) -> std::result::Result<Ratio, String> {
    let err = || format!("`{s}` is not a ratio \"num/den\" with 0 <= num <= den and den > 0");
    let (n, d) = s.split_once('/').ok_or_else(err)?;
    let num: u64 = n.trim().parse().map_err(|_| err())?;
    let den: u64 = d.trim().parse().map_err(|_| err())?;
    if den == 0 || num > den {
        return Err(err());
    }
    Ok(Ratio::new(num, den))
}

impl<'de> Deserialize<'de> for RatioValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_ratio(&s).map(RatioValue).map_err(de::Error::custom)
    }
}

/// A fault: `"share"` or `{ share = "..", rate = "..", max = n }`.
struct FaultValue {
    share: Ratio,
    rate: Option<Ratio>,
    max: Option<u32>,
}

impl<'de> Deserialize<'de> for FaultValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FaultValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a share \"num/den\" or a table { share, rate, max }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<FaultValue, E> {
                Ok(FaultValue {
                    share: parse_ratio(v).map_err(E::custom)?,
                    rate: None,
                    max: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<FaultValue, A::Error> {
                let (mut share, mut rate, mut max) = (None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "share" => share = Some(map.next_value::<RatioValue>()?.0),
                        "rate" => rate = Some(map.next_value::<RatioValue>()?.0),
                        "max" => max = Some(map.next_value::<u32>()?),
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown field `{other}`, expected `share`, `rate` or `max`"
                            )));
                        }
                    }
                }
                Ok(FaultValue {
                    share: share.ok_or_else(|| de::Error::missing_field("share"))?,
                    rate,
                    max,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// Hard limits on scenario values, so a typo cannot ask for a run that never ends.
pub const SEEDS_MAX: u64 = 100_000_000;
pub const DURATION_MS_MAX: u64 = 24 * 3_600_000;
pub const STEPS_MAX: u64 = 10_000_000;
pub const MESSAGES_MAX: u64 = 10_000;

impl RawScenario {
    fn validate(self, path: &Path, text: &str, wakes: &[&str]) -> Result<Scenario> {
        let err = |span: std::ops::Range<usize>, msg: String| located(path, text, span, msg);

        let host = HostKind::from_name(self.host.get_ref()).ok_or_else(|| {
            let names: Vec<_> = HostKind::ALL.iter().map(|h| h.name()).collect();
            err(
                self.host.span(),
                format!(
                    "unknown host `{}`, expected one of {}",
                    self.host.get_ref(),
                    names.join(", ")
                ),
            )
        })?;
        let (wake, adapter) = match self.wake.get_ref() {
            WakeValue::Name(wake) => {
                if !wakes.contains(&wake.as_str()) {
                    return Err(err(
                        self.wake.span(),
                        format!(
                            "unknown wake logic `{wake}`, expected one of {}",
                            wakes.join(", ")
                        ),
                    ));
                }
                (wake.clone(), None)
            }
            WakeValue::External(x) => {
                let at = located(path, text, self.wake.span(), String::new());
                let origin = match at {
                    Error::Scenario {
                        file, line, column, ..
                    } => (file, line, column),
                    _ => unreachable!("located gives a scenario error"),
                };
                let spec = x.validate(path, origin, &err)?;
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

        let mut pi = PiConfig::default();
        let p = &mut pi.producers;
        let defaults = Producers::default();
        p.messages = self.producers.messages.map_or(defaults.messages, |s| s.0);
        if p.messages.max > MESSAGES_MAX {
            let span = key_span(text, "messages");
            return Err(err(
                span,
                format!("max {} is out of range 0..={MESSAGES_MAX}", p.messages.max),
            ));
        }
        p.start_ms = self.producers.start_ms.map_or(defaults.start_ms, |s| s.0);
        p.spacing_ms = self
            .producers
            .spacing_ms
            .map_or(defaults.spacing_ms, |s| s.0);
        if let Some(kinds) = &self.producers.kinds {
            if kinds.get_ref().is_empty() {
                return Err(err(
                    kinds.span(),
                    "at least one message kind is needed".to_string(),
                ));
            }
            p.kinds = kinds.get_ref().iter().map(|k| k.0).collect();
        }
        if let Some(n) = &self.producers.subagents {
            let v = *n.get_ref();
            if !(1..=26).contains(&v) {
                return Err(err(n.span(), format!("{v} is out of range 1..=26")));
            }
            p.subagents = v;
        }

        for (name, value) in &self.faults {
            let fault = PiFault::from_name(name.get_ref()).ok_or_else(|| {
                let names: Vec<_> = PiFault::ALL.iter().map(|f| f.name()).collect();
                err(
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
            pi.faults.push((
                fault,
                FaultSpec {
                    share: v.share,
                    rate: v.rate.unwrap_or(rate),
                    max: v.max.unwrap_or(max),
                },
            ));
        }

        let t = &mut pi.timing;
        let d = PiTiming::default();
        let r = &self.timing;
        t.step_ms = r.step_ms.map_or(d.step_ms, |s| s.0);
        t.handler_ms = r.handler_ms.map_or(d.handler_ms, |s| s.0);
        t.model_ms = r.model_ms.map_or(d.model_ms, |s| s.0);
        t.tool_ms = r.tool_ms.map_or(d.tool_ms, |s| s.0);
        t.tool_turns = r.tool_turns.map_or(d.tool_turns, |s| s.0);
        t.compaction_ms = r.compaction_ms.map_or(d.compaction_ms, |s| s.0);
        t.retry_ms = r.retry_ms.map_or(d.retry_ms, |s| s.0);
        t.user_delay_ms = r.user_delay_ms.map_or(d.user_delay_ms, |s| s.0);
        if t.tool_turns.max > 1_000 {
            let span = key_span(text, "tool_turns");
            return Err(err(
                span,
                format!("max {} is out of range 0..=1000", t.tool_turns.max),
            ));
        }

        let mut check = CheckParams::default();
        if let Some(v) = &self.check.latency_ms_max {
            check.latency_ms_max = *v.get_ref();
        }
        if let Some(v) = &self.check.latency_requests_max {
            check.latency_requests_max = *v.get_ref();
        }

        let expect = self.expect.get_ref().to_expect(&err)?;

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

        let mut explore = crate::explore::Scope::default();
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
            explore,
            must_reach,
            path: path.to_path_buf(),
            name: self.name,
            description: self.description,
            host,
            wake,
            adapter,
            seeds,
            snapshot_seed,
            limits,
            pi,
            check,
            expect,
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
