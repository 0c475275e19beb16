//! Events sent ahead of their answers: fewer round trips, the same runs.
//!
//! Most handlers of a pi wake logic return without calling anything (G4's `agent_end`,
//! `agent_settled`, most `turn_end`s). What the simulator does after such a handler does not
//! depend on it, so waiting for its `done` is a round trip spent on nothing. Here the simulator
//! predicts, per event, whether the handler will be quiet (its answer exactly `{"type":"done"}`);
//! a quiet-predicted event is queued (marked `"spec":true`) and the run goes on as if the
//! handler had answered `done`. Queued events are written together with the next event that is
//! waited for, and their answers read before its own; whatever is still queued when the run ends
//! is confirmed then ([`Slot::settle`]).
//!
//! A prediction is right only if the answer is exactly `done`. Anything else (a call, a query,
//! an error, an input action, a line that is not the protocol, a crash, a timeout) is a
//! mispredict at that event: the process is drained back to a state between events, the event
//! is remembered as one to wait for, and the seed runs again from its start (a `reset` of the
//! adapter and a new world), which waits for it. Every event before it was confirmed quiet, so
//! the re-run is the non-speculative run up to it, and from it on waits where that run waits:
//! the trace, the verdict and any adapter fault (now met while waiting, at the same event, with
//! the same message) are the non-speculative ones. A seed re-runs at most [`RETRIES_MAX`] times;
//! after that it waits for every event.
//!
//! Only an adapter that says `"speculate":true` in its `hello` gets events ahead: it must answer
//! a `spec` event without blocking (a query inside one is written and the handler abandoned,
//! since the simulator will re-run the seed anyway). Runs on a recorded choice stream (replay,
//! explore, shrink) never speculate. The predictor only decides how fast a seed runs, never what
//! it does: it keys on the event and the two events before it (each with whether its handler was
//! quiet), and predicts quiet where that key has been seen quiet at least [`SEEN_MIN`] times and
//! called at most once in [`CALLED_ONE_IN`].

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::protocol::{Answer, Frame};

/// The one query a speculating adapter may leave to the simulator (pi's `is_idle`, the only
/// family that speculates), read here by its `type` and whether the adapter answered it itself
/// (`known`): a drained handler's query is answered `false`, as any answer will do for a run
/// that is thrown away.
const QUERY: &str = "is_idle";

/// A line read only for its `type` and `known` (its other fields are the family's).
#[derive(serde::Deserialize)]
struct Query {
    #[serde(rename = "type")]
    ty: String,
    #[serde(default)]
    known: Option<serde_json::Value>,
}
use super::slot::{DONE_LINE, LINES_SENT, Slot};

/// Re-runs of one seed before it stops speculating.
pub const RETRIES_MAX: u32 = 32;

/// At most this many events are queued unanswered before they are confirmed.
pub const AHEAD_MAX: usize = 64;

/// A key seen fewer times than this is waited for.
const SEEN_MIN: u32 = 8;

/// A key whose handler called more often than once in this many is waited for.
const CALLED_ONE_IN: u32 = 32;

/// The kinds of event a family numbers (its event index), and one for "no event".
pub const KINDS: usize = 16;

/// Seeds run again after a mispredict, by this process so far: a counter for tests and
/// benchmarks, read by nothing in a run.
static RERUNS: AtomicU64 = AtomicU64::new(0);

/// Seeds run again after a mispredict (or a fault met while events were ahead) so far.
pub fn reruns() -> u64 {
    RERUNS.load(Ordering::Relaxed)
}

/// Events sent ahead so far (confirmed or not).
static AHEAD: AtomicU64 = AtomicU64::new(0);

/// Events sent ahead of their answers by this process so far.
pub fn sent_ahead() -> u64 {
    AHEAD.load(Ordering::Relaxed)
}

/// The panic payload that abandons a run whose speculation failed: the runner re-runs the seed
/// ([`Slot::settle`] says so).
pub struct Respeculate;

