//! Host models: one module per host. Each plays the real host's states and await points as
//! scheduling points of the kernel, and runs a wake logic inside without knowing which one.

pub mod pi;

use crate::check::Invariant;

/// The hosts wakesim models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostKind {
    /// pi 0.99 `AgentSession` (earendil-works/pi @014b48bf).
    Pi,
    /// pi 0.58 (badlogic/pi-mono v0.58.3), the older host of H-5.
    Pi058,
}

impl HostKind {
    pub const ALL: [HostKind; 2] = [HostKind::Pi, HostKind::Pi058];

    pub fn name(self) -> &'static str {
        match self {
            HostKind::Pi => "pi",
            HostKind::Pi058 => "pi-0.58",
        }
    }

    pub fn version_label(self) -> &'static str {
        match self {
            HostKind::Pi => "pi-0.99",
            HostKind::Pi058 => "pi-0.58",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            HostKind::Pi => {
                "pi 0.99 AgentSession: prompt() steps 0-12, run flag spanning inner runs, agent_settled, deferral while settling"
            }
            HostKind::Pi058 => {
                "pi 0.58: isIdle per inner run, continue() on a timer, agent_end listeners not awaited, no agent_settled"
            }
        }
    }

    pub fn from_name(name: &str) -> Option<HostKind> {
        HostKind::ALL.into_iter().find(|h| h.name() == name)
    }

    /// The invariants this host's runs are judged by.
    pub fn invariants(self) -> &'static [Invariant] {
        match self {
            HostKind::Pi | HostKind::Pi058 => &Invariant::ALL,
        }
    }

    /// The wake-logic family a host runs (`pi.*` names).
    pub fn family(self) -> &'static str {
        match self {
            HostKind::Pi | HostKind::Pi058 => "pi",
        }
    }
}
