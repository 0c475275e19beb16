//! Wake logic in its own language: an adapter process speaking newline-delimited JSON on its
//! stdin and stdout (`docs/protocol.md`).
//!
//! A scenario names the adapter with `wake = { command = [...], ... }`. [`ExternalPi`] is a
//! [`PiWake`](crate::family::pi::api::PiWake) like any built-in variant: the host model calls its
//! handlers, it forwards each as an `event` line, and executes the host calls the adapter answers
//! with (`send_message`, `is_idle`, `set_timeout`, ...) on the host, synchronously, until the
//! adapter's `done`. The simulator answers every query at once and owns time, so a run through an
//! adapter is as deterministic as a built-in one; the adapter never reads a clock of its own.
//! [`ExternalServer`] (a [`ServerWake`](crate::family::gptme_server::api::ServerWake)) and
//! [`ExternalCli`] (a [`CliWake`](crate::family::gptme_cli::api::CliWake)) do the same for the
//! gptme hosts; a CLI hook may also end a handler by suspending (`unlock`, `wait`), and the host
//! resumes it with a `resume` event later.
//!
//! One process serves every seed a runner takes of a scenario: a `reset` line starts each run
//! afresh. The [`Pool`] keeps the processes of a [`Runner`](crate::engine::run::Runner) alive between
//! seeds; parallel sweeps have a runner, so a process, per thread.
//!
//! Whatever the adapter does wrong (it exits, writes a line that is not JSON or not the protocol,
//! calls a function the host does not have, or stays silent past the wall-clock bound) ends the
//! run with its own outcome, [`AdapterFault`], carrying the adapter's stderr tail; the simulator
//! never hangs and never panics on adapter input.

pub mod process;

use std::cell::RefCell;
use std::fmt;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use serde_json::Value;

use crate::limits::{
    ADAPTER_NAME_BYTES_MAX, ADAPTER_NAMES_MAX, ADAPTER_QUOTE_MAX, ADAPTERS_LIVE_MAX as LIVE_MAX,
    HANDLER_ERROR_CHARS_MAX,
};

use process::{Process, ReadError};

/// The protocol version this simulator speaks (`docs/protocol.md`).
pub const PROTOCOL_VERSION: u64 = 1;

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

/// One adapter process and the state of the conversation with it.
pub struct Slot {
    pub(crate) spec: AdapterSpec,
    pub(crate) host: Peer,
    pub(crate) proc: Option<Process>,
    /// A handler was in progress when its run ended (a budget ran out): the process is mid-way
    /// and must be restarted before the next run.
    pub(crate) in_handler: bool,
    /// Spawned, and its first `ready` not read yet: answers get the start bound.
    pub(crate) starting: bool,
    /// What the adapter said in its `hello`.
    pub adapter_name: String,
}

/// A shared handle on a slot: the runner's pool keeps it, each run's [`ExternalPi`] borrows it.
pub type SlotRef = Rc<RefCell<Slot>>;

impl Slot {
    pub(crate) fn new(spec: AdapterSpec, host: Peer) -> Slot {
        Slot {
            spec,
            host,
            proc: None,
            in_handler: false,
            starting: false,
            adapter_name: String::new(),
        }
    }

    /// Stop the process (if any) and describe the fault.
    pub(crate) fn fail(&mut self, kind: FaultKind, detail: String) -> AdapterFault {
        self.in_handler = false;
        match self.proc.take() {
            Some(p) => p.into_fault(kind, detail),
            None => AdapterFault {
                kind,
                detail,
                stderr_tail: String::new(),
            },
        }
    }

    pub(crate) fn write(&mut self, line: &str, doing: &str) -> Result<(), AdapterFault> {
        let p = self.proc.as_mut().expect("a live process");
        if let Err(e) = p.write_line(line) {
            return Err(self.fail(
                FaultKind::Exited,
                format!("cannot write to the adapter while {doing}: {e}"),
            ));
        }
        Ok(())
    }

