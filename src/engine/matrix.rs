//! The scenario matrix (issue 15, item 4): for each fixed variant's claim
//! (`family::claims::CLAIMS`), each fault it claims to survive and the passing scenarios that
//! switch it on, with their shares (`1/1`: every seed; below: in the swarm mix). A claimed fault
//! that no passing scenario switches on is `missing`: a bug in its path could pass.

use std::path::PathBuf;

use crate::family::claims::{CLAIMS, Claim};
use crate::scenario::{Expect, Scenario};
use crate::sim::choice::Ratio;

/// One claimed fault of a variant, and the passing scenarios that switch it on.
#[derive(Clone, Debug)]
pub struct Cell {
    pub fault: &'static str,
    /// `(scenario file, share)` for every passing scenario of the variant that names the fault.
    pub on_in: Vec<(PathBuf, Ratio)>,
}

impl Cell {
    /// Some passing scenario switches it on in every seed.
    pub fn in_every_seed(&self) -> bool {
        self.on_in.iter().any(|(_, s)| s.num >= s.den)
    }

    /// Some passing scenario switches it on in a share of the seeds, among the others' faults.
    pub fn in_swarm(&self) -> bool {
        self.on_in.iter().any(|(_, s)| s.num < s.den)
    }
}

/// One variant's row: its claim, a cell per claimed fault, and how many passing scenarios it has.
#[derive(Clone, Debug)]
pub struct Row {
    pub claim: Claim,
    pub passing: usize,
    pub cells: Vec<Cell>,
}

impl Row {
    /// The claimed faults no passing scenario switches on.
    pub fn missing(&self) -> Vec<&'static str> {
        (self.cells.iter())
            .filter(|c| c.on_in.is_empty())
            .map(|c| c.fault)
            .collect()
    }
}

/// The matrix of `claims` over `scenarios`.
pub fn matrix_of(claims: &[Claim], scenarios: &[Scenario]) -> Vec<Row> {
    claims
        .iter()
        .map(|claim| {
            let passing: Vec<&Scenario> = (scenarios.iter())
                .filter(|s| {
                    s.host.name() == claim.host
                        && s.wake == claim.wake
                        && matches!(s.expect, Expect::Pass)
                })
                .collect();
            let cells = (claim.survives.iter())
                .map(|&fault| Cell {
                    fault,
                    on_in: (passing.iter())
                        .filter_map(|s| {
                            let on = s.host.family().faults_on(&s.config);
                            let share = on.iter().find(|(f, _)| *f == fault)?.1;
                            Some((s.path.clone(), share))
                        })
                        .collect(),
                })
                .collect();
            Row {
                claim: *claim,
                passing: passing.len(),
                cells,
            }
        })
        .collect()
}

/// The matrix of every fixed variant's claim over `scenarios`.
pub fn matrix(scenarios: &[Scenario]) -> Vec<Row> {
    matrix_of(CLAIMS, scenarios)
}
