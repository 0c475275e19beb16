//! A toy host family, written outside wakesim as a downstream crate would write one: one module
//! (this file) and one registration line (`wakesim::family::register::<ToyFamily>()`).
//!
//! The toy host runs *turns*: a user's prompt, or a delivery of the wake logic's, makes it busy
//! for `busy_ms`; a delivery asked for while it is busy is refused. Its one race window is a
//! message arriving while a turn runs. Its two wake logics differ only there:
//! `toy.forgets-when-busy` ignores the refusal (the message is lost: NO-LOSS fails), and
//! `toy.keeps-until-idle` keeps a refused message and delivers it when the turn ends.

use std::convert::Infallible;

use serde::Deserialize;
use wakesim::adapter::SlotRef;
use wakesim::adapter::protocol::NoCalls;
use wakesim::check::{Invariant, InvariantSet, Monitor};
use wakesim::error::Result;
use wakesim::family::common::faults::{FaultKind, FaultSpec};
use wakesim::family::{Family, Host, Registry};
use wakesim::input::Cx;
use wakesim::sim::choice::Ratio;
use wakesim::sim::hash::{Encode, TraceHasher};
use wakesim::sim::msg::{MsgFrom, MsgId, MsgInfo, MsgKind};
use wakesim::sim::record::{Actor, Ev, InStory, Role, Window};
use wakesim::sim::{Kernel, World};

/// The family: one host, `toy`.
pub struct ToyFamily;

/// Its one race window (code 25: the built-in families use codes below it).
pub const ARRIVES_WHILE_BUSY: Window = Window::new(
    25,
    "toy-arrives-while-busy",
    "a message arrives while a turn runs",
);

/// What a toy scenario configures.
#[derive(Clone, Debug)]
pub struct ToyConfig {
    messages: u64,
    user_turns: u64,
    busy_ms: u64,
}

/// `[producers]`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Producers {
    messages: Option<toml::Spanned<u64>>,
    user_turns: Option<u64>,
}

/// `[timing]`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    busy_ms: Option<u64>,
}

/// The toy has no faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToyFault {}

impl FaultKind for ToyFault {
    const LIST: &'static [ToyFault] = &[];
    type Timed = Infallible;
    fn name(self) -> &'static str {
        match self {}
    }
    fn describe(self) -> &'static str {
        match self {}
    }
    fn timed(self) -> Option<Infallible> {
        match self {}
    }
    fn defaults(self) -> (Ratio, u32) {
        match self {}
    }
    fn index(self) -> usize {
        match self {}
    }
}

/// The toy's narration.
#[derive(Clone, Debug, PartialEq)]
pub enum ToyNote {
    TurnBegins { user: bool },
    TurnEnds,
    Refused(MsgId),
}

impl Encode for ToyNote {
    fn encode(&self, h: &mut TraceHasher) {
        match self {
            ToyNote::TurnBegins { user } => {
                h.tag(0);
                h.bool(*user);
            }
            ToyNote::TurnEnds => h.tag(1),
            ToyNote::Refused(m) => {
                h.tag(2);
                m.encode(h);
            }
        }
    }
}

impl wakesim::sim::record::Note for ToyNote {
    const TAG: u64 = 30;
    fn render(&self) -> String {
        match self {
            ToyNote::TurnBegins { user: true } => "a user's turn begins".to_string(),
            ToyNote::TurnBegins { user: false } => "a delivery's turn begins".to_string(),
            ToyNote::TurnEnds => "the turn ends".to_string(),
            ToyNote::Refused(m) => format!("deliver({m}) refused: a turn runs"),
        }
    }
    fn role(&self) -> Role {
        match self {
            ToyNote::Refused(_) => Role::Call,
            ToyNote::TurnBegins { .. } | ToyNote::TurnEnds => Role::Plain,
        }
    }
    fn in_story(&self) -> InStory {
        InStory::Keep
    }
}

