//! Wake logic in its own language: an adapter process speaking newline-delimited JSON on its
//! stdin and stdout (`docs/protocol.md`). This layer knows the protocol and the process, never a
//! host family: each family's `adapter.rs` is the wake logic of its API that forwards handlers as
//! events and executes the adapter's calls on its host.
//!
//! - [`protocol`]: the messages as types, shared by the three families;
//! - [`slot`]: one process ([`Slot`]: handshake, `reset` per run, one handler as an exchange of
//!   messages) and the processes a runner keeps ([`Pool`]);
//! - [`process`]: the child process, its lines within a wall-clock bound, its stderr tail.
//!
//! The simulator answers every query at once and owns time, so a run through an adapter is as
//! deterministic as a built-in one; the adapter never reads a clock of its own. Whatever the
//! adapter does wrong (it exits, writes a line that is not JSON or not the protocol, calls a
//! function the host does not have, or stays silent past the wall-clock bound) ends the run with
//! its own outcome, [`AdapterFault`], carrying the adapter's stderr tail; the simulator never
//! hangs and never panics on adapter input.

pub mod process;
pub mod protocol;
pub mod relay;
pub mod slot;
pub mod speculate;

pub use slot::{Calls, Pool, Ready, Slot, SlotRef, Step};

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use crate::limits::{
    ADAPTER_NAME_BYTES_MAX, ADAPTER_NAMES_MAX, ADAPTER_QUOTE_MAX, HANDLER_ERROR_CHARS_MAX,
};
use crate::sim::msg::MsgId;

pub use protocol::PROTOCOL_VERSION;

/// An external wake logic, as a scenario's `wake` table gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterSpec {
    /// Program and arguments. A program with a path separator is relative to `cwd`; a bare name
    /// is looked up on `PATH`.
    pub command: Vec<String>,
    /// The directory the adapter runs in (absolute, or relative to the current directory).
    pub cwd: PathBuf,
    /// Constants of the logic (ms), where the kernel biases its delay draws.
    pub constants_ms: Vec<u64>,
    /// Wall-clock bound on each answer during runs.
    pub timeout_ms: u64,
    /// Wall-clock bound on `hello` and the first `ready` after the process starts.
    pub start_timeout_ms: u64,
    /// Passed to the adapter in `hello` (a JSON object).
    pub options: Value,
    /// Where the `wake` key is in the scenario file, for errors: file, line, column.
    pub origin: (PathBuf, usize, usize),
}

/// What went wrong with an adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// It could not be started.
    Spawn,
    /// It exited, crashed or closed its stdout.
    Exited,
    /// It wrote a line that is not JSON.
    NotJson,
    /// It wrote JSON that is not the protocol, or a message out of turn.
    Protocol,
    /// It called a function the host does not have.
    UnknownCall,
    /// It did not answer within the wall-clock bound.
    Timeout,
    /// The code under test did not load (a module or extension that fails to import or throws
    /// at load; the adapter or driver says so with `"kind":"load"` on its `error`). Bad input:
    /// `run` stops with exit 2 naming the scenario's `wake`, and never shrinks or saves it.
    Load,
}

impl FaultKind {
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Spawn => "spawn",
            FaultKind::Exited => "exited",
            FaultKind::NotJson => "not-json",
            FaultKind::Protocol => "protocol",
            FaultKind::UnknownCall => "unknown-call",
            FaultKind::Timeout => "timeout",
            FaultKind::Load => "load",
        }
    }
}

/// A fault of the adapter itself: its own outcome, distinct from an invariant violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterFault {
    pub kind: FaultKind,
    /// What happened, and while doing what.
    pub detail: String,
    /// The last lines the adapter wrote to stderr.
    pub stderr_tail: String,
}

impl fmt::Display for AdapterFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "adapter fault ({}): {}", self.kind.name(), self.detail)
    }
}

/// The part of a line worth quoting in a fault.
pub(crate) fn quote(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(line);
    if s.chars().count() > ADAPTER_QUOTE_MAX {
        let cut: String = s.chars().take(ADAPTER_QUOTE_MAX).collect();
        format!("{cut}…")
    } else {
        s.into_owned()
    }
}

/// The host an adapter process serves: what its `hello` names. One process serves one host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    /// The family, whose API the wake logic is written against.
    pub family: &'static str,
    /// The host version the simulator plays.
    pub version: &'static str,
}

/// End the run with an adapter fault: the runner turns this panic into the outcome.
pub fn fault(f: AdapterFault) -> ! {
    std::panic::panic_any(f)
}

/// `done.error`: the module's handler threw. The run ends with the **panic** outcome (a bug of
/// the wake logic, not of the adapter).
pub fn handler_threw(event: &str, error: &Option<Value>) {
    if let Some(err) = error {
        let text = err.as_str().map_or_else(|| err.to_string(), str::to_string);
        std::panic::panic_any(format!("the `{event}` handler threw: {}", truncate(&text)));
    }
}

/// A handler's error text, cut at [`HANDLER_ERROR_CHARS_MAX`].
fn truncate(s: &str) -> String {
    if s.len() <= HANDLER_ERROR_CHARS_MAX {
        s.to_string()
    } else {
        let mut end = HANDLER_ERROR_CHARS_MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    }
}

/// Names the adapter chose (custom types, hook names), kept once each: they appear in traces,
/// which hold `&'static str`s. Beyond a bound every new name reads as `fallback`.
pub fn intern(s: &str, fallback: &'static str) -> &'static str {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let Ok(mut names) = NAMES.lock() else {
        return fallback;
    };
    if let Some(n) = names.iter().find(|n| **n == s) {
        return n;
    }
    if names.len() >= ADAPTER_NAMES_MAX || s.len() > ADAPTER_NAME_BYTES_MAX {
        return fallback;
    }
    let leaked: &'static str = Box::leak(s.to_string().into_boxed_str());
    names.push(leaked);
    leaked
}

/// The producer messages a call carries, by id (the markers `[wakesim mN]` the adapter found in
/// what the module passed; `N` is the id plus one).
pub fn carries(ids: &Option<Vec<u32>>) -> Vec<MsgId> {
    ids.iter().flatten().map(|&n| MsgId(n)).collect()
}

/// [`carries`], each id checked against the `produced` messages of the run so far: an id the
/// simulator never made (or has not made yet) is a breach of the protocol, said in the returned
/// error, not an index into a table that does not hold it.
pub fn carries_produced(ids: &Option<Vec<u32>>, produced: usize) -> Result<Vec<MsgId>, String> {
    let ids = carries(ids);
    match ids.iter().find(|id| id.0 as usize >= produced) {
        Some(id) => Err(format!(
            "`carries` names {id}, a message the simulator has not produced in this run \
             ({produced} so far)"
        )),
        None => Ok(ids),
    }
}
