//! The progress line `wakesim run` keeps on stderr while it runs, only when stderr is a terminal:
//! a bar, seeds done of the total, seeds per second, the estimated time left, the scenario
//! running, and the failing seeds so far, expected ones apart from unexpected ones. It is drawn
//! from the run's first second (while adapters and drivers start, before any seed runs).
//! `indicatif` draws it (rate-limited, cleared before each report line is printed).
//!
//! The ETA is weighted by cost ([`eta`]): each scenario has a prior cost, remembered from the
//! previous run of the same file ([`costs_file`], written at the end of each run) or derived from
//! what its file says, and the priors of the scenarios still to come are scaled by how the
//! measured ones compared with theirs. Only before anything is measured, and with no remembered
//! cost, is there no ETA (`ETA ?`). `WAKESIM_ETA_LOG=FILE` records what the estimate saw and
//! showed ([`EtaLog`]), for `scripts/eta-accuracy.py` and for [`replay`].

pub mod costs_file;
pub mod eta;

use std::io::Write as _;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::engine::ScenarioReport;
use crate::scenario::Scenario;
use costs_file::CostsFile;
pub use eta::{Costs, Prior, human_secs, kind};

/// A one-line progress display on stderr, hidden when stderr is not a terminal.
pub struct Progress {
    bar: ProgressBar,
    ranges: Vec<Range<u64>>,
    state: Arc<State>,
    /// The thread writing the ETA log's ticks, and its stop flag.
    ticker: Mutex<Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>>,
    /// Where the measured costs are remembered (the cost file, unless there is no cache
    /// directory), and each scenario's path and content hash as it keys them.
    remember: Mutex<Option<std::path::PathBuf>>,
    files: Vec<(String, String)>,
}

/// What the line shows, shared with the bar's ETA key (drawn on indicatif's ticker thread).
struct State {
    /// Failing seeds, expected and unexpected, of the scenarios finished (as their reports
    /// count them) plus those of the running scenario's chunks so far.
    expected: AtomicU64,
    unexpected: AtomicU64,
    /// The running scenario's share of `expected` and `unexpected`, replaced by its report's
    /// figures when it ends ([`Progress::settle`]): chunks a stopped sweep ran past its cut are
    /// not in the report, so the line ends on the summary's figures.
    live: Mutex<(u64, u64)>,
    unmet: AtomicUsize,
    current: Mutex<String>,
    costs: Mutex<Costs>,
    /// `WAKESIM_ETA_LOG`: what the estimate saw and showed, for `scripts/eta-accuracy.py`.
    log: Option<Mutex<EtaLog>>,
}

/// The ETA log (`WAKESIM_ETA_LOG=FILE`), tab-separated, one record a line, times in seconds
/// since the progress line appeared:
///
/// - `scenario I PLANNED KIND PATH FIXED PER_SEED FROM`: the run's scenarios, first, each with
///   its prior in seconds (a fixed part and a part per seed) and where it came from
///   (`remembered`, the cost file; `derived`, the scenario file);
/// - `start T I`, `advance T SEEDS`, `skip T I SEEDS`: what the estimator is told, in order,
///   so that [`replay`] can run another estimator over the same run;
/// - `tick T DONE TOTAL ETA UNTIMED EXPECTED UNEXPECTED SHOWN` once a second: the seeds done of
///   the total, the estimate in seconds (`-` for none), the scenarios still to run whose cost is
///   not known (a lower bound when over 0), the failing seeds so far and the ETA as shown;
/// - `end T DONE TOTAL EXPECTED UNEXPECTED` when the run's last scenario is done.
///
/// A log line that cannot be written is dropped: the log is a measurement aid, not the report.
pub struct EtaLog {
    out: std::io::BufWriter<std::fs::File>,
    t0: Instant,
}

impl EtaLog {
    pub fn new(file: std::fs::File) -> EtaLog {
        EtaLog {
            out: std::io::BufWriter::new(file),
            t0: Instant::now(),
        }
    }

    fn t(&self, now: Instant) -> String {
        format!("{:.3}", now.duration_since(self.t0).as_secs_f64())
    }

    fn record(&mut self, fields: &[&str]) {
        let _ = writeln!(self.out, "{}", fields.join("\t"));
    }
}

