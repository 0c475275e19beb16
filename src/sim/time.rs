//! Virtual time. The simulator never reads the wall clock inside a run; every instant is a `Ms`.

use std::fmt;
use std::ops::{Add, Sub};

/// A point in virtual time, or a duration, in milliseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ms(pub u64);

impl Ms {
    pub const ZERO: Ms = Ms(0);
    pub const MAX: Ms = Ms(u64::MAX);

    pub fn saturating_sub(self, other: Ms) -> Ms {
        Ms(self.0.saturating_sub(other.0))
    }
}

impl Add for Ms {
    type Output = Ms;
    fn add(self, rhs: Ms) -> Ms {
        Ms(self.0.saturating_add(rhs.0))
    }
}

impl Add<u64> for Ms {
    type Output = Ms;
    fn add(self, rhs: u64) -> Ms {
        Ms(self.0.saturating_add(rhs))
    }
}

impl Sub for Ms {
    type Output = Ms;
    fn sub(self, rhs: Ms) -> Ms {
        Ms(self.0.saturating_sub(rhs.0))
    }
}

impl fmt::Display for Ms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ms", self.0)
    }
}
