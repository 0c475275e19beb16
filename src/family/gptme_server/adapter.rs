//! [`ExternalServer`]: a gptme-server wake logic that lives in an adapter process.
//!
//! The host calls `retry_deferred_watch_wakes` (at step completion, in `finish_command`, after a
//! subagent completion) and `deliver` (the watch tool's `_deliver`, when a watch fires); each
//! becomes an `event` line when the adapter listens to it. The adapter answers with the
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

use serde_json::Value;

use crate::adapter::{
    AdapterFault, FaultKind, Slot, SlotRef, Step, carries, fault, handler_threw, json_str,
};
use crate::family::common::conv::ConvId;
use crate::family::gptme_server::api::{
    Server, ServerWake, SubagentCompletion, SystemMessage, WatchEvent, default_deliver,
};
use crate::sim::msg::{MsgId, Payload, conv_name};

const DELIVER: u8 = 1;
const RETRY: u8 = 2;
/// The events an adapter may ask for in `ready`.
const EVENTS: [(&str, u8); 2] = [("deliver", DELIVER), ("retry_deferred_watch_wakes", RETRY)];
const CALLS: &str = "request_watch_wake, take_queued_watch_events, requeue_watch_event, \
                     queue_watch_event, take_queued_completions, put_completion";

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
fn logdir(v: &Value, key: &str, allow_all: bool) -> Result<Option<ConvId>, String> {
    match v.get(key) {
        Some(Value::String(s)) if s == "A" => Ok(Some(ConvId(0))),
        Some(Value::Null) | None if allow_all => Ok(None),
        Some(other) => Err(format!(
            "`{key}` must be \"A\" (the server model runs one conversation, A){}, not {other}",
            if allow_all { " or null" } else { "" }
        )),
        None => Err(format!("`{key}` is missing")),
    }
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
        let names = self
            .slot
            .borrow_mut()
            .reset()
            .unwrap_or_else(|f| fault(f))
            .0;
        let mut bits = 0;
        for n in &names {
            match EVENTS.iter().find(|(e, _)| e == n) {
                Some((_, b)) => bits |= b,
                None => {
                    let known: Vec<&str> = EVENTS.iter().map(|(e, _)| *e).collect();
                    fault(self.slot.borrow_mut().fail(
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
    fn handle(&mut self, srv: &mut Server<'_>, event: &'static str, line: &str) {
        let slot = Rc::clone(&self.slot);
        let mut slot = slot.borrow_mut();
        let doing = format!("handling `{event}` at {} ms", srv.now().0);
        let done = slot.exchange(line, &doing, "the gptme server", CALLS, |s, ty, v| {
            self.call(srv, s, ty, v, &doing)
        });
        drop(slot);
        match done {
            Ok(v) => handler_threw(event, &v),
            Err(f) => fault(f),
        }
    }

    /// One message of the adapter inside a handler.
    fn call(
        &mut self,
        srv: &mut Server<'_>,
        slot: &mut Slot,
        ty: &str,
        v: &Value,
        doing: &str,
    ) -> Result<Step<Value>, AdapterFault> {
        let bad = |slot: &mut Slot, what: String| slot.bad(v, &what, doing);
        match ty {
            "done" => Ok(Step::End(v.clone())),
            "request_watch_wake" => {
                let cid = logdir(v, "conversation_id", false).map_err(|w| bad(slot, w))?;
                let ids = carries(v).map_err(|w| bad(slot, w))?;
                let msg = SystemMessage {
                    payload: Payload::from_slice(&ids),
                };
                let woke = srv.request_watch_wake(cid.expect("one conversation"), msg);
                let answer = if woke {
                    r#"{"type":"result","value":true}"#
                } else {
                    r#"{"type":"result","value":false}"#
                };
                slot.write(answer, doing)?;
                Ok(Step::Next)
            }
            "take_queued_watch_events" => {
                let which = logdir(v, "logdir", true).map_err(|w| bad(slot, w))?;
                let taken = srv.take_queued_watch_events(which);
                let mut answer = String::from(r#"{"type":"result","value":["#);
                for (i, e) in taken.iter().enumerate() {
                    if i > 0 {
                        answer.push(',');
                    }
                    answer += &format!("[\"{}\",{}]", watch_id(e), json_str(&watch_text(e)));
                    self.watch.insert(e.msg, *e);
                }
                answer.push_str("]}");
                slot.write(&answer, doing)?;
                Ok(Step::Next)
            }
            "requeue_watch_event" | "queue_watch_event" => {
                logdir(v, "logdir", false).map_err(|w| bad(slot, w))?;
                let e = named(v, &self.watch, "a watch event").map_err(|w| bad(slot, w))?;
                if ty == "requeue_watch_event" {
                    srv.requeue_watch_event(e);
                } else {
                    srv.queue_watch_event(e);
                }
                Ok(Step::Next)
            }
            "take_queued_completions" => {
                let which = logdir(v, "logdir", false).map_err(|w| bad(slot, w))?;
                let taken = srv.take_queued_completions(which.expect("one conversation"));
                let mut answer = String::from(r#"{"type":"result","value":["#);
                for (i, c) in taken.iter().enumerate() {
                    if i > 0 {
                        answer.push(',');
                    }
                    let agent = (b'a' + c.agent % 26) as char;
                    let summary = format!("completion from subagent {agent} [wakesim {}]", c.msg);
                    answer += &format!(
                        "[\"{agent}\",\"completed\",{},\"main\"]",
                        json_str(&summary)
                    );
                    self.completions.insert(c.msg, *c);
                }
                answer.push_str("]}");
                slot.write(&answer, doing)?;
                Ok(Step::Next)
            }
            "put_completion" => {
                let c = named(v, &self.completions, "a subagent completion")
                    .map_err(|w| bad(slot, w))?;
                srv.put_completion(c);
                Ok(Step::Next)
            }
            _ => Ok(Step::NotMine),
        }
    }
}

/// The one item a requeue or put names by its marker: one the adapter was handed this run.
fn named<T: Copy>(v: &Value, handed: &BTreeMap<MsgId, T>, what: &str) -> Result<T, String> {
    let ids = carries(v)?;
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

impl ServerWake for ExternalServer {
    fn constants_ms(&self) -> Vec<u64> {
        self.constants_ms.clone()
    }

    fn deliver(&mut self, srv: &mut Server<'_>, cid: ConvId, event: WatchEvent) {
        self.start();
        if self.events & DELIVER == 0 {
            return default_deliver(srv, cid, event);
        }
        self.watch.insert(event.msg, event);
        let line = format!(
            r#"{{"type":"event","event":"deliver","now":{},"conversation_id":"{c}","logdir":"{c}","watch":"{}","text":{}}}"#,
            srv.now().0,
            watch_id(&event),
            json_str(&watch_text(&event)),
            c = conv(cid),
        );
        self.handle(srv, "deliver", &line);
    }

    fn retry_deferred_watch_wakes(&mut self, srv: &mut Server<'_>, cid: ConvId) {
        self.start();
        if self.events & RETRY == 0 {
            return;
        }
        let line = format!(
            r#"{{"type":"event","event":"retry_deferred_watch_wakes","now":{},"conversation_id":"{}"}}"#,
            srv.now().0,
            conv(cid)
        );
        self.handle(srv, "retry_deferred_watch_wakes", &line);
    }
}
