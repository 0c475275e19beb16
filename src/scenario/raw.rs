//! Reading a scenario file: the host first (it decides which family's sections the file may
//! use), then the scenario's own keys, then the family's sections, every value checked.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::adapter::WakeValue;
use super::expect::RawExpect;
use super::{
    Expect, MUST_REACH_SHARE_DEFAULT, Scenario, Scope, Wakes, normalize, project_root, within,
};
use crate::adapter::AdapterSpec;
use crate::check::CheckParams;
use crate::error::{Error, Result};
use crate::family::{Config, HostKind};
use crate::input::values::RatioValue;
use crate::input::{Cx, located};
use crate::limits::{
    DURATION_MS_MAX, EXPLORE_DEVIATIONS_MAX, EXPLORE_MESSAGES_MAX, Limits, SEEDS_MAX, STEPS_MAX,
};
use crate::remote::RemoteSpec;
use crate::sim::record::Window;

/// Parse and validate a scenario file.
pub(super) fn parse(cx: Cx<'_>, wakes: Wakes<'_>) -> Result<Scenario> {
    // The host decides which family's sections the rest of the file may use.
    let head: Head = toml::from_str(cx.text).map_err(|e| cx.toml(e))?;
    head.sections(cx)?;
    let host = head.host(cx)?;
    let raw: RawScenario = toml::from_str(cx.text).map_err(|e| cx.toml(e))?;
    raw.validate(cx, host, wakes)
}

/// A scenario's wake: its label, and the adapter or real host that runs it, if any.
type WakeOf = (String, Option<AdapterSpec>, Option<RemoteSpec>);

/// The first pass: the host, and the shape of what the second pass reads as a whole (every
/// other key is read by the second pass).
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    host: Option<Spanned<String>>,
    /// A regression file's `format`, for the error that says what the file is.
    #[serde(default)]
    format: Option<Spanned<toml::Value>>,
    #[serde(default)]
    producers: Option<Spanned<toml::Value>>,
    #[serde(default)]
    faults: Option<Spanned<toml::Value>>,
    #[serde(default)]
    timing: Option<Spanned<toml::Value>>,
    #[serde(default)]
    check: Option<Spanned<toml::Value>>,
    #[serde(default)]
    coverage: Option<Spanned<toml::Value>>,
    #[serde(default)]
    explore: Option<Spanned<toml::Value>>,
    #[serde(default)]
    expect: Option<Spanned<toml::Value>>,
}

impl Head {
    /// Each section is a table: `[[expect]]` or `producers = [1, 2]` is said so, not as a
    /// type the reader expected inside.
    fn sections(&self, cx: Cx<'_>) -> Result<()> {
        let sections = [
            ("producers", &self.producers),
            ("faults", &self.faults),
            ("timing", &self.timing),
            ("check", &self.check),
            ("coverage", &self.coverage),
            ("explore", &self.explore),
            ("expect", &self.expect),
        ];
        for (name, v) in sections {
            let Some(v) = v else { continue };
            let what = match v.get_ref() {
                toml::Value::Table(_) => continue,
                toml::Value::Array(a) if a.iter().all(toml::Value::is_table) && !a.is_empty() => {
                    format!("an array of tables (`[[{name}]]`)")
                }
                other => format!("{} `{other}`", other.type_str()),
            };
            let message = format!("`{name}` must be a table (`[{name}]`), not {what}");
            return Err(cx.err(v.span(), message));
        }
        Ok(())
    }

