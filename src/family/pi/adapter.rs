//! [`ExternalPi`]: a pi wake logic that lives in an adapter process.
//!
//! Each handler the host calls becomes one `event` line; the adapter answers with host calls,
//! executed here on [`Pi`] in the order they arrive, and ends with `done`. Queries (`is_idle`) are
//! answered at once with a `result` line. Timers carry ids the adapter chooses; they are mapped to
//! the host's timer ids, so the trace of a run through an adapter is the trace the same calls
//! from a built-in logic would give.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use crate::adapter::{
    AdapterFault, FaultKind, SlotRef, carries, fault, intern, json_str, truncate,
};
use crate::family::pi::api::{
    CompactOutcome, Ctx, CustomMessage, DeliverAs, InputAction, InputEvent, Message, Pi, PiWake,
    SendOptions, TimerId,
};
use crate::sim::msg::{MsgInfo, Payload};

/// The events an adapter may ask for in `ready`.
const EVENTS: [&str; 11] = [
    "message",
    "session_start",
    "agent_start",
    "turn_end",
    "agent_end",
    "agent_settled",
    "session_compact",
    "session_tree",
    "input",
    "before_agent_start",
    "timer",
];

fn event_bit(name: &str) -> Option<u16> {
    EVENTS.iter().position(|e| *e == name).map(|i| 1 << i)
}

/// A pi wake logic behind the adapter protocol. One instance per run; the process is shared.
pub struct ExternalPi {
    slot: SlotRef,
    constants_ms: Vec<u64>,
    /// Bit per entry of [`EVENTS`]: the events the adapter listens to.
    events: u16,
    started: bool,
    /// The newest session a ctx was handed out for: ctx ids are session numbers.
    session: u32,
    /// Host timer id → the adapter's id.
    timer_ids: Vec<Option<u64>>,
    /// The adapter's id → host timer id.
    timers: BTreeMap<u64, TimerId>,
}

impl ExternalPi {
    pub fn new(slot: SlotRef, constants_ms: Vec<u64>) -> ExternalPi {
        ExternalPi {
            slot,
            constants_ms,
            events: 0,
            started: false,
            session: 1,
            timer_ids: Vec::new(),
            timers: BTreeMap::new(),
        }
    }

    /// Take the events of `ready`.
    fn listen_to(&mut self, names: &[String]) -> Result<(), AdapterFault> {
        let mut bits =
            event_bit("session_start").expect("known") | event_bit("timer").expect("known");
        for n in names {
            match event_bit(n) {
                Some(b) => bits |= b,
                None => {
                    return Err(self.slot.borrow_mut().fail(
                        FaultKind::Protocol,
                        format!(
                            "`ready` names an event pi does not have: `{n}` (pi events: {})",
                            EVENTS.join(", ")
                        ),
                    ));
                }
            }
        }
        self.events = bits;
        Ok(())
    }

    fn listens(&self, event: &str) -> bool {
        event_bit(event).is_some_and(|b| self.events & b != 0)
    }

    /// The event line's common fields. `idle` is what `isIdle()` on this ctx answers now
    /// (`null` when it is stale): until the handler's first send, the adapter may answer the
    /// query itself (`known`), saving a round trip.
    fn header(event: &str, pi: &Pi<'_>, ctx: u32) -> String {
        let idle = match pi.peek_idle(Ctx { session: ctx }) {
            Ok(true) => "true",
            Ok(false) => "false",
            Err(_) => "null",
        };
        format!(
            r#"{{"type":"event","event":"{event}","now":{},"ctx":{ctx},"idle":{idle}"#,
            pi.now().0
        )
    }

    /// Deliver `event` if the adapter listens to it; returns the input action of `done`.
    fn deliver(
        &mut self,
        pi: &mut Pi<'_>,
        event: &'static str,
        ctx: Option<Ctx>,
        extra: &str,
    ) -> InputAction {
        if let Some(c) = ctx {
            self.session = self.session.max(c.session());
        }
        // The first event of a run starts it with `reset`. session_start, always delivered and
        // always first, is written right behind it, and `ready` is read before its answers: one
        // round trip less per seed.
        let mut ready_first = false;
        if !self.started {
            self.started = true;
            let begun = self.slot.borrow_mut().begin_reset();
            begun.unwrap_or_else(|f| fault(f));
            if event == "session_start" {
                ready_first = true;
            } else {
                let ready = self.slot.borrow_mut().read_ready();
                let (names, _) = ready.unwrap_or_else(|f| fault(f));
                self.listen_to(&names).unwrap_or_else(|f| fault(f));
            }
        }
        if !ready_first && !self.listens(event) {
            return InputAction::Continue;
        }
        let mut line = Self::header(event, pi, self.session);
        line.push_str(extra);
        line.push('}');
        match self.exchange(pi, event, &line, ready_first) {
            Ok(action) => action,
            Err(f) => fault(f),
        }
    }

