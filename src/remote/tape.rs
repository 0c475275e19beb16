//! A recording of the conversation with a driver: every line wakesim wrote to it and every line
//! it wrote back, in order, while a tape is running. `wakesim export` runs one seed with a tape
//! and turns it into a reproducer that replays the run without wakesim (src/engine/export.rs).
//!
//! The tape is process-wide and off unless started; a run never reads it, so it changes no
//! trace. Only the export command starts one, for one seed on its own thread.

use std::sync::Mutex;

/// Which way a line went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// wakesim to the driver (`hello`, `run`, `value`).
    ToDriver,
    /// The driver to wakesim (`hello`, `choose`, `produce`, `obs`, `note`, `mix`, `end`).
    FromDriver,
}

static TAPE: Mutex<Option<Vec<(Dir, String)>>> = Mutex::new(None);

/// Start recording (an empty tape; a running one is discarded).
pub fn start() {
    if let Ok(mut t) = TAPE.lock() {
        *t = Some(Vec::new());
    }
}

/// Stop recording and hand over what was recorded (empty when no tape was running).
pub fn take() -> Vec<(Dir, String)> {
    TAPE.lock()
        .ok()
        .and_then(|mut t| t.take())
        .unwrap_or_default()
}

/// Keep a line, when a tape is running.
pub(super) fn keep(dir: Dir, line: &[u8]) {
    if let Ok(mut t) = TAPE.lock()
        && let Some(tape) = t.as_mut()
    {
        tape.push((dir, String::from_utf8_lossy(line).trim_end().to_string()));
    }
}
