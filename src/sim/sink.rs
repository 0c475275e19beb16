//! Where a kernel's records go. The kernel and the host models emit into a [`Sink`]; the
//! checkers' monitor (`check::Monitor`) is the one the runs use. The bottom layer knows the
//! trait, never the monitor.

use crate::sim::msg::{MsgId, MsgInfo, SenderNames};
use crate::sim::record::{Actor, Ev, Note};
use crate::sim::time::Ms;

/// The sink for every record of a run, and the register of the messages producers made.
pub trait Sink {
    /// The narration of the family whose runs this sink takes.
    type Note: Note;

    /// Record one event at `t`.
    fn emit(&mut self, t: Ms, actor: Actor, state: u8, ev: Ev<Self::Note>);

    /// Whether notes and host states are kept (hashed or traced). A sink that keeps only the
    /// verdict drops notes and ignores the `state` of `emit`, so a host may skip building a note
    /// whose making costs (an allocation) or working out its state.
    fn narrating(&self) -> bool {
        true
    }

    /// Register a produced message (its id is the number registered before it); the caller
    /// then emits `Ev::Produced`.
    fn add_message(&mut self, info: MsgInfo);

    /// Every message produced so far, in production order.
    fn messages(&self) -> &[MsgInfo];

    /// How the run's family names its senders, stamped on every message it produces.
    fn sender_names(&self) -> SenderNames;

    /// Messages produced and neither delivered nor dropped, in production order: what a
    /// documented drop (a replaced session, SIGTERM) discards.
    fn owed(&self) -> &[MsgId];

    /// The run is over at `t` (not called when the step budget ran out).
    fn finish(&mut self, t: Ms);
}
