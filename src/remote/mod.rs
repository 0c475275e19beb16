//! Real hosts under simulation: the host itself (pi's own `AgentSession` from npm, gptme's own
//! code from PyPI) runs in a driver process speaking the remote-host protocol of
//! `docs/remote-host.md`, and wakesim keeps what makes a run replayable and judged.
//!
//! This lane knows no host family. A family declares its real hosts (`family::RealHost`), the
//! names its drivers use for its own vocabulary ([`Vocab`]) and its resolved scenario sections;
//! the scenario reader turns `host = "pi@0.99.1"` and `wake = { extension = "..." }` into a
//! [`RemoteSpec`] carrying all of it. [`RemoteWorld`] is a `World` like the family models: it asks
//! its driver for one run and, line by line, answers every `choose` from the run's `Choices`
//! (so record, replay, shrink and explore work unchanged), numbers the producer messages, and
//! feeds each observation to the run's `Monitor`, the checkers the model lane has, with the
//! family's invariants. The whole run happens inside `World::start`: the driver owns its virtual
//! clock, and the kernel's clock follows the times it reports.
//!
//! One driver process serves every seed a runner takes of a spec (the [`Pool`] keeps it; a `run`
//! line starts each run in the same process, so the host is imported once). Whatever the driver
//! does wrong is an `AdapterFault` with its stderr tail, never a panic or a hang of the
//! simulator: every line is checked, every wait is bounded by wall-clock time (which decides only
//! that the driver failed, never a run).
//!
//! - `mod.rs`: the spec, the vocabulary, the driver slot and pool, the world, the driver's notes;
//! - `home.rs`: the cache directory, and the drivers' sources embedded in the binary;
//! - `wire.rs`: reading the driver's lines into draws, records, the mix and the end.

pub mod home;
pub mod tape;
mod wire;

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::adapter::process::{Process, ReadError};
use crate::adapter::{AdapterFault, FaultKind, quote};
use crate::check::Monitor;
use crate::limits::{
    BudgetExceeded, Limits, REMOTE_INSTALL_TIMEOUT_MS, REMOTE_LINES_PER_STEP_MAX,
    REMOTE_PROTOCOL_VERSION, REMOTES_LIVE_MAX,
};
use crate::sim::choice::Ahead;
use crate::sim::hash::{Encode, TraceHasher};
use crate::sim::record::{EndCause, InStory, Note, Reason, Role, Window};
use crate::sim::swarm::Mix;
use crate::sim::{Kernel, World};

/// What a family's drivers may name beyond the shared observation vocabulary: its state names
/// (by code), its race windows, and its documented drops, refusal reasons and session ends by
/// their wire names (`docs/remote-host.md`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vocab {
    pub states: &'static [&'static str],
    pub windows: &'static [Window],
    pub drops: &'static [(&'static str, Reason)],
    pub refusals: &'static [(&'static str, Reason)],
    pub ends: &'static [(&'static str, EndCause)],
}

/// A real host, as a scenario names it: everything its driver and its runs need.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteSpec {
    /// The family's name (`pi`), as `hello` and the launcher name it.
    pub family: &'static str,
    /// The real version (`0.99.1`).
    pub version: String,
    pub vocab: Vocab,
    /// The `wake` object handed to the driver in `hello` (paths made absolute).
    pub wake: Value,
    /// The family's sections of the scenario, resolved (`hello.scenario`).
    pub sections: Value,
    /// The command that starts the driver, and where.
    pub command: Vec<String>,
    pub cwd: PathBuf,
    /// Constants of the wake logic (ms), where the kernel biases its delay draws.
    pub constants_ms: Vec<u64>,
    /// Wall-clock bound on one line during a run, and on the start-up: the `hello` after the
    /// launcher's install, and each gap between its `installing` lines.
    pub timeout_ms: u64,
    pub start_timeout_ms: u64,
    /// Where the `wake` key is in the scenario file: file, line, column.
    pub origin: (PathBuf, usize, usize),
}

impl RemoteSpec {
    /// `pi@0.99.1`.
    pub fn label(&self) -> String {
        format!("{}@{}", self.family, self.version)
    }

