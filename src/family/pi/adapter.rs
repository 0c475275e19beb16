//! [`ExternalPi`]: a pi wake logic that lives in an adapter process.
//!
//! Each handler the host calls becomes one `event` message; the adapter answers with host calls,
//! executed here on [`Pi`] in the order they arrive, and ends with `done`. Queries (`is_idle`) are
//! answered at once with a `result` message. Timers carry ids the adapter chooses; they are
//! mapped to the host's timer ids, so the trace of a run through an adapter is the trace the same
//! calls from a built-in logic would give.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde::Serialize;

use super::api::{
    CompactOutcome, Ctx, CustomMessage, DeliverAs, InputAction, InputEvent, Message, Pi, PiWake,
    SendOptions, TimerId,
};
use serde::Deserialize;

use crate::adapter::protocol::{AdapterCall, Answer, Event, FromAdapter, Known, Refused};
use crate::adapter::speculate::{History, Respeculate};
use crate::adapter::{
    AdapterFault, Calls, FaultKind, Slot, SlotRef, Step, carries_produced, fault, handler_threw,
    intern,
};

/// Abandon the run: an event sent ahead was not quiet; the runner runs the seed again
/// (`Slot::settle`).
fn respeculate() -> ! {
    std::panic::panic_any(Respeculate)
}
use crate::sim::msg::{MsgInfo, Payload, SenderNames};

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

const CALLS: Calls = Calls {
    family: "pi",
    list: "send_message, send_user_message, is_idle, set_timeout, clear_timeout, queue_microtask",
};

/// The calls an adapter of this family may make: pi's API (`docs/protocol.md`): sending messages, `ctx.isIdle()`, timers and microtasks. Its `Family::Call`; every call
/// rejects fields it does not have.
#[derive(Deserialize, Debug)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum PiCall {
    SendMessage {
        #[serde(default)]
        custom_type: Option<String>,
        #[serde(default)]
        carries: Option<Vec<u32>>,
        #[serde(default)]
        deliver_as: Option<String>,
        #[serde(default)]
        trigger_turn: Option<bool>,
    },
    SendUserMessage {
        #[serde(default)]
        carries: Option<Vec<u32>>,
        #[serde(default)]
        deliver_as: Option<String>,
        /// The text the module sent, for the timeline (cut at `USER_MESSAGE_TEXT_BYTES_MAX`);
        /// optional, so an adapter that does not send it still speaks the protocol.
        #[serde(default)]
        text: Option<String>,
    },
    IsIdle {
        ctx: Option<u64>,
        /// The adapter answered from the event's `idle` (`true`, `false` or `"stale_ctx"`).
        #[serde(default)]
        known: Option<Known>,
    },
    SetTimeout {
        timer: u64,
        ms: u64,
    },
    QueueMicrotask {
        timer: u64,
    },
    ClearTimeout {
        timer: u64,
    },
}

impl AdapterCall for PiCall {
    const TYPES: &'static [&'static str] = &[
        "send_message",
        "send_user_message",
        "is_idle",
        "set_timeout",
        "queue_microtask",
        "clear_timeout",
    ];

    fn name(&self) -> &'static str {
        match self {
            PiCall::SendMessage { .. } => "send_message",
            PiCall::SendUserMessage { .. } => "send_user_message",
            PiCall::IsIdle { .. } => "is_idle",
            PiCall::SetTimeout { .. } => "set_timeout",
            PiCall::QueueMicrotask { .. } => "queue_microtask",
            PiCall::ClearTimeout { .. } => "clear_timeout",
        }
    }
}

fn event_bit(name: &str) -> Option<u16> {
    EVENTS.iter().position(|e| *e == name).map(|i| 1 << i)
}

/// The event's kind for the predictor: its index in [`EVENTS`] plus one.
fn event_kind(name: &str) -> u8 {
    EVENTS
        .iter()
        .position(|e| *e == name)
        .map_or(0, |i| i as u8 + 1)
}

/// A pi event: the fields every event has, and its payload.
#[derive(Serialize)]
struct PiEvent<'a> {
    event: &'static str,
    now: u64,
    /// The ctx id handed to this handler: the session number.
    ctx: u32,
    /// What `isIdle()` on that ctx answers now (`null` when it is stale): until the handler's
    /// first send, the adapter may answer the query itself (`known`), saving a round trip.
    idle: Option<bool>,
    /// Sent ahead: the simulator goes on without waiting for `done`, so the handler must not
    /// block on a query (`adapter::speculate`). Only to an adapter that takes it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    spec: bool,
    #[serde(flatten)]
    payload: Extra<'a>,
}

