//! What the host families share: the fault plumbing ([`faults`]), conversations ([`conv`]),
//! scenario ranges ([`Span`]) and the call budget of one wake-logic invocation.

pub mod conv;
pub mod faults;

/// An inclusive range from a scenario file, `{ min = .., max = .. }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub min: u64,
    pub max: u64,
}

impl Span {
    pub const fn new(min: u64, max: u64) -> Span {
        Span { min, max }
    }

    /// A value in the range, biased toward its ends (and the wake logic's constants).
    pub fn delay<E>(self, k: &mut crate::sim::Kernel<E>, label: &'static str) -> u64 {
        k.delay(self.min, self.max, label)
    }

    /// When an outside event happens in the range (see `Choices::instant`).
    pub fn instant<E>(self, k: &mut crate::sim::Kernel<E>, label: &'static str) -> u64 {
        k.instant(self.min, self.max, label)
    }

    /// A count in the range, uniform.
    pub fn count<E>(self, k: &mut crate::sim::Kernel<E>, label: &'static str) -> u64 {
        self.min + k.choose(self.max - self.min + 1, label)
    }
}

/// Calls a single wake-logic invocation may make before the run is stopped as runaway.
pub const CALLS_MAX: u32 = 10_000;

/// The payload of a panic that stops a runaway wake logic; the runner reports it as a
/// step-budget outcome.
pub struct BudgetExceeded;

/// Count one call of a wake logic into its host; stop the run past [`CALLS_MAX`].
pub fn count_call(calls: &mut u32) {
    *calls += 1;
    if *calls > CALLS_MAX {
        std::panic::panic_any(BudgetExceeded);
    }
}
