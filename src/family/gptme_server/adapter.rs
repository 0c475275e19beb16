//! [`ExternalServer`]: a gptme-server wake logic that lives in an adapter process.
//!
//! The host calls `retry_deferred_watch_wakes` (at step completion, in `finish_command`, after a
//! subagent completion) and `deliver` (the watch tool's `_deliver`, when a watch fires); each
//! becomes an `event` message when the adapter listens to it. The adapter answers with the
//! functions gptme's code calls, executed here on [`Server`] in the order they arrive:
//! `request_watch_wake` (answered with the bool), `take_queued_watch_events` and
//! `take_queued_completions` (answered with what they removed), `requeue_watch_event`,
//! `queue_watch_event` and `put_completion`. An adapter that does not listen to `deliver` gets
//! gptme's own `_deliver` ([`default_deliver`]), run here without a round trip.
//!
//! Events and completions are named in the protocol by their text, which carries the marker
//! `[wakesim mN]` of the producer message, as on pi; a requeue or put names the one it puts back
//! by that marker, and must name one the simulator handed out in this run.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde::Serialize;

use super::api::{
    Server, ServerWake, SubagentCompletion, SystemMessage, WatchEvent, default_deliver,
};
use serde::Deserialize;

use crate::adapter::protocol::{AdapterCall, Answer, Event, FromAdapter};
use crate::adapter::{
    AdapterFault, Calls, FaultKind, Slot, SlotRef, Step, carries, carries_produced, fault,
    handler_threw,
};
use crate::family::common::conv::ConvId;
use crate::sim::msg::{MsgId, Payload, conv_name};

const DELIVER: u8 = 1;
const RETRY: u8 = 2;
/// The events an adapter may ask for in `ready`.
const EVENTS: [(&str, u8); 2] = [("deliver", DELIVER), ("retry_deferred_watch_wakes", RETRY)];
const CALLS: Calls = Calls {
    family: "the gptme server",
    list: "request_watch_wake, take_queued_watch_events, requeue_watch_event, \
           queue_watch_event, take_queued_completions, put_completion",
};

/// The calls an adapter of this family may make: the gptme server's API (`docs/protocol.md`): watch wakes and the per-logdir queues. Its `Family::Call`; every call
/// rejects fields it does not have.
#[derive(Deserialize, Debug)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ServerCall {
    RequestWatchWake {
        conversation_id: Option<String>,
        #[serde(default)]
        carries: Option<Vec<u32>>,
    },
    TakeQueuedWatchEvents {
        logdir: Option<String>,
    },
    RequeueWatchEvent {
        logdir: Option<String>,
        #[serde(default)]
        carries: Option<Vec<u32>>,
    },
    QueueWatchEvent {
        logdir: Option<String>,
        #[serde(default)]
        carries: Option<Vec<u32>>,
    },
    TakeQueuedCompletions {
        logdir: Option<String>,
    },
    PutCompletion {
        #[serde(default)]
        carries: Option<Vec<u32>>,
    },
}

impl AdapterCall for ServerCall {
    const TYPES: &'static [&'static str] = &[
        "request_watch_wake",
        "take_queued_watch_events",
        "requeue_watch_event",
        "queue_watch_event",
        "take_queued_completions",
        "put_completion",
    ];

    fn name(&self) -> &'static str {
        match self {
            ServerCall::RequestWatchWake { .. } => "request_watch_wake",
            ServerCall::TakeQueuedWatchEvents { .. } => "take_queued_watch_events",
            ServerCall::RequeueWatchEvent { .. } => "requeue_watch_event",
            ServerCall::QueueWatchEvent { .. } => "queue_watch_event",
            ServerCall::TakeQueuedCompletions { .. } => "take_queued_completions",
            ServerCall::PutCompletion { .. } => "put_completion",
        }
    }
}

/// A gptme-server event.
#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum ServerEvent {
    Deliver {
        now: u64,
        conversation_id: String,
        logdir: String,
        watch: String,
        text: String,
    },
    RetryDeferredWatchWakes {
        now: u64,
        conversation_id: String,
    },
}

