//! JSON Lines: one object a line, `type` first, then `format` ([`FORMAT`]). Every line is a
//! typed struct; `wakesim merge` reads `run`'s lines back through the same types.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::{LineKind, Summary, lines, reproduce};
use crate::engine::findability::Findability;
use crate::engine::regression::{Regression, Replayed};
use crate::engine::{Extras, Outcome, RunResult, ScenarioReport, SeedNote, describe};
use crate::scenario::Scenario;

/// The version of the JSON Lines wakesim writes. A change that renames or removes a field, or
/// changes its meaning, is a new version; adding a field is not.
pub const FORMAT: &str = "wakesim-jsonl/1";

/// A line of `wakesim run --format json`.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunLine {
    Scenario(Box<ScenarioLine>),
    Regression(RegressionLine),
    Summary(SummaryLine),
}

/// One scenario's report.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioLine {
    pub format: String,
    pub file: String,
    pub name: String,
    pub host: String,
    pub wake: String,
    pub expect: String,
    pub must_reach: Vec<String>,
    /// The seeds run: all of `seed_range`, or a shard's part of it.
    pub seeds: u64,
    pub seed_range: [u64; 2],
    pub events: u64,
    pub failures: u64,
    /// Of `failures`, the seeds whose failure the expectation allows.
    #[serde(default)]
    pub expected_failing_seeds: u64,
    /// Seeds whose outcome the expectation does not allow.
    #[serde(default)]
    pub unexpected_seeds: u64,
    pub failing_seeds_by_outcome: BTreeMap<String, u64>,
    pub windows: BTreeMap<String, u64>,
    /// Seeds that switched each fault on.
    #[serde(default)]
    pub faults: BTreeMap<String, u64>,
    /// Seeds in which each opportunity fault (switched on) fired at least once.
    #[serde(default)]
    pub faults_fired: BTreeMap<String, u64>,
    /// `must_reach` windows a passing scenario reached in fewer than `must_reach_share` of
    /// its seeds, with the seeds that reached them.
    #[serde(default)]
    pub thin_coverage: BTreeMap<String, u64>,
    pub first_failure: Option<FirstFailure>,
    pub first_expected: Option<u64>,
    pub unexpected: Option<Unexpected>,
    pub met: bool,
    pub why: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findability: Option<FindabilityJson>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub determinism: Option<DeterminismJson>,
    /// Set when the sweep stopped before its planned seeds' end: why, and the planned range
    /// (`seed_range` is the prefix that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StoppedJson>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoppedJson {
    pub why: String,
    pub planned_seed_range: [u64; 2],
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirstFailure {
    pub seed: u64,
    /// The outcome's label: the first invariant broken, "panic", ...
    pub invariant: String,
    pub detail: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unexpected {
    pub seed: u64,
    pub outcome: String,
    pub detail: String,
    pub reproduce: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindabilityJson {
    pub failing_seeds: u64,
    pub failure_rate: String,
    pub median_seeds_to_first_failure: Option<u64>,
    pub p90_seeds_to_first_failure: Option<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeterminismJson {
    pub seeds_checked: u64,
    pub divergences: Vec<String>,
}

/// One regression file's replay.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegressionLine {
    pub format: String,
    pub file: String,
    pub scenario: String,
    pub seed: u64,
    pub expect: String,
    pub outcome: String,
    pub detail: String,
    pub events: u64,
    pub stale: Option<String>,
    pub met: bool,
    pub reproduce: String,
}

/// The totals, last.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryLine {
    pub format: String,
    pub regressions: usize,
    pub scenarios: usize,
    pub unmet: usize,
    pub seeds: u64,
    /// Failing seeds the expectations allow, and seeds whose outcome they do not.
    #[serde(default)]
    pub expected_failing_seeds: u64,
    #[serde(default)]
    pub unexpected_seeds: u64,
    pub events: u64,
    pub seconds: f64,
    pub seeds_per_s: f64,
    pub events_per_s: f64,
    /// `[K, N]` of `run --shard K/N`; absent for a whole run (read as 1/1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<[u64; 2]>,
    /// Set when the run stopped before its end (Ctrl-C, `--time-budget`, `--fail-fast`): why.
    /// Its seeds are then a prefix of each scenario's budget, and with a time budget, which
    /// prefix depends on the machine's speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Scenarios and regressions not started because the run stopped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_run: usize,
    /// Seeds planned, when the run stopped before its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeds_planned: Option<u64>,
    /// What every shard of this run shares (`merge` refuses shards whose identities differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunJson>,
}

/// The identity of a run: the same in each of its shards, and in the run unsharded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunJson {
    /// A hash of the fields below, to compare at a glance.
    pub id: String,
    /// The wakesim version that ran it.
    pub version: String,
    /// How seeds are assigned to shards (`engine::shard::SCHEME`).
    pub scheme: String,
    /// `WAKESIM_SEEDS_MULTIPLIER` (1 when unset).
    pub seeds_multiplier: u64,
    /// `--seeds A..B`, when given instead of each scenario's budget.
    pub seeds: Option<[u64; 2]>,
    /// Every scenario and regression file the run covers, with its content's hash.
    pub files: BTreeMap<String, String>,
}

