//! The progress line `wakesim run` keeps on stderr while it runs, when stderr is a terminal.

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::scenario::Scenario;

/// A one-line progress display on stderr, only when stderr is a terminal.
pub struct Progress {
    on: bool,
    ranges: Vec<Range<u64>>,
    total: u64,
    done: AtomicU64,
    current: Mutex<String>,
}

impl Progress {
    pub fn new(scenarios: &[Scenario], range: impl Fn(&Scenario) -> Range<u64>) -> Progress {
        use std::io::IsTerminal;
        let ranges: Vec<_> = scenarios.iter().map(range).collect();
        Progress {
            on: std::io::stderr().is_terminal(),
            total: ranges.iter().map(|r| r.end - r.start).sum(),
            ranges,
            done: Default::default(),
            current: Default::default(),
        }
    }

    pub fn range(&self, i: usize) -> Range<u64> {
        self.ranges[i].clone()
    }

    pub fn start(&self, i: usize, scn: &Scenario) {
        if self.on {
            *self.current.lock().expect("progress lock") =
                format!("[{}/{}] {}", i + 1, self.ranges.len(), scn.path.display());
            self.advance(0);
        }
    }

    pub fn advance(&self, n: u64) {
        if !self.on {
            return;
        }
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        let width = 24u64;
        let filled = (done * width / self.total.max(1)) as usize;
        let bar = format!(
            "{}{}",
            "#".repeat(filled),
            ".".repeat(width as usize - filled)
        );
        let current = self.current.lock().expect("progress lock");
        eprint!("\r\x1b[2K{bar} {done}/{} seeds {current}", self.total);
    }

    pub fn clear(&self) {
        if self.on {
            eprint!("\r\x1b[2K");
        }
    }
}
