//! The text timeline of one run, as `wakesim replay` prints it and snapshots store it.

use std::fmt::Write;

use super::{Line, Summary, lines, reproduce, story as story_lines};
use crate::check::Invariant;
use crate::engine::regression::{Regression, Replayed, Saved, SavedFailure};
use crate::engine::{Extras, Outcome, RunResult, ScenarioReport, describe};
use crate::scenario::Scenario;

/// The header line: host, wake logic, seed, the seed's mix of faults and producers, version.
pub fn header(scn: &Scenario, r: &RunResult) -> String {
    let origin = match &r.replay {
        Some(_) => format!("seed {} (recorded choices)", r.seed),
        None => format!("seed {}", r.seed),
    };
    format!(
        "host {} · wake {} · {origin} · {} · wakesim {}",
        scn.host.version_label(),
        scn.wake,
        r.mix,
        env!("CARGO_PKG_VERSION")
    )
}

/// The whole timeline with its verdict and, on failure, the replay line.
pub fn timeline(scn: &Scenario, r: &RunResult) -> String {
    timeline_with(scn, r, &reproduce(scn, r))
}

/// The timeline with another replay line, for runners with a replay command of their own (the
/// madsim lane).
pub fn timeline_with(scn: &Scenario, r: &RunResult, replay: &str) -> String {
    let rows = lines(scn.host, &r.trace, &r.messages, r.outcome.violations());
    let s = table(scn, r, rows);
    let mut s: String = s.lines().map(|l| l.trim_end().to_string() + "\n").collect();
    match &r.outcome {
        Outcome::Pass => {
            let _ = writeln!(
                s,
                "✓ no invariant broken · {} events · ends at {} ms · trace {:016x}",
                r.events, r.end.0, r.trace_hash
            );
        }
        Outcome::Fail(vs) => {
            for v in vs {
                let _ = writeln!(s, "✗ {} at {} ms: {}", v.invariant, v.t.0, v.detail);
            }
            let _ = writeln!(
                s,
                "{} events · ends at {} ms · trace {:016x}",
                r.events, r.end.0, r.trace_hash
            );
            let _ = writeln!(s, "{replay}");
        }
        Outcome::Panic(m) => {
            let _ = writeln!(s, "✗ the wake logic panicked: {m}");
            let _ = writeln!(s, "{replay}");
        }
        Outcome::StepBudget { steps } => {
            let _ = writeln!(
                s,
                "✗ step budget exhausted after {steps} events (a runaway wake logic?)"
            );
            let _ = writeln!(s, "{replay}");
        }
        Outcome::AdapterFault(f) => {
            let _ = writeln!(s, "✗ {f}");
            if !f.stderr_tail.is_empty() {
                let _ = writeln!(s, "  adapter stderr (last lines):");
                for l in f.stderr_tail.lines() {
                    let _ = writeln!(s, "    {l}");
                }
            }
            let _ = writeln!(s, "{}", super::seed_replay_line(scn, r.seed));
        }
    }
    s
}

