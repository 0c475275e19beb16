//! gptme-server wake logics (`docs/hosts/gptme.md`), one file per variant:
//! `SessionManager.retry_deferred_watch_wakes` and the watch tool's `_deliver`.
//!
//! | name | variant | bug |
//! |---|---|---|
//! | `gptme.w0-drop-refused` | W0 | the refused event is dropped: lost (G-2) |
//! | `gptme.w1-per-event-drain` | W1 | the drain's second wake is refused by its first: stranded (G-1) |
//! | `gptme.w2-one-wake-per-burst` | W2 | fixed: one wake per burst, the batch requeued in order |
//! | `gptme.w2-subagent` | W2-subagent | subagent completions one per wake: reordered when refused (G-4) |

mod w0;
mod w1;
mod w2;
mod w2_subagent;

pub use w0::w0;
pub use w1::PerEventDrain;
pub use w2::OneWakePerBurst;
pub use w2_subagent::WithSubagentCompletions;

use crate::family::Registry;
use crate::family::gptme_server::ServerFamily;

pub(crate) fn register(r: &mut Registry) {
    r.add::<ServerFamily>(
        "gptme.w0-drop-refused",
        "W0: one wake per event; a refused event is dropped (requeues batch[i+1:])",
        || Box::new(w0()),
    );
    r.add::<ServerFamily>(
        "gptme.w1-per-event-drain",
        "W1: one wake per event; the drain's own first wake makes it refuse the rest (seed 000)",
        || Box::new(PerEventDrain::w1()),
    );
    r.add::<ServerFamily>(
        "gptme.w2-one-wake-per-burst",
        "W2: the whole batch in one wake; a refused batch goes back in order (the fix)",
        || Box::new(OneWakePerBurst),
    );
    r.add::<ServerFamily>(
        "gptme.w2-subagent",
        "W2 plus subagent completions one per wake; a refused first completion goes behind the rest",
        || Box::new(WithSubagentCompletions),
    );
}
