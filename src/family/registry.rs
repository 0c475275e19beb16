//! Wake logics: the code under test. Built-in variants live one file each under `wake/<host>/`;
//! the buggy ones are product features that prove the harness has teeth. A `Registry` maps the
//! names scenario files use to constructors, and users add their own without editing wakesim.
//! Each entry is written against one host family's API (`host::Family`); a scenario may only
//! name a wake logic of its host's family.

use crate::family::Family;
use crate::family::gptme_cli::api::CliWake;
use crate::family::gptme_server::api::ServerWake;
use crate::family::pi::api::PiWake;

type MakePi = Box<dyn Fn() -> Box<dyn PiWake> + Send + Sync>;
type MakeServer = Box<dyn Fn() -> Box<dyn ServerWake> + Send + Sync>;
type MakeCli = Box<dyn Fn() -> Box<dyn CliWake> + Send + Sync>;

/// How an entry builds a fresh instance, by family.
enum Maker {
    Pi(MakePi),
    GptmeServer(MakeServer),
    GptmeCli(MakeCli),
}

/// A named wake logic.
pub struct Entry {
    pub name: String,
    /// One line: the design, and the bug if it has one.
    pub summary: String,
    maker: Maker,
}

/// The pi entries of earlier versions are plain entries now.
pub type PiEntry = Entry;

impl Entry {
    pub fn family(&self) -> Family {
        match self.maker {
            Maker::Pi(_) => Family::Pi,
            Maker::GptmeServer(_) => Family::GptmeServer,
            Maker::GptmeCli(_) => Family::GptmeCli,
        }
    }

    /// A fresh pi instance (every seed runs a fresh one). Panics for another family: scenarios
    /// are checked against their host's family when they load.
    pub fn make(&self) -> Box<dyn PiWake> {
        match &self.maker {
            Maker::Pi(m) => m(),
            _ => panic!(
                "{} is a {} wake logic, not pi",
                self.name,
                self.family().name()
            ),
        }
    }

    pub fn make_server(&self) -> Box<dyn ServerWake> {
        match &self.maker {
            Maker::GptmeServer(m) => m(),
            _ => panic!(
                "{} is a {} wake logic, not gptme-server",
                self.name,
                self.family().name()
            ),
        }
    }

    pub fn make_cli(&self) -> Box<dyn CliWake> {
        match &self.maker {
            Maker::GptmeCli(m) => m(),
            _ => panic!(
                "{} is a {} wake logic, not gptme-cli",
                self.name,
                self.family().name()
            ),
        }
    }
}

/// The wake logics a run can name.
pub struct Registry {
    entries: Vec<Entry>,
}

impl Registry {
    /// The built-in variants.
    pub fn builtin() -> Registry {
        let mut r = Registry {
            entries: Vec::new(),
        };
        crate::family::pi::wakes::register(&mut r);
        crate::family::gptme_server::wakes::register(&mut r);
        crate::family::gptme_cli::wakes::register(&mut r);
        r
    }

    fn add(&mut self, name: &str, summary: &str, maker: Maker) {
        self.entries.retain(|e| e.name != name);
        self.entries.push(Entry {
            name: name.to_string(),
            summary: summary.to_string(),
            maker,
        });
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
        self.add(name, summary, Maker::Pi(Box::new(make)));
    }

    /// Add (or replace) a gptme-server wake logic under `name`.
    pub fn with_gptme_server(
        mut self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<dyn ServerWake> + Send + Sync + 'static,
    ) -> Registry {
        self.add_gptme_server(name, summary, make);
        self
    }

    pub fn add_gptme_server(
        &mut self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<dyn ServerWake> + Send + Sync + 'static,
    ) {
        self.add(name, summary, Maker::GptmeServer(Box::new(make)));
    }

    /// Add (or replace) a gptme-cli wake logic under `name`.
    pub fn with_gptme_cli(
        mut self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<dyn CliWake> + Send + Sync + 'static,
    ) -> Registry {
        self.add_gptme_cli(name, summary, make);
        self
    }

    pub fn add_gptme_cli(
        &mut self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<dyn CliWake> + Send + Sync + 'static,
    ) {
        self.add(name, summary, Maker::GptmeCli(Box::new(make)));
    }

    /// The entry named `name`, of any family.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The pi entry named `name`.
    pub fn pi(&self, name: &str) -> Option<&Entry> {
        self.get(name).filter(|e| e.family() == Family::Pi)
    }

    /// Every entry, in registration order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Every name of one family, for error messages.
    pub fn names_of(&self, family: Family) -> Vec<&str> {
        self.entries
            .iter()
            .filter(|e| e.family() == family)
            .map(|e| e.name.as_str())
            .collect()
    }

    /// Every name, for error messages.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }
}
