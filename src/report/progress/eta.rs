//! The progress line's estimate of the time left ([`Costs`]) and what it starts from before a
//! scenario is measured ([`Prior`]).
//!
//! Scenarios differ by orders of magnitude in wall-clock time per seed (a built-in wake logic in
//! microseconds, an adapter process in milliseconds, a real host in tens of milliseconds, a real
//! host loading an extension package in hundreds), so a single seeds-per-second rate swings
//! wildly between them. Each scenario has a prior cost, a fixed part plus a part per seed:
//! remembered from a previous run where the cost file has it (`costs_file`), else derived from
//! what its file says ([`prior`]: its host, version, wake logic, extension package, producers and
//! seeds). As scenarios run, the estimate scales the priors of the scenarios still to come by how
//! the measured ones compared with theirs, taken over the scenarios most like them: the same kind
//! in the same directory, else the same kind elsewhere, the same host at another version, the
//! same class, else all of them ([`Costs::scale`]).

use std::collections::BTreeMap;
use std::time::Instant;

use crate::scenario::Scenario;

/// A scenario's cost before it is measured, in seconds: a fixed part (its runner threads'
/// adapter processes or drivers starting, the last chunk running alone) and a part per seed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prior {
    pub fixed: f64,
    pub per_seed: f64,
    /// Measured on a previous run of the same file (the cost file), not derived from the file.
    pub remembered: bool,
}

impl Prior {
    pub fn derived(fixed: f64, per_seed: f64) -> Prior {
        Prior {
            fixed,
            per_seed,
            remembered: false,
        }
    }

    /// Seconds for `seeds` seeds, the fixed part included.
    pub fn secs(&self, seeds: f64) -> f64 {
        self.fixed + self.per_seed * seeds
    }

    fn scaled(self, by: f64) -> Prior {
        Prior {
            fixed: self.fixed * by,
            per_seed: self.per_seed * by,
            ..self
        }
    }
}

/// A kind's class: `built-in`, `adapter` or `real host`.
pub fn class(kind: &str) -> &str {
    match kind {
        k if k.starts_with("real host") => "real host",
        k if k.starts_with("adapter") => "adapter",
        _ => "built-in",
    }
}

/// A kind without its directory (`real host pi@0.99.1` of `real host pi@0.99.1 in
/// scenarios/real-pi-ext`).
pub fn base(kind: &str) -> &str {
    kind.split(" in ").next().unwrap_or(kind)
}

/// A kind's host without its version or directory (`real host pi` of `real host pi@0.99.1`).
pub fn family(kind: &str) -> &str {
    base(kind).split('@').next().unwrap_or(kind)
}

/// The extension package a real-host kind loads (`pi-subagents` of `real host pi@0.99.1 with
/// pi-subagents in ...`), or `""`.
pub fn package(kind: &str) -> &str {
    base(kind).split_once(" with ").map_or("", |(_, p)| p)
}

/// The levels at which two kinds are alike, most alike first: the same kind in the same
/// directory, the same kind, the same host and extension package at any version, the same
/// host, the same class, any two.
const LEVELS: [fn(&str, &str) -> bool; 6] = [
    |a, b| a == b,
    |a, b| base(a) == base(b),
    |a, b| family(a) == family(b) && package(a) == package(b),
    |a, b| family(a) == family(b),
    |a, b| class(a) == class(b),
    |_, _| true,
];

/// Seconds a level's measurements must have taken to weigh as much as the broader level's
/// figure (see [`Costs::scale`]): about two real-host scenarios.
pub const EVIDENCE_SECS: f64 = 10.0;

/// The same for every scenario measured, against a scale of 1 (the priors as they are).
const EVIDENCE_ALL_SECS: f64 = 2.0;

/// What a running scenario past its estimate, before its first chunk has ended, is taken to
/// need still: this share of the time it has run.
const OVERDUE_SHARE: f64 = 0.5;

