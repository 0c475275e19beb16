//! One adapter process and the conversation with it ([`Slot`]): spawn and handshake, a `reset`
//! per run, typed messages read within the wall-clock bound, and one handler as an exchange of
//! messages; and the processes a runner keeps ([`Pool`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

use super::process::{Process, ReadError};
use super::protocol::{
    AdapterCall, FromAdapter, Hello as HelloLine, HookSpec, NoCalls, PROTOCOL_VERSION, ParseError,
    Reset, parse,
};
use super::speculate::Ahead;
use super::{AdapterFault, AdapterSpec, FaultKind, Peer, quote};
use crate::limits::{ADAPTER_LINE_BYTES_MAX, ADAPTERS_LIVE_MAX};

/// `{"type":"done"}` exactly: a handler that ended with nothing to report.
pub(super) const DONE_LINE: &[u8] = br#"{"type":"done"}"#;

/// Lines written to adapters by this process so far: a counter for the adapter benchmarks
/// (`benches/adapters.rs` divides by it), read by nothing in a run.
pub(super) static LINES_SENT: AtomicU64 = AtomicU64::new(0);

/// Round trips with adapters by this process so far: a counter for the adapter benchmarks, read
/// by nothing in a run.
static ROUND_TRIPS: AtomicU64 = AtomicU64::new(0);

/// Lines written to adapters by this process so far (every `reset`, event and answer).
pub fn lines_sent() -> u64 {
    LINES_SENT.load(Ordering::Relaxed)
}

/// Round trips with adapters by this process so far: each time the simulator, having written,
/// waits for the adapter's next line (a `reset` written with the run's first event behind it is
/// one round trip; each further line of the same answer is none).
pub fn round_trips() -> u64 {
    ROUND_TRIPS.load(Ordering::Relaxed)
}

/// One adapter process and the state of the conversation with it.
pub struct Slot {
    spec: AdapterSpec,
    host: Peer,
    pub(super) proc: Option<Process>,
    /// A handler was in progress when its run ended (a budget ran out): the process is mid-way
    /// and must be restarted before the next run.
    pub(super) in_handler: bool,
    /// Spawned, and its first `ready` not read yet: answers get the start bound.
    starting: bool,
    /// The adapter's last line, for faults that quote it.
    pub(super) last: Vec<u8>,
    /// What the adapter said in its `hello`.
    pub adapter_name: String,
    /// The line being written (its allocation kept across lines).
    out: Vec<u8>,
    /// Written since the last line read: the next read is a round trip.
    pub(super) wrote: bool,
    /// Events sent ahead of their answers (`speculate.rs`).
    pub(super) ahead: Ahead,
    /// A `reset` was written (behind the last run's events sent ahead) and its `ready` not read.
    pub(super) reset_sent: bool,
}

/// A shared handle on a slot: the runner's pool keeps it, each run's wake logic borrows it.
pub type SlotRef = Rc<RefCell<Slot>>;

/// The calls a family has, for the fault that names a call it does not have.
#[derive(Clone, Copy)]
pub struct Calls {
    /// The family as a sentence names it ("pi", "the gptme server").
    pub family: &'static str,
    /// Its calls, comma-separated.
    pub list: &'static str,
}

/// What `ready` says: the events the module listens to and (gptme-cli) its hooks.
pub struct Ready {
    pub events: Vec<String>,
    pub hooks: Option<std::collections::BTreeMap<String, HookSpec>>,
}

/// What a family's handler made of one message of the adapter (see [`Slot::run`]).
pub enum Step<T> {
    /// A host call done (and answered, if it was a query); read the next message.
    Next,
    /// The handler ended.
    End(T),
    /// Not a message of this family at this point.
    NotMine,
}

impl Slot {
    fn new(spec: AdapterSpec, host: Peer) -> Slot {
        Slot {
            spec,
            host,
            proc: None,
            in_handler: false,
            starting: false,
            last: Vec::new(),
            adapter_name: String::new(),
            out: Vec::new(),
            wrote: false,
            ahead: Ahead::default(),
            reset_sent: false,
        }
    }

