//! The progress line `wakesim run` keeps on stderr while it runs, only when stderr is a terminal:
//! a bar, seeds done of the total, seeds per second, the estimated time left, the scenario
//! running, and the failing seeds so far, expected ones apart from unexpected ones. It is drawn
//! from the run's first second (while adapters and drivers start, before any seed runs).
//! `indicatif` draws it (rate-limited, cleared before each report line is printed).
//!
//! The ETA is weighted by cost: scenarios differ by orders of magnitude in wall-clock time per
//! seed (a built-in wake logic in microseconds, an adapter process in milliseconds, a real host
//! in tens of milliseconds), so a single seeds-per-second rate swings wildly between them. Each
//! scenario's cost is measured as it runs, its start (adapters and drivers per runner thread)
//! counted apart from its seeds; a scenario not yet run is estimated from the measured cost of
//! its kind (built-in, the adapter's program, the real host at its version), else of the same
//! host at another version or of its class, else from its class's prior scaled by how this
//! machine ran the classes measured so far ([`Costs`]). Only before anything is measured is
//! there no ETA (`ETA ?`). `WAKESIM_ETA_LOG=FILE` records what the estimate saw and showed
//! ([`EtaLog`]), for `scripts/eta-accuracy.py` and for [`replay`].

use std::collections::BTreeMap;
use std::io::Write as _;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::engine::ScenarioReport;
use crate::scenario::Scenario;

