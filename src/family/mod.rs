//! Host families: one module per family of hosts that offer the same wake-logic API. A family
//! module holds everything about its hosts: the model (a `World`, split along the host's own
//! phases), the wake-logic API, the configuration and its scenario sections, the narration, the
//! race windows and documented drops, the faults, the adapter side of the protocol, and the
//! built-in wake variants.
//!
//! The rest of wakesim reaches a family only through [`AnyFamily`] (the engine runs, explores
//! and reports every family alike), so adding one is its module and one line in [`FAMILIES`]. A
//! family implements [`Family`]; everything else ([`AnyFamily`], running its seeds on a reused
//! kernel) follows from it. Its fault enum is matched exhaustively wherever a fault acts, so a
//! new fault does not compile until it is handled.
//!
//! A family may also declare *real hosts* ([`RealHost`]: `pi@0.99.1`): a pinned release of the
//! real system, run by a driver process through the family-agnostic remote lane (`remote`),
//! judged by the same family's invariants, windows and states, configured by the same scenario
//! sections. A real host is a [`HostKind`] of its family like the models.

pub mod claims;
pub mod common;
pub mod gptme_cli;
pub mod gptme_server;
pub mod pi;
pub mod real;
pub mod registry;

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use toml::Spanned;

pub use real::{OwnDriver, RealHost, Twin, WireNames};
pub use registry::{Entry, Registry};

use crate::adapter::SlotRef;
use crate::adapter::protocol::AdapterCall;
use crate::check::{CheckParams, DerivedBounds, InvariantSet, Monitor, Recording};
use crate::error::Result;
use crate::input::Cx;
use crate::input::values::FaultValue;
use crate::limits::{Limits, WINDOW_CODES_MAX};
use crate::outcome::{Drive, RunResult};
use crate::remote::Vocab;
use crate::sim::choice::{Choices, Ratio};
use crate::sim::msg::{MsgInfo, SenderNames};
use crate::sim::record::{Note, Window};
use crate::sim::{Kernel, World};
use common::faults::{FaultKind, FaultSpec};

/// Every host family wakesim models, in the order lists and errors show them. Registering a new
/// family is one line here.
pub static FAMILIES: &[&dyn AnyFamily] = &[
    &Of::<pi::PiFamily>(PhantomData),
    &Of::<gptme_server::ServerFamily>(PhantomData),
    &Of::<gptme_cli::CliFamily>(PhantomData),
];

/// The families registered from outside the crate ([`register`]), after [`FAMILIES`], each with
/// its type (registering one twice is a no-op). Written before runs start, read when scenarios
/// load and lists print: never inside a run, which reads no global.
static REGISTERED: std::sync::RwLock<Vec<(std::any::TypeId, &'static dyn AnyFamily)>> =
    std::sync::RwLock::new(Vec::new());

/// Every host family: the built-in ones ([`FAMILIES`]), then those registered with
/// [`register`], in registration order. Everything that lists, finds or runs families loops over
/// this.
pub fn families() -> Vec<&'static dyn AnyFamily> {
    let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
    (FAMILIES.iter().copied())
        .chain(registered.iter().map(|(_, f)| *f))
        .collect()
}

