//! The wake logics a run can name: a `Registry` maps the names scenario files use to
//! constructors. Built-in variants register themselves (each family's `wakes::register`); users
//! add their own without editing wakesim. Each entry is written against one family's API; a
//! scenario may only name a wake logic of its host's family.

use std::any::Any;

use super::{AnyFamily, Family, families};

/// Makes a fresh instance of a family's wake logic: a `Box<dyn Fn() -> Box<F::Wake>>`, erased.
type Maker = Box<dyn Any + Send + Sync>;

/// A named wake logic.
pub struct Entry {
    pub name: String,
    /// One line: the design, and the bug if it has one.
    pub summary: String,
    family: &'static dyn AnyFamily,
    maker: Maker,
}

impl Entry {
    /// The family whose API the logic is written against.
    pub fn family(&self) -> &'static dyn AnyFamily {
        self.family
    }

    /// A fresh instance (every seed runs a fresh one), if the logic is of family `F`.
    pub fn make<F: Family>(&self) -> Option<Box<F::Wake>> {
        self.maker
            .downcast_ref::<Box<dyn Fn() -> Box<F::Wake> + Send + Sync>>()
            .map(|make| make())
    }
}

/// The wake logics a run can name.
pub struct Registry {
    entries: Vec<Entry>,
}

impl Registry {
    /// The built-in variants, family by family: of every family in [`FAMILIES`](super::FAMILIES)
    /// and every one registered ([`super::register`]) by now.
    pub fn builtin() -> Registry {
        let mut r = Registry {
            entries: Vec::new(),
        };
        for family in families() {
            family.builtin_wakes(&mut r);
        }
        r
    }

    /// Add (or replace) a wake logic of family `F` under `name`.
    pub fn add<F: Family>(
        &mut self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<F::Wake> + Send + Sync + 'static,
    ) {
        let make: Box<dyn Fn() -> Box<F::Wake> + Send + Sync> = Box::new(make);
        let family = (families().into_iter())
            .find(|f| f.name() == F::NAME)
            .unwrap_or_else(|| {
                panic!(
                    "the family {} is neither in FAMILIES nor registered (wakesim::family::register)",
                    F::NAME
                )
            });
        self.entries.retain(|e| e.name != name);
        self.entries.push(Entry {
            name: name.to_string(),
            summary: summary.to_string(),
            family,
            maker: Box::new(make),
        });
    }

    /// [`Registry::add`], by value.
    pub fn with<F: Family>(
        mut self,
        name: &str,
        summary: &str,
        make: impl Fn() -> Box<F::Wake> + Send + Sync + 'static,
    ) -> Registry {
        self.add::<F>(name, summary, make);
        self
    }

    /// The entry named `name`, of any family.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Every entry, in registration order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Every name of one family, for error messages.
    pub fn names_of(&self, family: &str) -> Vec<&str> {
        self.entries
            .iter()
            .filter(|e| e.family.name() == family)
            .map(|e| e.name.as_str())
            .collect()
    }

    /// Every name, for error messages.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }
}
