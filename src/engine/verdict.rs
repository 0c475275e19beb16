//! Judging: what a seed's outcome means for a scenario's expectation, and a scenario's report
//! over a seed range (accounted seed by seed, merged across ranges, judged with its required
//! race windows).

use std::collections::BTreeMap;
use std::ops::Range;

use crate::check::Invariant;
use crate::outcome::{Outcome, RunResult};
use crate::scenario::Expect;
use crate::sim::choice::Ratio;
use crate::sim::record::Window;

/// One seed's outcome, as a report keeps it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SeedNote {
    pub seed: u64,
    /// The outcome's label: the first invariant broken, "panic" or "step-budget".
    pub outcome: String,
    /// A sentence about it.
    pub detail: String,
}

/// The verdict of a scenario over a range of seeds. Reports of adjacent ranges merge into the
/// report of their union (threads, shards), whatever the order they finished in.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScenarioReport {
    pub seeds: Range<u64>,
    /// Seeds of `seeds` this report did not run because another shard of the run owns them
    /// (`engine::shard`); 0 outside a sharded run.
    #[serde(default)]
    pub others: u64,
    pub events: u64,
    pub failures: u64,
    /// Failing seeds whose outcome the expectation allows (the failure a failing scenario
    /// expects, or one it also allows): what the progress line and the summary call expected.
    #[serde(default)]
    pub expected_failing: u64,
    /// Seeds whose outcome the expectation does not allow (any failure of a scenario expected to
    /// pass, an invariant a failing one does not allow, a wrong number of model requests), each
    /// seed counted once however many ways it is wrong.
    #[serde(default)]
    pub unexpected_seeds: u64,
    /// Seeds that broke each invariant (or panicked, ran out of steps).
    pub counts: BTreeMap<String, u64>,
    /// Seeds that reached each race window.
    pub windows: BTreeMap<String, u64>,
    /// Seeds that switched each fault on.
    #[serde(default)]
    pub faults: BTreeMap<String, u64>,
    /// Of those, for faults that fire at opportunities: seeds in which it fired at least once.
    #[serde(default)]
    pub faults_fired: BTreeMap<String, u64>,
    pub first_failure: Option<SeedNote>,
    /// The first seed that showed what a failing expectation asks for.
    pub first_expected: Option<u64>,
    /// The first seed whose outcome the expectation does not allow; `detail` says why.
    pub unexpected: Option<SeedNote>,
    /// The first seed whose code under test did not load (an adapter fault of kind `load`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_loaded: Option<SeedNote>,
    pub met: bool,
    /// Why the expectation is not met, in a sentence.
    pub why: Option<String>,
}

/// Add `by` to `key`'s count, looking it up before inserting: a name is allocated once per
/// report, not once per seed.
fn bump(map: &mut BTreeMap<String, u64>, key: &str, by: u64) {
    match map.get_mut(key) {
        Some(n) => *n += by,
        None => {
            map.insert(key.to_string(), by);
        }
    }
}