    /// Write the event, then execute the adapter's calls until `done`.
    fn exchange(
        &mut self,
        pi: &mut Pi<'_>,
        event: &'static str,
        line: &str,
        ready_first: bool,
    ) -> Result<InputAction, AdapterFault> {
        let slot = std::rc::Rc::clone(&self.slot);
        let mut slot = slot.borrow_mut();
        let doing = format!("handling `{event}` at {} ms", pi.now().0);
        slot.in_handler = true;
        slot.write(line, &doing)?;
        if ready_first {
            let (names, _) = slot.read_ready()?;
            drop(slot);
            self.listen_to(&names)?;
            slot = self.slot.borrow_mut();
        }
        loop {
            let (ty, v) = slot.read(&doing)?;
            let bad = |slot: &mut crate::adapter::Slot, what: String| {
                slot.fail(
                    FaultKind::Protocol,
                    format!(
                        "{what} while {doing}: {}",
                        crate::adapter::quote(v.to_string().as_bytes())
                    ),
                )
            };
            match ty.as_str() {
                "done" => {
                    slot.in_handler = false;
                    if let Some(err) = v.get("error") {
                        let text = err.as_str().map_or_else(|| err.to_string(), str::to_string);
                        std::panic::panic_any(format!(
                            "the `{event}` handler threw: {}",
                            truncate(&text)
                        ));
                    }
                    return match v.get("action").map(|a| a.as_str()) {
                        None => Ok(InputAction::Continue),
                        Some(Some("continue")) if event == "input" => Ok(InputAction::Continue),
                        Some(Some("handled")) if event == "input" => Ok(InputAction::Handled),
                        Some(_) if event == "input" => Err(bad(
                            &mut slot,
                            "`action` must be \"continue\" or \"handled\"".into(),
                        )),
                        Some(_) => Err(bad(
                            &mut slot,
                            "`action` answers only an `input` event".into(),
                        )),
                    };
                }
                "send_message" => {
                    let carries = carries(&v).map_err(|w| bad(&mut slot, w))?;
                    let deliver_as = deliver_as(&v).map_err(|w| bad(&mut slot, w))?;
                    let trigger_turn = match v.get("trigger_turn") {
                        None | Some(Value::Null) => false,
                        Some(Value::Bool(b)) => *b,
                        Some(_) => {
                            return Err(bad(&mut slot, "`trigger_turn` must be a boolean".into()));
                        }
                    };
                    let custom_type = match v.get("custom_type") {
                        None | Some(Value::Null) => "custom",
                        Some(Value::String(s)) => intern(s, "custom"),
                        Some(_) => {
                            return Err(bad(&mut slot, "`custom_type` must be a string".into()));
                        }
                    };
                    let msg = if carries.is_empty() {
                        CustomMessage::marker(custom_type)
                    } else {
                        // Content is shown by what it carries, as the built-in logics send it.
                        CustomMessage::batch(&carries)
                    };
                    pi.send_message(
                        msg,
                        SendOptions {
                            deliver_as,
                            trigger_turn,
                        },
                    );
                }
                "send_user_message" => {
                    let carries = carries(&v).map_err(|w| bad(&mut slot, w))?;
                    let deliver_as = deliver_as(&v).map_err(|w| bad(&mut slot, w))?;
                    pi.send_user_message(Payload::from_slice(&carries), deliver_as);
                }
                "is_idle" => {
                    let ctx = match v.get("ctx").and_then(Value::as_u64) {
                        Some(c) if c >= 1 && c <= u64::from(self.session) => c as u32,
                        _ => {
                            let s = self.session;
                            return Err(bad(
                                &mut slot,
                                format!("`ctx` must name a ctx handed out (1..={s})"),
                            ));
                        }
                    };
                    let result = (Ctx { session: ctx }).is_idle(pi);
                    match v.get("known") {
                        // The adapter answered from the event's `idle`: check it, answer nothing.
                        Some(known) => {
                            let agrees = match (known, result) {
                                (Value::Bool(b), Ok(r)) => *b == r,
                                (Value::String(s), Err(_)) => s == "stale_ctx",
                                _ => false,
                            };
                            if !agrees {
                                let host = match result {
                                    Ok(r) => r.to_string(),
                                    Err(_) => "stale_ctx".to_string(),
                                };
                                return Err(bad(
                                    &mut slot,
                                    format!(
                                        "`known` says {known} but ctx.isIdle() is {host} (the \
                                         event's `idle` holds only until the handler's first send)"
                                    ),
                                ));
                            }
                        }
                        None => {
                            let answer = match result {
                                Ok(true) => r#"{"type":"result","value":true}"#,
                                Ok(false) => r#"{"type":"result","value":false}"#,
                                Err(_) => r#"{"type":"result","error":"stale_ctx"}"#,
                            };
                            slot.write(answer, &doing)?;
                        }
                    }
                }
                "set_timeout" | "queue_microtask" => {
                    let Some(id) = v.get("timer").and_then(Value::as_u64) else {
                        return Err(bad(
                            &mut slot,
                            "`timer` must be a non-negative integer".into(),
                        ));
                    };
                    if self.timers.contains_key(&id) {
                        return Err(bad(
                            &mut slot,
                            format!("timer id {id} was already used in this run"),
                        ));
                    }
                    let host = if ty == "set_timeout" {
                        let Some(ms) = v.get("ms").and_then(Value::as_u64) else {
                            return Err(bad(
                                &mut slot,
                                "`ms` must be a non-negative integer".into(),
                            ));
                        };
                        pi.set_timeout(ms)
                    } else {
                        pi.queue_microtask()
                    };
                    self.timers.insert(id, host);
                    let i = host.0 as usize;
                    if self.timer_ids.len() <= i {
                        self.timer_ids.resize(i + 1, None);
                    }
                    self.timer_ids[i] = Some(id);
                }
                "clear_timeout" => {
                    let Some(id) = v.get("timer").and_then(Value::as_u64) else {
                        return Err(bad(
                            &mut slot,
                            "`timer` must be a non-negative integer".into(),
                        ));
                    };
                    // Clearing an id never set is a no-op, as in JavaScript.
                    if let Some(&host) = self.timers.get(&id) {
                        pi.clear_timeout(host);
                    }
                }
                "error" => return Err(slot.reported(&v, &doing)),
                "hello" | "ready" | "result" | "event" | "reset" => {
                    return Err(slot.unexpected(&ty, &v, &doing));
                }
                other => {
                    let f = slot.fail(
                        FaultKind::UnknownCall,
                        format!(
                            "the adapter called `{other}`, which pi does not have, while {doing} \
                             (pi: send_message, send_user_message, is_idle, set_timeout, \
                             clear_timeout, queue_microtask)"
                        ),
                    );
                    return Err(f);
                }
            }
        }
    }
}

