//! Where real hosts' drivers and installs live, independent of the tree wakesim was built in.
//!
//! The drivers wakesim starts itself (`hosts/launch.mjs` and the pi driver, the Node adapter a
//! pi scenario's model twin runs, the gptme driver and the pins of every real host) are embedded
//! in the binary by `build.rs`. The first time one is needed they are written into the cache
//! directory, `$WAKESIM_CACHE_DIR`, else `$XDG_CACHE_HOME/wakesim`, else `~/.cache/wakesim`, under
//! `src/<digest>/`, the digest of every embedded path and content: a binary built from other
//! sources uses another directory, and a directory once complete is never rewritten. What the
//! drivers install on first use (Node 22, each pinned pi, gptme's virtual environment) goes in
//! the same cache directory (`npm/`, `venv/`), keyed by the hash of its lock file, so every
//! checkout and every binary with the same pins shares one install.
//!
//! A directory is complete or absent: the files are written into a temporary directory beside it,
//! a marker last, and the whole renamed into place; a writer killed half-way leaves only a
//! temporary directory, which the next writer ignores (and removes, once it is an hour old).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

/// The marker a complete sources directory holds, written last.
const MARKER: &str = ".wakesim-complete";
/// How old a temporary directory must be before a later writer removes it.
const TMP_STALE_SECS: u64 = 3600;

/// The cache directory: `$WAKESIM_CACHE_DIR`, `$XDG_CACHE_HOME/wakesim` or `~/.cache/wakesim`.
/// An empty variable counts as unset (as the XDG specification says).
pub fn cache_dir() -> Result<PathBuf, String> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = var("WAKESIM_CACHE_DIR") {
        return Ok(d);
    }
    if let Some(d) = var("XDG_CACHE_HOME") {
        return Ok(d.join("wakesim"));
    }
    match var("HOME") {
        Some(h) => Ok(h.join(".cache").join("wakesim")),
        None => Err(
            "no cache directory for wakesim's drivers and installs: set \
                     WAKESIM_CACHE_DIR (or XDG_CACHE_HOME or HOME)"
                .into(),
        ),
    }
}

/// Is `rel` (`hosts/pi/0.99.1/package-lock.json`, with `/`) one of the embedded files?
pub fn embedded(rel: &str) -> bool {
    embedded::FILES.iter().any(|(p, _)| *p == rel)
}

/// The directory holding the embedded sources, written on first use (once per process).
pub fn sources() -> Result<&'static Path, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = DIR.get_or_init(|| {
        let cache = cache_dir()?;
        materialize(&cache.join("src"))
    });
    r.as_deref().map_err(Clone::clone)
}

/// Write the embedded files into `parent/<digest>` unless a complete copy is there.
fn materialize(parent: &Path) -> Result<PathBuf, String> {
    let dir = parent.join(format!("{:016x}", embedded::DIGEST));
    if dir.join(MARKER).is_file() {
        return Ok(dir);
    }
    let cannot = |what: &Path, e: std::io::Error| {
        format!(
            "cannot write wakesim's driver sources into {} ({e}); set WAKESIM_CACHE_DIR to a \
             writable directory",
            what.display()
        )
    };
    std::fs::create_dir_all(parent).map_err(|e| cannot(parent, e))?;
    sweep_stale(parent);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = parent.join(format!(
        ".tmp-{:016x}-{}-{nanos}",
        embedded::DIGEST,
        std::process::id()
    ));
    let write = || -> std::io::Result<()> {
        for (rel, bytes) in embedded::FILES {
            let path = tmp.join(rel);
            if let Some(p) = path.parent() {
                std::fs::create_dir_all(p)?;
            }
            std::fs::write(&path, bytes)?;
        }
        std::fs::write(tmp.join(MARKER), format!("{:016x}\n", embedded::DIGEST))
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(cannot(&tmp, e));
    }
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => Ok(dir),
        // Another process finished first (the target is a non-empty directory): use its copy.
        Err(_) if dir.join(MARKER).is_file() => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(dir)
        }
        Err(_) => {
            // A directory there without the marker is not ours to keep (it cannot be a copy
            // in progress: those are written under a temporary name). Replace it.
            let _ = std::fs::remove_dir_all(&dir);
            let r = std::fs::rename(&tmp, &dir);
            let _ = std::fs::remove_dir_all(&tmp);
            match r {
                Ok(()) => Ok(dir),
                Err(_) if dir.join(MARKER).is_file() => Ok(dir),
                Err(e) => Err(cannot(&dir, e)),
            }
        }
    }
}

/// Remove temporary directories a killed writer left, once they are old enough that no live
/// writer can still be filling them.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(".tmp-") {
            continue;
        }
        let old = (e.metadata().and_then(|m| m.modified()).ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > TMP_STALE_SECS);
        if old {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launcher_the_pi_driver_and_the_pins_are_embedded() {
        for f in [
            "hosts/launch.mjs",
            "hosts/lib/vclock.mjs",
            "hosts/pi/driver.mjs",
            "hosts/pi/0.99.1/package-lock.json",
            "hosts/node22/package-lock.json",
            "adapters/node/adapter.mjs",
            "adapters/python/gptme_driver.py",
            "adapters/python/wakesim_adapter/venv.py",
        ] {
            assert!(embedded(f), "{f} is not embedded");
        }
        assert!(
            !embedded::FILES
                .iter()
                .any(|(p, _)| p.contains("node_modules")),
            "installed packages are not sources"
        );
    }

    #[test]
    fn a_copy_is_complete_or_absent_and_written_once() {
        let dir = std::env::temp_dir().join(format!("wakesim-home-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = materialize(&dir).expect("writes");
        assert!(first.join("hosts/launch.mjs").is_file());
        assert!(first.join(MARKER).is_file());
        // A second call finds the marker and writes nothing.
        let launcher = first.join("hosts/launch.mjs");
        std::fs::write(&launcher, "changed").unwrap();
        assert_eq!(materialize(&dir).unwrap(), first);
        assert_eq!(std::fs::read_to_string(&launcher).unwrap(), "changed");
        // Without the marker (a copy someone else cut short), it is written afresh.
        std::fs::remove_file(first.join(MARKER)).unwrap();
        materialize(&dir).unwrap();
        assert_ne!(std::fs::read_to_string(&launcher).unwrap(), "changed");
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-"))
            .collect();
        assert!(
            leftovers.is_empty(),
            "no temporary directory is left behind"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