impl RunJson {
    pub fn new(
        version: &str,
        scheme: &str,
        seeds_multiplier: u64,
        seeds: Option<[u64; 2]>,
        files: BTreeMap<String, String>,
    ) -> RunJson {
        let mut run = RunJson {
            id: String::new(),
            version: version.to_string(),
            scheme: scheme.to_string(),
            seeds_multiplier,
            seeds,
            files,
        };
        run.id = run.hash();
        run
    }

    /// FNV-1a over the fields' JSON, id left empty.
    pub fn hash(&self) -> String {
        let bare = RunJson {
            id: String::new(),
            ..self.clone()
        };
        content_hash(line(&bare).as_bytes())
    }
}

/// A file's content hash in a run identity: FNV-1a, 64 bits, in hex (enough to tell two
/// versions of a file apart; nothing here is adversarial).
pub fn content_hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn line<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("a report line serializes")
}

fn findability_json(f: &Findability) -> FindabilityJson {
    FindabilityJson {
        failing_seeds: f.failing,
        failure_rate: format!("{}/{}", f.failing, f.seeds),
        median_seeds_to_first_failure: f.median_seeds_to_first,
        p90_seeds_to_first_failure: f.p90_seeds_to_first,
    }
}

/// The `"type":"scenario"` line of `wakesim run`.
pub fn scenario_line(scn: &Scenario, rep: &ScenarioReport, extras: &Extras) -> String {
    line(&RunLine::Scenario(Box::new(ScenarioLine {
        format: FORMAT.to_string(),
        file: scn.path.display().to_string(),
        name: scn.name.clone(),
        host: scn.host.name().to_string(),
        wake: scn.wake.clone(),
        expect: scn.expect.to_string(),
        must_reach: scn.must_reach.iter().map(|w| w.name.to_string()).collect(),
        seeds: rep.seed_count(),
        seed_range: [rep.seeds.start, rep.seeds.end],
        events: rep.events,
        failures: rep.failures,
        expected_failing_seeds: rep.expected_failing,
        unexpected_seeds: rep.unexpected_seeds,
        failing_seeds_by_outcome: rep.counts.clone(),
        windows: rep.windows.clone(),
        faults: rep.faults.clone(),
        faults_fired: rep.faults_fired.clone(),
        thin_coverage: (rep.thinly_reached(&scn.expect, &scn.must_reach, scn.must_reach_share))
            .into_iter()
            .map(|(w, n)| (w.to_string(), n))
            .collect(),
        first_failure: rep.first_failure.as_ref().map(|n| FirstFailure {
            seed: n.seed,
            invariant: n.outcome.clone(),
            detail: n.detail.clone(),
        }),
        first_expected: rep.first_expected,
        unexpected: rep.unexpected.as_ref().map(|n| Unexpected {
            seed: n.seed,
            outcome: n.outcome.clone(),
            detail: n.detail.clone(),
            reproduce: super::seed_replay_line(scn, n.seed)
                .trim_start_matches("reproduce: ")
                .to_string(),
        }),
        met: rep.met,
        why: rep.why.clone(),
        findability: extras.findability.as_ref().map(findability_json),
        determinism: extras.determinism.as_ref().map(|d| DeterminismJson {
            seeds_checked: d.seeds_checked,
            divergences: d.divergences.clone(),
        }),
        stopped: extras.stopped.as_ref().map(|s| StoppedJson {
            why: s.why.clone(),
            planned_seed_range: [s.planned.start, s.planned.end],
        }),
    })))
}