/// Register family `F`, defined outside wakesim (a crate's own host model), so scenarios may
/// name its hosts and its wake logics, and every list, run and report treats it as a built-in
/// family. Call it before building the [`Registry`] ([`Registry::builtin`] adds the built-in
/// wake logics of every family registered by then) and before loading its scenarios.
/// Registering the same `F` again returns the family registered first.
///
/// Refused, naming the clash, when `F`'s declarations do not hold together
/// ([`declaration_errors`]), or when its name or one of its hosts' names is taken by another
/// family.
pub fn register<F: Family>() -> std::result::Result<&'static dyn AnyFamily, String> {
    let id = std::any::TypeId::of::<F>();
    let mut registered = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
    if let Some((_, f)) = registered.iter().find(|(t, _)| *t == id) {
        return Ok(*f);
    }
    let errors = declaration_errors::<F>();
    if !errors.is_empty() {
        return Err(format!(
            "family {} is not registered: {}",
            F::NAME,
            errors.join("; ")
        ));
    }
    let others = (FAMILIES.iter().copied()).chain(registered.iter().map(|(_, f)| *f));
    for other in others {
        if other.name() == F::NAME {
            return Err(format!("a family named {} is already registered", F::NAME));
        }
        let taken = (other.hosts().into_iter())
            .map(|h| h.name)
            .chain(other.real_hosts().iter().map(|r| r.host.name));
        for name in taken {
            if F::HOSTS.iter().any(|(h, _)| h.name == name) {
                return Err(format!(
                    "family {}: host `{name}` is already a host of {}",
                    F::NAME,
                    other.name()
                ));
            }
        }
    }
    let family: &'static dyn AnyFamily = Box::leak(Box::new(Of::<F>(PhantomData)));
    registered.push((id, family));
    Ok(family)
}

/// What a family declares that the compiler cannot check, each broken rule in words: its faults'
/// indices are their positions (per-seed fault states are indexed by them) and their names
/// find them, its windows' codes are distinct and small enough for the monitor, it has a host
/// and its host names are distinct. Empty when it holds together.
pub fn declaration_errors<F: Family>() -> Vec<String> {
    let mut errors = Vec::new();
    for (i, f) in F::Fault::LIST.iter().enumerate() {
        if f.index() != i {
            errors.push(format!(
                "fault {f:?} has index {} at position {i}",
                f.index()
            ));
        }
        if F::Fault::from_name(f.name()) != Some(*f) {
            errors.push(format!(
                "fault {f:?}: its name `{}` finds another",
                f.name()
            ));
        }
    }
    let mut codes: Vec<u8> = F::WINDOWS.iter().map(|w| w.code).collect();
    codes.sort_unstable();
    codes.dedup();
    if codes.len() != F::WINDOWS.len() {
        errors.push("two windows share a code".to_string());
    }
    if let Some(c) = codes.iter().find(|&&c| usize::from(c) >= WINDOW_CODES_MAX) {
        errors.push(format!(
            "window code {c} is not below {WINDOW_CODES_MAX} (limits::WINDOW_CODES_MAX)"
        ));
    }
    if F::HOSTS.is_empty() {
        errors.push("it declares no host".to_string());
    }
    let mut names: Vec<&str> = F::HOSTS.iter().map(|(h, _)| h.name).collect();
    names.sort_unstable();
    names.dedup();
    if names.len() != F::HOSTS.len() {
        errors.push("two of its hosts share a name".to_string());
    }
    errors
}

/// One host a family models: a scenario's `host`.
#[derive(Debug)]
pub struct Host {
    pub name: &'static str,
    /// The version it plays, for timelines and the adapter's `hello`.
    pub version_label: &'static str,
    pub describe: &'static str,
}

