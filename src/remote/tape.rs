//! A recording of the conversation with a driver: every line wakesim wrote to it and every line
//! it wrote back, in order, while a tape is running. `wakesim export` runs one seed with a tape
//! and turns it into a reproducer that replays the run without wakesim (src/engine/export.rs).
//!
//! The tape is per thread (a run talks to its driver on the thread that runs it) and off unless
//! started; a run never reads it, so it changes no trace. Only the export command (and its
//! test) starts one, for one seed.

use std::cell::RefCell;

/// Which way a line went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// wakesim to the driver (`hello`, `run`, `value`).
    ToDriver,
    /// The driver to wakesim (`hello`, `choose`, `produce`, `obs`, `note`, `mix`, `end`).
    FromDriver,
}

thread_local! {
    static TAPE: RefCell<Option<Vec<(Dir, String)>>> = const { RefCell::new(None) };
}

/// Start recording (an empty tape; a running one is discarded).
pub fn start() {
    TAPE.with(|t| *t.borrow_mut() = Some(Vec::new()));
}

/// Stop recording and hand over what was recorded (empty when no tape was running).
pub fn take() -> Vec<(Dir, String)> {
    TAPE.with(|t| t.borrow_mut().take()).unwrap_or_default()
}

/// Keep a line, when a tape is running.
pub(super) fn keep(dir: Dir, line: &[u8]) {
    TAPE.with(|t| {
        if let Some(tape) = t.borrow_mut().as_mut() {
            tape.push((dir, String::from_utf8_lossy(line).trim_end().to_string()));
        }
    });
}