/// `spent` seconds measured for `prior` seconds of priors, their ratio weighed by the seconds
/// spent against `evidence` seconds of a scale `broader`.
fn weighed(spent: f64, prior: f64, broader: f64, evidence: f64) -> f64 {
    if prior <= 0.0 || spent <= 0.0 {
        return broader;
    }
    (spent * (spent / prior) + evidence * broader) / (spent + evidence)
}

/// [`weighed`] against [`EVIDENCE_SECS`].
fn shrunk(spent: f64, prior: f64, broader: f64) -> f64 {
    weighed(spent, prior, broader, EVIDENCE_SECS)
}

/// A scenario's kind for the ETA: what its cost per seed is like (a real host's extension
/// package among it: one package's scenarios can cost several times another's), and the
/// directory it is in (the scenarios of a directory are alike).
pub fn kind(scn: &Scenario) -> String {
    let what = match (&scn.adapter, &scn.remote) {
        (Some(a), _) => format!("adapter {}", a.command.first().map_or("", |p| p.as_str())),
        (None, Some(spec)) => {
            let host = format!("real host {}", scn.host.version_label());
            let package = (spec.wake.get("package").and_then(|p| p.as_str()))
                .and_then(|p| std::path::Path::new(p).file_name())
                .map(|n| n.to_string_lossy().into_owned());
            match package {
                Some(p) => format!("{host} with {p}"),
                None => host,
            }
        }
        (None, None) => "built-in".to_string(),
    };
    in_dir(&what, &scn.path.display().to_string())
}

/// `what` of the scenario file at `path`, with its directory.
pub fn in_dir(what: &str, path: &str) -> String {
    match path.rsplit_once('/') {
        Some((dir, _)) => format!("{what} in {dir}"),
        None => format!("{what} in ."),
    }
}

/// What a scenario file says its cost will be, before any run of it is measured: seconds
/// fitted on the main job's ETA log (`WAKESIM_ETA_LOG`, two shared cores, every scenario file's
/// time from its start to the next's; docs/performance.md). A scenario's file names its host
/// and wake logic, and those set its cost:
///
/// - a built-in wake logic: 12 µs a seed, nothing fixed;
/// - an adapter process (one per runner thread): a Node adapter 0.45 s to start and 0.37 ms a
///   seed, a Python one 1.1 s and 0.32 ms;
/// - a real host: its driver's start (one per runner thread) and a round trip per event, more
///   with more tool turns a run: pi about 5.6 s and 12 ms a seed, gptme 3 s and 8 ms; a wake
///   logic that is an extension package from npm (`wake.package`) 3 s and 45 ms a seed, the
///   host loading the package and what it starts (subagents, processes, peers' inboxes).
pub fn prior(scn: &Scenario) -> Prior {
    match (&scn.adapter, &scn.remote) {
        (Some(a), _) => adapter_prior(a.command.first().map_or("", String::as_str)),
        (None, Some(spec)) => {
            let section = |path: &[&str]| {
                let mut v = &spec.sections;
                for k in path {
                    v = v.get(k)?;
                }
                v.as_f64()
            };
            let tool_turns = match (
                section(&["timing", "tool_turns", "min"]),
                section(&["timing", "tool_turns", "max"]),
            ) {
                (Some(a), Some(b)) => (a + b) / 2.0,
                (a, b) => a.or(b).unwrap_or(1.0),
            };
            let package = (spec.wake.get("package").and_then(|p| p.as_str()))
                .and_then(|p| std::path::Path::new(p).file_name())
                .map(|n| n.to_string_lossy().into_owned());
            real_host_prior(spec.family, tool_turns, package.as_deref())
        }
        (None, None) => Prior::derived(0.0, 0.000_012),
    }
}

/// An adapter's part of [`prior`], by its program.
fn adapter_prior(program: &str) -> Prior {
    match program.rsplit('/').next().unwrap_or(program) {
        p if p.starts_with("python") => Prior::derived(1.1, 0.000_32),
        _ => Prior::derived(0.45, 0.000_37),
    }
}