/// A host family, as its module declares it.
pub trait Family: Sized + 'static {
    /// Its name in `wakesim list`, errors and the adapter's `hello`.
    const NAME: &'static str;
    /// Its hosts, each with what tells the model which one it plays.
    const HOSTS: &'static [(Host, Self::Variant)];
    /// The invariants its runs are judged by.
    const INVARIANTS: InvariantSet;
    /// The race windows its runs may mark.
    const WINDOWS: &'static [Window];
    /// The names of its records' state codes, by code (the timeline's last column).
    const STATES: &'static [&'static str];
    /// Its timelines show a run of consecutive messages made or dropped alike at one instant as
    /// one line (a prompt flood, an exit's drops), and the messages a request carries as ranges.
    const COMPACT_RUNS: bool;

    /// Which of its hosts a world plays (pi's generation; `()` for a family of one host).
    type Variant: Copy + 'static;
    type Fault: FaultKind;
    type Note: Note;
    /// What a scenario configures: producers, faults and timing.
    type Config: Clone + fmt::Debug + Send + Sync + 'static;
    /// The `[producers]` and `[timing]` tables as read, each rejecting unknown keys.
    type Producers: DeserializeOwned + Default;
    type Timing: DeserializeOwned + Default;
    /// The wake-logic API (`dyn PiWake`, ...).
    type Wake: ?Sized + 'static;
    /// The calls its adapters may make (`adapter::protocol::AdapterCall`, declared in its
    /// `adapter.rs`; `NoCalls` for a family without an adapter side): the protocol's frame is
    /// shared, every call is the family's own.
    type Call: AdapterCall;
    type World: World<Sink = Monitor<Self::Note>>;

    /// The configuration a scenario's sections make, with every value checked.
    fn config(
        cx: Cx<'_>,
        producers: Self::Producers,
        timing: Self::Timing,
        faults: Vec<(Self::Fault, FaultSpec)>,
    ) -> Result<Self::Config>;

    /// Restrict a configuration to explore's scope: every producer count at most `messages_max`.
    fn scope(config: &mut Self::Config, messages_max: u64);

    /// The faults `config` names in `[faults]`, with their specs.
    fn faults_of(config: &Self::Config) -> &[(Self::Fault, FaultSpec)];

    /// The world of one run: host `variant` with `config` and a fresh wake logic.
    fn world(variant: Self::Variant, config: &Self::Config, wake: Box<Self::Wake>) -> Self::World;

    /// Make `world`, the world of an earlier run, the world `world(variant, config, wake)` would
    /// build: the same state, every field set anew, keeping allocations. A family whose worlds
    /// are cheap to build, or that does not keep them, builds anew (the default).
    fn renew(
        world: &mut Self::World,
        variant: Self::Variant,
        config: &Self::Config,
        wake: Box<Self::Wake>,
    ) {
        *world = Self::world(variant, config, wake);
    }

    /// A wake logic that lives in an adapter process. Called only when [`Family::ADAPTER`]
    /// holds: a scenario naming an adapter for a family without one is refused when it loads.
    fn external(slot: SlotRef, constants_ms: Vec<u64>) -> Box<Self::Wake>;
    /// The family speaks the adapter protocol (`adapter.rs`): its wake logics may live in
    /// another language. A family whose wake logics are Rust only (one written outside wakesim,
    /// say) sets it false.
    const ADAPTER: bool = true;

    /// Register the family's built-in wake logics.
    fn builtin_wakes(registry: &mut Registry);

    /// Its messages' senders as timelines and violations name them, in its hosts' words
    /// (`subagent a`, `watch w1`); the conversation is added for every family alike.
    fn sender_name(info: &MsgInfo) -> String;

    /// Its real hosts (none unless the family has a driver).
    const REAL_HOSTS: &'static [RealHost] = &[];
    /// What its drivers name on the wire.
    const WIRE: WireNames = WireNames::NONE;
    /// The labels of its model's per-seed plan draws (producers, faults), which its drivers draw
    /// first, alike: conformance compares the two lanes' plans by them.
    const PLAN_LABELS: &'static [&'static str] = &[];
    /// Race windows only its real hosts can mark (threads the model runs as one event): a seed
    /// whose real run marked one and then parted from every model run is excluded from
    /// conformance, by name, rather than counted as a divergence.
    const UNMODELLED: &'static [Window] = &[];
    /// Its own driver, when `hosts/launch.mjs` does not start its real hosts.
    const OWN_DRIVER: Option<OwnDriver> = None;
    /// Where its drivers' fake peers live among the embedded sources (`hosts/pi/peers`), each
    /// `NAME.mjs` a scenario names as `deliver = "peer:NAME"`; none when its drivers have none.
    const PEERS: Option<&'static str> = None;

    /// A configuration resolved for a driver's `hello` (`scenario`): every default applied.
    fn real_sections(_config: &Self::Config) -> serde_json::Value {
        serde_json::Value::Object(Default::default())
    }

    /// The model twin of a real host's wake (`hello.wake`): the adapter command, or the built-in
    /// wake logic, that runs the same code on the family's model host.
    fn twin(_wake: &serde_json::Value) -> std::result::Result<Twin, String> {
        Err(format!("{} real hosts have no model twin yet", Self::NAME))
    }

    /// The checkers' bounds derived from a configuration's host parameters, where the family
    /// documents its waits (issue 15, class 1); the scenario applies them (`scenario/raw.rs`).
    fn derived_bounds(_config: &Self::Config) -> Option<DerivedBounds> {
        None
    }
}