fn deliver_as(v: &Value) -> Result<Option<DeliverAs>, String> {
    match v.get("deliver_as") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => match s.as_str() {
            "steer" => Ok(Some(DeliverAs::Steer)),
            "followUp" => Ok(Some(DeliverAs::FollowUp)),
            "nextTurn" => Ok(Some(DeliverAs::NextTurn)),
            _ => Err(format!(
                "`deliver_as` must be \"steer\", \"followUp\", \"nextTurn\" or null, not {s:?}"
            )),
        },
        Some(_) => Err("`deliver_as` must be a string or null".to_string()),
    }
}

impl PiWake for ExternalPi {
    fn constants_ms(&self) -> Vec<u64> {
        self.constants_ms.clone()
    }

    fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message) {
        // On pi the FIFO stream is the sender itself.
        let info = MsgInfo {
            id: msg.id,
            kind: msg.kind,
            source: msg.source,
            origin: msg.source,
            conv: 0,
            stream: None,
            produced_at: pi.now(),
        };
        let source = info.source_name();
        let kind = msg.kind.name();
        let text = format!("{kind} from {source} [wakesim {}]", msg.id);
        let mut extra = String::with_capacity(160);
        let _ = write!(
            extra,
            r#","message":{{"id":{},"name":"{}","kind":"{kind}","source":{},"text":{}}}"#,
            msg.id.0,
            msg.id,
            json_str(&source),
            json_str(&text)
        );
        self.deliver(pi, "message", None, &extra);
    }

    fn on_session_start(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "session_start", Some(ctx), "");
    }

    fn on_agent_start(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "agent_start", Some(ctx), "");
    }

    fn on_turn_end(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "turn_end", Some(ctx), "");
    }

    fn on_agent_end(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "agent_end", Some(ctx), "");
    }

    fn on_agent_settled(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "agent_settled", Some(ctx), "");
    }

    fn on_session_compact(&mut self, pi: &mut Pi<'_>, ctx: Ctx, outcome: CompactOutcome) {
        let extra = match outcome {
            CompactOutcome::Done => r#","outcome":"done""#,
            CompactOutcome::Failed => r#","outcome":"failed""#,
        };
        self.deliver(pi, "session_compact", Some(ctx), extra);
    }

    fn on_session_tree(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "session_tree", Some(ctx), "");
    }

    fn on_input(&mut self, pi: &mut Pi<'_>, ctx: Ctx, input: InputEvent) -> InputAction {
        let source = if input.from_user {
            "interactive"
        } else {
            "extension"
        };
        let behavior = match input.streaming_behavior {
            None => "null".to_string(),
            Some(d) => format!("\"{}\"", d.name()),
        };
        let extra = format!(r#","input":{{"source":"{source}","streaming_behavior":{behavior}}}"#);
        self.deliver(pi, "input", Some(ctx), &extra)
    }

    fn on_before_agent_start(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "before_agent_start", Some(ctx), "");
    }

    fn on_timer(&mut self, pi: &mut Pi<'_>, timer: TimerId) {
        let Some(Some(id)) = self.timer_ids.get(timer.0 as usize).copied() else {
            return;
        };
        let extra = format!(r#","timer":{id}"#);
        self.deliver(pi, "timer", None, &extra);
    }
}