/// The speculation state of a slot: across the runs of a seed, and the predictor across seeds.
pub struct Ahead {
    /// The adapter said `"speculate":true` in its `hello`.
    pub takes_spec: bool,
    /// This seed may speculate (a run on its own random stream).
    allowed: bool,
    /// Event lines queued, not yet written.
    pub pending: Vec<u8>,
    /// Events sent ahead and not yet confirmed, oldest first: their index in the run, and
    /// whether `done` with `"action":"continue"` is quiet too (pi's `input`: the same as none).
    outstanding: Vec<(u32, bool)>,
    /// Events of this seed found not quiet: waited for in its re-runs.
    wait_at: Vec<u32>,
    /// Re-runs of this seed so far.
    retries: u32,
    /// The seed must run again (a mispredict, or a fault while events were ahead).
    retry: bool,
    /// Per key: (quiet, called).
    seen: Vec<(u32, u32)>,
    /// The events of the last `ready` read (without hooks), and what the family made of them:
    /// a run may start with its first event ahead if the module listens to the same.
    ready: Vec<String>,
    listening: Option<u64>,
    /// A `ready` is due before the answers of the events ahead, to be checked against `ready`.
    ready_due: bool,
}

impl Default for Ahead {
    fn default() -> Ahead {
        Ahead {
            takes_spec: false,
            allowed: false,
            pending: Vec::new(),
            outstanding: Vec::new(),
            wait_at: Vec::new(),
            retries: 0,
            retry: false,
            seen: vec![(0, 0); KINDS * 2 * KINDS * 2 * KINDS],
            ready: Vec::new(),
            listening: None,
            ready_due: false,
        }
    }
}

/// What the predictor keys on: an event kind and the two before it (kind and quiet each).
#[derive(Clone, Copy, Default)]
pub struct History {
    /// The last two events: kind * 2 + quiet, or 0 for none (kinds count from 1).
    last: [u8; 2],
}

impl History {
    fn key(self, kind: u8) -> usize {
        let k = usize::from(kind) % KINDS;
        (k * 2 * KINDS + usize::from(self.last[0])) * 2 * KINDS + usize::from(self.last[1])
    }

    /// `kind` (its index + 1 in the family's list, below [`KINDS`]) was delivered.
    pub fn push(&mut self, kind: u8, quiet: bool) {
        self.last[1] = self.last[0];
        self.last[0] = (kind % KINDS as u8) * 2 + u8::from(quiet);
    }
}

impl Ahead {
    /// A fault with events ahead: the first of them is where the adapter failed (everything
    /// before it was confirmed), so the seed re-runs waiting for it; the fault is not the
    /// run's.
    pub fn drop_outstanding(&mut self) {
        if let Some(&(first, _)) = self.outstanding.first() {
            self.mispredicted(first);
        }
        self.pending.clear();
    }

    /// A `ready` was read: if it differs from the last, what the family made of it is unknown.
    pub fn ready_read(&mut self, events: &[String], hooks: bool) {
        if hooks || self.ready != events {
            self.listening = None;
            self.ready.clear();
            if !hooks {
                self.ready.extend_from_slice(events);
            }
        }
    }

    fn mispredicted(&mut self, at: u32) {
        self.ready_due = false;
        self.wait_at.push(at);
        self.retry = true;
        self.outstanding.clear();
        self.pending.clear();
    }
}

/// A handler's whole answer was `done` with nothing in it (`{"type":"done"}` as the reference
/// adapters write it, or any spelling of it), or (`continue_ok`) with `"action":"continue"`.
fn quiet(line: &[u8], continue_ok: bool) -> bool {
    if line == DONE_LINE {
        return true;
    }
    match serde_json::from_slice::<Frame>(line) {
        Ok(Frame::Done {
            error: None,
            action,
            items: None,
            stop: None,
        }) => action.is_none() || (continue_ok && action.as_deref() == Some("continue")),
        _ => false,
    }
}