/// A family as the rest of wakesim sees it: object-safe, one static instance per family.
pub trait AnyFamily: Sync {
    fn name(&self) -> &'static str;
    fn hosts(&self) -> Vec<&'static Host>;
    fn invariants(&self) -> InvariantSet;
    fn windows(&self) -> &'static [Window];
    fn compact_runs(&self) -> bool;
    fn state_name(&self, code: u8) -> &'static str;
    /// Its faults, for `wakesim list`.
    fn faults(&self) -> Vec<FaultInfo>;
    /// Read the family's sections (`[producers]`, `[faults]`, `[timing]`) of a scenario file.
    fn config(&self, cx: Cx<'_>) -> Result<Config>;
    /// `config` restricted to explore's scope (see [`Family::scope`]).
    fn scoped(&self, config: &Config, messages_max: u64) -> Config;
    /// The faults `config` switches on in some seeds (share above 0), with their shares.
    fn faults_on(&self, config: &Config) -> Vec<(&'static str, Ratio)>;
    /// A runner of this family's seeds, keeping its kernel's allocations across seeds.
    fn runs(&self) -> Box<dyn Runs>;
    /// Register the family's built-in wake logics.
    fn builtin_wakes(&self, registry: &mut Registry);
    /// Its real hosts.
    fn real_hosts(&self) -> &'static [RealHost];
    /// What its drivers may name: its states, windows, drops, refusals and session ends.
    fn vocab(&self) -> Vocab;
    /// `config` resolved for a driver (see [`Family::real_sections`]).
    fn real_sections(&self, config: &Config) -> serde_json::Value;
    /// The model twin (see [`Family::twin`]).
    fn twin(&self, wake: &serde_json::Value) -> std::result::Result<Twin, String>;
    /// Its plan's draw labels (see [`Family::PLAN_LABELS`]).
    fn plan_labels(&self) -> &'static [&'static str];
    /// The windows only its real hosts have (see [`Family::UNMODELLED`]).
    fn unmodelled(&self) -> &'static [Window];
    /// Its own driver (see [`Family::OWN_DRIVER`]).
    fn own_driver(&self) -> Option<OwnDriver>;
    /// Where its drivers' fake peers live (see [`Family::PEERS`]).
    fn peers(&self) -> Option<&'static str>;
    /// Whether its wake logics may live in an adapter (see [`Family::ADAPTER`]).
    fn has_adapter(&self) -> bool;
    /// The `type` of every call its adapters may make (see [`Family::Call`]).
    fn adapter_calls(&self) -> &'static [&'static str];
    /// The bounds derived from `config` (see [`Family::derived_bounds`]).
    fn derived_bounds(&self, config: &Config) -> Option<DerivedBounds>;
    /// How it names its senders (see [`Family::sender_name`]).
    fn sender_names(&self) -> SenderNames;
    /// What its declarations break (see [`declaration_errors`]).
    fn declaration_errors(&self) -> Vec<String>;
}

/// One fault of a family, for `wakesim list`.
pub struct FaultInfo {
    pub name: &'static str,
    pub timed: bool,
    pub describe: &'static str,
}

