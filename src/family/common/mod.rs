//! What the host families share: the fault plumbing ([`faults`]), conversations ([`conv`]),
//! scenario ranges ([`Span`]), what every host core repeats ([`Core`]: emitting observations
//! and notes in its current state, marking race windows, reporting idleness) and the call
//! budget of one wake-logic invocation ([`Calls`]).

pub mod conv;
pub mod faults;
pub mod names;

pub use crate::input::Span;

pub use crate::limits::BudgetExceeded;
use crate::limits::CALLS_MAX;
use crate::sim::Kernel;
use crate::sim::msg::{Payload, id_list};
use crate::sim::record::{Actor, Ev, Note, Window};
use crate::sim::sink::Sink;

/// A family's host states: the enum, whose code (`state as u8`) records carry and the trace
/// hash encodes, each with the name the timeline's last column shows; and `STATES`, the names by
/// code. Codes are written out and checked at compile time to be their positions.
macro_rules! host_states {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $code:literal => $text:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum $name {
            $($(#[$vmeta])* $variant = $code,)*
        }

        /// The names of the state codes (`state as u8`), for the timeline's last column.
        pub const STATES: &[&str] = &[$($text),*];

        const _: () = {
            let mut position = 0;
            $(
                assert!($name::$variant as usize == position, "a state's code is its position");
                position += 1;
            )*
            let _ = position;
        };
    };
}

pub(crate) use host_states;

/// Race windows any family may mark.
pub mod windows {
    use crate::sim::record::Window;

    /// A message arrives exactly on one of the wake logic's constants (one either side) after
    /// its previous wake: a reservation or grace period boundary.
    pub const AT_CONSTANT_BOUNDARY: Window = Window::new(
        8,
        "at-constant-boundary",
        "a message arrives a constant of the wake logic (±1 ms) after its last wake",
    );

    pub const ALL: &[Window] = &[AT_CONSTANT_BOUNDARY];
}

/// What every host core repeats: it emits in its current state, marks windows as the host, and
/// reports each edge of its quietness as `Ev::Idle` (what BOUNDED-LATENCY measures idle time by).
pub trait Core {
    type Ev;
    type Note: Note;

    /// The host's state code now (the timeline's last column; the family's `state_name`).
    fn state_code(&self) -> u8;

    /// Nothing runs that would move a pending message: only the wake logic (or outside input)
    /// can now.
    fn quiet(&self) -> bool;

    /// The quietness last reported.
    fn idle_mut(&mut self) -> &mut bool;

    /// Record an observation at the current time, in the current state. A sink that keeps only
    /// the verdict reads no state (only the trace hash and the timeline carry it), so the state
    /// is not worked out for it (the gptme server's looks at every session).
    #[inline(always)]
    fn emit<S: Sink<Note = Self::Note>>(
        &self,
        k: &mut Kernel<Self::Ev, S>,
        actor: Actor,
        ev: Ev<Self::Note>,
    ) {
        let state = self.record_state(k);
        k.emit(actor, state, ev);
    }

    /// The state code a record made now carries: the host's state, or 0 for a sink that keeps
    /// no states (see [`Core::emit`]).
    #[inline(always)]
    fn record_state<S: Sink<Note = Self::Note>>(&self, k: &Kernel<Self::Ev, S>) -> u8 {
        if k.sink.narrating() {
            self.state_code()
        } else {
            0
        }
    }

    /// Record a note. A sink that keeps only the verdict drops notes: it is not handed one
    /// (no record to move and match for narration nobody reads; inlined, so neither is the note
    /// built nor dropped for it where building it has no effect).
    #[inline(always)]
    fn note<S: Sink<Note = Self::Note>>(
        &self,
        k: &mut Kernel<Self::Ev, S>,
        actor: Actor,
        note: Self::Note,
    ) {
        if !k.sink.narrating() {
            return;
        }
        self.emit(k, actor, Ev::Note(note));
    }

    /// Record the note `make` builds, building it only for a sink that keeps notes: for a note
    /// whose making allocates (a payload of several ids, the list it is collected from).
    #[inline]
    fn note_with<S: Sink<Note = Self::Note>>(
        &self,
        k: &mut Kernel<Self::Ev, S>,
        actor: Actor,
        make: impl FnOnce() -> Self::Note,
    ) {
        if !k.sink.narrating() {
            return;
        }
        self.emit(k, actor, Ev::Note(make()));
    }

    /// Mark a race window reached.
    fn mark<S: Sink<Note = Self::Note>>(&self, k: &mut Kernel<Self::Ev, S>, w: Window) {
        k.choices.mark(w.code);
        self.emit(k, Actor::Host, Ev::Mark(w));
    }

    /// The messages of `payload` enter the conversation.
    fn append<S: Sink<Note = Self::Note>>(&self, k: &mut Kernel<Self::Ev, S>, payload: &Payload) {
        for &msg in payload.ids() {
            self.emit(k, Actor::Host, Ev::Appended { msg });
        }
    }

    /// Emit `Idle` when quietness changed (after every event: inlined, the unchanged case is a
    /// compare).
    #[inline]
    fn sync_idle<S: Sink<Note = Self::Note>>(&mut self, k: &mut Kernel<Self::Ev, S>) {
        let q = self.quiet();
        if q != *self.idle_mut() {
            *self.idle_mut() = q;
            self.emit(k, Actor::Host, Ev::Idle { idle: q });
        }
    }
}

/// The calls one wake-logic invocation has made; past [`CALLS_MAX`] the run stops as runaway.
#[derive(Clone, Copy, Debug, Default)]
pub struct Calls(u32);

impl Calls {
    /// A new invocation starts with a fresh budget.
    pub fn reset(&mut self) {
        self.0 = 0;
    }

    /// Count one call of the wake logic into its host.
    pub fn count(&mut self) {
        self.0 += 1;
        if self.0 > CALLS_MAX {
            std::panic::panic_any(BudgetExceeded);
        }
    }
}

/// One fewer of a model core's counters (prompts in flight, settling runs, live steps...).
/// Kept in release, where an underflow would wrap silently: a model that ends something it never
/// started is a bug in the model, and the run stops with a panic naming the counter (caught and
/// reported as the seed's outcome) instead of going on with a wrong host state.
#[track_caller]
pub fn count_down(counter: &mut u32, what: &'static str) {
    match counter.checked_sub(1) {
        Some(n) => *counter = n,
        None => panic!("model invariant broken: {what} ended with none started"),
    }
}

/// `[m1 m2]`, `[m1–m101]`: what an item carries, runs of ids shortened.
pub fn bracketed(p: &Payload) -> String {
    format!("[{}]", id_list(p.ids()))
}