    /// The `hello` line, `type` first.
    fn hello(&self, limits: Limits) -> String {
        format!(
            r#"{{"type":"hello","protocol":{},"host":{},"host_version":{},"wake":{},"scenario":{},"limits":{}}}"#,
            REMOTE_PROTOCOL_VERSION,
            Value::String(self.family.to_string()),
            Value::String(self.version.clone()),
            self.wake,
            self.sections,
            json!({"active_ms": limits.active_ms, "quiesce_ms_max": limits.quiesce_ms_max, "steps_max": limits.steps_max}),
        )
    }
}

/// Narration a driver wrote (`note` lines): plain text, which checkers never see. Its trace-hash
/// tag (20) follows the families' note tags.
#[derive(Clone, Debug, PartialEq)]
pub struct Text(pub Arc<str>);

impl Encode for Text {
    fn encode(&self, h: &mut TraceHasher) {
        h.str(&self.0);
    }
}

impl Note for Text {
    const TAG: u64 = 20;

    fn render(&self) -> String {
        self.0.to_string()
    }

    fn role(&self) -> Role {
        Role::Plain
    }

    fn in_story(&self) -> InStory {
        InStory::Keep
    }
}

/// The kernel a real host's run is recorded on: no events of its own, the driver's notes.
pub type RemoteKernel = Kernel<(), Monitor<Text>>;

/// One driver process and what its `hello` said.
pub struct Slot {
    spec: RemoteSpec,
    hello: String,
    proc: Option<Process>,
    /// A run was cut off mid-way (a fault, a budget): the process must restart.
    dirty: bool,
    starting: bool,
    /// Runs started in this process (the `run` line's counter, for the driver's logs).
    runs: u64,
    /// What the driver said in its `hello`.
    pub driver_name: String,
    /// How many draws ahead the driver takes (its `hello`'s `ahead`, at most [`AHEAD_MAX`]; 0:
    /// every draw is a `choose` answered by `value`).
    ahead: usize,
}

/// The most draws ahead wakesim sends a driver at once.
pub const AHEAD_MAX: u64 = 1_024;