/// A host of a family: what a scenario's `host` names. A model host, or a real one.
#[derive(Clone, Copy)]
pub struct HostKind {
    family: &'static dyn AnyFamily,
    index: usize,
    host: &'static Host,
    real: Option<&'static RealHost>,
}

impl HostKind {
    /// Every model host, family by family.
    pub fn all() -> impl Iterator<Item = HostKind> {
        families().into_iter().flat_map(|family| {
            family
                .hosts()
                .into_iter()
                .enumerate()
                .map(move |(index, host)| HostKind {
                    family,
                    index,
                    host,
                    real: None,
                })
        })
    }

    /// Every real host, family by family.
    pub fn real_hosts() -> impl Iterator<Item = HostKind> {
        families().into_iter().flat_map(|family| {
            (family.real_hosts().iter())
                .enumerate()
                .map(move |(index, real)| HostKind {
                    family,
                    index,
                    host: &real.host,
                    real: Some(real),
                })
        })
    }

    /// A model host or a real one (`family@version`) by name. A real host at a version its
    /// family does not declare (`pi@0.76.0`) is one too when the family has real hosts: whether
    /// that version is pinned is the scenario's check (it names the command that pins one).
    pub fn from_name(name: &str) -> Option<HostKind> {
        HostKind::all()
            .chain(HostKind::real_hosts())
            .find(|h| h.name() == name)
            .or_else(|| HostKind::undeclared_real(name))
    }

    /// `family@X.Y.Z` for a family with real hosts, at a version it does not declare: judged by
    /// the family's invariants like a declared one, with no model twin (conformance is declared
    /// per version, with the model host it was measured against). Each distinct name is made
    /// once and kept for the process (a few words per version a scenario names).
    fn undeclared_real(name: &str) -> Option<HostKind> {
        let (family_name, version) = name.split_once('@')?;
        let parts: Vec<&str> = version.split('.').collect();
        let numeric =
            |p: &&str| !p.is_empty() && p.len() <= 6 && p.bytes().all(|b| b.is_ascii_digit());
        if parts.len() != 3 || !parts.iter().all(numeric) {
            return None;
        }
        let family = (families().into_iter())
            .find(|f| f.name() == family_name && !f.real_hosts().is_empty())?;
        static MADE: std::sync::Mutex<BTreeMap<String, &'static RealHost>> =
            std::sync::Mutex::new(BTreeMap::new());
        let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
        let real: &'static RealHost = made.entry(name.to_string()).or_insert_with(|| {
            let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
            let name = leak(name.to_string());
            Box::leak(Box::new(RealHost {
                host: Host {
                    name,
                    version_label: name,
                    describe: leak(format!(
                        "the real {family_name} {version}, pinned by a committed lock file; judged by the family's invariants, no model twin"
                    )),
                },
                version: leak(version.to_string()),
                model: "",
            }))
        });
        Some(HostKind {
            family,
            index: family.real_hosts().len(),
            host: &real.host,
            real: Some(real),
        })
    }

    /// The real host this is, if it is one.
    pub fn real(self) -> Option<&'static RealHost> {
        self.real
    }

    /// The model host of the family a real host is compared with (a model host is its own);
    /// none for a real host at an undeclared version.
    pub fn model(self) -> Option<HostKind> {
        let Some(real) = self.real else {
            return Some(self);
        };
        if real.model.is_empty() {
            return None;
        }
        let model = HostKind::from_name(real.model)
            .filter(|h| h.real.is_none() && h.family.name() == self.family.name());
        Some(model.unwrap_or_else(|| {
            panic!(
                "{}: model host {} is not in its family",
                self.name(),
                real.model
            )
        }))
    }

    pub fn name(self) -> &'static str {
        self.host.name
    }

    pub fn version_label(self) -> &'static str {
        self.host.version_label
    }

    pub fn describe(self) -> &'static str {
        self.host.describe
    }

    /// Its family.
    pub fn family(self) -> &'static dyn AnyFamily {
        self.family
    }

    /// The invariants this host's runs are judged by (its family's).
    pub fn invariants(self) -> InvariantSet {
        self.family.invariants()
    }

    /// Which of its family's hosts (or, for a real host, of its real hosts) it is.
    pub fn index(self) -> usize {
        self.index
    }
}