/// How long between two ticks of the ETA log.
const ETA_LOG_TICK: Duration = Duration::from_secs(1);

impl Progress {
    /// The progress line over `scenarios`, each over `range`; with `log`, the ETA log written
    /// there. The ETA starts from the costs the cost file in the cache directory remembers
    /// ([`costs_file`]), and the run's are written there when it ends.
    pub fn new(
        scenarios: &[Scenario],
        range: impl Fn(&Scenario) -> Range<u64>,
        log: Option<std::fs::File>,
    ) -> Progress {
        Progress::remembering(scenarios, range, log, costs_file::path())
    }

    /// [`Progress::new`] with the cost file at `remember` (`None`: none read or written).
    pub fn remembering(
        scenarios: &[Scenario],
        range: impl Fn(&Scenario) -> Range<u64>,
        log: Option<std::fs::File>,
        remember: Option<std::path::PathBuf>,
    ) -> Progress {
        use std::io::IsTerminal;
        let ranges: Vec<_> = scenarios.iter().map(range).collect();
        let total = ranges.iter().map(|r| r.end - r.start).sum();
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr_with_hz(4)
        } else {
            ProgressDrawTarget::hidden()
        };
        let kinds: Vec<String> = scenarios.iter().map(kind).collect();
        let planned: Vec<u64> = ranges.iter().map(|r| r.end - r.start).collect();
        let derived: Vec<Prior> = scenarios.iter().map(eta::prior).collect();
        // Keyed by the file's absolute path and its content, so that a scenario is never taken
        // for another file's and a changed file is a new one.
        let files: Vec<(String, String)> = (scenarios.iter())
            .map(|scn| {
                let abs = std::fs::canonicalize(&scn.path).unwrap_or_else(|_| scn.path.clone());
                (abs.display().to_string(), costs_file::file_hash(&scn.path))
            })
            .collect();
        let known = remember.as_deref().map(CostsFile::read).unwrap_or_default();
        let remembered: Vec<Option<Prior>> = (files.iter())
            .map(|(path, hash)| known.prior(path, hash))
            .collect();
        let priors = eta::calibrate(&kinds, &planned, &derived, &remembered);
        let state = Arc::new(State {
            expected: AtomicU64::new(0),
            unexpected: AtomicU64::new(0),
            live: Mutex::new((0, 0)),
            unmet: AtomicUsize::new(0),
            current: Mutex::new("starting".into()),
            costs: Mutex::new(Costs::new(kinds.clone(), planned, priors.clone())),
            log: log.map(|f| Mutex::new(EtaLog::new(f))),
        });
        if let Some(log) = &state.log {
            let mut log = log.lock().expect("progress lock");
            for (i, (scn, r)) in scenarios.iter().zip(&ranges).enumerate() {
                let path = scn.path.display().to_string();
                let (i_, planned) = (i.to_string(), (r.end - r.start).to_string());
                let p = priors[i];
                let (fixed, per_seed) = (format!("{:.6}", p.fixed), format!("{:.9}", p.per_seed));
                let from = if p.remembered {
                    "remembered"
                } else {
                    "derived"
                };
                log.record(&[
                    "scenario", &i_, &planned, &kinds[i], &path, &fixed, &per_seed, from,
                ]);
            }
        }
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
        let ticker = state.log.is_some().then(|| {
            let stop = Arc::new(AtomicBool::new(false));
            let (state, bar, halt) = (Arc::clone(&state), bar.clone(), Arc::clone(&stop));
            let handle = std::thread::spawn(move || {
                while !halt.load(Ordering::Relaxed) {
                    std::thread::sleep(ETA_LOG_TICK);
                    tick(&state, &bar, "tick");
                }
            });
            (stop, handle)
        });
        let p = Progress {
            bar,
            ranges,
            state,
            ticker: Mutex::new(ticker),
            remember: Mutex::new(remember),
            files,
        };
        p.message();
        p
    }

    /// Write `fields` to the ETA log, if there is one, after the record's name and time.
    fn log(&self, record: &str, fields: &[String]) {
        if let Some(log) = &self.state.log {
            let mut log = log.lock().expect("progress lock");
            let t = log.t(Instant::now());
            let mut all = vec![record, t.as_str()];
            all.extend(fields.iter().map(String::as_str));
            log.record(&all);
        }
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
        self.log("start", &[i.to_string()]);
        self.message();
    }

    /// A chunk of the running scenario's seeds finished: `part` is its report (its `seeds`
    /// include those another shard owns, so that the bar ends full). Its failing seeds are
    /// counted per seed, as the summary counts them: those whose failure the expectation allows
    /// as expected, those whose outcome it does not allow as unexpected.
    pub fn advance(&self, part: &ScenarioReport) {
        let seeds = part.seeds.end - part.seeds.start;
        let (e, u) = (part.expected_failing, part.unexpected_seeds);
        if e + u > 0 {
            let mut live = self.state.live.lock().expect("progress lock");
            live.0 += e;
            live.1 += u;
            self.state.expected.fetch_add(e, Ordering::Relaxed);
            self.state.unexpected.fetch_add(u, Ordering::Relaxed);
            drop(live);
            self.message();
        }
        if let Ok(mut c) = self.state.costs.lock() {
            c.advance(seeds, Instant::now());
        }
        self.log("advance", &[seeds.to_string()]);
        self.bar.inc(seeds);
    }

    /// The running scenario ended with report `rep`: its failing seeds are now the report's.
    pub fn settle(&self, rep: &ScenarioReport) {
        let mut live = self.state.live.lock().expect("progress lock");
        let (e, u) = std::mem::take(&mut *live);
        self.state.expected.fetch_sub(e, Ordering::Relaxed);
        self.state.unexpected.fetch_sub(u, Ordering::Relaxed);
        self.state
            .expected
            .fetch_add(rep.expected_failing, Ordering::Relaxed);
        self.state
            .unexpected
            .fetch_add(rep.unexpected_seeds, Ordering::Relaxed);
        drop(live);
        self.message();
    }

    /// The failing seeds counted so far, expected and unexpected.
    pub fn failing(&self) -> (u64, u64) {
        let _live = self.state.live.lock().expect("progress lock");
        (
            self.state.expected.load(Ordering::Relaxed),
            self.state.unexpected.load(Ordering::Relaxed),
        )
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
        self.log("skip", &[i.to_string(), seeds.to_string()]);
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

    /// Remove the bar for good (and end the ETA log with the run's last figures).
    pub fn finish(&self) {
        let ticker = self.ticker.lock().expect("progress lock").take();
        if let Some((stop, handle)) = ticker {
            stop.store(true, Ordering::Relaxed);
            let _ = handle.join();
            tick(&self.state, &self.bar, "end");
            if let Some(log) = &self.state.log {
                let _ = log.lock().expect("progress lock").out.flush();
            }
        }
        self.remember_costs();
        self.bar.finish_and_clear();
    }

    /// Write what each scenario that ran seeds cost to the cost file (once; a file that cannot
    /// be written is left as it was: the ETA is a guide, not the report).
    fn remember_costs(&self) {
        let Some(path) = self.remember.lock().ok().and_then(|mut r| r.take()) else {
            return;
        };
        let Ok(costs) = self.state.costs.lock() else {
            return;
        };
        let measured: Vec<_> = (self.files.iter().enumerate())
            .filter_map(|(i, (file, hash))| {
                let cost = costs.measured(i)?;
                let kind = costs.kind_of(i).to_string();
                (!hash.is_empty()).then(|| {
                    (
                        file.clone(),
                        costs_file::Entry {
                            hash: hash.clone(),
                            kind,
                            cost,
                        },
                    )
                })
            })
            .collect();
        drop(costs);
        if !measured.is_empty() {
            let _ = CostsFile::update(&path, measured);
        }
    }
}