/// A one-line progress display on stderr, hidden when stderr is not a terminal.
pub struct Progress {
    bar: ProgressBar,
    ranges: Vec<Range<u64>>,
    state: Arc<State>,
    /// The thread writing the ETA log's ticks, and its stop flag.
    ticker: Mutex<Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>>,
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

/// The measured wall-clock cost per seed, by scenario and by kind.
///
/// A scenario costs a fixed start (each seed-runner thread starts its own adapter process or real
/// host's driver) plus its seeds. The start is counted as [`start_weight`] seeds of the
/// scenario's class, so that a kind's cost per seed measured on scenarios of a few seeds is not
/// inflated by their starts and a scenario still to come is charged its own start. Where a kind
/// has not run yet its cost is taken from the nearest measured kinds (the same host at another
/// version, then the same class), and where its whole class has not run, from a prior per class
/// scaled by how much slower than the priors the measured classes ran on this machine.
pub struct Costs {
    /// Per scenario: its kind and its planned seeds.
    kinds: Vec<String>,
    planned: Vec<u64>,
    /// Seeds done per scenario.
    done: Vec<u64>,
    /// The scenario running and when it started.
    running: Option<(usize, Instant)>,
    /// Per kind, over finished scenarios: seconds and weighted seeds (seeds plus each
    /// scenario's start weight).
    measured: BTreeMap<String, (f64, f64)>,
    /// Scenarios that will not run any more seeds (finished, skipped, stopped).
    closed: Vec<bool>,
}

/// A kind's class: `built-in`, `adapter` or `real host`.
fn class(kind: &str) -> &str {
    match kind {
        k if k.starts_with("real host") => "real host",
        k if k.starts_with("adapter") => "adapter",
        _ => "built-in",
    }
}

/// A kind without its directory (`real host pi@0.99.1` of `real host pi@0.99.1 in
/// scenarios/real-pi-ext`).
fn base(kind: &str) -> &str {
    kind.split(" in ").next().unwrap_or(kind)
}

/// A kind's host without its version or directory (`real host pi` of `real host pi@0.99.1`).
fn family(kind: &str) -> &str {
    base(kind).split('@').next().unwrap_or(kind)
}

/// What a scenario's start weighs, in seeds of its class: a real host's driver or an adapter
/// process started per runner thread. Measured on the main job (`WAKESIM_ETA_LOG`, two shared
/// cores; docs/performance.md): a real-host scenario took about 23 s plus 23 ms a seed, an
/// adapter's 1.8 s plus 0.57 ms a seed, a built-in one no fixed time at all.
fn start_weight(kind: &str) -> f64 {
    match class(kind) {
        "real host" => 1000.0,
        "adapter" => 3000.0,
        _ => 0.0,
    }
}

/// Seconds per weighted seed of each class, the same run's figures: only used, scaled by how
/// this machine compares (see [`Costs::per_seed`]), while a class has not run at all.
fn prior(class: &str) -> f64 {
    match class {
        "real host" => 0.023,
        "adapter" => 0.000_57,
        _ => 0.000_014,
    }
}

/// A scenario's kind for the ETA: what its cost per seed is like, and the directory it is in
/// (the scenarios of a directory are alike: a real host's extension scenarios cost ten times
/// its model-twin scenarios a seed).
pub fn kind(scn: &Scenario) -> String {
    let what = match (&scn.adapter, &scn.remote) {
        (Some(a), _) => format!("adapter {}", a.command.first().map_or("", |p| p.as_str())),
        (None, Some(_)) => format!("real host {}", scn.host.version_label()),
        (None, None) => "built-in".to_string(),
    };
    in_dir(&what, &scn.path.display().to_string())
}

/// `what` of the scenario file at `path`, with its directory.
fn in_dir(what: &str, path: &str) -> String {
    match path.rsplit_once('/') {
        Some((dir, _)) => format!("{what} in {dir}"),
        None => format!("{what} in ."),
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
                let weighted = self.done[i] as f64 + start_weight(&self.kinds[i]);
                let m = self.measured.entry(self.kinds[i].clone()).or_default();
                m.0 += now.duration_since(t0).as_secs_f64();
                m.1 += weighted;
            }
        }
    }

    /// Seconds and weighted seeds measured over the kinds `like` accepts, the running
    /// scenario's seeds so far included.
    fn measured_where(&self, like: impl Fn(&str) -> bool, now: Instant) -> (f64, f64) {
        let (mut secs, mut seeds) = (0.0, 0.0);
        for (k, (s, n)) in &self.measured {
            if like(k) {
                secs += s;
                seeds += n;
            }
        }
        if let Some((i, t0)) = self.running
            && self.done[i] > 0
            && like(&self.kinds[i])
        {
            secs += now.duration_since(t0).as_secs_f64();
            seeds += self.done[i] as f64 + start_weight(&self.kinds[i]);
        }
        (secs, seeds)
    }

    /// Seconds per weighted seed of a kind: measured on the kind itself (in its directory),
    /// else in other directories, else on the same host at other versions, else on its class,
    /// else the class's prior scaled by how the measured classes compare with theirs. `None`
    /// before anything is measured.
    fn per_seed(&self, kind: &str, now: Instant) -> Option<f64> {
        let rate = |(secs, seeds): (f64, f64)| (seeds > 0.0).then(|| secs / seeds);
        rate(self.measured_where(|k| k == kind, now))
            .or_else(|| rate(self.measured_where(|k| base(k) == base(kind), now)))
            .or_else(|| rate(self.measured_where(|k| family(k) == family(kind), now)))
            .or_else(|| rate(self.measured_where(|k| class(k) == class(kind), now)))
            .or_else(|| {
                // How much slower than the priors this machine runs, over the classes measured
                // (a geometric mean: the classes' ratios differ by load, not by scale).
                let (mut logs, mut n) = (0.0, 0);
                for c in ["built-in", "adapter", "real host"] {
                    if let Some(r) = rate(self.measured_where(|k| class(k) == c, now)) {
                        logs += (r / prior(c)).ln();
                        n += 1;
                    }
                }
                (n > 0).then(|| prior(class(kind)) * (logs / f64::from(n)).exp())
            })
    }

    /// Seconds left, or `None` before anything is measured.
    pub fn eta(&self, now: Instant) -> Option<f64> {
        let (left, untimed) = self.eta_known(now);
        (untimed == 0).then_some(left)
    }

    /// Seconds left for the scenarios whose cost can be estimated, and how many scenarios still
    /// to run cannot be (only before anything at all is measured).
    pub fn eta_known(&self, now: Instant) -> (f64, usize) {
        let (mut left, mut untimed) = (0.0, 0);
        for i in 0..self.kinds.len() {
            let todo = self.planned[i].saturating_sub(self.done[i]);
            if self.closed[i] || todo == 0 {
                continue;
            }
            let kind = &self.kinds[i];
            // The running scenario at its own rate once it has one (its start counted among
            // its seeds, and already paid); the others at their kind's, their start to come.
            let own = match self.running {
                Some((r, t0)) if r == i && self.done[i] > 0 => Some(
                    now.duration_since(t0).as_secs_f64()
                        / (self.done[i] as f64 + start_weight(kind)),
                ),
                _ => None,
            };
            let weight = if own.is_some() {
                0.0
            } else {
                start_weight(kind)
            };
            match own.or_else(|| self.per_seed(kind, now)) {
                Some(per_seed) => left += (todo as f64 + weight) * per_seed,
                None => untimed += 1,
            }
        }
        (left, untimed)
    }

    /// What the ETA log records of the estimate: the seconds left (`-` for none), the
    /// scenarios still to run whose cost is not known, and the ETA as shown.
    fn logged(&self, now: Instant) -> (String, usize, String) {
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

/// `1h 02m`, `3m 20s`, `12s`.
pub fn human_secs(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
    }
}