impl ScenarioLine {
    /// The (unjudged) report this line came from, for `wakesim merge`.
    pub fn report(&self) -> Result<ScenarioReport, String> {
        let [start, end] = self.seed_range;
        if start > end {
            return Err(format!("`seed_range` [{start}, {end}] is not a range"));
        }
        let mut rep = ScenarioReport::new(start..end);
        // A shard's line covers a range whose other seeds other shards ran.
        rep.others = (end - start).checked_sub(self.seeds).ok_or_else(|| {
            format!(
                "`seeds` {} is more than the {} seeds of `seed_range` [{start}, {end}]",
                self.seeds,
                end - start
            )
        })?;
        rep.events = self.events;
        rep.failures = self.failures;
        rep.expected_failing = self.expected_failing_seeds;
        rep.unexpected_seeds = self.unexpected_seeds;
        rep.counts = self.failing_seeds_by_outcome.clone();
        rep.windows = self.windows.clone();
        rep.faults = self.faults.clone();
        rep.faults_fired = self.faults_fired.clone();
        rep.first_failure = self.first_failure.as_ref().map(|f| SeedNote {
            seed: f.seed,
            outcome: f.invariant.clone(),
            detail: f.detail.clone(),
        });
        rep.first_expected = self.first_expected;
        rep.unexpected = self.unexpected.as_ref().map(|u| SeedNote {
            seed: u.seed,
            outcome: u.outcome.clone(),
            detail: u.detail.clone(),
        });
        Ok(rep)
    }

    /// Its seed range.
    pub fn seeds(&self) -> Range<u64> {
        self.seed_range[0]..self.seed_range[1]
    }
}

/// The last line of `wakesim run`.
pub fn summary_line(sum: &Summary) -> String {
    line(&RunLine::Summary(SummaryLine {
        format: FORMAT.to_string(),
        regressions: sum.regressions,
        scenarios: sum.scenarios,
        unmet: sum.unmet,
        seeds: sum.seeds,
        expected_failing_seeds: sum.expected_failing,
        unexpected_seeds: sum.unexpected_seeds,
        events: sum.events,
        seconds: (sum.secs * 1000.0).round() / 1000.0,
        seeds_per_s: sum.rate(sum.seeds).round(),
        events_per_s: sum.rate(sum.events).round(),
        shard: sum.shard.map(|(k, n)| [k, n]),
        stopped: sum.stopped.clone(),
        not_run: sum.not_run,
        seeds_planned: sum.stopped.is_some().then_some(sum.seeds_planned),
        run: sum.run.clone(),
    }))
}

/// The `"type":"regression"` line of `wakesim run`.
pub fn regression_line(reg: &Regression, r: &Replayed) -> String {
    let (result, met, stale) = match r {
        Replayed::Stale { result, why, met } => (result, *met, Some(why.clone())),
        Replayed::Run { result, met } => (result, *met, None),
    };
    line(&RunLine::Regression(RegressionLine {
        format: FORMAT.to_string(),
        file: reg.path.display().to_string(),
        scenario: reg.scenario.path.display().to_string(),
        seed: reg.seed,
        expect: reg.expectation().to_string(),
        outcome: result.outcome.label(),
        detail: describe(&result.outcome),
        events: result.events,
        stale,
        met,
        reproduce: format!("{} replay {}", super::invocation(), reg.path.display()),
    }))
}

/// A regression line read back (by `wakesim merge`), written again.
pub fn regression_line_text(r: &RegressionLine) -> String {
    line(&RunLine::Regression(r.clone()))
}