/// One line (and its notes) per scenario of `wakesim run`.
pub fn scenario_line(scn: &Scenario, rep: &ScenarioReport, extras: &Extras) -> String {
    // A met report with a reason is one a stopped run could not judge (`run`'s partial sweeps).
    let mark = match (rep.met, &rep.why) {
        (false, _) => "✗",
        (true, Some(_)) => "?",
        (true, None) => "✓",
    };
    let mut line = format!(
        "{mark} {} · {} · {} · {} seeds · expect {}",
        scn.path.display(),
        scn.host.name(),
        scn.wake,
        rep.seed_count(),
        scn.expect
    );
    match (&rep.first_expected, &rep.first_failure) {
        (Some(seed), _) => {
            let counts: Vec<String> = rep.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = write!(
                line,
                " · caught at seed {seed} ({} failing: {})",
                rep.failures,
                counts.join(", ")
            );
        }
        (None, None) => line += " · no failures",
        // Every failing outcome counted, so an adapter fault after an earlier failure shows.
        (None, Some(_)) => {
            let counts: Vec<String> = rep.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = write!(line, " · {} failing: {}", rep.failures, counts.join(", "));
        }
    }
    line += &coverage(scn, rep);
    if let Some(f) = &extras.findability {
        let _ = write!(
            line,
            "\n  findability: {} of {} seeds show it; median seeds to the first failure {} (p90 {})",
            f.failing,
            rep.seed_count(),
            or_null(f.median_seeds_to_first),
            or_null(f.p90_seeds_to_first)
        );
    }
    if let Some(d) = &extras.determinism {
        match d.divergences.first() {
            None => {
                let _ = write!(
                    line,
                    "\n  determinism: {} seeds run twice, identical traces",
                    d.seeds_checked
                );
            }
            Some(first) => {
                let _ = write!(
                    line,
                    "\n  determinism: {} seed(s) diverged: {}",
                    d.divergences.len(),
                    serde_json::to_string(first).expect("a string serializes")
                );
            }
        }
    }
    if let Some(s) = &extras.stopped {
        line += &stopped_note(&s.planned, rep, &s.why);
    }
    if let Some(why) = &rep.why {
        let _ = write!(line, "\n  {why}");
    }
    if let Some(u) = &rep.unexpected {
        let _ = write!(line, "\n  {}", super::seed_replay_line(scn, u.seed));
    }
    line
}

/// A scenario's coverage: which race windows and faults its seeds reached and how often, and a
/// warning for each window it names that a passing run reached too rarely to mean much.
fn coverage(scn: &Scenario, rep: &ScenarioReport) -> String {
    let seeds = rep.seed_count();
    let share = |n: u64| format!("{n} ({})", percent(n, seeds));
    let mut s = String::new();
    let windows: Vec<String> = (rep.windows.iter())
        .map(|(w, n)| format!("{w} {}", share(*n)))
        .collect();
    let _ = write!(
        s,
        "\n  coverage: windows reached: {}",
        if windows.is_empty() {
            "none".to_string()
        } else {
            windows.join(", ")
        }
    );
    if !rep.faults.is_empty() {
        let faults: Vec<String> = (rep.faults.iter())
            .map(|(f, n)| match rep.faults_fired.get(f) {
                Some(fired) => format!("{f} on {}, fired in {}", share(*n), share(*fired)),
                None => format!("{f} on {}", share(*n)),
            })
            .collect();
        let _ = write!(s, " · faults: {}", faults.join("; "));
    }
    for (w, n) in rep.thinly_reached(&scn.expect, &scn.must_reach, scn.must_reach_share) {
        let _ = write!(
            s,
            "\n  warning: the must_reach window {w} was reached in only {} of {seeds} seeds, below [coverage] must_reach_share {}: this pass says little about it",
            share(n),
            scn.must_reach_share
        );
    }
    s
}

/// `n` of `of` as a percentage with one decimal (two below 1%).
fn percent(n: u64, of: u64) -> String {
    if of == 0 {
        return "0%".to_string();
    }
    let p = n as f64 * 100.0 / of as f64;
    if p > 0.0 && p < 1.0 {
        format!("{p:.2}%")
    } else {
        format!("{p:.1}%")
    }
}

/// The last line of `wakesim run`.
pub fn summary_line(sum: &Summary) -> String {
    // A stopped run judged only the files it started.
    let total = sum.regressions + sum.scenarios - sum.not_run;
    let mut verdict = if sum.unmet == 0 {
        format!("all {total} expectations met")
    } else {
        format!("{} of {total} expectations NOT met", sum.unmet)
    };
    if sum.not_run > 0 {
        let _ = write!(verdict, ", {} not run", sum.not_run);
    }
    let mut s = format!(
        "summary: {} regressions, {} scenarios, {} seeds, {} events in {:.2} s: {:.0} seeds/s, {:.0} events/s · failing seeds: {} expected, {} unexpected · {verdict}",
        sum.regressions,
        sum.scenarios,
        sum.seeds,
        sum.events,
        sum.secs,
        sum.rate(sum.seeds),
        sum.rate(sum.events),
        sum.expected_failing,
        sum.unexpected_seeds,
    );
    if let Some(why) = &sum.stopped {
        let _ = write!(
            s,
            "\npartial: {why}; {} of {} planned seeds ran, {} scenario or regression file(s) not started. Each scenario was judged on the seeds that ran (a prefix of its budget)",
            sum.seeds, sum.seeds_planned, sum.not_run
        );
    }
    s
}

