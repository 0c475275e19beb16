//! Writing regression files: where a failure or a shrunk run goes (`failure_path`, `seed_path`,
//! `default_dir`), `Keep` (a run written as a regression, never over another file) and
//! `save_new` (temporary file, then a link that fails when the name is taken). Reading and
//! replaying them is `regression.rs`.

use std::path::{Path, PathBuf};

use super::regression::{Regression, expectation_of, relative};
use crate::check::Invariant;
use crate::error::{Error, Result};
use crate::outcome::RunResult;
use crate::scenario::{Expect, Scenario, project_root, within};

/// The file a failure `run` saves for seed `seed` of `scenario`, in `dir`; `what` (the
/// invariant it breaks, or `panic`, ...) is part of the name, so failures of one seed that break
/// different invariants do not collide.
pub fn failure_path(scenario: &Path, dir: &Path, what: &str, seed: u64) -> PathBuf {
    let stem = scenario
        .file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
    dir.join(format!("{stem}-{what}-seed-{seed}.toml"))
}

/// Where `shrink`, `replay --record` and `explore --record` write by default: the scenario's
/// `regressions` directory, which its runs read. Only inside the current directory (the
/// project): for a scenario elsewhere the caller must name a directory.
pub fn default_dir(scn: &Scenario) -> Result<PathBuf> {
    let dir = scn.regressions.clone();
    let outside = || {
        Error::Usage(format!(
            "{} is outside the current directory, so its regressions have no default place \
             (it would be {}): name a directory with --out DIR",
            scn.path.display(),
            dir.display()
        ))
    };
    let cwd = std::env::current_dir().map_err(|_| outside())?;
    if within(&cwd, &dir) {
        Ok(dir)
    } else {
        Err(outside())
    }
}

/// The file a regression of seed `seed` of `scenario` is kept in, in `dir`.
pub fn seed_path(scenario: &Path, dir: &Path, seed: u64) -> PathBuf {
    let stem = scenario
        .file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
    dir.join(format!("{stem}-seed-{seed}.toml"))
}

/// A run to keep as a regression of its scenario file.
pub struct Keep<'a> {
    pub scenario: &'a Path,
    pub seed: u64,
    pub run: &'a RunResult,
    /// The invariant it must keep breaking (default: its first), for a pinned witness.
    pub target: Option<Invariant>,
    /// Pin what it shows now as its `[expect]` (a witness); false: it follows the scenario.
    pub pin: bool,
    /// The comment the file starts with.
    pub comment: String,
    /// Its choices were drawn by `explore` (delays from the boundary set) in this scope (its
    /// message cap and interior points are written to the file).
    pub explored: Option<crate::scenario::Scope>,
}

/// What `run`'s saving of a failure did (`Keep::save`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Saved {
    Wrote(PathBuf),
    /// A file of that name exists; it is kept as it is.
    Kept(PathBuf),
}

impl Saved {
    pub fn path(&self) -> &Path {
        match self {
            Saved::Wrote(p) | Saved::Kept(p) => p,
        }
    }
}

/// Where [`Keep::write`] put a regression.
#[derive(Debug)]
pub struct Kept {
    /// The file written (or found already holding this very regression).
    pub path: PathBuf,
    /// A different regression already at the first-choice path, kept untouched.
    pub kept_existing: Option<PathBuf>,
    /// The file already held exactly this text: nothing was written.
    pub unchanged: bool,
}

impl Kept {
    /// What to tell the user, one line each.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        if let Some(old) = &self.kept_existing {
            s += &format!("kept {} (a different regression)\n", old.display());
        }
        if self.unchanged {
            s += &format!("{} already holds this regression\n", self.path.display());
        } else {
            s += &format!("wrote {}\n", self.path.display());
        }
        s
    }
}

impl Keep<'_> {
    /// The file's text for `path`.
    pub fn text(&self, path: &Path) -> String {
        let expect = self.pin.then(|| expectation_of(self.run, self.target));
        let rel = relative(path.parent().unwrap_or(Path::new(".")), self.scenario);
        Regression::render(
            &rel,
            self.seed,
            expect.as_ref(),
            &self.run.choices,
            &self.comment,
            self.explored,
        )
    }

    /// Write the regression file at `path` (its directory made if need be), atomically and
    /// never over another file: an existing file at `path` is kept, and the new regression gets
    /// a distinct name carrying its expectation (`-<invariant>`, then `-2`, `-3`, ...).
    pub fn write(&self, path: &Path) -> Result<Kept> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::Io { path, source }
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        crate::io::create_dirs(dir).map_err(io(dir))?;
        let expect = expectation_of(self.run, self.target);
        let text = self.text(path);
        let mut kept_existing = None;
        for candidate in candidates(path, &expect) {
            if let Ok(old) = std::fs::read(&candidate) {
                if old == text.as_bytes() {
                    return Ok(Kept {
                        path: candidate,
                        kept_existing,
                        unchanged: true,
                    });
                }
                kept_existing.get_or_insert_with(|| candidate.clone());
                continue;
            }
            match crate::io::write_new(&candidate, text.as_bytes()) {
                Ok(()) => {
                    return Ok(Kept {
                        path: candidate,
                        kept_existing,
                        unchanged: false,
                    });
                }
                // Another writer took the name in between: try the next one.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(&candidate)(e)),
            }
        }
        Err(Error::Usage(format!(
            "{}: every name for this regression is taken; remove old ones",
            path.display()
        )))
    }

    /// Save a failure `run` found at `path` unless a file is there (the name carries the
    /// invariant: that failure is saved already), never outside the scenario's project.
    pub fn save(&self, path: &Path) -> Result<Saved> {
        let root = project_root(self.scenario);
        if !within(&root, path) {
            return Err(Error::Usage(format!(
                "{} is outside the scenario's project ({}); wakesim writes only inside it",
                path.display(),
                root.display()
            )));
        }
        save_new(path, &self.text(path))
    }
}

/// The names a regression first meant for `path` may take: `path`, then with its expectation
/// (`x-seed-3-no-loss.toml`), then numbered.
fn candidates(path: &Path, expect: &Expect) -> impl Iterator<Item = PathBuf> {
    let stem = path
        .file_stem()
        .map_or("regression".into(), |s| s.to_string_lossy().into_owned());
    let label = match expect {
        Expect::Fail { invariant, .. } => invariant.name().to_string(),
        other => other.to_string(),
    };
    let at = |name: String| path.with_file_name(name);
    std::iter::once(path.to_path_buf())
        .chain(std::iter::once(at(format!("{stem}-{label}.toml"))))
        .chain((2..100).map(move |n| at(format!("{stem}-{label}-{n}.toml"))))
}

/// Write `text` to `path` atomically and never over an existing file (`io::write_new`: a
/// temporary file beside it, synced, then linked to its name, which fails if the name is taken),
/// its directory made if need be.
pub fn save_new(path: &Path, text: &str) -> Result<Saved> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| Error::Io { path: p, source }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::io::create_dirs(dir).map_err(io(dir))?;
    match crate::io::write_new(path, text.as_bytes()) {
        Ok(()) => Ok(Saved::Wrote(path.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok(Saved::Kept(path.to_path_buf()))
        }
        Err(e) => Err(io(path)(e)),
    }
}
