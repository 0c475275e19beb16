//! pi wake logics from gentle-shell's history (`docs/hosts/gentle-agents.md`).
//!
//! | name | variant | bug |
//! |---|---|---|
//! | `pi.raw-trigger-turn` | G0 | idle wake runs without before_agent_start (P-1, P-2) |
//! | `pi.raw-follow-up` | G0 before #867 | completions as followUp: late while the parent calls tools (P-11) |
//! | `pi.counter` | G1 | counter reads 0 between inner runs: message stranded in nextTurn (P-3) |
//! | `pi.is-idle` | G2 | two wakes while a prompt is prepared: concurrent prompts (P-4) |
//! | `pi.reservation` | G3 | a failed wake prompt holds the reservation: stranded (P-5) |
//! | `pi.gentle` | G4 | upstream route/hold/coalesced wake with T2 and T3; four gaps wakesim found |
//! | `pi.gentle-fixed` | G4 + fixes | G4 with wakesim's fixes for those gaps |
//! | `pi.gentle-pre-t3` | G4 without T3 | a user prompt parked in input races the wake (P-9) |
//! | `pi.gentle-pre-t2` | G4 without T2/T3 | content held over /tree waits for the next prompt (P-10) |

mod counter;
mod gentle;
mod is_idle;
mod outbox;
mod raw;
mod reservation;

pub use counter::Counter;
pub use gentle::Gentle;
pub use is_idle::IsIdle;
pub use outbox::{Outbox, Sender, SenderHook};
pub use raw::Raw;
pub use reservation::Reservation;

use crate::family::Registry;
use crate::family::pi::PiFamily;
use crate::family::pi::api::SendOptions;

pub(crate) fn register(r: &mut Registry) {
    r.add::<PiFamily>(
        "pi.raw-trigger-turn",
        "G0: sendMessage(steer|followUp, triggerTurn) as is; an idle host runs it directly without before_agent_start",
        || Box::new(Outbox::new(Raw)),
    );
    r.add::<PiFamily>(
        "pi.raw-follow-up",
        "G0 before #867: completions sent as followUp too; drained only when the parent stops calling tools",
        || Box::new(Outbox::new(Raw).completions_as(SendOptions::follow_up())),
    );
    r.add::<PiFamily>(
        "pi.counter",
        "G1: idle = agent_start/agent_end counter at 0; reads 0 between inner runs and strands nextTurn",
        || Box::new(Outbox::new(Counter::default())),
    );
    r.add::<PiFamily>(
        "pi.is-idle",
        "G2: ctx.isIdle() then nextTurn + sendUserMessage(\" \"); no reservation, so two wakes race",
        || Box::new(Outbox::new(IsIdle::default())),
    );
    r.add::<PiFamily>(
        "pi.reservation",
        "G3: G2 plus a 60 s wake reservation with lazy expiry; a failed wake prompt strands later messages",
        || Box::new(Outbox::new(Reservation::default())),
    );
    r.add::<PiFamily>(
        "pi.gentle",
        "G4: upstream route/hold/coalesced wake with start window, hold re-check (T2) and input grace (T3)",
        || Box::new(Gentle::new(true, true)),
    );
    r.add::<PiFamily>(
        "pi.gentle-fixed",
        "G4 with wakesim's fixes: re-owe a wake whose prompt never started; reopen the input window after a compaction; withdraw a wake that would race a user prompt; keep held orchestrator messages in order",
        || Box::new(Gentle::fixed()),
    );
    r.add::<PiFamily>(
        "pi.gentle-pre-t3",
        "G4 without T3: a user prompt parked in input races the wake prompt (P-9)",
        || Box::new(Gentle::new(true, false)),
    );
    r.add::<PiFamily>(
        "pi.gentle-pre-t2",
        "G4 without T2 and T3: content held over /tree waits for an unrelated prompt (P-10)",
        || Box::new(Gentle::new(false, false)),
    );
}
