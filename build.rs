//! Embeds the real-host drivers and the adapters wakesim starts itself (`hosts/`, the Node
//! adapter, the Python driver and its pins) in the binary, so that a binary copied out of its
//! build tree, or installed by `cargo install --path .`, runs real-host scenarios from any
//! directory: `remote::home` writes these files into the cache directory, under a name derived
//! from their content, the first time they are needed.
//!
//! The list is generated (one `include_bytes!` per file) rather than written by hand, so a file
//! added under those directories is embedded without anyone remembering to list it. Installed
//! packages, virtual environments, caches and examples are left out: they are not sources.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The trees embedded, relative to the package root, and the directory names skipped in them.
/// (`hosts/pi-ext/` is not: an extension's package is named by its scenario, in its own tree.)
const ROOTS: &[&str] = &[
    "hosts/launch.mjs",
    "hosts/lib",
    "hosts/pi",
    "hosts/node22",
    "adapters/node/adapter.mjs",
    "adapters/node/lib",
    "adapters/node/package.json",
    "adapters/node/package-lock.json",
    "adapters/python/gptme_driver.py",
    "adapters/python/run.py",
    "adapters/python/wakesim_adapter",
    "adapters/python/real",
    "export",
];
const SKIP: &[&str] = &["node_modules", "__pycache__", "examples", "tests"];
/// Roots watched file by file (see `main`): a module added there needs `touch build.rs`.
const VOLATILE: &[&str] = &["adapters/python/wakesim_adapter"];

fn walk(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let full = root.join(rel);
    if full.is_file() {
        out.push(rel.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(&full) else {
        return;
    };
    let mut names: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    names.sort();
    for name in names {
        let s = name.to_string_lossy();
        // Dot-entries are locks, caches, sandboxes and virtual environments, never sources.
        if s.starts_with('.') || SKIP.contains(&s.as_ref()) || s.ends_with(".pyc") {
            continue;
        }
        walk(root, &rel.join(&name), out);
    }
}

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let mut files = Vec::new();
    for r in ROOTS {
        // A directory is watched whole (cargo scans it recursively, so a new file is seen),
        // unless something writes into it while tests run: Python's `__pycache__` beside the
        // modules would rebuild the crate after every test run. There each file is watched.
        if !VOLATILE.contains(r) {
            println!("cargo:rerun-if-changed={r}");
        }
        walk(&root, Path::new(r), &mut files);
    }
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    // FNV-1a over every path and content: the name of the directory the files are written to,
    // so that two builds with different sources never share one, and one build never rewrites.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    let mut code = String::from("/// Every embedded file: its path (with `/`) and its bytes.\n");
    code.push_str("pub static FILES: &[(&str, &[u8])] = &[\n");
    for f in &files {
        let rel = f.to_string_lossy().replace('\\', "/");
        let bytes = std::fs::read(root.join(f)).expect("an embedded file is readable");
        feed(rel.as_bytes());
        feed(&[0]);
        feed(&(bytes.len() as u64).to_le_bytes());
        feed(&bytes);
        let abs = root.join(f);
        let _ = writeln!(
            code,
            "    ({rel:?}, include_bytes!({:?})),",
            abs.to_string_lossy()
        );
    }
    code.push_str("];\n");
    let _ = writeln!(
        code,
        "/// A hash of every embedded path and content.\npub const DIGEST: u64 = {hash:#018x};"
    );
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out.join("embedded.rs"), code).expect("OUT_DIR is writable");
}
