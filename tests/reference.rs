//! `docs/scenarios.md` is complete: every key the code reads from a scenario file, every fault of
//! every family and every race window is named in its section of the reference.
//!
//! Keys are found in the code itself: the fields of every `#[serde(deny_unknown_fields)]` struct
//! that reads a scenario file (`src/scenario/`, each family's `sections.rs`), and the keys of a
//! fault table. A new such struct must be given its section here, so a table added later cannot
//! be missed. Faults and windows come from `wakesim list --format json`.

mod common;
use common::{root, wakesim};

/// Each struct reading a part of a scenario file, and the reference section that documents it.
const SECTIONS: &[(&str, &str, &str)] = &[
    ("src/scenario/raw.rs", "RawScenario", "## Top level"),
    ("src/scenario/raw.rs", "RawExplore", "## `[explore]`"),
    ("src/scenario/raw.rs", "RawCoverage", "## `[coverage]`"),
    ("src/scenario/raw.rs", "RawCheck", "## `[check]`"),
    ("src/scenario/expect.rs", "RawExpect", "## `[expect]`"),
    (
        "src/scenario/adapter.rs",
        "RawExternal",
        "## The `wake` table",
    ),
    (
        "src/family/pi/sections.rs",
        "RawProducers",
        "## `[producers]` on pi",
    ),
    (
        "src/family/pi/sections.rs",
        "RawTiming",
        "## `[timing]` on pi",
    ),
    (
        "src/family/gptme_server/sections.rs",
        "RawServerProducers",
        "## `[producers]` on gptme-server",
    ),
    (
        "src/family/gptme_server/sections.rs",
        "RawServerTiming",
        "## `[timing]` on gptme-server",
    ),
    (
        "src/family/gptme_cli/sections.rs",
        "RawCliProducers",
        "## `[producers]` on gptme-cli",
    ),
    (
        "src/family/gptme_cli/sections.rs",
        "RawCliTiming",
        "## `[timing]` on gptme-cli",
    ),
];

fn reference() -> String {
    std::fs::read_to_string(root().join("docs/scenarios.md")).expect("docs/scenarios.md")
}

/// The text of the section under `heading`, up to the next heading of the same level or above.
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc
        .find(&format!("\n{heading}"))
        .unwrap_or_else(|| panic!("docs/scenarios.md has no section `{heading}`"));
    let level = heading.split(' ').next().expect("a heading").len();
    let body = &doc[start + 1..];
    let end = body[1..]
        .match_indices("\n#")
        .find(|(i, _)| {
            let hashes = body[i + 2..].chars().take_while(|c| *c == '#').count();
            hashes <= level
        })
        .map_or(body.len(), |(i, _)| i + 1);
    &body[..end]
}

/// The field names of `struct name { ... }` in `text`.
fn fields(text: &str, name: &str) -> Vec<String> {
    let start = text
        .find(&format!("struct {name} {{"))
        .unwrap_or_else(|| panic!("struct {name} not found"));
    let body = &text[start..];
    let body = &body[..body.find("\n}").expect("the struct's end")];
    body.lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with("#["))
        .filter_map(|l| {
            let l = l
                .strip_prefix("pub(super) ")
                .or(l.strip_prefix("pub(crate) "))
                .unwrap_or(l);
            let l = l.strip_prefix("pub ").unwrap_or(l);
            l.split_once(':').map(|(f, _)| f.trim().to_string())
        })
        .filter(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect()
}

