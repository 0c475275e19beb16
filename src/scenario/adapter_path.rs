//! Where the reference adapters are, for `wake = { node = "mine.ts" }` and
//! `wake = { python = "mine.py" }`: a scenario names its wake logic's module, not a path into a
//! checkout of wakesim. The adapters (`adapters/node/adapter.mjs`, `adapters/python/run.py`) are
//! looked for, first found wins:
//!
//! 1. `$WAKESIM_ADAPTERS` (a directory holding `node/` and `python/`), when set;
//! 2. installed with the binary: `adapters/` next to it, or `../share/wakesim/adapters/`
//!    (a prefix install: `bin/wakesim`, `share/wakesim/adapters/`);
//! 3. the source tree the binary sits in (`target/<profile>/wakesim` of a clone: the first
//!    `adapters/` in a directory above it);
//! 4. the copy the binary carries (`build.rs` embeds the adapters; `remote::home` writes them into
//!    wakesim's cache directory on first use), so an installed binary needs no checkout.
//!
//! The lookup only reads the file system; nothing a run computes depends on where the adapter
//! was found.

use std::path::{Path, PathBuf};

/// The environment variable naming the adapters' directory.
pub const ADAPTERS_ENV: &str = "WAKESIM_ADAPTERS";

/// A reference adapter: the program that runs it and its entry file under `adapters/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Node,
    Python,
}

impl Lang {
    /// The interpreter, looked up on PATH.
    pub fn program(self) -> &'static str {
        match self {
            Lang::Node => "node",
            Lang::Python => "python3",
        }
    }

    /// The adapter's entry file, relative to an `adapters/` directory.
    pub fn entry(self) -> &'static str {
        match self {
            Lang::Node => "node/adapter.mjs",
            Lang::Python => "python/run.py",
        }
    }

    /// The key in a scenario's `wake` table.
    pub fn key(self) -> &'static str {
        match self {
            Lang::Node => "node",
            Lang::Python => "python",
        }
    }
}

/// The directories searched for `adapters/`, in order, with the environment's and the
/// executable's places as given (for tests).
pub fn candidates(env: Option<PathBuf>, exe: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    out.extend(env);
    if let Some(dir) = exe.and_then(Path::parent) {
        out.push(dir.join("adapters"));
        out.push(dir.join("../share/wakesim/adapters"));
        out.extend(dir.ancestors().skip(1).map(|a| a.join("adapters")));
    }
    out
}

/// The adapter's entry file, or a sentence saying where it was looked for.
pub fn find(lang: Lang) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().ok();
    let env = std::env::var_os(ADAPTERS_ENV).map(PathBuf::from);
    let mut dirs = candidates(env, exe.as_deref());
    if let Ok(carried) = crate::remote::home::sources() {
        dirs.push(carried.join("adapters"));
    }
    find_in(lang, &dirs)
}

/// The first of `dirs` holding the adapter's entry file.
pub fn find_in(lang: Lang, dirs: &[PathBuf]) -> Result<PathBuf, String> {
    for d in dirs {
        let p = d.join(lang.entry());
        if p.is_file() {
            return Ok(p.canonicalize().unwrap_or(p));
        }
    }
    let looked: Vec<String> = (dirs.iter().take(4))
        .map(|d| d.join(lang.entry()).display().to_string())
        .collect();
    Err(format!(
        "the {} adapter ({}) was not found: looked in {}{}; copy wakesim's `adapters/` directory next to the binary or set {ADAPTERS_ENV} to it",
        lang.key(),
        lang.entry(),
        looked.join(", "),
        if dirs.len() > 4 {
            " and the directories above the binary"
        } else {
            ""
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An adapters directory next to the binary wins over the source tree; the environment's
    /// wins over both.
    #[test]
    fn finds_the_adapter_in_order() {
        let root =
            std::env::temp_dir().join(format!("wakesim-adapter-path-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let bin = root.join("bin");
        let near = bin.join("adapters/node");
        let env = root.join("env/node");
        for d in [&near, &env] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("adapter.mjs"), "").unwrap();
        }
        let exe = bin.join("wakesim");
        let found = find_in(Lang::Node, &candidates(None, Some(&exe))).unwrap();
        assert!(
            found.ends_with("bin/adapters/node/adapter.mjs"),
            "{found:?}"
        );
        let found = find_in(Lang::Node, &candidates(Some(root.join("env")), Some(&exe))).unwrap();
        assert!(found.ends_with("env/node/adapter.mjs"), "{found:?}");
        let missing = find_in(Lang::Python, &[root.join("nowhere")]).unwrap_err();
        assert!(
            missing.contains("python/run.py") && missing.contains(ADAPTERS_ENV),
            "{missing}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