/// A gptme-server wake logic behind the adapter protocol. One instance per run; the process is
/// shared.
pub struct ExternalServer {
    slot: SlotRef,
    constants_ms: Vec<u64>,
    /// `ready` was read this run; `events` holds what it listens to.
    started: bool,
    events: u8,
    /// Every watch event and subagent completion handed to the adapter this run, by message: what
    /// a requeue or put may name.
    watch: BTreeMap<MsgId, WatchEvent>,
    completions: BTreeMap<MsgId, SubagentCompletion>,
}

/// The text of a watch event (`_pending_deliveries` holds `(logdir, watch_id, text)`).
fn watch_text(e: &WatchEvent) -> String {
    format!("event from watch w{} [wakesim {}]", e.watch + 1, e.msg)
}

fn watch_id(e: &WatchEvent) -> String {
    format!("w{}", e.watch + 1)
}

fn conv(cid: ConvId) -> String {
    conv_name(cid.0).to_string()
}

/// The conversation a `logdir` or `conversation_id` field names. The server model runs one
/// conversation, A; `null` (every logdir) is allowed only where `allow_all`.
fn logdir(v: Option<&str>, key: &str, allow_all: bool) -> Result<Option<ConvId>, String> {
    match v {
        Some("A") => Ok(Some(ConvId(0))),
        None if allow_all => Ok(None),
        Some(other) => Err(format!(
            "`{key}` must be \"A\" (the server model runs one conversation, A){}, not {other:?}",
            if allow_all { " or null" } else { "" }
        )),
        None => Err(format!("`{key}` is missing")),
    }
}

/// The one item a requeue or put names by its marker: one the adapter was handed this run.
fn named<T: Copy>(
    ids: &Option<Vec<u32>>,
    handed: &BTreeMap<MsgId, T>,
    what: &str,
) -> Result<T, String> {
    let ids = carries(ids);
    let [id] = ids[..] else {
        return Err(format!(
            "`carries` must name exactly one message (the marker of {what}), not {}",
            ids.len()
        ));
    };
    handed.get(&id).copied().ok_or_else(|| {
        format!("`carries` names {id}, which is not {what} the simulator handed out in this run")
    })
}

impl ExternalServer {
    pub fn new(slot: SlotRef, constants_ms: Vec<u64>) -> ExternalServer {
        ExternalServer {
            slot,
            constants_ms,
            started: false,
            events: 0,
            watch: BTreeMap::new(),
            completions: BTreeMap::new(),
        }
    }

    /// Start the run in the adapter (`reset`, `ready`) at the first call of the host.
    fn start(&mut self) {
        if self.started {
            return;
        }
        self.started = true;
        let mut slot = self.slot.borrow_mut();
        let ready = slot.reset().unwrap_or_else(|f| fault(f));
        let mut bits = 0;
        for n in &ready.events {
            match EVENTS.iter().find(|(e, _)| e == n) {
                Some((_, b)) => bits |= b,
                None => {
                    let known: Vec<&str> = EVENTS.iter().map(|(e, _)| *e).collect();
                    fault(slot.fail(
                        FaultKind::Protocol,
                        format!(
                            "`ready` names an event the gptme server does not have: `{n}` \
                             (gptme-server events: {})",
                            known.join(", ")
                        ),
                    ));
                }
            }
        }
        self.events = bits;
    }

    /// Write the event and execute the adapter's calls on `srv` until `done`.
    fn handle(&mut self, srv: &mut Server<'_>, event: ServerEvent, name: &'static str) {
        let slot = Rc::clone(&self.slot);
        let mut slot = slot.borrow_mut();
        let doing = format!("handling `{name}` at {} ms", srv.now().0);
        let done = slot.exchange(&Event { event }, &doing, CALLS, |s, msg| {
            self.call(srv, s, msg, &doing)
        });
        drop(slot);
        match done {
            Ok(error) => handler_threw(name, &error),
            Err(f) => fault(f),
        }
    }