impl Slot {
    /// A new seed: forget the last one's mispredicts. `allowed`: it runs on its own random
    /// stream, so it can be re-run.
    pub fn begin_seed(&mut self, allowed: bool) {
        let a = &mut self.ahead;
        a.allowed = allowed;
        a.wait_at.clear();
        a.retries = 0;
        a.retry = false;
        a.outstanding.clear();
        a.pending.clear();
        a.ready_due = false;
    }

    /// What the family made of the last `ready` read (its events as bits).
    pub fn listening(&mut self, bits: u64) {
        self.ahead.listening = Some(bits);
    }

    /// A run's first event (`index`, of `kind` after `history`) goes ahead with the run's `reset`
    /// if it is predicted quiet and the last `ready` is known: then its events, as the family
    /// made them, and the `reset` is queued (or was written already: [`Slot::settle`]); its
    /// `ready` is read and checked before the first answer. `None`: begin as usual.
    pub fn ready_ahead(
        &mut self,
        index: u32,
        kind: u8,
        history: History,
    ) -> Result<Option<u64>, super::AdapterFault> {
        let Some(bits) = self.ahead.listening else {
            return Ok(None);
        };
        if self.proc.is_none() || self.in_handler || !self.goes_ahead(index, kind, history) {
            return Ok(None);
        }
        if !std::mem::take(&mut self.reset_sent) {
            serde_json::to_writer(&mut self.ahead.pending, &super::protocol::Reset {})
                .expect("a protocol message serializes");
            self.ahead.pending.push(b'\n');
            LINES_SENT.fetch_add(1, Ordering::Relaxed);
        }
        self.ahead.ready_due = true;
        Ok(Some(bits))
    }

    /// Whether the event `index` of the run (of kind `kind`, after `history`) goes ahead.
    pub fn goes_ahead(&self, index: u32, kind: u8, history: History) -> bool {
        let a = &self.ahead;
        if !(a.takes_spec && a.allowed && a.retries < RETRIES_MAX) || a.wait_at.contains(&index) {
            return false;
        }
        let (quiet, called) = a.seen[history.key(kind)];
        let seen = quiet + called;
        seen >= SEEN_MIN && called.saturating_mul(CALLED_ONE_IN) <= seen
    }

    /// What a handler of `kind` after `history` turned out to be.
    pub fn learn(&mut self, kind: u8, history: History, quiet: bool) {
        let e = &mut self.ahead.seen[history.key(kind)];
        if quiet {
            e.0 = e.0.saturating_add(1);
        } else {
            e.1 = e.1.saturating_add(1);
        }
    }

    /// Queue event `index` (marked `spec`) unanswered; `continue_ok`: an `"action":"continue"`
    /// answers it as nothing does. Returns false if the seed must re-run (too many were ahead,
    /// and confirming them found a mispredict).
    pub fn send_ahead(&mut self, event: &impl Serialize, index: u32, continue_ok: bool) -> bool {
        let a = &mut self.ahead;
        serde_json::to_writer(&mut a.pending, event).expect("a protocol message serializes");
        a.pending.push(b'\n');
        a.outstanding.push((index, continue_ok));
        LINES_SENT.fetch_add(1, Ordering::Relaxed);
        AHEAD.fetch_add(1, Ordering::Relaxed);
        if a.outstanding.len() < AHEAD_MAX {
            return true;
        }
        self.flush_ahead() && self.confirm(false)
    }

    /// Write the queued events. False if the write failed (the seed re-runs).
    fn flush_ahead(&mut self) -> bool {
        if self.ahead.pending.is_empty() {
            return true;
        }
        let mut pending = std::mem::take(&mut self.ahead.pending);
        let ok = self.write_out(&pending, "sending events ahead").is_ok();
        pending.clear();
        self.ahead.pending = pending;
        ok
    }

