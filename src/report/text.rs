//! The text timeline of one run, as `wakesim replay` prints it and snapshots store it.

use std::fmt::Write;

use super::{lines, replay_line};
use crate::run::{Outcome, RunResult};
use crate::scenario::Scenario;

/// The header line: host, wake logic, seed, faults on, version.
pub fn header(scn: &Scenario, r: &RunResult) -> String {
    let faults = if r.faults_on.is_empty() {
        "none".to_string()
    } else {
        r.faults_on.join(", ")
    };
    format!(
        "host {} · wake {} · seed {} · faults: {faults} · wakesim {}",
        scn.host.version_label(),
        scn.wake,
        r.seed,
        env!("CARGO_PKG_VERSION")
    )
}

/// The whole timeline with its verdict and, on failure, the replay line.
pub fn timeline(scn: &Scenario, r: &RunResult) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", header(scn, r));
    let _ = writeln!(
        s,
        "{:>8}  {:<9} {:<70} host state",
        "t(ms)", "actor", "event"
    );
    for l in lines(scn.host, &r.trace, &r.messages, r.outcome.violations()) {
        let _ = writeln!(
            s,
            "{:>8}  {:<9} {:<70} {}",
            l.t,
            l.actor.name(),
            l.text,
            l.state
        )
        .map(|_| ());
    }
    // Trailing spaces of short lines are noise in snapshots and diffs.
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
            let _ = writeln!(s, "{}", replay_line(&scn.path, r.seed));
        }
        Outcome::Panic(m) => {
            let _ = writeln!(s, "✗ the wake logic panicked: {m}");
            let _ = writeln!(s, "{}", replay_line(&scn.path, r.seed));
        }
        Outcome::StepBudget { steps } => {
            let _ = writeln!(
                s,
                "✗ step budget exhausted after {steps} events (a runaway wake logic?)"
            );
            let _ = writeln!(s, "{}", replay_line(&scn.path, r.seed));
        }
        Outcome::AdapterFault(f) => {
            let _ = writeln!(s, "✗ {f}");
            if !f.stderr_tail.is_empty() {
                let _ = writeln!(s, "  adapter stderr (last lines):");
                for l in f.stderr_tail.lines() {
                    let _ = writeln!(s, "    {l}");
                }
            }
            let _ = writeln!(s, "{}", replay_line(&scn.path, r.seed));
        }
    }
    s
}