/// A scenario's prior from its kind alone (a log that recorded no priors): its class's.
pub fn class_prior(kind: &str) -> Prior {
    match class(kind) {
        "real host" => {
            let pkg = Some(package(kind)).filter(|p| !p.is_empty());
            real_host_prior(family(kind).trim_start_matches("real host "), 1.0, pkg)
        }
        "adapter" => adapter_prior(base(kind).trim_start_matches("adapter ")),
        _ => Prior::derived(0.0, 0.000_012),
    }
}

/// A real host's part of [`prior`]: its family's start and cost a seed, the seed's cost growing
/// by a tenth for each tool turn a run takes beyond the first; with an extension package, the
/// package's (`pi-subagents` starts a pi of its own per subagent run: about 90 ms a seed; the
/// other packages the repository's scenarios load about 15 ms; one not measured here 45 ms).
pub fn real_host_prior(family: &str, tool_turns: f64, package: Option<&str>) -> Prior {
    let (fixed, per_seed) = match (family, package) {
        (_, Some("pi-subagents")) => (3.0, 0.090),
        (_, Some("pi-processes" | "pi-collaborating-agents")) => (3.0, 0.015),
        (_, Some(_)) => (3.0, 0.045),
        ("pi", None) => (5.6, 0.012),
        (_, None) => (3.0, 0.008),
    };
    Prior::derived(fixed, per_seed * (1.0 + (tool_turns - 1.0).max(0.0) / 10.0))
}

/// The measured wall-clock cost of the run's scenarios, and the estimate of what is left.
pub struct Costs {
    /// Per scenario: its kind, planned seeds and prior.
    kinds: Vec<String>,
    planned: Vec<u64>,
    priors: Vec<Prior>,
    /// Seeds done per scenario.
    done: Vec<u64>,
    /// The scenario running and when it started.
    running: Option<(usize, Instant)>,
    /// Per scenario run: seconds it took (once closed), and the seconds from its start to its
    /// first chunk's end (with the seeds it held) and to its last chunk's.
    spent: Vec<Option<f64>>,
    first: Vec<Option<(f64, u64)>>,
    last: Vec<Option<f64>>,
    /// Scenarios that will not run any more seeds (finished, skipped, stopped).
    closed: Vec<bool>,
}

/// What a finished scenario cost, as the cost file keeps it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    pub seeds: u64,
    pub secs: f64,
    pub fixed: f64,
    pub per_seed: f64,
}

impl Costs {
    /// Scenarios of `kinds`, each of `planned` seeds, costing `priors` before they are measured.
    pub fn new(kinds: Vec<String>, planned: Vec<u64>, priors: Vec<Prior>) -> Costs {
        let n = kinds.len();
        assert!(
            planned.len() == n && priors.len() == n,
            "one prior a scenario"
        );
        Costs {
            kinds,
            planned,
            priors,
            done: vec![0; n],
            running: None,
            spent: vec![None; n],
            first: vec![None; n],
            last: vec![None; n],
            closed: vec![false; n],
        }
    }

    /// Scenario `i`'s kind.
    pub fn kind_of(&self, i: usize) -> &str {
        &self.kinds[i]
    }

    /// Scenario `i` starts at `now`.
    pub fn start(&mut self, i: usize, now: Instant) {
        self.close_running(now);
        self.running = Some((i, now));
    }

    /// `seeds` more seeds of the running scenario are done, at `now`.
    pub fn advance(&mut self, seeds: u64, now: Instant) {
        if let Some((i, t0)) = self.running {
            self.done[i] += seeds;
            let t = now.duration_since(t0).as_secs_f64();
            self.first[i].get_or_insert((t, self.done[i]));
            self.last[i] = Some(t);
        }
    }