/// A line of `wakesim replay --format json`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ReplayLine {
    Run {
        format: &'static str,
        file: String,
        host: &'static str,
        wake: String,
        seed: u64,
        faults: Vec<FaultOn>,
        producers: Vec<&'static str>,
        windows: Vec<WindowCount>,
        version: &'static str,
    },
    Event(TimelineLine),
    Violation(TimelineLine),
    Verdict(VerdictLine),
}

#[derive(Serialize)]
struct FaultOn {
    fault: &'static str,
    rate: String,
}

#[derive(Serialize)]
struct WindowCount {
    window: &'static str,
    count: u32,
}

#[derive(Serialize)]
struct TimelineLine {
    t_ms: u64,
    actor: &'static str,
    event: String,
    state: &'static str,
}

#[derive(Serialize)]
struct VerdictLine {
    #[serde(flatten)]
    outcome: OutcomeJson,
    events: u64,
    end_ms: u64,
    trace_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reproduce: Option<String>,
}

/// A run's outcome.
#[derive(Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
enum OutcomeJson {
    Pass,
    Fail {
        invariants: Vec<&'static str>,
        violations: Vec<ViolationJson>,
    },
    Panic {
        message: String,
    },
    StepBudget {
        steps: u64,
    },
    AdapterFault {
        fault: &'static str,
        detail: String,
        stderr_tail: String,
    },
}

#[derive(Serialize)]
struct ViolationJson {
    invariant: &'static str,
    t_ms: u64,
    message: Option<String>,
    detail: String,
}

fn outcome_json(o: &Outcome) -> OutcomeJson {
    match o {
        Outcome::Pass => OutcomeJson::Pass,
        Outcome::Fail(vs) => OutcomeJson::Fail {
            invariants: vs.iter().map(|v| v.invariant.name()).collect(),
            violations: vs
                .iter()
                .map(|v| ViolationJson {
                    invariant: v.invariant.name(),
                    t_ms: v.t.0,
                    message: v.msg.map(|m| m.to_string()),
                    detail: v.detail.clone(),
                })
                .collect(),
        },
        Outcome::Panic(m) => OutcomeJson::Panic { message: m.clone() },
        Outcome::StepBudget { steps } => OutcomeJson::StepBudget { steps: *steps },
        Outcome::AdapterFault(f) => OutcomeJson::AdapterFault {
            fault: f.kind.name(),
            detail: f.detail.clone(),
            stderr_tail: f.stderr_tail.clone(),
        },
    }
}

/// `wakesim replay --format json`: a run line, one line per timeline entry, a verdict line.
pub fn replay(scn: &Scenario, r: &RunResult) -> String {
    let mut out = vec![line(&ReplayLine::Run {
        format: FORMAT,
        file: scn.path.display().to_string(),
        host: scn.host.name(),
        wake: scn.wake.clone(),
        seed: r.seed,
        faults: (r.mix.faults.iter())
            .map(|(fault, rate)| FaultOn {
                fault,
                rate: rate.to_string(),
            })
            .collect(),
        producers: r.mix.producers.clone(),
        windows: (r.marks.iter())
            .map(|(w, count)| WindowCount {
                window: w.name,
                count: *count,
            })
            .collect(),
        version: env!("CARGO_PKG_VERSION"),
    })];
    for l in lines(scn.host, &r.trace, &r.messages, r.outcome.violations()) {
        let entry = TimelineLine {
            t_ms: l.t,
            actor: l.actor.name(),
            event: l.text,
            state: l.state,
        };
        out.push(line(&match l.kind {
            LineKind::Violation => ReplayLine::Violation(entry),
            _ => ReplayLine::Event(entry),
        }));
    }
    out.push(line(&ReplayLine::Verdict(VerdictLine {
        outcome: outcome_json(&r.outcome),
        events: r.events,
        end_ms: r.end.0,
        trace_hash: format!("{:016x}", r.trace_hash),
        reproduce: (!r.outcome.is_pass()).then(|| {
            reproduce(scn, r)
                .trim_start_matches("reproduce: ")
                .to_string()
        }),
    })));
    out.join("\n") + "\n"
}