/// The wake-logic API of the toy host.
pub trait ToyWake: Send {
    /// A message was produced.
    fn on_message(&mut self, toy: &mut Toy<'_>, msg: MsgId);
    /// A turn ended: the host is idle.
    fn on_idle(&mut self, toy: &mut Toy<'_>);
}

type ToyKernel = Kernel<ToyEv, Monitor<ToyNote>>;

/// The handle a wake logic calls.
pub struct Toy<'a> {
    k: &'a mut ToyKernel,
    host: &'a mut HostState,
}

impl Toy<'_> {
    /// Start a turn that puts `msg` in the conversation and asks the model; refused (`false`)
    /// while a turn runs.
    pub fn deliver(&mut self, msg: MsgId) -> bool {
        if self.host.busy {
            self.k.emit(Actor::Wake, 1, Ev::Note(ToyNote::Refused(msg)));
            return false;
        }
        self.host.begin_turn(self.k, Some(msg));
        true
    }
}

/// The host's state.
struct HostState {
    busy: bool,
    busy_ms: u64,
    requests: u32,
}

impl HostState {
    fn begin_turn(&mut self, k: &mut ToyKernel, msg: Option<MsgId>) {
        self.busy = true;
        k.emit(Actor::Host, 1, Ev::Idle { idle: false });
        let note = ToyNote::TurnBegins {
            user: msg.is_none(),
        };
        k.emit(Actor::Host, 1, Ev::Note(note));
        if let Some(msg) = msg {
            k.emit(Actor::Host, 1, Ev::Appended { msg });
        }
        self.requests += 1;
        let request = Ev::Request {
            req: self.requests,
            harness: false,
        };
        k.emit(Actor::Host, 1, request);
        k.schedule(self.busy_ms, ToyEv::TurnEnds);
    }
}

/// The toy's events.
#[derive(Debug)]
pub enum ToyEv {
    Produce,
    UserTurn,
    TurnEnds,
}

/// A toy run: the host and its wake logic.
pub struct ToyWorld {
    config: ToyConfig,
    host: HostState,
    wake: Box<dyn ToyWake>,
}

impl World for ToyWorld {
    type Ev = ToyEv;
    type Sink = Monitor<ToyNote>;

    fn start(&mut self, k: &mut ToyKernel) {
        k.emit(Actor::Host, 0, Ev::Idle { idle: true });
        for _ in 0..self.config.messages {
            let t = k.instant(0, 2_000, "message");
            k.schedule(t, ToyEv::Produce);
        }
        for _ in 0..self.config.user_turns {
            let t = k.instant(0, 2_000, "user turn");
            k.schedule(t, ToyEv::UserTurn);
        }
    }

    fn step(&mut self, k: &mut ToyKernel, ev: ToyEv) {
        match ev {
            ToyEv::Produce => {
                let state = u8::from(self.host.busy);
                let from = MsgFrom::sender(MsgKind::Notification, 0);
                let msg = k.produce_from(from, state);
                if self.host.busy {
                    k.emit(Actor::Host, state, Ev::Mark(ARRIVES_WHILE_BUSY));
                }
                let mut toy = Toy {
                    k,
                    host: &mut self.host,
                };
                self.wake.on_message(&mut toy, msg);
            }
            // A user who finds a turn running waits for it and does not prompt.
            ToyEv::UserTurn if self.host.busy => {}
            ToyEv::UserTurn => self.host.begin_turn(k, None),
            ToyEv::TurnEnds => {
                self.host.busy = false;
                k.emit(Actor::Host, 0, Ev::Note(ToyNote::TurnEnds));
                k.emit(Actor::Host, 0, Ev::Idle { idle: true });
                let mut toy = Toy {
                    k,
                    host: &mut self.host,
                };
                self.wake.on_idle(&mut toy);
            }
        }
    }
}