impl PartialEq for HostKind {
    fn eq(&self, other: &HostKind) -> bool {
        self.name() == other.name()
    }
}

impl Eq for HostKind {}

impl fmt::Debug for HostKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A family's configuration, type-erased: the engine and reports carry it, only its family
/// reads it.
#[derive(Clone)]
pub struct Config(Arc<dyn AnyConfig>);

trait AnyConfig: Any + fmt::Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any + fmt::Debug + Send + Sync> AnyConfig for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Config {
    pub fn new<T: Any + fmt::Debug + Send + Sync>(config: T) -> Config {
        Config(Arc::new(config))
    }

    /// The configuration, if it is of family configuration type `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        (*self.0).as_any().downcast_ref()
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Where a run's wake logic comes from.
pub enum WakeSource<'a> {
    /// A registered (built-in or user) logic: a fresh instance per run.
    Registered(&'a Entry),
    /// A logic in an adapter process, with the constants its scenario declares.
    Adapter(SlotRef, Vec<u64>),
}

/// One run of a family's host.
pub struct Job<'a> {
    pub host: HostKind,
    pub config: &'a Config,
    pub wake: WakeSource<'a>,
    pub limits: Limits,
    pub check: CheckParams,
    pub seed: u64,
    /// A recorded choice stream; `None`: the seed's own random stream.
    pub choices: Option<Choices>,
    pub recording: Recording,
}

/// Runs a family's seeds (one per thread: it keeps its kernel between seeds).
pub trait Runs {
    fn run(&mut self, job: Job<'_>) -> RunResult;
}

/// The [`AnyFamily`] of a [`Family`]. It holds no `F`, only its type (hence `fn() -> F`, which
/// is `Sync` whatever `F` is).
pub struct Of<F>(PhantomData<fn() -> F>);

/// The family's own sections of a scenario file; every other key is the scenario's.
#[derive(Deserialize)]
struct Sections<P, T> {
    #[serde(default)]
    producers: P,
    #[serde(default)]
    faults: BTreeMap<Spanned<String>, Spanned<FaultValue>>,
    #[serde(default)]
    timing: T,
}

/// `[faults]`, checked against the family's fault names.
fn faults<F: FaultKind>(
    cx: Cx<'_>,
    raw: &BTreeMap<Spanned<String>, Spanned<FaultValue>>,
) -> Result<Vec<(F, FaultSpec)>> {
    raw.iter()
        .map(|(name, value)| {
            let fault = F::from_name(name.get_ref()).ok_or_else(|| {
                let names: Vec<_> = F::LIST.iter().map(|f| f.name()).collect();
                cx.err(
                    name.span(),
                    format!(
                        "unknown fault `{}`, expected one of {}",
                        name.get_ref(),
                        names.join(", ")
                    ),
                )
            })?;
            let (rate, max) = fault.defaults();
            let v = value.get_ref();
            Ok((
                fault,
                FaultSpec {
                    share: v.share,
                    rate: v.rate.unwrap_or(rate),
                    max: v.max.unwrap_or(max),
                },
            ))
        })
        .collect()
}

impl<F: Family> AnyFamily for Of<F> {
    fn name(&self) -> &'static str {
        F::NAME
    }