/// The ETA log (`WAKESIM_ETA_LOG=FILE`), tab-separated, one record a line, times in seconds
/// since the progress line appeared:
///
/// - `scenario I PLANNED KIND PATH`: the run's scenarios, first;
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
    /// there.
    pub fn new(
        scenarios: &[Scenario],
        range: impl Fn(&Scenario) -> Range<u64>,
        log: Option<std::fs::File>,
    ) -> Progress {
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
            live: Mutex::new((0, 0)),
            unmet: AtomicUsize::new(0),
            current: Mutex::new("starting".into()),
            costs: Mutex::new(costs),
            log: log.map(|f| Mutex::new(EtaLog::new(f))),
        });
        if let Some(log) = &state.log {
            let mut log = log.lock().expect("progress lock");
            for (i, (scn, r)) in scenarios.iter().zip(&ranges).enumerate() {
                let path = scn.path.display().to_string();
                let (i, planned) = (i.to_string(), (r.end - r.start).to_string());
                log.record(&["scenario", &i, &planned, &kind(scn), &path]);
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
            c.advance(seeds);
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
        self.bar.finish_and_clear();
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
    let mut kinds = Vec::new();
    let mut planned = Vec::new();
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
                kinds.push(match what.contains(" in ") {
                    true => what.to_string(),
                    false => in_dir(what, path),
                });
            }
            "start" | "advance" | "skip" | "tick" | "end" => events.push((f[0], secs()?, f)),
            _ => return Err(bad()),
        }
    }
    let t0 = Instant::now();
    let at = |t: f64| t0 + Duration::from_secs_f64(t.max(0.0));
    let mut costs = Costs::new(kinds, planned);
    let mut out = String::new();
    for (record, t, f) in events {
        let field = |k: usize| f.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        match record {
            "start" => costs.start(field(2) as usize, at(t)),
            "advance" => costs.advance(field(2)),
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
mod tests {
    use super::*;

    fn at(t0: Instant, s: u64) -> Instant {
        t0 + Duration::from_secs(s)
    }

    fn close_to(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    /// A cheap built-in scenario then expensive real-host ones: no ETA before anything is
    /// measured; then the real hosts from their class's prior, scaled by how much slower than
    /// its prior the built-in ran; then weighted by the real host's own measured cost, each
    /// scenario still to come charged its start. Synthetic costs, times given, no clock read.
    #[test]
    fn the_eta_estimates_an_unmeasured_kind_then_weights_by_its_measured_cost() {
        let t0 = Instant::now();
        let pi = "real host pi@0.99.1";
        let mut c = Costs::new(
            vec!["built-in".into(), pi.into(), pi.into()],
            vec![100_000, 10, 10],
        );
        c.start(0, t0);
        assert_eq!(c.eta(t0), None, "nothing measured");
        assert_eq!(c.eta_text(t0), "?");
        // Half the built-in's seeds in 1.4 s: 2 times its prior of 14 µs a seed, so the real
        // hosts are taken at twice theirs, 46 ms a weighted seed, their start included.
        c.advance(50_000);
        let eta = c
            .eta(at(t0, 1) + Duration::from_millis(400))
            .expect("a prior");
        let hosts = 2.0 * (10.0 + start_weight(pi)) * 2.0 * prior("real host");
        assert!(close_to(eta, 1.4 + hosts), "{eta} against {}", 1.4 + hosts);
        c.advance(50_000);
        c.start(1, at(t0, 6));
        c.advance(5);
        // The real host ran 5 seeds (and its start) in 201 s: 0.2 s a weighted seed; 5 seeds
        // left of it and the third scenario's 10 and its start.
        let eta = c.eta(at(t0, 207)).expect("every kind measured");
        assert!(close_to(eta, 0.2 * (5.0 + 10.0 + 1000.0)), "{eta}");
        assert_eq!(c.eta_text(at(t0, 207)), "3m 23s");
        // The third scenario is skipped: only the second's 5 seeds are left.
        c.close(2, at(t0, 207));
        let eta = c.eta(at(t0, 207)).expect("measured");
        assert!(close_to(eta, 1.0), "{eta}");
    }

    /// A kind not run yet takes its cost from the same host at another version before its
    /// class: pi 1.6.0 at pi 0.99.1's cost, not at the average with gptme's.
    #[test]
    fn an_unmeasured_version_costs_what_the_same_host_did() {
        let t0 = Instant::now();
        let (old, new, gptme) = (
            "real host pi@0.99.1",
            "real host pi@1.6.0",
            "real host gptme-cli@0.35.1",
        );
        let mut c = Costs::new(vec![old.into(), gptme.into(), new.into()], vec![50, 50, 50]);
        c.start(0, t0);
        c.advance(50);
        // 1050 weighted seeds in 105 s: 0.1 s each.
        c.start(1, at(t0, 105));
        c.advance(50);
        // gptme: 1050 weighted seeds in 1050 s.
        c.start(2, at(t0, 1155));
        let eta = c.eta(at(t0, 1155)).expect("measured");
        assert!(close_to(eta, 0.1 * 1050.0), "{eta}");
    }

    /// A scenario costs what the scenarios of its kind in its own directory did, before those of
    /// its kind elsewhere: a real host's extension scenarios are not its model twins.
    #[test]
    fn a_kind_in_a_directory_costs_what_it_did_there() {
        let t0 = Instant::now();
        let (twins, ext) = (
            "real host pi@0.99.1 in real-pi",
            "real host pi@0.99.1 in real-pi-ext",
        );
        let mut c = Costs::new(vec![twins.into(), ext.into(), ext.into()], vec![50, 50, 50]);
        c.start(0, t0);
        c.advance(50);
        // The twin: 1050 weighted seeds in 105 s; the first extension scenario ten times that.
        c.start(1, at(t0, 105));
        c.advance(50);
        c.start(2, at(t0, 1155));
        let eta = c.eta(at(t0, 1155)).expect("measured");
        assert!(close_to(eta, 1.0 * 1050.0), "{eta}");
    }

    /// The estimator replayed over a log's records gives the ETA it would have shown at each
    /// tick, from the log's times alone: a scenario measured at 2 ms a seed, then one of the
    /// same kind at 1 s a seed.
    #[test]
    fn a_replayed_log_recomputes_each_ticks_eta_from_the_logs_times() {
        let log = "scenario\t0\t1000\tbuilt-in\ta.toml\n\
                   scenario\t1\t10\tbuilt-in\tb.toml\n\
                   start\t0.000\t0\n\
                   advance\t1.000\t500\n\
                   tick\t1.000\t500\t1010\t-\t1\t0\t0\t?\n\
                   advance\t2.000\t500\n\
                   start\t2.000\t1\n\
                   advance\t4.000\t2\n\
                   tick\t4.000\t1002\t1010\t-\t0\t3\t1\t?\n\
                   end\t12.000\t1010\t1010\t3\t1\n";
        let out = replay(log).expect("a log");
        let ticks: Vec<&str> = out.lines().collect();
        assert_eq!(
            ticks,
            [
                // Half the first scenario's seeds in 1 s: 1 s left of it, 20 ms of the second.
                "tick\t1.000\t500\t1010\t1.020\t0\t0\t0\t1s",
                // The second ran 2 seeds in 2 s: 8 left at 1 s each.
                "tick\t4.000\t1002\t1010\t8.000\t0\t3\t1\t8s",
                "end\t12.000\t1010\t1010\t3\t1",
            ]
        );
        let bad = replay("tick\tsoon\n").expect_err("a bad time");
        assert!(bad.starts_with("line 1: not an ETA log record"), "{bad}");
    }

    /// Not a check: a helper to measure this build's estimator on a real run's log.
    /// `WAKESIM_ETA_REPLAY=IN WAKESIM_ETA_REPLAY_OUT=OUT cargo test --lib -- --ignored
    /// replay_an_eta_log` writes the ticks it would have shown to OUT, for
    /// `scripts/eta-accuracy.py OUT`.
    #[test]
    #[ignore = "a measuring helper, run by hand over a WAKESIM_ETA_LOG file"]
    fn replay_an_eta_log() {
        let (Some(input), Some(output)) = (
            std::env::var_os("WAKESIM_ETA_REPLAY"),
            std::env::var_os("WAKESIM_ETA_REPLAY_OUT"),
        ) else {
            panic!("set WAKESIM_ETA_REPLAY=IN and WAKESIM_ETA_REPLAY_OUT=OUT");
        };
        let log = std::fs::read_to_string(&input).expect("the ETA log");
        let out = replay(&log).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        std::fs::write(&output, out).expect("the replayed log");
    }

    #[test]
    fn human_secs_reads_as_a_duration() {
        assert_eq!(human_secs(12.4), "12s");
        assert_eq!(human_secs(200.0), "3m 20s");
        assert_eq!(human_secs(3720.0), "1h 02m");
    }
}