/// Coverage counts of a range's seeds by name, before they enter a report's maps: a few names,
/// found by pointer (the names are the families' constants) before comparing text.
#[derive(Debug, Default)]
pub struct Tally {
    windows: Vec<(&'static str, u64)>,
    faults: Vec<(&'static str, u64)>,
    fired: Vec<(&'static str, u64)>,
}

/// Add `by` to `key`'s count in `list`.
fn tally_one(list: &mut Vec<(&'static str, u64)>, key: &'static str, by: u64) {
    if let Some((_, n)) = list.iter_mut().find(|(k, _)| std::ptr::eq(*k, key)) {
        *n += by;
    } else if let Some((_, n)) = list.iter_mut().find(|(k, _)| *k == key) {
        *n += by;
    } else {
        list.push((key, by));
    }
}

impl ScenarioReport {
    pub fn new(seeds: Range<u64>) -> ScenarioReport {
        ScenarioReport {
            seeds,
            others: 0,
            events: 0,
            failures: 0,
            expected_failing: 0,
            unexpected_seeds: 0,
            counts: BTreeMap::new(),
            windows: BTreeMap::new(),
            faults: BTreeMap::new(),
            faults_fired: BTreeMap::new(),
            first_failure: None,
            first_expected: None,
            unexpected: None,
            not_loaded: None,
            met: false,
            why: None,
        }
    }

    pub fn seed_count(&self) -> u64 {
        self.seeds.end - self.seeds.start - self.others
    }

    /// Account one seed's run; seeds must come in increasing order.
    pub fn add(&mut self, r: &RunResult, expect: &Expect) {
        let mut tally = Tally::default();
        self.add_tallied(r, expect, &mut tally);
        self.fold(tally);
    }

    /// Fold the coverage counts a range's seeds left in `tally` into the report.
    pub fn fold(&mut self, tally: Tally) {
        for (name, n) in tally.windows {
            bump(&mut self.windows, name, n);
        }
        for (name, n) in tally.faults {
            bump(&mut self.faults, name, n);
        }
        for (name, n) in tally.fired {
            bump(&mut self.faults_fired, name, n);
        }
    }

    /// `add`, with the seed's coverage counts (windows reached, faults on and fired) left in
    /// `tally` until [`ScenarioReport::fold`]: a seed then costs no map lookups by name.
    pub fn add_tallied(&mut self, r: &RunResult, expect: &Expect, tally: &mut Tally) {
        self.events += r.events;
        for (w, _) in &r.marks {
            tally_one(&mut tally.windows, w.name, 1);
        }
        for (f, _) in &r.mix.faults {
            tally_one(&mut tally.faults, f, 1);
        }
        for (f, n) in &r.mix.fired {
            tally_one(&mut tally.fired, f, u64::from(*n > 0));
        }
        let outcome = &r.outcome;
        if outcome.is_pass() {
            return;
        }
        self.failures += 1;
        if outcome.is_load_fault() && self.not_loaded.is_none() {
            self.not_loaded = Some(SeedNote {
                seed: r.seed,
                outcome: outcome.label(),
                detail: describe(outcome),
            });
        }
        match outcome {
            Outcome::Fail(vs) => {
                for v in vs {
                    *self
                        .counts
                        .entry(v.invariant.name().to_string())
                        .or_default() += 1;
                }
            }
            other => *self.counts.entry(other.label()).or_default() += 1,
        }
        if self.first_failure.is_none() {
            self.first_failure = Some(SeedNote {
                seed: r.seed,
                outcome: outcome.label(),
                detail: describe(outcome),
            });
        }
        let (expected, allowed) = allowed(expect, outcome);
        match allowed {
            true => self.expected_failing += 1,
            false => self.unexpected_seeds += 1,
        }
        if expected && self.first_expected.is_none() {
            self.first_expected = Some(r.seed);
        }
        if !allowed && self.unexpected.is_none() {
            self.unexpected = Some(SeedNote {
                seed: r.seed,
                outcome: outcome.label(),
                detail: unexpected_why(r.seed, outcome, expect),
            });
        }
    }

    /// A scripted scenario fixes the number of model requests every seed makes
    /// (`[expect] requests`): another count is an outcome the expectation does not allow. Called
    /// after [`ScenarioReport::add`] for the same seed, which has already counted an outcome
    /// `expect` does not allow as unexpected: a seed is counted once.
    pub fn check_requests(&mut self, r: &RunResult, requests: Option<u32>, expect: &Expect) {
        let Some(n) = requests else { return };
        if r.requests == n {
            return;
        }
        if r.outcome.is_pass() || allowed(expect, &r.outcome).1 {
            // Counted by `add` as passing or as an expected failure: it is unexpected after all.
            self.unexpected_seeds += 1;
            if !r.outcome.is_pass() {
                self.expected_failing -= 1;
            }
        }
        if self.unexpected.is_none() {
            self.unexpected = Some(SeedNote {
                seed: r.seed,
                outcome: "requests".to_string(),
                detail: format!(
                    "seed {} made {} model requests; the scenario expects exactly {n}",
                    r.seed, r.requests
                ),
            });
        }
    }

    /// Fold in the report of the adjacent range that follows this one.
    pub fn merge(&mut self, later: ScenarioReport) {
        assert_eq!(
            self.seeds.end, later.seeds.start,
            "merge adjacent ranges in order"
        );
        self.seeds = self.seeds.start..later.seeds.end;
        self.others += later.others;
        self.events += later.events;
        self.failures += later.failures;
        self.expected_failing += later.expected_failing;
        self.unexpected_seeds += later.unexpected_seeds;
        for (k, v) in later.counts {
            *self.counts.entry(k).or_default() += v;
        }
        for (k, v) in later.windows {
            *self.windows.entry(k).or_default() += v;
        }
        for (k, v) in later.faults {
            *self.faults.entry(k).or_default() += v;
        }
        for (k, v) in later.faults_fired {
            *self.faults_fired.entry(k).or_default() += v;
        }
        self.first_failure = self.first_failure.take().or(later.first_failure);
        self.first_expected = self.first_expected.or(later.first_expected);
        self.unexpected = self.unexpected.take().or(later.unexpected);
        self.not_loaded = self.not_loaded.take().or(later.not_loaded);
    }

    /// The windows of `must_reach` that a passing scenario's seeds reached, but in fewer than
    /// `share` of them, with the seeds that did: its pass says little about them.
    pub fn thinly_reached(
        &self,
        expect: &Expect,
        must_reach: &[Window],
        share: Ratio,
    ) -> Vec<(&'static str, u64)> {
        if !matches!(expect, Expect::Pass) || !self.met {
            return Vec::new();
        }
        let seeds = self.seed_count();
        must_reach
            .iter()
            .filter_map(|w| {
                let n = self.windows.get(w.name).copied().unwrap_or(0);
                // n/seeds < num/den, in integers.
                let thin = u128::from(n) * u128::from(share.den)
                    < u128::from(share.num) * u128::from(seeds);
                thin.then_some((w.name, n))
            })
            .collect()
    }

    /// Decide whether the expectation and the required race windows are met.
    pub fn judge(&mut self, expect: &Expect, must_reach: &[Window]) {
        // An empty range, or a shard that owns none of its seeds (a scenario with few seeds and
        // many shards), ran nothing, so it can neither show nor miss anything: `merge` judges
        // the whole.
        if self.seed_count() == 0 {
            self.met = true;
            self.why = None;
            return;
        }
        let unreached: Vec<&str> = must_reach
            .iter()
            .map(|w| w.name)
            .filter(|w| !self.windows.contains_key(*w))
            .collect();
        let shown = match expect {
            Expect::Pass => true,
            _ => self.first_expected.is_some(),
        };
        self.met = self.unexpected.is_none() && shown && unreached.is_empty();
        self.why = if self.met {
            None
        } else if let Some(u) = &self.unexpected {
            Some(u.detail.clone())
        } else if !shown {
            Some(format!(
                "no seed in {}..{} showed {expect}",
                self.seeds.start, self.seeds.end
            ))
        } else {
            Some(format!(
                "no seed in {}..{} reached the race window{} {} (coverage.must_reach)",
                self.seeds.start,
                self.seeds.end,
                if unreached.len() == 1 { "" } else { "s" },
                unreached.join(", ")
            ))
        };
    }
}

/// Why an outcome the expectation does not allow breaks it, in a sentence.
fn unexpected_why(seed: u64, outcome: &Outcome, expect: &Expect) -> String {
    if let (Expect::Fail { invariant, also }, Outcome::Fail(vs)) = (expect, outcome)
        && let Some(v) = vs
            .iter()
            .find(|v| v.invariant != *invariant && !also.contains(&v.invariant))
    {
        return format!(
            "seed {seed} also broke {}, which the scenario does not allow, at {} ms: {}",
            v.invariant, v.t.0, v.detail
        );
    }
    format!("seed {seed} {}", describe(outcome))
}

/// A sentence about a failing outcome.
pub fn describe(o: &Outcome) -> String {
    match o {
        Outcome::Pass => "passed".to_string(),
        Outcome::Fail(v) => format!(
            "broke {} at {} ms: {}",
            v[0].invariant, v[0].t.0, v[0].detail
        ),
        Outcome::Panic(m) => format!("panicked: {m}"),
        Outcome::StepBudget { steps } => format!("ran out of its step budget after {steps} events"),
        Outcome::AdapterFault(f) => {
            let mut s = format!("ended with an {f}");
            if !f.stderr_tail.is_empty() {
                s += &format!("; its stderr ends with:\n{}", indent(&f.stderr_tail));
            }
            s
        }
    }
}

/// Indent every line of `text` by four spaces.
pub fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Does `outcome` show what `expect` asks for, and is it allowed at all?
pub(crate) fn allowed(expect: &Expect, outcome: &Outcome) -> (bool, bool) {
    match (expect, outcome) {
        (_, Outcome::Pass) => (false, true),
        (Expect::Fail { invariant, also }, Outcome::Fail(vs)) => {
            let expected = vs.iter().any(|v| v.invariant == *invariant);
            let ok = vs
                .iter()
                .all(|v| v.invariant == *invariant || also.contains(&v.invariant));
            (expected, ok)
        }
        (Expect::Panic, Outcome::Panic(_)) => (true, true),
        (Expect::StepBudget, Outcome::StepBudget { .. }) => (true, true),
        (Expect::AdapterFault, Outcome::AdapterFault(_)) => (true, true),
        _ => (false, false),
    }
}

/// The seed whose timeline illustrates a scenario (its snapshot): `snapshot_seed` when the file
/// sets it, else the first seed of `rep` showing the expected failure of a failing scenario, else
/// 0. The default needs the seed budget's report; a passing scenario's seed 0 needs nothing.
pub fn snapshot_seed(scn: &crate::scenario::Scenario, rep: &ScenarioReport) -> u64 {
    match (scn.snapshot_seed, &scn.expect) {
        (Some(s), _) => s,
        (None, Expect::Pass) => 0,
        (None, _) => rep.first_expected.unwrap_or(0),
    }
}

/// Does a single outcome show the scenario's expected failure (for snapshot seeds)?
pub fn shows_expected(expect: &Expect, outcome: &Outcome) -> bool {
    match expect {
        Expect::Pass => outcome.is_pass(),
        _ => allowed(expect, outcome) == (true, true),
    }
}

/// The invariants of an outcome, for JSON.
pub fn invariants_of(outcome: &Outcome) -> Vec<Invariant> {
    outcome.violations().iter().map(|v| v.invariant).collect()
}
