//! What a child process says for the user. An adapter, a real host's driver or an installer it
//! runs (`hosts/launch.mjs` installing Node or pi, the Python venv installer) writes lines that
//! start with `wakesim: ` to its stderr to narrate slow first-use work ("wakesim: installing pi
//! 0.99.1 ... done in 41 s"); everything else on its stderr is kept only as a tail for fault
//! reports. [`LineRelay`] picks those lines out of the bytes as they are read and hands each to
//! the process-wide printer: `wakesim run` sets one that prints above its progress line; without
//! one a line goes to stderr as it is.
//!
//! Output only: nothing a run computes depends on it.

use std::sync::{Mutex, PoisonError};

/// The prefix of a line a child writes for the user.
pub const PREFIX: &str = "wakesim: ";

/// The longest line relayed; a longer one is cut there (a child cannot make wakesim buffer
/// without bound).
pub const LINE_BYTES_MAX: usize = 1024;

type PrintFn = Box<dyn Fn(&str) + Send + Sync>;

static PRINTER: Mutex<Option<PrintFn>> = Mutex::new(None);

/// Print one relayed line with the printer set, or on stderr.
pub fn print(line: &str) {
    let printer = PRINTER.lock().unwrap_or_else(PoisonError::into_inner);
    match printer.as_ref() {
        Some(f) => f(line),
        None => eprintln!("{line}"),
    }
}

/// The printer in place while this value lives (`wakesim run`'s, above its progress line).
pub struct Printer(());

impl Printer {
    pub fn set(f: impl Fn(&str) + Send + Sync + 'static) -> Printer {
        *PRINTER.lock().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(f));
        Printer(())
    }
}

impl Drop for Printer {
    fn drop(&mut self) {
        *PRINTER.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// Splits a child's stderr into lines as it is read and relays those starting with [`PREFIX`].
#[derive(Default)]
pub struct LineRelay {
    partial: Vec<u8>,
    /// The current line is past `LINE_BYTES_MAX`: the rest of it is dropped.
    overlong: bool,
}

impl LineRelay {
    /// Bytes just read from the child's stderr; each complete `wakesim: ` line among them (and
    /// any begun before) is relayed, with `relay` (`print` in a run).
    pub fn feed(&mut self, bytes: &[u8], relay: &mut dyn FnMut(&str)) {
        for &b in bytes {
            if b == b'\n' {
                self.end_line(relay);
            } else if self.partial.len() < LINE_BYTES_MAX {
                self.partial.push(b);
            } else {
                self.overlong = true;
            }
        }
    }

    /// The child's stderr closed: a last line without its newline is relayed too.
    pub fn finish(&mut self, relay: &mut dyn FnMut(&str)) {
        if !self.partial.is_empty() {
            self.end_line(relay);
        }
    }

    fn end_line(&mut self, relay: &mut dyn FnMut(&str)) {
        let line = String::from_utf8_lossy(&self.partial);
        let line = line.trim_end_matches('\r');
        if line.starts_with(PREFIX) {
            match self.overlong {
                true => relay(&format!("{line}...")),
                false => relay(line),
            }
        }
        self.partial.clear();
        self.overlong = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines arrive in pieces across reads; only `wakesim: ` lines are relayed, whole.
    #[test]
    fn relays_whole_prefixed_lines_across_reads() {
        let mut got = Vec::new();
        let mut relay = LineRelay::default();
        let mut push = |l: &str| got.push(l.to_string());
        relay.feed(b"npm warn deprecated\nwakesim: installing pi", &mut push);
        relay.feed(
            b" 0.99.1 ...\r\nTraceback (most\nwakesim: done in 4",
            &mut push,
        );
        relay.feed(b"1 s", &mut push);
        relay.finish(&mut push);
        assert_eq!(
            got,
            ["wakesim: installing pi 0.99.1 ...", "wakesim: done in 41 s"]
        );
    }

    #[test]
    fn an_overlong_line_is_cut() {
        let mut got = Vec::new();
        let mut relay = LineRelay::default();
        let long = format!("{PREFIX}{}\n", "x".repeat(3 * LINE_BYTES_MAX));
        relay.feed(long.as_bytes(), &mut |l| got.push(l.to_string()));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].len(), LINE_BYTES_MAX + 3);
    }
}