/// An event's own fields.
#[derive(Serialize)]
#[serde(untagged)]
enum Extra<'a> {
    None {},
    Message { message: MessageJson<'a> },
    Outcome { outcome: &'static str },
    Input { input: InputJson },
    Timer { timer: u64 },
}

#[derive(Serialize)]
struct MessageJson<'a> {
    id: u32,
    name: String,
    kind: &'static str,
    source: &'a str,
    text: String,
}

#[derive(Serialize)]
struct InputJson {
    source: &'static str,
    streaming_behavior: Option<&'static str>,
}

/// How the adapter ended a handler.
struct Done {
    error: Option<serde_json::Value>,
    action: Option<String>,
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
    /// Events delivered in this run (their index: where a re-run waits).
    delivered: u32,
    /// The events before this one, for the prediction of the next.
    history: History,
    /// The handler being waited for made a call or ended with more than `done`.
    called: bool,
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
            delivered: 0,
            history: History::default(),
            called: false,
        }
    }

    /// Take the events of `ready`.
    fn listen_to(&mut self, slot: &mut Slot, names: &[String]) -> Result<(), AdapterFault> {
        let mut bits =
            event_bit("session_start").expect("known") | event_bit("timer").expect("known");
        for n in names {
            match event_bit(n) {
                Some(b) => bits |= b,
                None => {
                    return Err(slot.fail(
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

    /// Deliver `event` if the adapter listens to it; returns the input action of `done`.
    fn deliver(
        &mut self,
        pi: &mut Pi<'_>,
        event: &'static str,
        ctx: Option<Ctx>,
        payload: Extra<'_>,
    ) -> InputAction {
        if let Some(c) = ctx {
            self.session = self.session.max(c.session());
        }
        let result = self.start_and_deliver(pi, event, payload);
        match result {
            Ok(done) => self.done(event, done),
            Err(f) => fault(f),
        }
    }

    /// Start the run at its first event, then deliver `event` (if the adapter listens to it).
    /// session_start, always delivered and always first, is written right behind the `reset`,
    /// and `ready` is read before its answers: one round trip less per seed.
    fn start_and_deliver(
        &mut self,
        pi: &mut Pi<'_>,
        event: &'static str,
        payload: Extra<'_>,
    ) -> Result<Option<Done>, AdapterFault> {
        let slot = Rc::clone(&self.slot);
        let mut slot = slot.borrow_mut();
        let mut ready_first = false;
        let mut ahead_first = false;
        let kind = event_kind(event);
        let history = self.history;
        if !self.started {
            self.started = true;
            if event != "session_start" {
                slot.begin_reset()?;
                let ready = slot.read_ready()?;
                self.listen_to(&mut slot, &ready.events)?;
            } else if let Some(bits) = slot.ready_ahead(self.delivered, kind, history)? {
                // The module listens to what it did last run: its `ready` is checked with the
                // answers of the events ahead.
                self.events = bits as u16;
                ahead_first = true;
            } else {
                slot.begin_reset()?;
                ready_first = true;
            }
        }
        if !ready_first && !self.listens(event) {
            return Ok(None);
        }
        let idle = pi
            .peek_idle(Ctx {
                session: self.session,
            })
            .ok();
        let index = self.delivered;
        self.delivered += 1;
        let ahead = ahead_first || (!ready_first && slot.goes_ahead(index, kind, history));
        let line = Event {
            event: PiEvent {
                event,
                now: pi.now().0,
                ctx: self.session,
                idle,
                spec: ahead,
                payload,
            },
        };
        if ahead {
            // Predicted quiet: go on as if it answered `done` (confirmed later, or the seed
            // runs again waiting for it).
            slot.learn(kind, history, true);
            self.history.push(kind, true);
            if !slot.send_ahead(&line, index, event == "input") {
                respeculate();
            }
            return Ok(None);
        }
        let doing = format!("handling `{event}` at {} ms", pi.now().0);
        slot.begin(&line, &doing)?;
        if !slot.confirm(true) {
            respeculate();
        }
        if ready_first {
            let ready = slot.read_ready()?;
            self.listen_to(&mut slot, &ready.events)?;
            slot.listening(u64::from(self.events));
        }
        self.called = false;
        let done = slot.run(&doing, CALLS, |slot, msg| self.call(pi, slot, msg, &doing))?;
        // `input` answered "continue" is what a quiet handler answers (the same action).
        let quiet = !self.called
            && done.error.is_none()
            && (done.action.is_none()
                || (event == "input" && done.action.as_deref() == Some("continue")));
        slot.learn(kind, history, quiet);
        self.history.push(kind, quiet);
        Ok(Some(done))
    }

    /// The handler's end: its error is the wake logic's panic; its action answers `input`.
    fn done(&mut self, event: &'static str, done: Option<Done>) -> InputAction {
        let Some(done) = done else {
            return InputAction::Continue;
        };
        handler_threw(event, &done.error);
        let action = match done.action.as_deref() {
            None => return InputAction::Continue,
            Some(_) if event != "input" => Err("`action` answers only an `input` event"),
            Some("continue") => Ok(InputAction::Continue),
            Some("handled") => Ok(InputAction::Handled),
            Some(_) => Err("`action` must be \"continue\" or \"handled\""),
        };
        action.unwrap_or_else(|what| {
            let doing = format!("handling `{event}`");
            fault(self.slot.borrow_mut().bad(what, &doing))
        })
    }

    /// One message of the adapter inside a handler.
    fn call(
        &mut self,
        pi: &mut Pi<'_>,
        slot: &mut Slot,
        msg: FromAdapter<PiCall>,
        doing: &str,
    ) -> Result<Step<Done>, AdapterFault> {
        if !matches!(msg, FromAdapter::Done { .. }) {
            self.called = true;
        }
        match msg {
            FromAdapter::Done { error, action, .. } => {
                return Ok(Step::End(Done { error, action }));
            }
            FromAdapter::Call(PiCall::SendMessage {
                custom_type,
                carries: ids,
                deliver_as: d,
                trigger_turn,
            }) => {
                let deliver_as = deliver_as(d.as_deref()).map_err(|w| slot.bad(&w, doing))?;
                let custom_type = custom_type.map_or("custom", |s| intern(&s, "custom"));
                let ids =
                    carries_produced(&ids, pi.k.produced()).map_err(|w| slot.bad(&w, doing))?;
                let msg = if ids.is_empty() {
                    CustomMessage::marker(custom_type)
                } else {
                    // Content is shown by what it carries, as the built-in logics send it.
                    CustomMessage::batch(&ids)
                };
                let trigger_turn = trigger_turn.unwrap_or(false);
                pi.send_message(
                    msg,
                    SendOptions {
                        deliver_as,
                        trigger_turn,
                    },
                );
            }
            FromAdapter::Call(PiCall::SendUserMessage {
                carries: ids,
                deliver_as: d,
                text,
            }) => {
                let deliver_as = deliver_as(d.as_deref()).map_err(|w| slot.bad(&w, doing))?;
                let ids =
                    carries_produced(&ids, pi.k.produced()).map_err(|w| slot.bad(&w, doing))?;
                let payload = Payload::from_slice(&ids);
                match text {
                    Some(t) => pi.send_user_message_text(payload, &t, deliver_as),
                    None => pi.send_user_message(payload, deliver_as),
                }
            }
            FromAdapter::Call(PiCall::IsIdle { ctx, known }) => {
                self.is_idle(pi, slot, ctx, known, doing)?
            }
            FromAdapter::Call(PiCall::SetTimeout { timer, ms }) => {
                self.new_timer(slot, timer, doing)?;
                let host = pi.set_timeout(ms);
                self.map_timer(timer, host);
            }
            FromAdapter::Call(PiCall::QueueMicrotask { timer }) => {
                self.new_timer(slot, timer, doing)?;
                let host = pi.queue_microtask();
                self.map_timer(timer, host);
            }
            FromAdapter::Call(PiCall::ClearTimeout { timer }) => {
                // Clearing an id never set is a no-op, as in JavaScript.
                if let Some(&host) = self.timers.get(&timer) {
                    pi.clear_timeout(host);
                }
            }
            _ => return Ok(Step::NotMine),
        }
        Ok(Step::Next)
    }

    /// `ctx.isIdle()`: answered, or checked against the adapter's own answer (`known`).
    fn is_idle(
        &mut self,
        pi: &mut Pi<'_>,
        slot: &mut Slot,
        ctx: Option<u64>,
        known: Option<Known>,
        doing: &str,
    ) -> Result<(), AdapterFault> {
        let session = self.session;
        let ctx = match ctx {
            Some(c) if c >= 1 && c <= u64::from(session) => c as u32,
            _ => {
                let what = format!("`ctx` must name a ctx handed out (1..={session})");
                return Err(slot.bad(&what, doing));
            }
        };
        let result = (Ctx { session: ctx }).is_idle(pi);
        let Some(known) = known else {
            return match result {
                Ok(value) => slot.send(&Answer { value }, doing),
                Err(_) => slot.send(&Refused { error: "stale_ctx" }, doing),
            };
        };
        // The adapter answered from the event's `idle`: check it, answer nothing.
        let agrees = match (known, result) {
            (Known::Idle(b), Ok(r)) => b == r,
            (Known::Stale(_), Err(_)) => true,
            _ => false,
        };
        if agrees {
            return Ok(());
        }
        let said = match known {
            Known::Idle(b) => b.to_string(),
            Known::Stale(_) => "\"stale_ctx\"".to_string(),
        };
        let host = match result {
            Ok(r) => r.to_string(),
            Err(_) => "stale_ctx".to_string(),
        };
        let what = format!(
            "`known` says {said} but ctx.isIdle() is {host} (the event's `idle` holds only until \
             the handler's first send)"
        );
        Err(slot.bad(&what, doing))
    }

    /// A timer id the adapter chose must be new in the run.
    fn new_timer(&self, slot: &mut Slot, id: u64, doing: &str) -> Result<(), AdapterFault> {
        if self.timers.contains_key(&id) {
            let what = format!("timer id {id} was already used in this run");
            return Err(slot.bad(&what, doing));
        }
        Ok(())
    }

    fn map_timer(&mut self, id: u64, host: TimerId) {
        self.timers.insert(id, host);
        let i = host.0 as usize;
        if self.timer_ids.len() <= i {
            self.timer_ids.resize(i + 1, None);
        }
        self.timer_ids[i] = Some(id);
    }
}

fn deliver_as(v: Option<&str>) -> Result<Option<DeliverAs>, String> {
    match v {
        None => Ok(None),
        Some("steer") => Ok(Some(DeliverAs::Steer)),
        Some("followUp") => Ok(Some(DeliverAs::FollowUp)),
        Some("nextTurn") => Ok(Some(DeliverAs::NextTurn)),
        Some(s) => Err(format!(
            "`deliver_as` must be \"steer\", \"followUp\", \"nextTurn\" or null, not {s:?}"
        )),
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
            names: SenderNames(super::vocab::sender_name),
        };
        let source = info.source_name();
        let kind = msg.kind.name();
        let message = MessageJson {
            id: msg.id.0,
            name: msg.id.to_string(),
            kind,
            source: &source,
            text: format!("{kind} from {source} [wakesim {}]", msg.id),
        };
        self.deliver(pi, "message", None, Extra::Message { message });
    }

    fn on_session_start(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "session_start", Some(ctx), Extra::None {});
    }

    fn on_agent_start(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "agent_start", Some(ctx), Extra::None {});
    }

    fn on_turn_end(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "turn_end", Some(ctx), Extra::None {});
    }

    fn on_agent_end(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "agent_end", Some(ctx), Extra::None {});
    }

    fn on_agent_settled(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "agent_settled", Some(ctx), Extra::None {});
    }

    fn on_session_compact(&mut self, pi: &mut Pi<'_>, ctx: Ctx, outcome: CompactOutcome) {
        let outcome = match outcome {
            CompactOutcome::Done => "done",
            CompactOutcome::Failed => "failed",
        };
        self.deliver(pi, "session_compact", Some(ctx), Extra::Outcome { outcome });
    }

    fn on_session_tree(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "session_tree", Some(ctx), Extra::None {});
    }

    fn on_input(&mut self, pi: &mut Pi<'_>, ctx: Ctx, input: InputEvent) -> InputAction {
        let input = InputJson {
            source: if input.from_user {
                "interactive"
            } else {
                "extension"
            },
            streaming_behavior: input.streaming_behavior.map(DeliverAs::name),
        };
        self.deliver(pi, "input", Some(ctx), Extra::Input { input })
    }

    fn on_before_agent_start(&mut self, pi: &mut Pi<'_>, ctx: Ctx) {
        self.deliver(pi, "before_agent_start", Some(ctx), Extra::None {});
    }

    fn on_timer(&mut self, pi: &mut Pi<'_>, timer: TimerId) {
        let Some(Some(id)) = self.timer_ids.get(timer.0 as usize).copied() else {
            return;
        };
        self.deliver(pi, "timer", None, Extra::Timer { timer: id });
    }
}
