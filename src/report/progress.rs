//! The progress line `wakesim run` keeps on stderr while it runs, only when stderr is a terminal:
//! a bar, seeds done of the total, seeds per second, the estimated time left, the scenario
//! running and the failures so far. `indicatif` draws it (rate-limited, cleared before each
//! report line is printed).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::scenario::Scenario;

/// A one-line progress display on stderr, hidden when stderr is not a terminal.
pub struct Progress {
    bar: ProgressBar,
    ranges: Vec<Range<u64>>,
    failing: AtomicU64,
    unmet: AtomicUsize,
    current: std::sync::Mutex<String>,
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
        let style = ProgressStyle::with_template(
            "{bar:24} {human_pos}/{human_len} seeds · {rate} · ETA {eta} · {wide_msg}",
        )
        .expect("a valid progress template")
        .progress_chars("#>.")
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.0} seeds/s", s.per_sec());
        });
        let bar = ProgressBar::with_draw_target(Some(total), target).with_style(style);
        Progress {
            bar,
            ranges,
            failing: AtomicU64::new(0),
            unmet: AtomicUsize::new(0),
            current: Default::default(),
        }
    }

    pub fn range(&self, i: usize) -> Range<u64> {
        self.ranges[i].clone()
    }

    /// Scenario `i` starts.
    pub fn start(&self, i: usize, scn: &Scenario) {
        *self.current.lock().expect("progress lock") =
            format!("[{}/{}] {}", i + 1, self.ranges.len(), scn.path.display());
        self.message();
        // Redraw at least a few times a second even while one slow chunk runs (adapters).
        self.bar.enable_steady_tick(Duration::from_millis(500));
    }

    /// `seeds` more seeds ran, `failing` of them failed.
    pub fn advance(&self, seeds: u64, failing: u64) {
        if failing > 0 {
            self.failing.fetch_add(failing, Ordering::Relaxed);
            self.message();
        }
        self.bar.inc(seeds);
    }

    /// A scenario or regression did not meet its expectation.
    pub fn unmet(&self) {
        self.unmet.fetch_add(1, Ordering::Relaxed);
        self.message();
    }

    /// Seeds planned but not run (a scenario stopped early): the total and the ETA count only
    /// what is left, and the rate only what ran.
    pub fn skip(&self, seeds: u64) {
        if let Some(len) = self.bar.length() {
            self.bar.set_length(len.saturating_sub(seeds));
        }
    }

    fn message(&self) {
        let current = self.current.lock().expect("progress lock").clone();
        self.bar.set_message(format!(
            "{current} · failing seeds so far {} · unmet {}",
            self.failing.load(Ordering::Relaxed),
            self.unmet.load(Ordering::Relaxed)
        ));
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