    /// The next message: a JSON object with a string `type`.
    pub(crate) fn read(&mut self, doing: &str) -> Result<(String, Value), AdapterFault> {
        let ms = if self.starting {
            self.spec.start_timeout_ms
        } else {
            self.spec.timeout_ms
        };
        let p = self.proc.as_mut().expect("a live process");
        let line = match p.read_line(Duration::from_millis(ms)) {
            Ok(l) => l,
            Err(ReadError::Timeout) => {
                return Err(self.fail(
                    FaultKind::Timeout,
                    format!("no answer within {ms} ms while {doing}"),
                ));
            }
            Err(ReadError::Eof) => {
                return Err(self.fail(
                    FaultKind::Exited,
                    format!("the adapter closed its stdout while {doing}"),
                ));
            }
            Err(ReadError::TooLong) => {
                return Err(self.fail(
                    FaultKind::Protocol,
                    format!(
                        "a line longer than {} bytes while {doing}",
                        crate::limits::ADAPTER_LINE_BYTES_MAX
                    ),
                ));
            }
            Err(ReadError::Failed(e)) => {
                return Err(self.fail(
                    FaultKind::Exited,
                    format!("reading the adapter failed while {doing}: {e}"),
                ));
            }
        };
        let value: Value = match serde_json::from_slice(&line) {
            Ok(v) => v,
            Err(e) => {
                return Err(self.fail(
                    FaultKind::NotJson,
                    format!(
                        "a line that is not JSON while {doing} ({e}): {}",
                        quote(&line)
                    ),
                ));
            }
        };
        match value.get("type").and_then(Value::as_str) {
            Some(t) => Ok((t.to_string(), value)),
            None => Err(self.fail(
                FaultKind::Protocol,
                format!(
                    "a message without a string `type` while {doing}: {}",
                    quote(&line)
                ),
            )),
        }
    }

    /// A message that is not the protocol at this point.
    pub(crate) fn unexpected(&mut self, ty: &str, value: &Value, doing: &str) -> AdapterFault {
        let line = value.to_string();
        self.fail(
            FaultKind::Protocol,
            format!(
                "unexpected `{ty}` while {doing}: {}",
                quote(line.as_bytes())
            ),
        )
    }

    /// Start the process and shake hands, unless it is already running and between runs.
    pub(crate) fn ensure(&mut self) -> Result<(), AdapterFault> {
        if self.in_handler {
            self.proc = None;
            self.in_handler = false;
        }
        if self.proc.is_some() {
            return Ok(());
        }
        let p = Process::spawn(&self.spec.command, &self.spec.cwd)
            .map_err(|e| self.fail(FaultKind::Spawn, e))?;
        self.proc = Some(p);
        self.starting = true;
        // `type` first, as in every line wakesim writes.
        let hello = format!(
            r#"{{"type":"hello","protocol":{PROTOCOL_VERSION},"host":"{}","host_version":"{}","options":{}}}"#,
            self.host.family, self.host.version, self.spec.options
        );
        let doing = "shaking hands";
        self.write(&hello, doing)?;
        let (ty, v) = self.read(doing)?;
        match ty.as_str() {
            "hello" => {
                let version = v.get("protocol").and_then(Value::as_u64);
                if version != Some(PROTOCOL_VERSION) {
                    return Err(self.fail(
                        FaultKind::Protocol,
                        format!(
                            "the adapter speaks protocol {}, wakesim speaks {PROTOCOL_VERSION}",
                            v.get("protocol")
                                .map_or("(none)".to_string(), Value::to_string)
                        ),
                    ));
                }
                self.adapter_name = v
                    .get("adapter")
                    .and_then(Value::as_str)
                    .unwrap_or("unnamed adapter")
                    .to_string();
                Ok(())
            }
            "error" => Err(self.reported(&v, doing)),
            _ => Err(self.unexpected(&ty, &v, doing)),
        }
    }

    /// The adapter reported an error of its own (`{"type":"error","message":...}`).
    pub(crate) fn reported(&mut self, v: &Value, doing: &str) -> AdapterFault {
        let msg = v
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)")
            .to_string();
        self.fail(
            FaultKind::Protocol,
            format!("the adapter reported an error while {doing}: {msg}"),
        )
    }

    /// Start a run: write `reset` (the `ready` answer is read by [`Slot::read_ready`], possibly
    /// after the first event was written too: the adapter answers in order).
    pub(crate) fn begin_reset(&mut self) -> Result<(), AdapterFault> {
        self.ensure()?;
        self.write(r#"{"type":"reset"}"#, "resetting for a new run")
    }

    /// `ready`: the events the logic listens to, and the whole message (a family may read more
    /// of it: the CLI's hooks).
    pub(crate) fn read_ready(&mut self) -> Result<(Vec<String>, Value), AdapterFault> {
        let doing = "resetting for a new run";
        let (ty, v) = self.read(doing)?;
        match ty.as_str() {
            "ready" => {
                self.starting = false;
                let Some(events) = v.get("events").and_then(Value::as_array) else {
                    return Err(self.unexpected(&ty, &v, doing));
                };
                let mut out = Vec::with_capacity(events.len());
                for e in events {
                    match e.as_str() {
                        Some(s) => out.push(s.to_string()),
                        None => return Err(self.unexpected(&ty, &v, doing)),
                    }
                }
                Ok((out, v))
            }
            "error" => Err(self.reported(&v, doing)),
            _ => Err(self.unexpected(&ty, &v, doing)),
        }
    }

    pub(crate) fn reset(&mut self) -> Result<(Vec<String>, Value), AdapterFault> {
        self.begin_reset()?;
        self.read_ready()
    }

    /// A message that is JSON and has a `type`, but a bad field or value: `what` says which.
    pub(crate) fn bad(&mut self, v: &Value, what: &str, doing: &str) -> AdapterFault {
        self.fail(
            FaultKind::Protocol,
            format!("{what} while {doing}: {}", quote(v.to_string().as_bytes())),
        )
    }

    /// One handler: write the `event` line, then read the adapter's messages and hand each to
    /// `step` (which executes a host call, answers a query, or ends the handler) until `step`
    /// ends it. A message `step` does not take is the adapter's `error`, a message out of turn,
    /// or a call the family does not have (`calls` names the ones it has).
    pub(crate) fn exchange<T>(
        &mut self,
        line: &str,
        doing: &str,
        family: &str,
        calls: &str,
        mut step: impl FnMut(&mut Slot, &str, &Value) -> Result<Step<T>, AdapterFault>,
    ) -> Result<T, AdapterFault> {
        self.in_handler = true;
        self.write(line, doing)?;
        loop {
            let (ty, v) = self.read(doing)?;
            match step(self, &ty, &v)? {
                Step::Next => {}
                Step::End(t) => {
                    self.in_handler = false;
                    return Ok(t);
                }
                Step::NotMine => {
                    return Err(match ty.as_str() {
                        "error" => self.reported(&v, doing),
                        "hello" | "ready" | "result" | "event" | "reset" | "done" => {
                            self.unexpected(&ty, &v, doing)
                        }
                        other => self.fail(
                            FaultKind::UnknownCall,
                            format!(
                                "the adapter called `{other}`, which {family} does not have, \
                                 while {doing} ({family}: {calls})"
                            ),
                        ),
                    });
                }
            }
        }
    }
}