    /// The host, which must be there: it decides what else the file may hold.
    fn host(&self, cx: Cx<'_>) -> Result<HostKind> {
        let Some(host) = &self.host else {
            let names: Vec<_> = HostKind::all().map(|h| h.name()).collect();
            let message = match self.format.as_ref().map(|f| f.get_ref()) {
                Some(toml::Value::String(f)) if f.starts_with("wakesim-regression") => {
                    "a regression file, not a scenario: give the scenario it names (its \
                     `scenario` key), or `replay`/`run` it"
                        .to_string()
                }
                _ => format!("missing top-level key `host` (one of {})", names.join(", ")),
            };
            return Err(Error::Scenario {
                file: cx.path.to_path_buf(),
                line: 1,
                column: 1,
                key: None,
                message,
            });
        };
        HostKind::from_name(host.get_ref()).ok_or_else(|| {
            let names: Vec<_> = (HostKind::all().chain(HostKind::real_hosts()))
                .map(|h| h.name())
                .collect();
            cx.err(
                host.span(),
                format!(
                    "unknown host `{}`, expected one of {}",
                    host.get_ref(),
                    names.join(", ")
                ),
            )
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: String,
    #[serde(default)]
    description: String,
    // Read by the first pass; kept so the key is known.
    #[allow(dead_code)]
    host: Spanned<String>,
    wake: Spanned<WakeValue>,
    seeds: Spanned<u64>,
    #[serde(default)]
    snapshot_seed: Option<u64>,
    /// Where failures found by `run` are saved (default: `regressions/` beside the file).
    #[serde(default)]
    regressions: Option<Spanned<String>>,
    #[serde(default)]
    duration_ms: Option<Spanned<u64>>,
    /// `search`: how seeds become choice streams (`sim::search::Search::parse`).
    #[serde(default)]
    search: Option<Spanned<String>>,
    #[serde(default)]
    quiesce_ms_max: Option<u64>,
    #[serde(default)]
    steps_max: Option<Spanned<u64>>,
    // The family's sections, read by its own `AnyFamily::config`; kept so the keys are known.
    #[allow(dead_code)]
    #[serde(default)]
    producers: Option<toml::Value>,
    #[allow(dead_code)]
    #[serde(default)]
    faults: Option<toml::Value>,
    #[allow(dead_code)]
    #[serde(default)]
    timing: Option<toml::Value>,
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
    /// `false`: the scope is declared too small to hold a failing scenario's bug.
    holds_bug: Option<Spanned<bool>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCoverage {
    #[serde(default)]
    must_reach: Vec<Spanned<String>>,
    /// The share of seeds below which a passing scenario's report warns that it reached a
    /// `must_reach` window too rarely.
    must_reach_share: Option<RatioValue>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    latency_ms_max: Option<Spanned<u64>>,
    latency_requests_max: Option<Spanned<u32>>,
    boundary_ms_max: Option<Spanned<u64>>,
}

impl RawScenario {
    /// Every value checked, in the order the keys were always checked (so a file with one error
    /// reports it whatever else it has).
    fn validate(self, cx: Cx<'_>, host: HostKind, wakes: Wakes<'_>) -> Result<Scenario> {
        let (wake, adapter, mut remote) = self.wake(cx, host, wakes)?;
        let seeds = *self.seeds.get_ref();
        if seeds == 0 || seeds > SEEDS_MAX {
            let message = format!("{seeds} is out of range 1..={SEEDS_MAX}");
            return Err(cx.err(self.seeds.span(), message));
        }
        let limits = self.limits(cx)?;
        let config = host.family().config(cx)?;
        if let Some(spec) = &mut remote {
            spec.sections = host.family().real_sections(&config);
        }
        let check = self.check(cx, host, &config)?;
        let e = self.expect.get_ref();
        let expect = e.to_expect(&|span, msg| cx.err(span, msg), host)?;
        let requests = e.requests.as_ref().map(|r| *r.get_ref());
        let must_reach = self.must_reach(cx, host)?;
        let explore = self.explore(cx)?;
        let explore_holds_bug = match &self.explore.holds_bug {
            Some(h) if !*h.get_ref() && matches!(expect, Expect::Pass) => {
                let m = "`holds_bug = false` is for a failing scenario: a passing one's scope \
                         must hold no failure at all";
                return Err(cx.err(h.span(), m.to_string()));
            }
            Some(h) => *h.get_ref(),
            None => true,
        };
        let regressions = self.regressions(cx)?;
        let search = match &self.search {
            None => crate::sim::search::Search::Swarm,
            Some(v) => {
                let search = crate::sim::search::Search::parse(v.get_ref())
                    .map_err(|m| cx.err(v.span(), m))?;
                if remote.is_some() && !search.is_swarm() {
                    let m = "a real host's seeds run under `swarm` only: its driver draws what \
                             wakesim sends ahead of a uniform stream";
                    return Err(cx.err(v.span(), m.to_string()));
                }
                search
            }
        };
        Ok(Scenario {
            search,
            regressions,
            adapter,
            remote,
            explore,
            explore_holds_bug,
            path: cx.path.to_path_buf(),
            name: self.name,
            description: self.description,
            host,
            wake,
            seeds,
            snapshot_seed: self.snapshot_seed,
            limits,
            config,
            check,
            expect,
            requests,
            must_reach,
            must_reach_share: (self.coverage.must_reach_share.as_ref())
                .map_or(MUST_REACH_SHARE_DEFAULT, |r| r.0),
        })
    }

    /// `wake`: a logic of the host's family, an adapter, or on a real host the extension it
    /// loads (its label and its spec).
    fn wake(&self, cx: Cx<'_>, host: HostKind, wakes: Wakes<'_>) -> Result<WakeOf> {
        let origin = || match located(cx.path, cx.text, self.wake.span(), String::new()) {
            Error::Scenario {
                file, line, column, ..
            } => (file, line, column),
            _ => unreachable!("located gives a scenario error"),
        };
        let err = |span, msg| cx.err(span, msg);
        match (self.wake.get_ref(), host.real()) {
            (WakeValue::Remote(x), Some(_)) => {
                let (spec, label) = x.validate_remote(cx.path, host, origin(), &err)?;
                Ok((label, None, Some(spec)))
            }
            (WakeValue::Remote(_), None) => {
                let example =
                    HostKind::real_hosts().find(|h| h.family().name() == host.family().name());
                let key = match host.family().own_driver() {
                    Some(_) => "`variant` and `patch` name the code a real host runs",
                    None => "`extension` names code a real host loads",
                };
                let message = format!(
                    "{key}: give `host` as family@version{}",
                    example.map_or(String::new(), |h| format!(" (e.g. \"{}\")", h.name()))
                );
                Err(cx.err(self.wake.span(), message))
            }
            (_, Some(_)) => {
                let message = match host.family().own_driver() {
                    Some(d) => format!(
                        "the real host {} runs its own code or a patch of it: give `wake = {{ variant = \"{}\" }}` (one of {}) or `{{ patch = \"...\" }}`",
                        host.name(),
                        d.own,
                        d.variants.join(", ")
                    ),
                    None => format!(
                        "the real host {} loads its wake logic itself: give `wake = {{ extension = \"...\" }}`",
                        host.name()
                    ),
                };
                Err(cx.err(self.wake.span(), message))
            }
            (WakeValue::Name(wake), None) => {
                (wakes.check(wake, host)).map_err(|m| cx.err(self.wake.span(), m))?;
                Ok((wake.clone(), None, None))
            }
            (WakeValue::External(_), None) if !host.family().has_adapter() => {
                let message = format!(
                    "{} hosts run Rust wake logics only (the family has no adapter side): give `wake = \"NAME\"`",
                    host.name()
                );
                Err(cx.err(self.wake.span(), message))
            }
            (WakeValue::External(x), None) => {
                let spec = x.validate(cx.path, origin(), &err)?;
                let label = (x.name.clone().or_else(|| x.short_label()))
                    .unwrap_or_else(|| spec.command.join(" "));
                Ok((label, Some(spec), None))
            }
        }
    }

    /// `[check]`, with the bounds the host's family derives from its parameters: a bound the
    /// scenario does not set is the derived one; one at or above the host's own wait cannot
    /// catch a wait missed until it times out, and is refused (issue 15, class 1).
    fn check(&self, cx: Cx<'_>, host: HostKind, config: &Config) -> Result<CheckParams> {
        let mut check = CheckParams::default();
        let derived = host.family().derived_bounds(config);
        if let Some(d) = &derived {
            check.input_ms_max = d.input_ms_max;
            check.notice_wait_ms_min = d.notice_wait_ms_min;
            // A real host's timing is its own code's, not the model's documented waits.
            if host.real().is_none() {
                check.latency_ms_max = d.latency_ms_max;
            }
        }
        if let Some(v) = &self.check.latency_ms_max {
            let set = *v.get_ref();
            if let Some(d) = derived.as_ref().filter(|d| set >= d.host_wait_ms) {
                let message = format!(
                    "{set} ms is not below the host's own wait, {} = {} ms: a wait that misses its input until it times out would pass; the bound derived from [timing] is {} ms ({}), or leave latency_ms_max out to use it",
                    d.host_wait, d.host_wait_ms, d.latency_ms_max, d.latency_why
                );
                return Err(cx.err(v.span(), message));
            }
            check.latency_ms_max = set;
        }
        if let Some(v) = &self.check.latency_requests_max {
            check.latency_requests_max = *v.get_ref();
        }
        if let Some(v) = &self.check.boundary_ms_max {
            check.boundary_ms_max = Some(*v.get_ref());
        }
        Ok(check)
    }

    /// `duration_ms`, `quiesce_ms_max`, `steps_max`.
    fn limits(&self, cx: Cx<'_>) -> Result<Limits> {
        let mut limits = Limits::default();
        if let Some(d) = &self.duration_ms {
            let v = *d.get_ref();
            if v == 0 || v > DURATION_MS_MAX {
                let message = format!("{v} is out of range 1..={DURATION_MS_MAX}");
                return Err(cx.err(d.span(), message));
            }
            limits.active_ms = v;
        }
        if let Some(q) = self.quiesce_ms_max {
            limits.quiesce_ms_max = q.min(DURATION_MS_MAX);
        }
        if let Some(s) = &self.steps_max {
            let v = *s.get_ref();
            if v == 0 || v > STEPS_MAX {
                let message = format!("{v} is out of range 1..={STEPS_MAX}");
                return Err(cx.err(s.span(), message));
            }
            limits.steps_max = v;
        }
        Ok(limits)
    }

    /// `[coverage] must_reach`: windows of the host's family.
    fn must_reach(&self, cx: Cx<'_>, host: HostKind) -> Result<Vec<Window>> {
        let windows = host.family().windows();
        (self.coverage.must_reach.iter())
            .map(|w| {
                let found = windows.iter().find(|x| x.name == w.get_ref()).copied();
                found.ok_or_else(|| {
                    let names: Vec<_> = windows.iter().map(|w| w.name).collect();
                    let message = format!(
                        "unknown race window `{}`, expected one of {}",
                        w.get_ref(),
                        names.join(", ")
                    );
                    cx.err(w.span(), message)
                })
            })
            .collect()
    }

    /// `regressions`: a directory relative to the scenario file, inside its project (see
    /// `project_root`); by default `regressions/` beside the file.
    fn regressions(&self, cx: Cx<'_>) -> Result<PathBuf> {
        let dir = cx.path.parent().unwrap_or(Path::new("."));
        let Some(key) = &self.regressions else {
            return Ok(dir.join("regressions"));
        };
        let rel = Path::new(key.get_ref());
        let inside = !rel.as_os_str().is_empty()
            && rel.is_relative()
            && within(&project_root(cx.path), &dir.join(rel));
        if !inside {
            let message = format!(
                "`{}` is not inside the scenario's project (the nearest directory above the file holding Cargo.toml or .git): wakesim writes saved failures only inside it; a relative path that stays inside is expected",
                key.get_ref()
            );
            return Err(cx.err(key.span(), message));
        }
        Ok(normalize(&dir.join(rel)))
    }

    /// `[explore]`: explore's default scope.
    fn explore(&self, cx: Cx<'_>) -> Result<Scope> {
        let mut explore = Scope::default();
        if let Some(m) = self.explore.messages {
            explore.messages_max = m.clamp(1, EXPLORE_MESSAGES_MAX);
        }
        if let Some(d) = &self.explore.deviations {
            let v = *d.get_ref();
            if v > EXPLORE_DEVIATIONS_MAX {
                let message = format!("{v} is out of range 0..={EXPLORE_DEVIATIONS_MAX}");
                return Err(cx.err(d.span(), message));
            }
            explore.deviations_max = v;
        }
        if let Some(r) = self.explore.runs_max {
            explore.runs_max = r.max(1);
        }
        Ok(explore)
    }
}