    /// Stop the process (if any) and describe the fault.
    pub fn fail(&mut self, kind: FaultKind, detail: String) -> AdapterFault {
        self.in_handler = false;
        self.reset_sent = false;
        self.ahead.drop_outstanding();
        match self.proc.take() {
            Some(p) => p.into_fault(kind, detail),
            None => AdapterFault {
                kind,
                detail,
                stderr_tail: String::new(),
            },
        }
    }

    /// Write one message, within the answer bound: an adapter that does not read its stdin is
    /// a timeout fault, not a hang.
    pub fn send(&mut self, msg: &impl Serialize, doing: &str) -> Result<(), AdapterFault> {
        // Serialized straight into a buffer kept across lines, newline and all.
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        // Events sent ahead and not written yet go first, in the same write.
        out.append(&mut self.ahead.pending);
        serde_json::to_writer(&mut out, msg).expect("a protocol message serializes");
        out.push(b'\n');
        LINES_SENT.fetch_add(1, Ordering::Relaxed);
        let written = self.write_out(&out, doing);
        self.out = out;
        written
    }

    /// Write bytes (whole lines) within the answer bound.
    pub(super) fn write_out(&mut self, out: &[u8], doing: &str) -> Result<(), AdapterFault> {
        self.wrote = true;
        let ms = self.bound_ms();
        let p = self.proc.as_mut().expect("a live process");
        match p.write_lines(out, Duration::from_millis(ms)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Err(self.fail(
                FaultKind::Timeout,
                format!("the adapter did not read its stdin within {ms} ms while {doing}"),
            )),
            Err(e) => Err(self.fail(
                FaultKind::Exited,
                format!("cannot write to the adapter while {doing}: {e}"),
            )),
        }
    }

    /// The wall-clock bound on the next answer (the start bound until the first `ready`).
    fn bound_ms(&self) -> u64 {
        if self.starting {
            self.spec.start_timeout_ms
        } else {
            self.spec.timeout_ms
        }
    }

    /// The next line, within the bound (the start bound until the first `ready`).
    pub(super) fn line(&mut self, doing: &str) -> Result<Vec<u8>, AdapterFault> {
        if std::mem::take(&mut self.wrote) {
            ROUND_TRIPS.fetch_add(1, Ordering::Relaxed);
        }
        let ms = self.bound_ms();
        let p = self.proc.as_mut().expect("a live process");
        let (kind, detail) = match p.read_line(Duration::from_millis(ms)) {
            Ok(line) => return Ok(line),
            Err(ReadError::Timeout) => (
                FaultKind::Timeout,
                format!("no answer within {ms} ms while {doing}"),
            ),
            Err(ReadError::Eof) => (
                FaultKind::Exited,
                format!("the adapter closed its stdout while {doing}"),
            ),
            Err(ReadError::TooLong) => (
                FaultKind::Protocol,
                format!("a line longer than {ADAPTER_LINE_BYTES_MAX} bytes while {doing}"),
            ),
            Err(ReadError::Failed(e)) => (
                FaultKind::Exited,
                format!("reading the adapter failed while {doing}: {e}"),
            ),
        };
        Err(self.fail(kind, detail))
    }