/// The line of a scenario that a stopped run did not start.
pub fn not_run_line(scn: &Scenario) -> String {
    format!(
        "- {} · {} · {} · not run (the run stopped)",
        scn.path.display(),
        scn.host.name(),
        scn.wake
    )
}

/// What a scenario's line adds when its sweep stopped before its budget's end.
pub fn stopped_note(planned: &std::ops::Range<u64>, rep: &ScenarioReport, why: &str) -> String {
    format!(
        "\n  partial: stopped after {} of {} seeds ({}..{} ran): {why}",
        rep.seed_count(),
        planned.end - planned.start,
        rep.seeds.start,
        rep.seeds.end
    )
}

/// What `run` did with a failure it saved.
pub fn saved_line(f: &SavedFailure) -> String {
    let (from, to) = f.choices;
    match &f.saved {
        None if f.run.outcome.is_load_fault() => {
            "  not saved: the code under test did not load, so no schedule shows it (fix the load error and run again)".to_string()
        }
        None => format!(
            "  the {} failure, shrunk from {from} to {to} choices, is not saved",
            f.what
        ),
        Some(Saved::Wrote(p)) => format!(
            "  saved the {} failure, shrunk from {from} to {to} choices: {} (it runs first whenever its scenario runs)",
            f.what,
            p.display()
        ),
        Some(Saved::Kept(p)) => format!(
            "  the {} failure is already saved: kept {} as it is",
            f.what,
            p.display()
        ),
    }
}

/// One line per regression file of `wakesim run` (two when it is not met: the reproduce line).
pub fn regression_line(reg: &Regression, r: &Replayed) -> String {
    let head = format!(
        "{} · regression of {} (seed {}) · {}",
        reg.path.display(),
        reg.scenario.path.display(),
        reg.seed,
        reg.expectation_label()
    );
    match r {
        Replayed::Stale { result, why, met } => {
            let shown = if *met {
                "met".to_string()
            } else {
                format!("it {}", describe(&result.outcome))
            };
            let mut s = format!(
                "{} {head} · stale recording ({why}), ran as seed {} instead: {shown}",
                if *met { "✓" } else { "✗" },
                reg.seed
            );
            if !*met {
                s += &format!(
                    "\n  reproduce: {} replay {} --seed {}",
                    super::invocation(),
                    reg.scenario.path.display(),
                    reg.seed
                );
            }
            s
        }
        Replayed::Run { result, met: true } => {
            format!("✓ {head} · met · {} events", result.events)
        }
        Replayed::Run { result, met: false } => format!(
            "✗ {head} · it {}\n  reproduce: {} replay {}",
            describe(&result.outcome),
            super::invocation(),
            reg.path.display()
        ),
    }
}

/// The story of a run (see `report::story`) with the header and verdict, as `shrink` prints it.
pub fn story(scn: &Scenario, r: &RunResult, target: Option<Invariant>) -> String {
    let violations = r.outcome.violations();
    let rows = story_lines(scn.host, &r.trace, &r.messages, violations, target);
    let mut s = table(scn, r, rows);
    let _ = writeln!(s, "{}", reproduce(scn, r));
    s
}

/// The header, the column titles, and a row a line. Trailing spaces of short rows are noise in
/// snapshots and diffs.
fn table(scn: &Scenario, r: &RunResult, rows: Vec<Line>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", header(scn, r));
    let _ = writeln!(
        s,
        "{:>8}  {:<9} {:<70} host state",
        "t(ms)", "actor", "event"
    );
    for l in rows {
        let row = format!(
            "{:>8}  {:<9} {:<70} {}",
            l.t,
            l.actor.name(),
            l.text,
            l.state
        );
        let _ = writeln!(s, "{}", row.trim_end());
    }
    s
}

/// A number, or `null` (as the JSON line shows an absent one).
fn or_null(v: Option<u64>) -> String {
    v.map_or("null".to_string(), |n| n.to_string())
}
