//! Every limit of wakesim in one place: what bounds a run, a scenario file, a wake logic's calls,
//! an adapter's answers and the work of the engine. Running out of a run's limit is an outcome,
//! never a hang; exceeding a file's limit is an error naming the file, line and key.

/// Limits of one run. Running out of any is an outcome, never a hang.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Producers and faults act in `[0, active_ms)`; then the quiescent phase begins.
    pub active_ms: u64,
    /// The quiescent phase ends at `active_ms + quiesce_ms_max` at the latest.
    pub quiesce_ms_max: u64,
    /// Events a run may process.
    pub steps_max: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            active_ms: 120_000,
            quiesce_ms_max: 600_000,
            steps_max: 200_000,
        }
    }
}