    /// The next message. A line that is JSON but not a message of the protocol is a protocol
    /// fault naming what is wrong with it; a `type` the protocol does not have is a call the
    /// host does not have (named by `calls`, when the adapter is handling an event).
    fn read<C: AdapterCall>(
        &mut self,
        doing: &str,
        calls: Option<Calls>,
    ) -> Result<FromAdapter<C>, AdapterFault> {
        let line = self.line(doing)?;
        // The commonest line by far (a handler that made no call), as the reference adapters
        // write it: no parse.
        if line == DONE_LINE {
            self.last = line;
            return Ok(FromAdapter::Done {
                error: None,
                action: None,
                items: None,
                stop: None,
            });
        }
        self.last.clone_from(&line);
        let (kind, detail) = match parse::<C>(&line) {
            Ok(msg) => return Ok(msg),
            Err(ParseError::NotJson(e)) => (
                FaultKind::NotJson,
                format!(
                    "a line that is not JSON while {doing} ({e}): {}",
                    quote(&line)
                ),
            ),
            Err(ParseError::Unknown(ty)) if calls.is_some() => {
                let c = calls.expect("some");
                (
                    FaultKind::UnknownCall,
                    format!(
                        "the adapter called `{ty}`, which {} does not have, while {doing} ({}: {})",
                        c.family, c.family, c.list
                    ),
                )
            }
            Err(ParseError::Unknown(ty)) => (
                FaultKind::Protocol,
                format!(
                    "a `{ty}` message that is not the protocol (no call is taken here) while {doing}: {}",
                    quote(&line)
                ),
            ),
            Err(ParseError::Bad(ty, error)) => (
                FaultKind::Protocol,
                format!(
                    "a `{ty}` message that is not the protocol ({error}) while {doing}: {}",
                    quote(&line)
                ),
            ),
            Err(ParseError::NoType) => (
                FaultKind::Protocol,
                format!(
                    "a message without a string `type` while {doing}: {}",
                    quote(&line)
                ),
            ),
        };
        Err(self.fail(kind, detail))
    }

    /// The last message is not the protocol at this point.
    pub fn unexpected(&mut self, name: &str, doing: &str) -> AdapterFault {
        let line = quote(&self.last);
        self.fail(
            FaultKind::Protocol,
            format!("unexpected `{name}` while {doing}: {line}"),
        )
    }

    /// The last message has a value the run cannot take: `what` says which.
    pub fn bad(&mut self, what: &str, doing: &str) -> AdapterFault {
        let line = quote(&self.last);
        self.fail(FaultKind::Protocol, format!("{what} while {doing}: {line}"))
    }

    /// The adapter reported an error of its own (`{"type":"error","message":...}`; with
    /// `"kind":"load"` the module under test did not load).
    fn reported(&mut self, message: Option<&str>, kind: Option<&str>, doing: &str) -> AdapterFault {
        let msg = message.unwrap_or("(no message)").to_string();
        let kind = match kind {
            Some("load") => FaultKind::Load,
            _ => FaultKind::Protocol,
        };
        self.fail(
            kind,
            format!("the adapter reported an error while {doing}: {msg}"),
        )
    }

    /// Start the process and shake hands, unless it is already running and between runs.
    fn ensure(&mut self) -> Result<(), AdapterFault> {
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
        self.reset_sent = false;
        self.starting = true;
        let doing = "shaking hands";
        let options = self.spec.options.clone();
        let hello = HelloLine {
            protocol: PROTOCOL_VERSION,
            host: self.host.family,
            host_version: self.host.version,
            options: &options,
        };
        self.send(&hello, doing)?;
        match self.read::<NoCalls>(doing, None)? {
            FromAdapter::Hello {
                protocol,
                adapter,
                speculate,
            } => {
                if protocol.as_ref().and_then(serde_json::Value::as_u64) != Some(PROTOCOL_VERSION) {
                    let theirs = protocol.map_or("(none)".to_string(), |v| v.to_string());
                    return Err(self.fail(
                        FaultKind::Protocol,
                        format!(
                            "the adapter speaks protocol {theirs}, wakesim speaks {PROTOCOL_VERSION}"
                        ),
                    ));
                }
                self.adapter_name = adapter.unwrap_or_else(|| "unnamed adapter".to_string());
                self.ahead.takes_spec = speculate == Some(true);
                Ok(())
            }
            FromAdapter::Error { message, kind } => {
                Err(self.reported(message.as_deref(), kind.as_deref(), doing))
            }
            other => Err(self.unexpected(other.name(), doing)),
        }
    }

    /// Start a run: write `reset` (the `ready` answer is read by [`Slot::read_ready`], possibly
    /// after the first event was written too: the adapter answers in order).
    pub fn begin_reset(&mut self) -> Result<(), AdapterFault> {
        self.ensure()?;
        if std::mem::take(&mut self.reset_sent) && self.proc.is_some() {
            return Ok(());
        }
        self.send(&Reset {}, "resetting for a new run")
    }