/// What a family's handler made of one message of the adapter (see [`Slot::exchange`]).
pub(crate) enum Step<T> {
    /// A host call done (and answered, if it was a query); read the next message.
    Next,
    /// The handler ended.
    End(T),
    /// Not a message of this family at this point.
    NotMine,
}

/// End the run with an adapter fault: the runner turns this panic into the outcome.
pub(crate) fn fault(f: AdapterFault) -> ! {
    std::panic::panic_any(f)
}

/// `done.error`: the module's handler threw. The run ends with the **panic** outcome (a bug of
/// the wake logic, not of the adapter).
pub(crate) fn handler_threw(event: &str, v: &Value) {
    if let Some(err) = v.get("error") {
        let text = err.as_str().map_or_else(|| err.to_string(), str::to_string);
        std::panic::panic_any(format!("the `{event}` handler threw: {}", truncate(&text)));
    }
}

pub(crate) fn truncate(s: &str) -> String {
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

/// `carries`: the producer messages a call carries, by id (the markers `[wakesim mN]` the
/// adapter found in what the module passed; `N` is the id plus one).
pub(crate) fn carries(v: &Value) -> Result<Vec<crate::sim::msg::MsgId>, String> {
    match v.get("carries") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .map(crate::sim::msg::MsgId)
                    .ok_or_else(|| "`carries` must be a list of message ids".to_string())
            })
            .collect(),
        Some(_) => Err("`carries` must be a list of message ids".to_string()),
    }
}

/// Names the adapter chose (custom types, hook names), kept once each: they appear in traces,
/// which hold `&'static str`s. Beyond a bound every new name reads as `fallback`.
pub(crate) fn intern(s: &str, fallback: &'static str) -> &'static str {
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

pub(crate) fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// The adapter processes of a runner, one per (spec, host), reused across seeds and scenarios.
#[derive(Default)]
pub struct Pool {
    slots: Vec<(u64, SlotRef)>,
    clock: u64,
}

impl Pool {
    /// The slot for `spec` on `host`, created if needed. Beyond [`LIVE_MAX`] slots the least
    /// recently used one is dropped, which stops its process.
    pub fn slot(&mut self, spec: &AdapterSpec, host: Peer) -> SlotRef {
        self.clock += 1;
        let now = self.clock;
        if let Some((used, s)) = self.slots.iter_mut().find(|(_, s)| {
            let s = s.borrow();
            s.spec == *spec && s.host == host
        }) {
            *used = now;
            return Rc::clone(s);
        }
        if self.slots.len() >= LIVE_MAX
            && let Some(i) = (0..self.slots.len()).min_by_key(|&i| self.slots[i].0)
        {
            self.slots.remove(i);
        }
        let s = Rc::new(RefCell::new(Slot::new(spec.clone(), host)));
        self.slots.push((now, Rc::clone(&s)));
        s
    }

    /// Start the adapter and run its first `reset`, so a command or module that cannot start is
    /// reported before any seed runs.
    pub fn prepare(&mut self, spec: &AdapterSpec, host: Peer) -> Result<(), AdapterFault> {
        let slot = self.slot(spec, host);
        let mut s = slot.borrow_mut();
        s.reset().map(|_| ())
    }
}