    fn hosts(&self) -> Vec<&'static Host> {
        F::HOSTS.iter().map(|(h, _)| h).collect()
    }

    fn invariants(&self) -> InvariantSet {
        F::INVARIANTS
    }

    fn windows(&self) -> &'static [Window] {
        F::WINDOWS
    }

    fn compact_runs(&self) -> bool {
        F::COMPACT_RUNS
    }

    fn state_name(&self, code: u8) -> &'static str {
        F::STATES.get(usize::from(code)).copied().unwrap_or("?")
    }

    fn faults(&self) -> Vec<FaultInfo> {
        F::Fault::LIST
            .iter()
            .map(|f| FaultInfo {
                name: f.name(),
                timed: f.is_timed(),
                describe: f.describe(),
            })
            .collect()
    }

    fn config(&self, cx: Cx<'_>) -> Result<Config> {
        let raw: Sections<F::Producers, F::Timing> =
            toml::from_str(cx.text).map_err(|e| cx.toml(e))?;
        let faults = faults::<F::Fault>(cx, &raw.faults)?;
        F::config(cx, raw.producers, raw.timing, faults).map(Config::new)
    }

    fn faults_on(&self, config: &Config) -> Vec<(&'static str, Ratio)> {
        (F::faults_of(typed::<F>(config)).iter())
            .filter(|(_, spec)| spec.share.num > 0)
            .map(|(f, spec)| (f.name(), spec.share))
            .collect()
    }

    fn scoped(&self, config: &Config, messages_max: u64) -> Config {
        let mut c = typed::<F>(config).clone();
        F::scope(&mut c, messages_max);
        Config::new(c)
    }

    fn runs(&self) -> Box<dyn Runs> {
        Box::new(FamilyRuns::<F> {
            kernel: None,
            world: None,
        })
    }

    fn builtin_wakes(&self, registry: &mut Registry) {
        F::builtin_wakes(registry);
    }

    fn real_hosts(&self) -> &'static [RealHost] {
        F::REAL_HOSTS
    }

    fn vocab(&self) -> Vocab {
        Vocab {
            states: F::STATES,
            windows: F::WINDOWS,
            drops: F::WIRE.drops,
            refusals: F::WIRE.refusals,
            ends: F::WIRE.ends,
        }
    }

    fn real_sections(&self, config: &Config) -> serde_json::Value {
        F::real_sections(typed::<F>(config))
    }

    fn twin(&self, wake: &serde_json::Value) -> std::result::Result<Twin, String> {
        F::twin(wake)
    }

    fn plan_labels(&self) -> &'static [&'static str] {
        F::PLAN_LABELS
    }

    fn unmodelled(&self) -> &'static [Window] {
        F::UNMODELLED
    }

    fn own_driver(&self) -> Option<OwnDriver> {
        F::OWN_DRIVER
    }

    fn peers(&self) -> Option<&'static str> {
        F::PEERS
    }

    fn has_adapter(&self) -> bool {
        F::ADAPTER
    }

    fn adapter_calls(&self) -> &'static [&'static str] {
        <F::Call as AdapterCall>::TYPES
    }

    fn derived_bounds(&self, config: &Config) -> Option<DerivedBounds> {
        F::derived_bounds(typed::<F>(config))
    }

    fn sender_names(&self) -> SenderNames {
        SenderNames(F::sender_name)
    }

    fn declaration_errors(&self) -> Vec<String> {
        declaration_errors::<F>()
    }
}

/// A configuration of family `F`. Scenarios are read by their host's family, so any other is a
/// bug of wakesim's, not of the input.
fn typed<F: Family>(config: &Config) -> &F::Config {
    config
        .get::<F::Config>()
        .unwrap_or_else(|| panic!("a {} run was given another family's configuration", F::NAME))
}

/// The kernel a family's worlds run on.
type KernelOf<F> = Kernel<<<F as Family>::World as World>::Ev, Monitor<<F as Family>::Note>>;

/// A family's seeds on one reused kernel and, for built-in wake logics, one renewed world.
struct FamilyRuns<F: Family> {
    kernel: Option<KernelOf<F>>,
    world: Option<F::World>,
}

