//! The progress line `wakesim run` keeps on stderr while it runs, only when stderr is a terminal:
//! a bar, seeds done of the total, seeds per second, the estimated time left, the scenario
//! running, and the failing seeds so far, expected ones apart from unexpected ones. It is drawn
//! from the run's first second (while adapters and drivers start, before any seed runs).
//! `indicatif` draws it (rate-limited, cleared before each report line is printed).
//!
//! The ETA is weighted by cost: scenarios differ by orders of magnitude in wall-clock time per
//! seed (a built-in wake logic in microseconds, an adapter process in milliseconds, a real host
//! in tens of milliseconds), so a single seeds-per-second rate swings wildly between them. Each
//! scenario's cost per seed is measured as it runs; a scenario not yet run is estimated from the
//! measured cost of scenarios of its kind (built-in, the adapter's program, the real host), and
//! where a kind still to come has not been measured at all the ETA is a lower bound saying so
//! ("ETA > 3m 20s (+4 untimed)"), or "ETA ?" before anything is measured.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::scenario::{Expect, Scenario};

/// A one-line progress display on stderr, hidden when stderr is not a terminal.
pub struct Progress {
    bar: ProgressBar,
    ranges: Vec<Range<u64>>,
    state: Arc<State>,
}

/// What the line shows, shared with the bar's ETA key (drawn on indicatif's ticker thread).
struct State {
    expected: AtomicU64,
    unexpected: AtomicU64,
    unmet: AtomicUsize,
    current: Mutex<String>,
    costs: Mutex<Costs>,
}

/// The measured wall-clock cost per seed, by scenario and by kind.
pub struct Costs {
    /// Per scenario: its kind and its planned seeds.
    kinds: Vec<String>,
    planned: Vec<u64>,
    /// Seeds done per scenario.
    done: Vec<u64>,
    /// The scenario running and when it started.
    running: Option<(usize, Instant)>,
    /// Per kind, over finished scenarios: seconds and seeds.
    measured: BTreeMap<String, (f64, u64)>,
    /// Scenarios that will not run any more seeds (finished, skipped, stopped).
    closed: Vec<bool>,
}

/// A scenario's kind for the ETA: what its cost per seed is like.
pub fn kind(scn: &Scenario) -> String {
    match (&scn.adapter, &scn.remote) {
        (Some(a), _) => format!("adapter {}", a.command.first().map_or("", |p| p.as_str())),
        (None, Some(_)) => format!("real host {}", scn.host.version_label()),
        (None, None) => "built-in".to_string(),
    }
}

impl Costs {
    pub fn new(kinds: Vec<String>, planned: Vec<u64>) -> Costs {
        let n = kinds.len();
        Costs {
            kinds,
            planned,
            done: vec![0; n],
            running: None,
            measured: BTreeMap::new(),
            closed: vec![false; n],
        }
    }

    /// Scenario `i` starts at `now`.
    pub fn start(&mut self, i: usize, now: Instant) {
        self.close_running(now);
        self.running = Some((i, now));
    }

    /// `seeds` more seeds of the running scenario are done.
    pub fn advance(&mut self, seeds: u64) {
        if let Some((i, _)) = self.running {
            self.done[i] += seeds;
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
                let m = self.measured.entry(self.kinds[i].clone()).or_default();
                m.0 += now.duration_since(t0).as_secs_f64();
                m.1 += self.done[i];
            }
        }
    }

    /// Seconds per seed of a kind, from finished scenarios and the running one.
    fn per_seed(&self, kind: &str, now: Instant) -> Option<f64> {
        let (mut secs, mut seeds) = self.measured.get(kind).copied().unwrap_or_default();
        if let Some((i, t0)) = self.running
            && self.kinds[i] == kind
        {
            secs += now.duration_since(t0).as_secs_f64();
            seeds += self.done[i];
        }
        (seeds > 0).then(|| secs / seeds as f64)
    }

    /// Seconds left, or `None` where a scenario still to run is of a kind not measured yet.
    pub fn eta(&self, now: Instant) -> Option<f64> {
        let (left, untimed) = self.eta_known(now);
        (untimed == 0).then_some(left)
    }

    /// Seconds left for the scenarios whose cost is known, and how many scenarios still to run
    /// have a kind not measured yet.
    pub fn eta_known(&self, now: Instant) -> (f64, usize) {
        let (mut left, mut untimed) = (0.0, 0);
        for i in 0..self.kinds.len() {
            let todo = self.planned[i].saturating_sub(self.done[i]);
            if self.closed[i] || todo == 0 {
                continue;
            }
            // The running scenario at its own rate, once it has one; the others at their kind's.
            let own = match self.running {
                Some((r, t0)) if r == i && self.done[i] > 0 => {
                    Some(now.duration_since(t0).as_secs_f64() / self.done[i] as f64)
                }
                _ => None,
            };
            match own.or_else(|| self.per_seed(&self.kinds[i], now)) {
                Some(per_seed) => left += todo as f64 * per_seed,
                None => untimed += 1,
            }
        }
        (left, untimed)
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

/// `1h 02m`, `3m 20s`, `12s`.
pub fn human_secs(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
    }
}

