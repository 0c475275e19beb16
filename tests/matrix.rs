//! The scenario matrix (issue 15, item 4): every fault a fixed variant claims to survive
//! (`family::claims::CLAIMS`) is on in at least one of its passing scenarios under `scenarios/`,
//! and every claim decides every fault of its host (claimed, or not claimed with a reason), so a
//! new fault cannot slip past the matrix. No run: the scenarios are only read.

use std::collections::BTreeSet;

use wakesim::engine::matrix::{matrix, matrix_of};
use wakesim::engine::suite;
use wakesim::family::claims::{CLAIMS, Claim};
use wakesim::family::{HostKind, Registry};

mod common;
use common::root;

fn scenarios() -> Vec<wakesim::scenario::Scenario> {
    let registry = Registry::builtin();
    suite::load(&registry, &[root().join("scenarios")])
        .expect("every scenario under scenarios/ loads")
        .scenarios
}

#[test]
fn every_claimed_fault_is_on_in_a_passing_scenario() {
    let rows = matrix(&scenarios());
    let mut missing = Vec::new();
    for r in &rows {
        assert!(
            r.passing > 0,
            "{} on {} has no passing scenario",
            r.claim.wake,
            r.claim.host
        );
        for f in r.missing() {
            missing.push(format!("{} on {}: {f}", r.claim.wake, r.claim.host));
        }
    }
    assert!(
        missing.is_empty(),
        "claimed faults no passing scenario switches on:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn every_claim_decides_every_fault_of_its_host() {
    for c in CLAIMS {
        let host = (HostKind::all().chain(HostKind::real_hosts()))
            .find(|h| h.name() == c.host)
            .unwrap_or_else(|| panic!("claim on an unknown host {}", c.host));
        let all: BTreeSet<&str> = host.family().faults().iter().map(|f| f.name).collect();
        let claimed: BTreeSet<&str> = c.survives.iter().copied().collect();
        let not: BTreeSet<&str> = c.not_claimed.iter().map(|(f, _)| *f).collect();
        assert_eq!(claimed.len(), c.survives.len(), "{}: a fault twice", c.wake);
        assert!(claimed.is_disjoint(&not), "{}: claimed and not", c.wake);
        let decided: BTreeSet<&str> = claimed.union(&not).copied().collect();
        assert_eq!(
            decided, all,
            "{} on {}: every fault of the host is claimed or not claimed with a reason",
            c.wake, c.host
        );
    }
}

/// The check can fail: a claim whose fault no passing scenario names is reported missing.
#[test]
fn a_fault_no_passing_scenario_names_is_missing() {
    let claim = Claim {
        host: "pi",
        wake: "pi.reservation",
        survives: &["retries", "session_replacement"],
        not_claimed: &[],
    };
    let rows = matrix_of(&[claim], &scenarios());
    assert_eq!(rows[0].missing(), vec!["session_replacement"]);
    assert!(rows[0].cells[0].in_swarm(), "retries is in G3's swarm mix");
}

/// `wakesim list` prints the matrix, and marks a missing fault.
#[test]
fn list_prints_the_matrix() {
    let out = common::wakesim(&["list", "scenarios"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("scenario matrix"), "{text}");
    assert!(
        text.contains("watch_in_wake_gap        w2-one-wake-per-burst-passes 1/2, w2-wake-gap-keeps-order 1/1"),
        "{text}"
    );
    assert!(!text.contains("MISSING"), "{text}");
}