    /// Scenario `i` will run no more seeds (skipped or cut short).
    pub fn close(&mut self, i: usize, now: Instant) {
        if self.running.is_some_and(|(r, _)| r == i) {
            self.close_running(now);
        }
        self.closed[i] = true;
    }

    fn close_running(&mut self, now: Instant) {
        if let Some((i, t0)) = self.running.take() {
            self.closed[i] = true;
            if self.done[i] > 0 {
                self.spent[i] = Some(now.duration_since(t0).as_secs_f64());
            }
        }
    }

    /// Scenario `i`'s measured cost, once it has run seeds and ended: its seconds split into
    /// a fixed part and a part per seed by its chunks' times (the seeds after the first chunk
    /// over the time after it), or, for a scenario of one chunk, in the proportions of its prior.
    pub fn measured(&self, i: usize) -> Option<Measured> {
        let secs = self.spent[i]?;
        let seeds = self.done[i];
        let n = seeds as f64;
        let per_seed = match (self.first[i], self.last[i]) {
            (Some((t1, n1)), Some(tl)) if seeds > n1 && tl > t1 => (tl - t1) / (seeds - n1) as f64,
            _ => {
                let p = self.priors[i];
                match p.secs(n) > 0.0 {
                    true => secs * p.per_seed / p.secs(n),
                    false => secs / n,
                }
            }
        };
        let per_seed = per_seed.min(secs / n);
        Some(Measured {
            seeds,
            secs,
            fixed: (secs - per_seed * n).max(0.0),
            per_seed,
        })
    }

    /// Seconds spent and seconds the priors gave, over the scenarios measured so far (the
    /// running one's seeds so far included) whose kind `like` accepts.
    fn measured_where(&self, like: impl Fn(&str) -> bool, now: Instant) -> (f64, f64) {
        let (mut spent, mut prior) = (0.0, 0.0);
        for i in 0..self.kinds.len() {
            let secs = match (self.spent[i], self.running) {
                (Some(s), _) => s,
                (None, Some((r, t0))) if r == i && self.done[i] > 0 => {
                    now.duration_since(t0).as_secs_f64()
                }
                _ => continue,
            };
            if like(&self.kinds[i]) {
                spent += secs;
                prior += self.priors[i].secs(self.done[i] as f64);
            }
        }
        (spent, prior)
    }

    /// How much longer than their priors the measured scenarios most like `kind` took. Taken
    /// over every scenario measured, then refined level by level (the same class, the same host,
    /// the same host and package, the same kind anywhere, the same kind in its directory), each
    /// level's ratio weighed by the seconds its scenarios took against [`EVIDENCE_SECS`] of the
    /// broader level's: one short first scenario of a class does not set the whole class's
    /// cost, a directory of long ones soon sets its own. `None` before anything is measured.
    pub fn scale(&self, kind: &str, now: Instant) -> Option<f64> {
        let (spent, prior) = self.measured_where(|_| true, now);
        if prior <= 0.0 || spent <= 0.0 {
            return None;
        }
        let mut s = weighed(spent, prior, 1.0, EVIDENCE_ALL_SECS);
        for alike in LEVELS[..LEVELS.len() - 1].iter().rev() {
            let (spent, prior) = self.measured_where(|k| alike(k, kind), now);
            s = shrunk(spent, prior, s);
        }
        Some(s)
    }

    /// Seconds left, or `None` before anything is measured.
    pub fn eta(&self, now: Instant) -> Option<f64> {
        let (left, untimed) = self.eta_known(now);
        (untimed == 0).then_some(left)
    }

