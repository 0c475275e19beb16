//! Wake logics: the code under test. Built-in variants live one file each under `wake/<host>/`;
//! the buggy ones are product features that prove the harness has teeth. A `Registry` maps the
//! names scenario files use to constructors, and users add their own without editing wakesim.

pub mod pi;

use crate::host::pi::api::PiWake;

type MakePi = Box<dyn Fn() -> Box<dyn PiWake> + Send + Sync>;

/// A named pi wake logic.
pub struct PiEntry {
    pub name: String,
    /// One line: the design, and the bug if it has one.
    pub summary: String,
    make: MakePi,
}

impl PiEntry {
    /// A fresh instance (every seed runs a fresh one).
    pub fn make(&self) -> Box<dyn PiWake> {
        (self.make)()
    }
}

/// The wake logics a run can name.
pub struct Registry {
    pi: Vec<PiEntry>,
}

impl Registry {
    /// The built-in variants.
    pub fn builtin() -> Registry {
        let mut r = Registry { pi: Vec::new() };
        pi::register(&mut r);
        r
    }

    /// Add (or replace) a pi wake logic under `name`.
    pub fn with_pi(
        mut self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<dyn PiWake> + Send + Sync + 'static,
    ) -> Registry {
        self.add_pi(name, summary, make);
        self
    }

    pub fn add_pi(
        &mut self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<dyn PiWake> + Send + Sync + 'static,
    ) {
        self.pi.retain(|e| e.name != name);
        self.pi.push(PiEntry {
            name: name.to_string(),
            summary: summary.to_string(),
            make: Box::new(make),
        });
    }

    pub fn pi(&self, name: &str) -> Option<&PiEntry> {
        self.pi.iter().find(|e| e.name == name)
    }

    pub fn pi_entries(&self) -> &[PiEntry] {
        &self.pi
    }

    /// Every name, for error messages.
    pub fn names(&self) -> Vec<&str> {
        self.pi.iter().map(|e| e.name.as_str()).collect()
    }
}