    /// Queue the next run's `reset` behind the events ahead (see [`Slot::settle`]). False if
    /// there is no process to reset.
    pub(super) fn reset_ahead(&mut self) -> bool {
        if self.proc.is_none() || self.in_handler {
            return false;
        }
        serde_json::to_writer(&mut self.ahead.pending, &Reset {})
            .expect("a protocol message serializes");
        self.ahead.pending.push(b'\n');
        LINES_SENT.fetch_add(1, Ordering::Relaxed);
        self.reset_sent = true;
        true
    }

    /// `ready`: the events the logic listens to and its hooks.
    pub fn read_ready(&mut self) -> Result<Ready, AdapterFault> {
        let doing = "resetting for a new run";
        match self.read::<NoCalls>(doing, None)? {
            FromAdapter::Ready { events, hooks } => {
                self.starting = false;
                self.ahead.ready_read(&events, hooks.is_some());
                Ok(Ready { events, hooks })
            }
            FromAdapter::Error { message, kind } => {
                Err(self.reported(message.as_deref(), kind.as_deref(), doing))
            }
            other => Err(self.unexpected(other.name(), doing)),
        }
    }

    /// `reset`, then its `ready`.
    pub fn reset(&mut self) -> Result<Ready, AdapterFault> {
        self.begin_reset()?;
        self.read_ready()
    }

    /// Begin a handler: write its event.
    pub fn begin(&mut self, event: &impl Serialize, doing: &str) -> Result<(), AdapterFault> {
        self.in_handler = true;
        self.send(event, doing)
    }

    /// The rest of a handler: read the adapter's messages and hand each to `step` (which
    /// executes a host call, answers a query, or ends the handler) until `step` ends it. A
    /// message `step` does not take is the adapter's `error`, a message out of turn, or a call
    /// the family does not have.
    pub fn run<C: AdapterCall, T>(
        &mut self,
        doing: &str,
        calls: Calls,
        mut step: impl FnMut(&mut Slot, FromAdapter<C>) -> Result<Step<T>, AdapterFault>,
    ) -> Result<T, AdapterFault> {
        loop {
            let msg = self.read::<C>(doing, Some(calls))?;
            let name = msg.name();
            let error = match &msg {
                FromAdapter::Error { message, kind } => Some((message.clone(), kind.clone())),
                _ => None,
            };
            match step(self, msg)? {
                Step::Next => {}
                Step::End(t) => {
                    self.in_handler = false;
                    return Ok(t);
                }
                Step::NotMine => {
                    return Err(match error {
                        Some((message, kind)) => {
                            self.reported(message.as_deref(), kind.as_deref(), doing)
                        }
                        None => self.not_mine(name, doing, calls),
                    });
                }
            }
        }
    }

    /// A message of the protocol the family does not take here: out of turn, or another
    /// family's call.
    fn not_mine(&mut self, name: &str, doing: &str, calls: Calls) -> AdapterFault {
        if matches!(name, "hello" | "ready" | "done") {
            return self.unexpected(name, doing);
        }
        self.fail(
            FaultKind::UnknownCall,
            format!(
                "the adapter called `{name}`, which {} does not have, while {doing} ({}: {})",
                calls.family, calls.family, calls.list
            ),
        )
    }

    /// One handler: [`Slot::begin`] and [`Slot::run`].
    pub fn exchange<C: AdapterCall, T>(
        &mut self,
        event: &impl Serialize,
        doing: &str,
        calls: Calls,
        step: impl FnMut(&mut Slot, FromAdapter<C>) -> Result<Step<T>, AdapterFault>,
    ) -> Result<T, AdapterFault> {
        self.begin(event, doing)?;
        self.run(doing, calls, step)
    }
}

/// The adapter processes of a runner, one per (spec, host), reused across seeds and scenarios.
#[derive(Default)]
pub struct Pool {
    slots: Vec<(u64, SlotRef)>,
    clock: u64,
}

impl Pool {
    /// The slot for `spec` on `host`, created if needed. Beyond [`ADAPTERS_LIVE_MAX`] slots the
    /// least recently used one is dropped, which stops its process.
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
        if self.slots.len() >= ADAPTERS_LIVE_MAX
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
