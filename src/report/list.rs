//! What `wakesim list` prints: hosts, wake logics, invariants, faults and race windows, family
//! by family, then the scenarios under the paths given (default `scenarios/`); as text or as JSON
//! Lines.

use std::fmt::Write;

use serde::Serialize;

use super::json::FORMAT;
use crate::check::Invariant;
use crate::family::{HostKind, Registry, families};
use crate::scenario::Scenario;
use crate::sim::record::Window;

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ListLine {
    Host {
        format: &'static str,
        name: &'static str,
        family: &'static str,
        about: &'static str,
        invariants: Vec<&'static str>,
    },
    Wake {
        format: &'static str,
        name: String,
        family: &'static str,
        about: String,
    },
    Invariant {
        format: &'static str,
        name: &'static str,
        about: &'static str,
        hosts: Vec<&'static str>,
    },
    Fault {
        format: &'static str,
        name: &'static str,
        family: &'static str,
        timed: bool,
        about: &'static str,
    },
    Window {
        format: &'static str,
        name: &'static str,
        about: &'static str,
    },
    Scenario {
        format: &'static str,
        file: String,
        name: String,
        host: &'static str,
        wake: String,
        expect: String,
        seeds: u64,
        /// Regression files (saved failures and witnesses) that run first with it.
        regressions: usize,
    },
}

/// A scenario as `list` shows it: the scenario and its regression files.
pub struct Listed<'a> {
    pub scenario: &'a Scenario,
    pub regressions: usize,
}

/// The scenarios of `wakesim list [PATH..]`, as JSON Lines.
pub fn scenarios_json(listed: &[Listed<'_>]) -> String {
    let mut s = String::new();
    for l in listed {
        let line = ListLine::Scenario {
            format: FORMAT,
            file: l.scenario.path.display().to_string(),
            name: l.scenario.name.clone(),
            host: l.scenario.host.name(),
            wake: l.scenario.wake.clone(),
            expect: l.scenario.expect.to_string(),
            seeds: l.scenario.seeds,
            regressions: l.regressions,
        };
        s += &serde_json::to_string(&line).expect("a list line serializes");
        s.push('\n');
    }
    s
}

/// The scenarios of `wakesim list [PATH..]`, one line each.
pub fn scenarios_text(listed: &[Listed<'_>]) -> String {
    let mut s = String::from(
        "\nscenarios (file · name · host · wake · expectation · saved regressions):\n",
    );
    for l in listed {
        let scn = l.scenario;
        let _ = writeln!(
            s,
            "  {} · {} · {} · {} · expect {} · {} regression(s)",
            scn.path.display(),
            scn.name,
            scn.host.name(),
            scn.wake,
            scn.expect,
            l.regressions
        );
    }
    s
}

/// Every host: the models, then the real hosts (`family@version`).
fn hosts() -> impl Iterator<Item = HostKind> {
    HostKind::all().chain(HostKind::real_hosts())
}

/// The hosts judged by `i`.
fn hosts_judging(i: Invariant) -> Vec<&'static str> {
    hosts()
        .filter(|h| h.invariants().contains(i))
        .map(|h| h.name())
        .collect()
}

/// Every race window of every family once, in code order.
fn windows() -> Vec<Window> {
    let mut all: Vec<Window> = families()
        .iter()
        .flat_map(|f| f.windows().iter().copied())
        .collect();
    all.sort_by_key(|w| w.code);
    all.dedup();
    all
}

/// `wakesim list --format json`.
pub fn json(registry: &Registry) -> String {
    let mut lines = Vec::new();
    for h in hosts() {
        lines.push(ListLine::Host {
            format: FORMAT,
            name: h.name(),
            family: h.family().name(),
            about: h.describe(),
            invariants: h.invariants().iter().map(|i| i.name()).collect(),
        });
    }
    for e in registry.entries() {
        lines.push(ListLine::Wake {
            format: FORMAT,
            name: e.name.clone(),
            family: e.family().name(),
            about: e.summary.clone(),
        });
    }
    for i in Invariant::ALL {
        lines.push(ListLine::Invariant {
            format: FORMAT,
            name: i.name(),
            about: i.statement(),
            hosts: hosts_judging(i),
        });
    }
    for family in families() {
        for f in family.faults() {
            lines.push(ListLine::Fault {
                format: FORMAT,
                name: f.name,
                family: family.name(),
                timed: f.timed,
                about: f.describe,
            });
        }
    }
    for w in windows() {
        lines.push(ListLine::Window {
            format: FORMAT,
            name: w.name,
            about: w.describe,
        });
    }
    let mut s = String::new();
    for l in lines {
        s += &serde_json::to_string(&l).expect("a list line serializes");
        s.push('\n');
    }
    s
}

/// `wakesim list`.
pub fn text(registry: &Registry) -> String {
    let mut s = String::from("hosts:\n");
    for h in hosts() {
        let _ = writeln!(s, "  {:<24} {}", h.name(), h.describe());
    }
    let _ = writeln!(s, "\nwake logics (by host family):");
    for e in registry.entries() {
        let family = e.family().name();
        let _ = writeln!(s, "  {:<28} {:<13} {}", e.name, family, e.summary);
    }
    let _ = writeln!(s, "\ninvariants:");
    for i in Invariant::ALL {
        let hosts = hosts_judging(i).join(", ");
        let _ = writeln!(s, "  {:<24} {} [{hosts}]", i.name(), i.statement());
    }
    let _ = writeln!(s, "\nfaults (by host family; in [faults] of a scenario):");
    for family in families() {
        for f in family.faults() {
            let _ = writeln!(s, "  {:<24} {:<13} {}", f.name, family.name(), f.describe);
        }
    }
    let _ = writeln!(
        s,
        "\nrace windows (coverage marks; in [coverage] must_reach):"
    );
    for w in windows() {
        let _ = writeln!(s, "  {:<28} {}", w.name, w.describe);
    }
    s
}