impl<F: Family> Runs for FamilyRuns<F> {
    fn run(&mut self, job: Job<'_>) -> RunResult {
        let config = typed::<F>(job.config);
        let variant = F::HOSTS[job.host.index()].1;
        if let WakeSource::Adapter(slot, constants_ms) = job.wake {
            // An adapter's wake logic is dropped with its run's world, as it always was. A run
            // on the seed's own stream may send events ahead of their answers
            // (`adapter::speculate`): when one was not quiet, the run is thrown away and the
            // seed runs again, waiting for it.
            self.world = None;
            slot.borrow_mut().begin_seed(job.choices.is_none());
            let mut choices = job.choices;
            loop {
                let drive = Drive {
                    seed: job.seed,
                    choices: choices.take(),
                    limits: job.limits,
                    enabled: F::INVARIANTS,
                    check: job.check,
                    recording: job.recording,
                    names: SenderNames(F::sender_name),
                };
                let wake = F::external(Rc::clone(&slot), constants_ms.clone());
                let result = drive.run(&mut self.kernel, || F::world(variant, config, wake));
                if !slot.borrow_mut().settle() {
                    return result;
                }
            }
        }
        let wake: Box<F::Wake> = match job.wake {
            WakeSource::Registered(entry) => entry.make::<F>().unwrap_or_else(|| {
                panic!(
                    "{} is a {} wake logic, not {}: scenarios are checked when they load",
                    entry.name,
                    entry.family().name(),
                    F::NAME
                )
            }),
            WakeSource::Adapter(..) => unreachable!("taken above"),
        };
        let drive = Drive {
            seed: job.seed,
            choices: job.choices,
            limits: job.limits,
            enabled: F::INVARIANTS,
            check: job.check,
            recording: job.recording,
            names: SenderNames(F::sender_name),
        };
        drive.run_in(&mut self.kernel, &mut self.world, |w| match w {
            Some(w) => F::renew(w, variant, config, wake),
            None => *w = Some(F::world(variant, config, wake)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What every built-in family declares holds together (what `register` checks of a
    /// family registered from outside).
    #[test]
    fn every_family_declares_consistently() {
        for family in FAMILIES {
            assert_eq!(
                family.declaration_errors(),
                Vec::<String>::new(),
                "{}",
                family.name()
            );
        }
    }

    /// Each family's adapter calls are its own: a family with an adapter side has calls, and
    /// no call `type` is the frame's or the simulator's.
    #[test]
    fn every_family_owns_its_adapter_calls() {
        use crate::adapter::protocol::{FRAME_TYPES, SIMULATOR_TYPES};
        for family in FAMILIES {
            let calls = family.adapter_calls();
            assert_eq!(family.has_adapter(), !calls.is_empty(), "{}", family.name());
            for c in calls {
                assert!(
                    !FRAME_TYPES.contains(c) && !SIMULATOR_TYPES.contains(c),
                    "{c}"
                );
            }
        }
    }

    #[test]
    fn host_names_are_unique_and_found() {
        let names: Vec<&str> = HostKind::all().map(|h| h.name()).collect();
        for n in &names {
            assert_eq!(names.iter().filter(|m| *m == n).count(), 1, "{n}");
            assert_eq!(HostKind::from_name(n).map(|h| h.name()), Some(*n));
        }
        assert_eq!(
            names,
            ["pi", "pi-0.58", "pi-1.6", "gptme-server", "gptme-cli"]
        );
        for h in HostKind::real_hosts() {
            assert_eq!(
                HostKind::from_name(h.name()).map(|h| h.name()),
                Some(h.name())
            );
            let real = h.real().expect("a real host");
            assert_eq!(h.name(), format!("{}@{}", h.family().name(), real.version));
            let model = h.model().expect("a declared real host has a model twin");
            assert!(model.real().is_none(), "{}", h.name());
        }
    }
}
