//! How `wakesim run` stops before its end, between seeds: Ctrl-C (a partial summary, exit 130),
//! `--time-budget` (no seed starts after the budget), `--fail-fast` (the first expectation not
//! met). And which scenarios it runs: `--filter`.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::engine::regression::Regression;
use crate::error::{Error, Result};
use crate::scenario::Scenario;

/// The exit code of a run stopped by Ctrl-C, as shells report a process ended by SIGINT.
pub const EXIT_INTERRUPTED: i32 = 130;

/// Set by the first Ctrl-C; a second one exits at once.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static HANDLER: OnceLock<std::result::Result<(), String>> = OnceLock::new();

/// The run's stopping rules, asked before every seed.
pub struct Control {
    started: Instant,
    budget: Option<Duration>,
    fail_fast: bool,
    failed: AtomicBool,
}

impl Control {
    /// Install the Ctrl-C handler (once per process) and start the budget's clock.
    pub fn new(budget: Option<Duration>, fail_fast: bool) -> Result<Control> {
        let installed = HANDLER.get_or_init(|| {
            ctrlc::set_handler(|| {
                if INTERRUPTED.swap(true, Ordering::SeqCst) {
                    std::process::exit(EXIT_INTERRUPTED);
                }
                // A driver installing or importing its host has no seed in flight to finish:
                // stop now (its launcher ends its install and process group as wakesim exits).
                if crate::adapter::process::starting() {
                    eprintln!("\ninterrupted while a real host's driver was starting: stopped");
                    std::process::exit(EXIT_INTERRUPTED);
                }
                eprintln!(
                    "\ninterrupted: finishing the seeds in flight, then the summary of what ran \
                     (Ctrl-C again to quit at once)"
                );
            })
            .map_err(|e| e.to_string())
        });
        if let Err(e) = installed {
            return Err(Error::Usage(format!(
                "cannot install the Ctrl-C handler: {e}"
            )));
        }
        Ok(Control {
            started: Instant::now(),
            budget,
            fail_fast,
            failed: AtomicBool::new(false),
        })
    }

    /// Should no further seed start?
    pub fn stop(&self) -> bool {
        self.interrupted()
            || self.failed.load(Ordering::Relaxed)
            || self.budget.is_some_and(|b| self.started.elapsed() >= b)
    }

    pub fn interrupted(&self) -> bool {
        INTERRUPTED.load(Ordering::SeqCst)
    }

    /// An expectation was not met: with `--fail-fast`, the run stops.
    pub fn unmet(&self) {
        if self.fail_fast {
            self.failed.store(true, Ordering::Relaxed);
        }
    }

    /// Why the run stopped, once it has.
    pub fn why(&self) -> Option<String> {
        if self.interrupted() {
            Some("interrupted (Ctrl-C)".to_string())
        } else if self.failed.load(Ordering::Relaxed) {
            Some("--fail-fast: an expectation was not met".to_string())
        } else {
            let b = self.budget.filter(|b| self.started.elapsed() >= *b)?;
            Some(format!(
                "--time-budget {} s ran out; which seeds ran depends on this machine's speed, \
                 so another run of the same command may cover other seeds",
                b.as_secs_f64()
            ))
        }
    }
}

/// `--time-budget`: `90`, `90s`, `1500ms`, `5m` or `1h`.
pub fn parse_budget(s: &str) -> std::result::Result<Duration, String> {
    let err = || format!("`{s}` is not a duration: a number with ms, s, m or h (e.g. 90s, 5m)");
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: f64 = num.parse().map_err(|_| err())?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(err()),
    };
    if !(secs > 0.0 && secs.is_finite()) {
        return Err(format!("`{s}` is not a positive duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Keep the scenarios (and regressions of scenarios) whose name or path contains one of
/// `filters`; none given keeps everything. Matching nothing is a usage error.
pub fn filter(
    scenarios: &mut Vec<Scenario>,
    regressions: &mut Vec<Regression>,
    filters: &[String],
) -> Result<()> {
    if filters.is_empty() {
        return Ok(());
    }
    let hit = |scn: &Scenario| {
        let path = scn.path.to_string_lossy();
        filters
            .iter()
            .any(|f| scn.name.contains(f.as_str()) || path.contains(f.as_str()))
    };
    scenarios.retain(|s| hit(s));
    regressions.retain(|r| {
        hit(&r.scenario) || (filters.iter()).any(|f| r.path.to_string_lossy().contains(f.as_str()))
    });
    if scenarios.is_empty() && regressions.is_empty() {
        return Err(Error::Usage(format!(
            "no scenario or regression file matches --filter {}",
            filters.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse_with_units_and_refuse_nonsense() {
        assert_eq!(parse_budget("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_budget("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_budget("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_budget("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_budget("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "0", "s", "5d", "-3s", "1.2.3s"] {
            assert!(parse_budget(bad).is_err(), "{bad}");
        }
    }
}