/// Every struct with `deny_unknown_fields` in the files that read scenario files.
fn strict_structs() -> Vec<(String, String)> {
    let mut files = vec![
        "src/scenario/raw.rs".to_string(),
        "src/scenario/expect.rs".to_string(),
        "src/scenario/adapter.rs".to_string(),
    ];
    for family in std::fs::read_dir(root().join("src/family")).expect("src/family") {
        let p = family.expect("entry").path().join("sections.rs");
        if p.exists() {
            files.push(
                p.strip_prefix(root())
                    .expect("under root")
                    .display()
                    .to_string(),
            );
        }
    }
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(root().join(&f)).expect("source");
        let mut rest = text.as_str();
        while let Some(i) = rest.find("#[serde(deny_unknown_fields)]") {
            rest = &rest[i..];
            let s = rest.find("struct ").expect("a struct follows") + "struct ".len();
            let name: String = rest[s..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.push((f.clone(), name));
            rest = &rest[s..];
        }
    }
    out
}

#[test]
fn every_key_in_the_code_is_in_the_reference() {
    let doc = reference();
    let mut missing = Vec::new();
    for (file, name) in strict_structs() {
        let Some((_, _, heading)) = SECTIONS.iter().find(|(f, n, _)| *f == file && *n == name)
        else {
            missing.push(format!("{file}: struct {name} reads scenario keys but has no section in tests/reference.rs SECTIONS"));
            continue;
        };
        let text = std::fs::read_to_string(root().join(&file)).expect("source");
        let part = section(&doc, heading);
        let keys = fields(&text, &name);
        assert!(!keys.is_empty(), "{file}: no fields found in {name}");
        for key in keys {
            if !part.contains(&format!("| `{key}` |")) {
                missing.push(format!("`{key}` ({file}, {name}) under {heading}"));
            }
        }
    }
    // A fault's table form, read by hand in `FaultValue`.
    let values = std::fs::read_to_string(root().join("src/input/values.rs")).expect("values.rs");
    let visit = &values[values.find("pub struct FaultValue").expect("FaultValue")..];
    let faults = section(&doc, "## `[faults]`");
    let visit = &visit[..visit.find("other =>").expect("the match's end")];
    let table_keys: Vec<&str> = (visit.split("\n"))
        .filter_map(|l| {
            l.trim()
                .strip_prefix('"')?
                .split_once("\" =>")
                .map(|(k, _)| k)
        })
        .collect();
    assert_eq!(table_keys.len(), 3, "share, rate, max: {table_keys:?}");
    for key in table_keys {
        if !faults.contains(&format!("| `{key}` |")) {
            missing.push(format!("`{key}` (a fault table's key) under ## `[faults]`"));
        }
    }
    assert!(
        missing.is_empty(),
        "missing from docs/scenarios.md:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_fault_and_window_is_in_the_reference() {
    let doc = reference();
    let out = wakesim(&["list", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let (mut faults, mut windows) = (0, 0);
    let mut missing = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let name = v["name"].as_str().unwrap_or_default();
        match v["type"].as_str() {
            Some("fault") => {
                faults += 1;
                let family = v["family"].as_str().expect("a family");
                let heading = format!("### `[faults]` on {family}");
                if !section(&doc, &heading).contains(&format!("| `{name}` |")) {
                    missing.push(format!("fault `{name}` under {heading}"));
                }
            }
            Some("window") => {
                windows += 1;
                if !section(&doc, "## `[coverage]`").contains(&format!("| `{name}` |")) {
                    missing.push(format!("window `{name}` under ## `[coverage]`"));
                }
            }
            _ => {}
        }
    }
    assert!(
        faults > 20 && windows > 10,
        "{faults} faults, {windows} windows listed"
    );
    assert!(
        missing.is_empty(),
        "missing from docs/scenarios.md:\n{}",
        missing.join("\n")
    );
}

/// The checker of this file checks: a key it cannot find fails.
#[test]
fn a_missing_key_is_found() {
    let doc = reference().replace("`subagents`", "`subagent_count`");
    let part = section(&doc, "## `[producers]` on pi");
    assert!(!part.contains("`subagents`"));
    let text = std::fs::read_to_string(root().join("src/family/pi/sections.rs")).expect("source");
    assert!(fields(&text, "RawProducers").contains(&"subagents".to_string()));
}