impl Progress {
    pub fn new(scenarios: &[Scenario], range: impl Fn(&Scenario) -> Range<u64>) -> Progress {
        use std::io::IsTerminal;
        let ranges: Vec<_> = scenarios.iter().map(range).collect();
        let total = ranges.iter().map(|r| r.end - r.start).sum();
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr_with_hz(4)
        } else {
            ProgressDrawTarget::hidden()
        };
        let costs = Costs::new(
            scenarios.iter().map(kind).collect(),
            ranges.iter().map(|r| r.end - r.start).collect(),
        );
        let state = Arc::new(State {
            expected: AtomicU64::new(0),
            unexpected: AtomicU64::new(0),
            unmet: AtomicUsize::new(0),
            current: Mutex::new("starting".into()),
            costs: Mutex::new(costs),
        });
        let for_eta = Arc::clone(&state);
        let style = ProgressStyle::with_template(
            "{bar:24} {human_pos}/{human_len} seeds · {rate} · ETA {cost_eta} · {wide_msg}",
        )
        .expect("a valid progress template")
        .progress_chars("#>.")
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.0} seeds/s", s.per_sec());
        })
        .with_key(
            "cost_eta",
            move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                let eta = (for_eta.costs.lock()).map_or("?".into(), |c| c.eta_text(Instant::now()));
                let _ = write!(w, "{eta}");
            },
        );
        let bar = ProgressBar::with_draw_target(Some(total), target).with_style(style);
        // Drawn from the first second: starting adapters and real hosts can take minutes.
        bar.enable_steady_tick(Duration::from_millis(500));
        let p = Progress { bar, ranges, state };
        p.message();
        p
    }

    pub fn range(&self, i: usize) -> Range<u64> {
        self.ranges[i].clone()
    }

    /// What the run is doing before its first seed (starting adapters and drivers).
    pub fn preparing(&self, what: String) {
        *self.state.current.lock().expect("progress lock") = what;
        self.message();
    }

    /// Scenario `i` starts.
    pub fn start(&self, i: usize, scn: &Scenario) {
        *self.state.current.lock().expect("progress lock") =
            format!("[{}/{}] {}", i + 1, self.ranges.len(), scn.path.display());
        if let Ok(mut c) = self.state.costs.lock() {
            c.start(i, Instant::now());
        }
        self.message();
    }

    /// `seeds` more seeds of a scenario expecting `expect` ran, `failing` of them failed: in a
    /// scenario that expects to pass every failure is unexpected; in one that expects a failure
    /// they are the expected ones (a failure it does not allow makes the scenario unmet, counted
    /// by [`Progress::unmet`]).
    pub fn advance(&self, seeds: u64, failing: u64, expect: &Expect) {
        if failing > 0 {
            let counter = match expect {
                Expect::Pass => &self.state.unexpected,
                _ => &self.state.expected,
            };
            counter.fetch_add(failing, Ordering::Relaxed);
            self.message();
        }
        if let Ok(mut c) = self.state.costs.lock() {
            c.advance(seeds);
        }
        self.bar.inc(seeds);
    }

    /// A scenario or regression did not meet its expectation.
    pub fn unmet(&self) {
        self.state.unmet.fetch_add(1, Ordering::Relaxed);
        self.message();
    }

    /// Seeds of scenario `i` planned but not run (it was stopped early or not started): the
    /// total and the ETA count only what is left, and the rate only what ran.
    pub fn skip(&self, i: usize, seeds: u64) {
        if let Some(len) = self.bar.length() {
            self.bar.set_length(len.saturating_sub(seeds));
        }
        if let Ok(mut c) = self.state.costs.lock() {
            c.close(i, Instant::now());
        }
    }

    fn message(&self) {
        let current = self.state.current.lock().expect("progress lock").clone();
        self.bar.set_message(format!(
            "{current} · failing seeds: {} expected, {} unexpected · unmet {}",
            self.state.expected.load(Ordering::Relaxed),
            self.state.unexpected.load(Ordering::Relaxed),
            self.state.unmet.load(Ordering::Relaxed)
        ));
    }

    /// A printer for lines that arrive from elsewhere (adapters' `wakesim: ` lines): each is
    /// printed on stderr above the bar.
    pub fn printer(&self) -> impl Fn(&str) + Send + Sync + 'static {
        let bar = self.bar.clone();
        move |line: &str| bar.suspend(|| eprintln!("{line}"))
    }

    /// Run `f` (which prints) with the bar out of the way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Remove the bar for good.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t0: Instant, s: u64) -> Instant {
        t0 + Duration::from_secs(s)
    }

    /// A cheap built-in scenario then an expensive real-host one: no ETA until the real host's
    /// kind has a measured cost, then one weighted by it (not by the built-in's rate).
    #[test]
    fn the_eta_waits_for_an_unmeasured_kind_then_weights_by_cost() {
        let t0 = Instant::now();
        let mut c = Costs::new(
            vec!["built-in".into(), "real host".into(), "real host".into()],
            vec![1000, 10, 10],
        );
        c.start(0, t0);
        assert_eq!(c.eta(t0), None, "nothing measured");
        assert_eq!(c.eta_text(t0), "?");
        c.advance(500);
        // The built-in's half ran in 1 s: its other half is 1 s, the real hosts unknown.
        assert_eq!(c.eta(at(t0, 1)), None);
        assert_eq!(c.eta_text(at(t0, 1)), "> 1s (+2 untimed)");
        c.advance(500);
        c.start(1, at(t0, 2));
        c.advance(2);
        // The real host ran 2 seeds in 10 s: 8 + 10 seeds left at 5 s each.
        let eta = c.eta(at(t0, 12)).expect("every kind measured");
        assert!((eta - 90.0).abs() < 1e-6, "{eta}");
        assert_eq!(c.eta_text(at(t0, 12)), "1m 30s");
        // The third scenario is skipped: only the second's 8 seeds are left.
        c.close(2, at(t0, 12));
        let eta = c.eta(at(t0, 12)).expect("measured");
        assert!((eta - 40.0).abs() < 1e-6, "{eta}");
    }

    #[test]
    fn human_secs_reads_as_a_duration() {
        assert_eq!(human_secs(12.4), "12s");
        assert_eq!(human_secs(200.0), "3m 20s");
        assert_eq!(human_secs(3720.0), "1h 02m");
    }
}