    /// Seconds left for the scenarios whose cost can be estimated, and how many scenarios still
    /// to run cannot be: only before anything at all is measured, and then none whose cost a
    /// previous run measured (those are taken at their remembered cost).
    pub fn eta_known(&self, now: Instant) -> (f64, usize) {
        let (mut left, mut untimed) = (0.0, 0);
        for i in 0..self.kinds.len() {
            let todo = self.planned[i].saturating_sub(self.done[i]) as f64;
            if self.closed[i] || todo == 0.0 {
                continue;
            }
            let prior = self.priors[i];
            // The running scenario by its own seeds once it has run some, the others by the
            // measured scenarios most like them.
            let alike = self.scale(&self.kinds[i], now);
            let own = match (self.running, alike) {
                (Some((r, t0)), Some(s)) if r == i && self.done[i] > 0 => Some(shrunk(
                    now.duration_since(t0).as_secs_f64(),
                    prior.secs(self.done[i] as f64),
                    s,
                )),
                _ => None,
            };
            let scale = match own.or(alike) {
                Some(s) => s,
                None if prior.remembered => 1.0,
                None => {
                    untimed += 1;
                    continue;
                }
            };
            let p = prior.scaled(scale);
            left += match self.running {
                // Running: its seeds still to run (its start already paid), or, before its first
                // chunk ends, what is left of the whole.
                Some((r, t0)) if r == i => match self.done[i] {
                    0 => {
                        // Past its estimate, a scenario is taken to need half as long again as it
                        // has run, not nothing.
                        let ran = now.duration_since(t0).as_secs_f64();
                        (p.secs(todo) - ran).max(ran * OVERDUE_SHARE)
                    }
                    _ => p.per_seed * todo,
                },
                _ => p.secs(todo),
            };
        }
        (left, untimed)
    }

    /// What the ETA log records of the estimate: the seconds left (`-` for none), the
    /// scenarios still to run whose cost is not known, and the ETA as shown.
    pub fn logged(&self, now: Instant) -> (String, usize, String) {
        let (left, untimed) = self.eta_known(now);
        let eta = match (untimed, left > 0.0) {
            (0, _) | (_, true) => format!("{left:.3}"),
            _ => "-".to_string(),
        };
        (eta, untimed, self.eta_text(now))
    }

    /// The ETA as the progress line shows it: `3m 20s`; `> 3m 20s (+2 untimed)` while scenarios
    /// of a kind not measured yet are still to run; `?` before anything is measured.
    pub fn eta_text(&self, now: Instant) -> String {
        match self.eta_known(now) {
            (left, 0) => human_secs(left),
            (left, n) if left > 0.0 => format!("> {} (+{n} untimed)", human_secs(left)),
            _ => "?".to_string(),
        }
    }
}

/// Priors for scenarios of `kinds`: each remembered cost where there is one (`remembered[i]`),
/// else the derived prior (`derived[i]`) scaled by how the remembered costs compared with the
/// derived priors of their scenarios, over the remembered scenarios most like it (as
/// [`Costs::scale`] takes them): a new or changed file costs what its neighbours did last time.
pub fn calibrate(
    kinds: &[String],
    planned: &[u64],
    derived: &[Prior],
    remembered: &[Option<Prior>],
) -> Vec<Prior> {
    let ratio = |kind: &str| {
        LEVELS.iter().find_map(|alike| {
            let (mut was, mut said) = (0.0, 0.0);
            for i in 0..kinds.len() {
                if let Some(r) = remembered[i]
                    && alike(&kinds[i], kind)
                {
                    was += r.secs(planned[i] as f64);
                    said += derived[i].secs(planned[i] as f64);
                }
            }
            (said > 0.0 && was > 0.0).then(|| was / said)
        })
    };
    let mut by_kind: BTreeMap<&str, f64> = BTreeMap::new();
    (0..kinds.len())
        .map(|i| match remembered[i] {
            Some(r) => r,
            None => {
                let k = kinds[i].as_str();
                let by = *by_kind.entry(k).or_insert_with(|| ratio(k).unwrap_or(1.0));
                derived[i].scaled(by)
            }
        })
        .collect()
}

/// `1h 02m`, `3m 20s`, `12s`.
pub fn human_secs(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests;
