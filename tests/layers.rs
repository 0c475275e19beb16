//! The layer rule of ARCHITECTURE.md, checked: a module of `src/` may name (with `crate::...`,
//! in a `use` or anywhere in code) only modules of lower layers, never one of its own layer or
//! a higher one; and a host family's module names no other family. So the modules form no
//! cycle, and the bottom stays the bottom.

use std::path::{Path, PathBuf};

/// Each top-level module of `src/` and its layer, lowest first. A new module is added here
/// with its layer, or the test fails naming it.
const LAYERS: &[(&str, u8)] = &[
    ("error", 0),
    ("limits", 0),
    ("io", 0),
    // The binary's (and the benches') allocator: `mod mialloc` of `src/main.rs`, not the library's.
    ("mialloc", 0),
    ("sim", 1),
    ("check", 2),
    ("input", 2),
    ("adapter", 2),
    ("outcome", 3),
    ("remote", 3),
    ("family", 4),
    ("scenario", 5),
    ("engine", 6),
    ("report", 7),
    ("cmd", 8),
    ("testing", 8),
];

/// The host families: every directory under `src/family/` but `common`.
fn families(src: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(src.join("family"))
        .expect("src/family/ is readable")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.is_dir())
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| n != "common")
        .collect();
    out.sort();
    out
}

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let p = entry.expect("an entry").path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Every `crate::NAME` (and, with `under`, `crate::under::NAME`) a line names.
fn named<'a>(line: &'a str, under: &str) -> Vec<&'a str> {
    let prefix = format!("crate::{under}");
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find(&prefix) {
        rest = &rest[i + prefix.len()..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        out.push(&rest[..end]);
    }
    out
}

#[test]
fn a_module_names_only_lower_layers_and_a_family_no_other_family() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    all.sort();
    let families = families(&src);
    assert!(families.len() >= 3, "{families:?}");
    let mut breaches = Vec::new();
    for path in &all {
        let rel = path.strip_prefix(&src).expect("under src/");
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.len() == 1 && (parts[0] == "lib.rs" || parts[0] == "main.rs") {
            continue;
        }
        let own = parts[0].trim_end_matches(".rs").to_string();
        let Some(own_layer) = layer(&own) else {
            breaches.push(format!(
                "{}: module `{own}` has no layer in LAYERS",
                rel.display()
            ));
            continue;
        };
        let family = (own == "family" && parts.len() > 2)
            .then(|| parts[1].clone())
            .filter(|f| families.contains(f));
        let text = std::fs::read_to_string(path).expect("readable");
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for target in named(line, "") {
                if target == own {
                    continue;
                }
                match layer(target) {
                    Some(l) if l < own_layer => {}
                    Some(l) => breaches.push(format!(
                        "{}:{}: `{own}` (layer {own_layer}) names `{target}` (layer {l})",
                        rel.display(),
                        n + 1
                    )),
                    None => breaches.push(format!(
                        "{}:{}: `crate::{target}` is no module in LAYERS",
                        rel.display(),
                        n + 1
                    )),
                }
            }
            if let Some(f) = &family {
                for other in named(line, "family::") {
                    if families.iter().any(|x| x == other) && other != f {
                        breaches.push(format!(
                            "{}:{}: the family `{f}` names the family `{other}`",
                            rel.display(),
                            n + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(
        breaches.is_empty(),
        "layer rule broken:\n{}",
        breaches.join("\n")
    );
}

#[test]
fn the_checker_sees_a_breach() {
    // The scan itself: a line naming a module finds it, a comment is skipped by the caller.
    assert_eq!(named("use crate::engine::Runner;", ""), ["engine"]);
    assert_eq!(named("use crate::family::pi::api::Pi;", "family::"), ["pi"]);
    assert_eq!(layer("sim"), Some(1));
    assert!(layer("engine") > layer("family"));
}