    /// One message of the adapter inside a handler.
    fn call(
        &mut self,
        srv: &mut Server<'_>,
        slot: &mut Slot,
        msg: FromAdapter<ServerCall>,
        doing: &str,
    ) -> Result<Step<Option<serde_json::Value>>, AdapterFault> {
        match msg {
            FromAdapter::Done { error, .. } => return Ok(Step::End(error)),
            FromAdapter::Call(ServerCall::RequestWatchWake {
                conversation_id,
                carries: ids,
            }) => {
                let cid = logdir(conversation_id.as_deref(), "conversation_id", false)
                    .map_err(|w| slot.bad(&w, doing))?;
                let ids =
                    carries_produced(&ids, srv.k.produced()).map_err(|w| slot.bad(&w, doing))?;
                let msg = SystemMessage {
                    payload: Payload::from_slice(&ids),
                };
                let value = srv.request_watch_wake(cid.expect("one conversation"), msg);
                slot.send(&Answer { value }, doing)?;
            }
            FromAdapter::Call(ServerCall::TakeQueuedWatchEvents { logdir: l }) => {
                let which =
                    logdir(l.as_deref(), "logdir", true).map_err(|w| slot.bad(&w, doing))?;
                let taken = srv.take_queued_watch_events(which);
                let mut value = Vec::with_capacity(taken.len());
                for e in &taken {
                    value.push((watch_id(e), watch_text(e)));
                    self.watch.insert(e.msg, *e);
                }
                slot.send(&Answer { value }, doing)?;
            }
            FromAdapter::Call(ServerCall::RequeueWatchEvent { logdir: l, carries }) => {
                let e = self.handed_event(slot, l, &carries, doing)?;
                srv.requeue_watch_event(e);
            }
            FromAdapter::Call(ServerCall::QueueWatchEvent { logdir: l, carries }) => {
                let e = self.handed_event(slot, l, &carries, doing)?;
                srv.queue_watch_event(e);
            }
            FromAdapter::Call(ServerCall::TakeQueuedCompletions { logdir: l }) => {
                let which =
                    logdir(l.as_deref(), "logdir", false).map_err(|w| slot.bad(&w, doing))?;
                let taken = srv.take_queued_completions(which.expect("one conversation"));
                let mut value = Vec::with_capacity(taken.len());
                for c in &taken {
                    let agent = (b'a' + c.agent % 26) as char;
                    let summary = format!("completion from subagent {agent} [wakesim {}]", c.msg);
                    value.push((agent.to_string(), "completed", summary, "main"));
                    self.completions.insert(c.msg, *c);
                }
                slot.send(&Answer { value }, doing)?;
            }
            FromAdapter::Call(ServerCall::PutCompletion { carries }) => {
                let c = named(&carries, &self.completions, "a subagent completion")
                    .map_err(|w| slot.bad(&w, doing))?;
                srv.put_completion(c);
            }
            _ => return Ok(Step::NotMine),
        }
        Ok(Step::Next)
    }
}

impl ExternalServer {
    /// The watch event a requeue or a deferral puts back: of conversation A, named by its
    /// marker, handed out in this run.
    fn handed_event(
        &self,
        slot: &mut Slot,
        l: Option<String>,
        ids: &Option<Vec<u32>>,
        doing: &str,
    ) -> Result<WatchEvent, AdapterFault> {
        logdir(l.as_deref(), "logdir", false).map_err(|w| slot.bad(&w, doing))?;
        named(ids, &self.watch, "a watch event").map_err(|w| slot.bad(&w, doing))
    }
}

impl ServerWake for ExternalServer {
    fn constants_ms(&self) -> Vec<u64> {
        self.constants_ms.clone()
    }

    /// Asked before each call into the logic: the run starts in the adapter here, so `ready`
    /// says whether it listens to `deliver`.
    fn custom_deliver(&mut self) -> bool {
        self.start();
        self.events & DELIVER != 0
    }

    fn deliver(&mut self, srv: &mut Server<'_>, cid: ConvId, event: WatchEvent) {
        self.start();
        if self.events & DELIVER == 0 {
            return default_deliver(srv, cid, event);
        }
        self.watch.insert(event.msg, event);
        let line = ServerEvent::Deliver {
            now: srv.now().0,
            conversation_id: conv(cid),
            logdir: conv(cid),
            watch: watch_id(&event),
            text: watch_text(&event),
        };
        self.handle(srv, line, "deliver");
    }

    fn retry_deferred_watch_wakes(&mut self, srv: &mut Server<'_>, cid: ConvId) {
        self.start();
        if self.events & RETRY == 0 {
            return;
        }
        let line = ServerEvent::RetryDeferredWatchWakes {
            now: srv.now().0,
            conversation_id: conv(cid),
        };
        self.handle(srv, line, "retry_deferred_watch_wakes");
    }
}