    /// Read the answers of the events ahead (written already), oldest first. True if every one
    /// was exactly `done`. Otherwise the mispredict is recorded, the process drained to between
    /// events (the rest of the events ahead, and the event written behind them if
    /// `then_waited`), and false is returned: the seed must re-run.
    pub fn confirm(&mut self, then_waited: bool) -> bool {
        let doing = "reading the answers of events sent ahead";
        if std::mem::take(&mut self.ahead.ready_due) {
            let first = self.ahead.outstanding.first().map_or(0, |o| o.0);
            let same = match self.line(doing) {
                Ok(line) => match serde_json::from_slice::<Frame>(&line) {
                    Ok(Frame::Ready {
                        events,
                        hooks: None,
                    }) => events == self.ahead.ready,
                    _ => false,
                },
                // `fail` recorded the mispredict and ended the process.
                Err(_) => return false,
            };
            if !same {
                // Another `ready` (or none): the run begins again, waiting for it; a process
                // whose answers are not where they were expected is ended.
                self.ahead.mispredicted(first);
                self.proc = None;
                self.reset_sent = false;
                self.in_handler = false;
                return false;
            }
        }
        while let Some(&(index, continue_ok)) = self.ahead.outstanding.first() {
            let Ok(line) = self.line(doing) else {
                // `fail` recorded the mispredict at `index` and ended the process.
                return false;
            };
            if quiet(&line, continue_ok) {
                self.ahead.outstanding.remove(0);
                continue;
            }
            // This handler did something: drain its answer, the others', then the waited one's.
            let behind = self.ahead.outstanding.len() - 1;
            self.ahead.mispredicted(index);
            let ok = self.drain_handler(Some(line), false, doing)
                && (0..behind).all(|_| self.drain_handler(None, false, doing))
                && (!then_waited || self.drain_handler(None, true, doing));
            if !ok {
                // A process that cannot be brought back between events is ended; the re-run
                // starts a new one.
                self.proc = None;
                self.reset_sent = false;
            }
            self.in_handler = false;
            return false;
        }
        true
    }

    /// Read a handler's lines up to its `done` (`first`: the one already read). A query of the
    /// waited handler is answered `false` (the run is thrown away: any answer will do); a query
    /// of an event ahead is never waited on by an adapter that takes `spec`. False if the process
    /// failed or wrote what is not the protocol.
    fn drain_handler(&mut self, first: Option<Vec<u8>>, answer_queries: bool, doing: &str) -> bool {
        let mut line = first;
        loop {
            let l = match line.take() {
                Some(l) => l,
                None => match self.line(doing) {
                    Ok(l) => l,
                    Err(_) => return false,
                },
            };
            if l == DONE_LINE {
                return true;
            }
            match serde_json::from_slice::<Frame>(&l) {
                Ok(Frame::Done { .. }) => return true,
                Ok(_) => continue,
                Err(_) => {}
            }
            match serde_json::from_slice::<Query>(&l) {
                Ok(Query { ty, known: None }) if answer_queries && ty == QUERY => {
                    if self.send(&Answer { value: false }, doing).is_err() {
                        return false;
                    }
                }
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    }

    /// After a run: confirm what is still ahead. True if the run must be thrown away and the
    /// seed run again (a mispredict during the run, or now).
    pub fn settle(&mut self) -> bool {
        // The next run's `reset` rides with the events still ahead: its `ready` is read when that
        // run begins (`Slot::begin_reset`), so confirming them costs no round trip of its own.
        if self.in_handler && !self.ahead.outstanding.is_empty() {
            // Not between events (a run that ended inside a handler): start afresh.
            self.proc = None;
            self.reset_sent = false;
            self.ahead.mispredicted(self.ahead.outstanding[0].0);
        }
        let confirmed = self.ahead.outstanding.is_empty()
            || (self.reset_ahead() && self.flush_ahead() && self.confirm(false));
        let retry = std::mem::take(&mut self.ahead.retry) || !confirmed;
        if retry {
            RERUNS.fetch_add(1, Ordering::Relaxed);
            self.ahead.retries += 1;
            self.ahead.outstanding.clear();
            self.ahead.pending.clear();
        }
        retry
    }
}