/// One `tick` (or the `end`) record of the ETA log: what the progress line shows now.
fn tick(state: &State, bar: &ProgressBar, record: &str) {
    let Some(log) = &state.log else { return };
    let now = Instant::now();
    let Ok((eta, untimed, shown)) = state.costs.lock().map(|c| c.logged(now)) else {
        return;
    };
    let (done, total) = (bar.position(), bar.length().unwrap_or(0));
    let (expected, unexpected) = {
        let _live = state.live.lock().expect("progress lock");
        (
            state.expected.load(Ordering::Relaxed),
            state.unexpected.load(Ordering::Relaxed),
        )
    };
    let mut log = log.lock().expect("progress lock");
    let t = log.t(now);
    let (done, total, untimed) = (done.to_string(), total.to_string(), untimed.to_string());
    let (expected, unexpected) = (expected.to_string(), unexpected.to_string());
    match record {
        "end" => log.record(&["end", &t, &done, &total, &expected, &unexpected]),
        _ => log.record(&[
            "tick",
            &t,
            &done,
            &total,
            &eta,
            &untimed,
            &expected,
            &unexpected,
            &shown,
        ]),
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some((stop, _)) = self.ticker.lock().ok().and_then(|mut t| t.take()) {
            stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Run the estimator of this build over an ETA log's record of a run (its `scenario`, `start`,
/// `advance` and `skip` records) and give the `tick` and `end` records it would have written at
/// the log's own tick times: how another estimator would have done on the same measured run,
/// judged by `scripts/eta-accuracy.py` like the log itself. Pure: the log's times are the clock.
pub fn replay(log: &str) -> Result<String, String> {
    replay_with(log, &|_, _| None)
}

/// [`replay`] with each scenario's prior from `prior_of(kind, path)` where it gives one (to
/// judge other priors on the same run), else as the log's `scenario` record gives it, else (a
/// log of a build that did not record priors) its class's.
pub fn replay_with(
    log: &str,
    prior_of: &dyn Fn(&str, &str) -> Option<Prior>,
) -> Result<String, String> {
    let mut kinds = Vec::new();
    let mut planned = Vec::new();
    let mut priors = Vec::new();
    let mut events = Vec::new();
    for (n, line) in log.lines().enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || format!("line {}: not an ETA log record: {line:?}", n + 1);
        let num = |k: usize| f.get(k).and_then(|v| v.parse::<u64>().ok()).ok_or_else(bad);
        let secs = || f.get(1).and_then(|v| v.parse::<f64>().ok()).ok_or_else(bad);
        match f[0] {
            "scenario" => {
                planned.push(num(2)?);
                // A log of a build whose kinds did not name the directory: add it.
                let (what, path) = (f.get(3).ok_or_else(bad)?, f.get(4).ok_or_else(bad)?);
                let kind = match what.contains(" in ") {
                    true => what.to_string(),
                    false => eta::in_dir(what, path),
                };
                let float = |k: usize| f.get(k).and_then(|v| v.parse::<f64>().ok());
                let logged = match (float(5), float(6), f.get(7)) {
                    (Some(fixed), Some(per_seed), Some(from)) => Some(Prior {
                        fixed,
                        per_seed,
                        remembered: *from == "remembered",
                    }),
                    (None, None, None) => None,
                    _ => return Err(bad()),
                };
                priors.push(
                    prior_of(&kind, path)
                        .or(logged)
                        .unwrap_or_else(|| eta::class_prior(&kind)),
                );
                kinds.push(kind);
            }
            "start" | "advance" | "skip" | "tick" | "end" => events.push((f[0], secs()?, f)),
            _ => return Err(bad()),
        }
    }
    let t0 = Instant::now();
    let at = |t: f64| t0 + Duration::from_secs_f64(t.max(0.0));
    let mut costs = Costs::new(kinds, planned, priors);
    let mut out = String::new();
    for (record, t, f) in events {
        let field = |k: usize| f.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        match record {
            "start" => costs.start(field(2) as usize, at(t)),
            "advance" => costs.advance(field(2), at(t)),
            "skip" => costs.close(field(2) as usize, at(t)),
            "tick" => {
                let (eta, untimed, shown) = costs.logged(at(t));
                // The seeds done and failing as logged; the estimate recomputed.
                let logged = |k: usize| f.get(k).copied().unwrap_or("0");
                let (done, total) = (logged(2), logged(3));
                let (expected, unexpected) = (logged(6), logged(7));
                out += &format!(
                    "tick\t{}\t{done}\t{total}\t{eta}\t{untimed}\t{expected}\t{unexpected}\t{shown}\n",
                    f[1]
                );
            }
            _ => out += &(f.join("\t") + "\n"),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
