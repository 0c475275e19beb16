//! Host models: one module per host. Each plays the real host's states and await points as
//! scheduling points of the kernel, and runs a wake logic inside without knowing which one.
//!
//! What every host shares lives here: [`HostKind`] and its [`Family`], the fault plumbing
//! ([`faults`]), scenario ranges ([`Span`]) and the call budget of one wake-logic invocation.

pub mod common;
pub mod gptme_cli;
pub mod gptme_note;
pub mod gptme_server;
pub mod pi;
pub mod registry;

pub use registry::Registry;

use crate::check::Invariant;

/// The hosts wakesim models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HostKind {
    /// pi 0.99 `AgentSession` (earendil-works/pi @014b48bf).
    Pi,
    /// pi 0.58 (badlogic/pi-mono v0.58.3), the older host of H-5.
    Pi058,
    /// gptme's server: conversations with sessions, `request_watch_wake`, the deferred watch
    /// queue and its retry (`gptme/server/session_models.py` @0b19447c, `gptme/tools/watch.py`).
    GptmeServer,
    /// gptme's noninteractive CLI chat loop with background jobs (`gptme/chat.py`,
    /// `gptme/tools/shell_background.py` as of PR #3843).
    GptmeCli,
}

/// Which wake-logic API a host offers: wake logics are written against one family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// `host::pi::api::PiWake`.
    Pi,
    /// `host::gptme::server::api::ServerWake`.
    GptmeServer,
    /// `host::gptme::cli::api::CliWake`.
    GptmeCli,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Pi => "pi",
            Family::GptmeServer => "gptme-server",
            Family::GptmeCli => "gptme-cli",
        }
    }
}

/// The invariants of the pi hosts.
const PI_INVARIANTS: [Invariant; 7] = [
    Invariant::NoLoss,
    Invariant::ExactlyOnce,
    Invariant::Fifo,
    Invariant::BoundedLatency,
    Invariant::SingleStarter,
    Invariant::FlagCoherence,
    Invariant::Harness,
];

/// The invariants of the gptme server (`wake-systems.md` §1.3, §4).
const SERVER_INVARIANTS: [Invariant; 5] = [
    Invariant::NoLoss,
    Invariant::ExactlyOnce,
    Invariant::Fifo,
    Invariant::BoundedLatency,
    Invariant::NoSelfRefusal,
];

/// The invariants of the gptme CLI.
const CLI_INVARIANTS: [Invariant; 7] = [
    Invariant::NoLoss,
    Invariant::ExactlyOnce,
    Invariant::Fifo,
    Invariant::BoundedLatency,
    Invariant::AliveWhileOwed,
    Invariant::NoSpin,
    Invariant::Isolation,
];

impl HostKind {
    pub const ALL: [HostKind; 4] = [
        HostKind::Pi,
        HostKind::Pi058,
        HostKind::GptmeServer,
        HostKind::GptmeCli,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HostKind::Pi => "pi",
            HostKind::Pi058 => "pi-0.58",
            HostKind::GptmeServer => "gptme-server",
            HostKind::GptmeCli => "gptme-cli",
        }
    }

    pub fn version_label(self) -> &'static str {
        match self {
            HostKind::Pi => "pi-0.99",
            HostKind::Pi058 => "pi-0.58",
            HostKind::GptmeServer => "gptme-server@0b19447c",
            HostKind::GptmeCli => "gptme-cli -n (#3843)",
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
            HostKind::GptmeServer => {
                "gptme server: busy predicate over sessions, request_watch_wake sets generating before it returns, step threads, deferred watch queue, storm guards"
            }
            HostKind::GptmeCli => {
                "gptme -n chat loop: prompt queue, STEP_PRE/LOOP_CONTINUE hooks by priority, background jobs, completion queue and condition, prompt-queue and control files"
            }
        }
    }

    pub fn from_name(name: &str) -> Option<HostKind> {
        HostKind::ALL.into_iter().find(|h| h.name() == name)
    }

    /// The invariants this host's runs are judged by.
    pub fn invariants(self) -> &'static [Invariant] {
        match self {
            HostKind::Pi | HostKind::Pi058 => &PI_INVARIANTS,
            HostKind::GptmeServer => &SERVER_INVARIANTS,
            HostKind::GptmeCli => &CLI_INVARIANTS,
        }
    }

    /// The wake-logic API this host offers.
    pub fn family(self) -> Family {
        match self {
            HostKind::Pi | HostKind::Pi058 => Family::Pi,
            HostKind::GptmeServer => Family::GptmeServer,
            HostKind::GptmeCli => Family::GptmeCli,
        }
    }
}