/// The fields that carry the next draws' material to a driver that takes draws ahead (`run` and
/// the `value` answering a `choose`): `,"words":[..]` or `,"recorded":[..],"ends":B`.
fn ahead_fields(k: &RemoteKernel, n: usize) -> String {
    use std::fmt::Write;
    let (mut out, list, ends) = match k.choices.ahead(n) {
        Ahead::Words(w) => (String::from(r#","words":["#), w, None),
        Ahead::Recorded { values, ends } => (String::from(r#","recorded":["#), values, Some(ends)),
    };
    for (i, x) in list.iter().enumerate() {
        let _ = write!(out, "{}{x}", if i == 0 { "" } else { "," });
    }
    out.push(']');
    if let Some(ends) = ends {
        let _ = write!(out, r#","ends":{ends}"#);
    }
    out
}

/// A shared handle on a slot: the runner's pool keeps it, each run borrows it.
pub type SlotRef = Rc<RefCell<Slot>>;

impl Slot {
    fn new(spec: RemoteSpec, hello: String) -> Slot {
        Slot {
            spec,
            hello,
            proc: None,
            dirty: false,
            starting: false,
            runs: 0,
            driver_name: String::new(),
            ahead: 0,
        }
    }

    fn fail(&mut self, kind: FaultKind, detail: String) -> AdapterFault {
        self.dirty = false;
        match self.proc.take() {
            Some(p) => p.into_fault(kind, detail),
            None => AdapterFault {
                kind,
                detail,
                stderr_tail: String::new(),
            },
        }
    }

    fn write(&mut self, line: &str, doing: &str) -> Result<(), AdapterFault> {
        // A driver that stops reading its stdin fills the pipe: the write is bounded like a read.
        let ms = if self.starting {
            self.spec.start_timeout_ms
        } else {
            self.spec.timeout_ms
        };
        tape::keep(tape::Dir::ToDriver, line.as_bytes());
        let p = self.proc.as_mut().expect("a live process");
        if let Err(e) = p.write_line(line, Duration::from_millis(ms)) {
            let detail = format!("cannot write to the driver while {doing}: {e}");
            return Err(self.fail(FaultKind::Exited, detail));
        }
        Ok(())
    }

    /// One line, as JSON with a string `type`, within the wall-clock bound.
    fn read(&mut self, doing: &dyn Fn() -> String) -> Result<(String, Value), AdapterFault> {
        let ms = if self.starting {
            self.spec.start_timeout_ms
        } else {
            self.spec.timeout_ms
        };
        let p = self.proc.as_mut().expect("a live process");
        let line = match p.read_line(Duration::from_millis(ms)) {
            Ok(l) => l,
            Err(e) => {
                let (kind, what) = match e {
                    ReadError::Timeout => (FaultKind::Timeout, format!("no line within {ms} ms")),
                    ReadError::Eof => (FaultKind::Exited, "the driver closed its stdout".into()),
                    ReadError::TooLong => (FaultKind::Protocol, "a line over the bound".into()),
                    ReadError::Failed(e) => (FaultKind::Exited, format!("reading failed: {e}")),
                };
                return Err(self.fail(kind, format!("{what} while {}", doing())));
            }
        };
        tape::keep(tape::Dir::FromDriver, &line);
        let value: Value = match serde_json::from_slice(&line) {
            Ok(v) => v,
            Err(e) => {
                let detail = format!(
                    "a line that is not JSON while {} ({e}): {}",
                    doing(),
                    quote(&line)
                );
                return Err(self.fail(FaultKind::NotJson, detail));
            }
        };
        match value.get("type").and_then(Value::as_str) {
            Some(t) => Ok((t.to_string(), value)),
            None => {
                let detail = format!(
                    "a message without a string `type` while {}: {}",
                    doing(),
                    quote(&line)
                );
                Err(self.fail(FaultKind::Protocol, detail))
            }
        }
    }

    /// Start the driver and shake hands, unless it is running and between runs.
    pub fn ensure(&mut self) -> Result<(), AdapterFault> {
        if self.dirty {
            self.proc = None;
            self.dirty = false;
        }
        if self.proc.is_some() {
            return Ok(());
        }
        let p = Process::spawn(&self.spec.command, &self.spec.cwd)
            .map_err(|e| self.fail(FaultKind::Spawn, e))?;
        self.proc = Some(p);
        self.starting = true;
        self.runs = 0;
        let hello = self.hello.clone();
        let _starting = crate::adapter::process::Starting::begin();
        let doing = "shaking hands (the driver imports the host)";
        self.write(&hello, doing)?;
        // While the launcher installs (first use), it writes an `installing` line every few
        // seconds: the install is bounded as a whole by REMOTE_INSTALL_TIMEOUT_MS, each gap by
        // the start bound, and the `hello` after it by the start bound again. So a stopped or
        // silent driver is found within the start bound, however long an install may take.
        let install_deadline = Instant::now() + Duration::from_millis(REMOTE_INSTALL_TIMEOUT_MS);
        let mut installing = None::<String>;
        let (ty, v) = loop {
            let doing = || match &installing {
                Some(what) => {
                    format!("installing {what} (the launcher's `installing` lines stopped)")
                }
                None => doing.to_string(),
            };
            let (ty, v) = self.read(&doing)?;
            if ty != "installing" {
                break (ty, v);
            }
            let what = v.get("what").and_then(Value::as_str).unwrap_or("the host");
            if Instant::now() > install_deadline {
                let detail = format!(
                    "installing {what} took over {REMOTE_INSTALL_TIMEOUT_MS} ms (is the package registry reachable?)"
                );
                return Err(self.fail(FaultKind::Timeout, detail));
            }
            installing = Some(what.to_string());
        };
        self.starting = false;
        match ty.as_str() {
            "hello"
                if v.get("protocol").and_then(Value::as_u64) == Some(REMOTE_PROTOCOL_VERSION) =>
            {
                let text = |k: &str, d: &'static str| {
                    v.get(k).and_then(Value::as_str).unwrap_or(d).to_string()
                };
                self.driver_name = format!(
                    "{} running {}",
                    text("driver", "a driver"),
                    text("host", "a host")
                );
                self.ahead = v
                    .get("ahead")
                    .and_then(Value::as_u64)
                    .map_or(0, |n| n.min(AHEAD_MAX) as usize);
                Ok(())
            }
            "hello" => {
                let theirs = v.get("protocol").map_or("(none)".into(), Value::to_string);
                let detail = format!(
                    "the driver speaks protocol {theirs}, wakesim speaks {REMOTE_PROTOCOL_VERSION}"
                );
                Err(self.fail(FaultKind::Protocol, detail))
            }
            "error" => {
                let msg = v.get("message").and_then(Value::as_str);
                let detail = format!(
                    "the driver reported an error while {doing}: {}",
                    msg.unwrap_or("(no message)")
                );
                Err(self.fail(wire::error_kind(&v), detail))
            }
            _ => {
                let detail = format!(
                    "unexpected `{ty}` while {doing}: {}",
                    quote(v.to_string().as_bytes())
                );
                Err(self.fail(FaultKind::Protocol, detail))
            }
        }
    }
}

/// The driver processes of a runner, one per real host spec and run limits, reused across seeds.
#[derive(Default)]
pub struct Pool {
    slots: Vec<((RemoteSpec, Limits), SlotRef)>,
}

/// Driver processes a dropped pool started and never ran: `wakesim run`'s preparer starts every
/// scenario's driver (so one that cannot start is an error before any run) and drops its pool;
/// the next pool that needs the same spec and limits, on any thread, takes one instead of
/// starting another (a gptme driver's start, importing gptme, is about 0.4 s of CPU). A process
/// that has done nothing but `hello` is a fresh one. At most [`PARKED_MAX`], the first parked
/// kept; one no pool takes ends with wakesim (its stdin closes).
static PARKED: std::sync::Mutex<Vec<((RemoteSpec, Limits), Slot)>> =
    std::sync::Mutex::new(Vec::new());

/// Unused driver processes kept for the next pool.
const PARKED_MAX: usize = 2;

impl Drop for Pool {
    fn drop(&mut self) {
        let Ok(mut parked) = PARKED.lock() else {
            return;
        };
        for (key, slot) in self.slots.drain(..) {
            let Ok(cell) = Rc::try_unwrap(slot) else {
                continue;
            };
            let slot = cell.into_inner();
            if parked.len() < PARKED_MAX && slot.proc.is_some() && slot.runs == 0 && !slot.dirty {
                parked.push((key, slot));
            }
        }
    }
}

impl Pool {
    /// The slot for `spec` under `limits`, started lazily by its first run; the least recently
    /// used beyond [`REMOTES_LIVE_MAX`] is stopped.
    pub fn slot(&mut self, spec: &RemoteSpec, limits: Limits) -> SlotRef {
        let key = (spec.clone(), limits);
        if let Some(i) = self.slots.iter().position(|(k, _)| *k == key) {
            let entry = self.slots.remove(i);
            let slot = Rc::clone(&entry.1);
            self.slots.push(entry);
            return slot;
        }
        if self.slots.len() >= REMOTES_LIVE_MAX {
            self.slots.remove(0);
        }
        let adopted = PARKED.lock().ok().and_then(|mut parked| {
            let i = parked.iter().position(|(k, _)| *k == key)?;
            Some(parked.remove(i).1)
        });
        let slot = adopted.unwrap_or_else(|| Slot::new(spec.clone(), spec.hello(limits)));
        let slot = Rc::new(RefCell::new(slot));
        self.slots.push((key, Rc::clone(&slot)));
        slot
    }

    /// Start the driver now, so one that cannot start is an error of the scenario.
    pub fn prepare(&mut self, spec: &RemoteSpec, limits: Limits) -> Result<(), AdapterFault> {
        let slot = self.slot(spec, limits);
        let mut s = slot.borrow_mut();
        s.ensure()
    }
}

/// A real host's run as a kernel `World`: the driver plays the host, wakesim draws and judges.
pub struct RemoteWorld {
    slot: SlotRef,
    vocab: Vocab,
    constants: Vec<u64>,
    mix: Mix,
    /// The driver's steps still to count as no-op events (`World::step`).
    steps_left: u64,
}

impl RemoteWorld {
    pub fn new(slot: SlotRef, spec: &RemoteSpec) -> RemoteWorld {
        RemoteWorld {
            slot,
            vocab: spec.vocab,
            constants: spec.constants_ms.clone(),
            mix: Mix::default(),
            steps_left: 0,
        }
    }

    /// Run one seed in the driver: `run`, then its lines until `end`.
    fn run(&mut self, k: &mut RemoteKernel) -> Result<wire::End, AdapterFault> {
        let mut slot = self.slot.borrow_mut();
        slot.ensure()?;
        slot.runs += 1;
        let run = slot.runs;
        slot.dirty = true;
        let ahead = slot.ahead;
        let first = if ahead > 0 {
            ahead_fields(k, ahead)
        } else {
            String::new()
        };
        slot.write(
            &format!(r#"{{"type":"run","run":{run}{first}}}"#),
            "starting a run",
        )?;
        let lines_max = k
            .limits()
            .steps_max
            .saturating_mul(REMOTE_LINES_PER_STEP_MAX);
        let mut lines = 0u64;
        let mut last = String::new();
        loop {
            lines += 1;
            if lines > lines_max {
                let detail = format!(
                    "more than {lines_max} lines in one run (steps_max × {REMOTE_LINES_PER_STEP_MAX})"
                );
                return Err(slot.fail(FaultKind::Protocol, detail));
            }
            let now = k.now().0;
            let (ty, v) =
                slot.read(&|| format!("running (virtual time {now} ms, after {last})"))?;
            match wire::line(&ty, &v, &self.vocab, k) {
                Ok(wire::Step::Answer(value)) => {
                    let line = format!(r#"{{"type":"value","value":{value}}}"#);
                    slot.write(&line, "answering")?;
                }
                Ok(wire::Step::Drawn(value)) => {
                    // A draw moved the stream: a driver that draws ahead gets the material of
                    // the draws after this one, as many as the line asks (`ahead`), or as its
                    // `hello` did.
                    let more = if ahead > 0 {
                        let n = v.get("ahead").and_then(Value::as_u64);
                        ahead_fields(k, n.map_or(ahead, |n| n.min(AHEAD_MAX) as usize))
                    } else {
                        String::new()
                    };
                    let line = format!(r#"{{"type":"value","value":{value}{more}}}"#);
                    slot.write(&line, "answering")?;
                }
                Ok(wire::Step::Record) => {}
                Ok(wire::Step::Mix(mix)) => self.mix = mix,
                Ok(wire::Step::End(end)) => {
                    slot.dirty = false;
                    return Ok(end);
                }
                Err(wire::LineError::Reported(msg, kind)) => {
                    let detail = format!("the driver reported an error at {now} ms: {msg}");
                    return Err(slot.fail(kind, detail));
                }
                Err(wire::LineError::Protocol(msg)) => {
                    let detail = format!("{msg}: {}", quote(v.to_string().as_bytes()));
                    return Err(slot.fail(FaultKind::Protocol, detail));
                }
            }
            last = ty;
        }
    }
}

impl World for RemoteWorld {
    type Ev = ();
    type Sink = Monitor<Text>;

    fn start(&mut self, k: &mut RemoteKernel) {
        k.choices.set_constants(&self.constants);
        match self.run(k) {
            Ok(wire::End {
                cause: wire::EndCause::Steps,
                ..
            }) => std::panic::panic_any(BudgetExceeded),
            // The driver's steps are the run's events: the kernel counts them as it pops these
            // no-op events at the end time, so reports and budgets read them as for a model run.
            // One is pending at a time (each schedules the next): many pending at one instant
            // would draw a same-instant order at every pop (a choice each, logged, and carried
            // by conform, shrink and regression files), for events that do nothing.
            Ok(end) => {
                self.steps_left = end.steps;
                self.step(k, ());
            }
            Err(f) => crate::adapter::fault(f),
        }
    }

    fn step(&mut self, k: &mut RemoteKernel, _ev: ()) {
        if self.steps_left > 0 {
            self.steps_left -= 1;
            k.schedule(0, ());
        }
    }

    fn mix(&self) -> Mix {
        self.mix.clone()
    }
}