impl Family for ToyFamily {
    const NAME: &'static str = "toy";
    const HOSTS: &'static [(Host, ())] = &[(
        Host {
            name: "toy",
            version_label: "toy 1",
            describe: "a toy host: turns, and a delivery refused while one runs",
        },
        (),
    )];
    const INVARIANTS: InvariantSet = InvariantSet::of(&[Invariant::NoLoss, Invariant::ExactlyOnce]);
    const WINDOWS: &'static [Window] = &[ARRIVES_WHILE_BUSY];
    const STATES: &'static [&'static str] = &["idle", "busy"];
    const COMPACT_RUNS: bool = false;

    type Variant = ();
    type Fault = ToyFault;
    type Note = ToyNote;
    type Config = ToyConfig;
    type Producers = Producers;
    type Timing = Timing;
    type Wake = dyn ToyWake;
    type Call = NoCalls;
    type World = ToyWorld;

    fn config(
        cx: Cx<'_>,
        producers: Producers,
        timing: Timing,
        _faults: Vec<(ToyFault, FaultSpec)>,
    ) -> Result<ToyConfig> {
        let messages = match producers.messages {
            Some(m) if !(1..=20).contains(m.get_ref()) => {
                let message = format!("`messages` is {}, expected 1 to 20", m.get_ref());
                return Err(cx.err(m.span(), message));
            }
            Some(m) => *m.get_ref(),
            None => 3,
        };
        Ok(ToyConfig {
            messages,
            user_turns: producers.user_turns.unwrap_or(2).min(20),
            busy_ms: timing.busy_ms.unwrap_or(300).clamp(1, 10_000),
        })
    }

    fn scope(config: &mut ToyConfig, messages_max: u64) {
        config.messages = config.messages.min(messages_max.max(1));
    }

    fn faults_of(_config: &ToyConfig) -> &[(ToyFault, FaultSpec)] {
        &[]
    }

    fn world(_variant: (), config: &ToyConfig, wake: Box<dyn ToyWake>) -> ToyWorld {
        ToyWorld {
            config: config.clone(),
            host: HostState {
                busy: false,
                busy_ms: config.busy_ms,
                requests: 0,
            },
            wake,
        }
    }

    fn external(_slot: SlotRef, _constants_ms: Vec<u64>) -> Box<dyn ToyWake> {
        unreachable!("the toy family declares no adapter side (Family::ADAPTER is false)")
    }
    const ADAPTER: bool = false;

    fn builtin_wakes(registry: &mut Registry) {
        registry.add::<ToyFamily>(
            "toy.forgets-when-busy",
            "delivers each message at once and ignores a refusal (bug: a message arriving during a turn is lost)",
            || Box::new(Forgets),
        );
        registry.add::<ToyFamily>(
            "toy.keeps-until-idle",
            "keeps a refused message and delivers it when the turn ends",
            || Box::new(Keeps::default()),
        );
    }

    fn sender_name(info: &MsgInfo) -> String {
        format!("toy sender {}", u32::from(info.origin) + 1)
    }
}

/// The buggy logic: a refused delivery is forgotten.
struct Forgets;

impl ToyWake for Forgets {
    fn on_message(&mut self, toy: &mut Toy<'_>, msg: MsgId) {
        let _refused = !toy.deliver(msg);
    }
    fn on_idle(&mut self, _toy: &mut Toy<'_>) {}
}

/// The fixed logic: refused messages wait, in order, for the turn to end.
#[derive(Default)]
struct Keeps {
    held: Vec<MsgId>,
}

impl ToyWake for Keeps {
    fn on_message(&mut self, toy: &mut Toy<'_>, msg: MsgId) {
        if !self.held.is_empty() || !toy.deliver(msg) {
            self.held.push(msg);
        }
    }
    fn on_idle(&mut self, toy: &mut Toy<'_>) {
        if let Some(&first) = self.held.first() {
            if toy.deliver(first) {
                self.held.remove(0);
            }
        }
    }
}
