//! The scenario matrix (issue 15, item 4): for each fixed variant's claim
//! (`family::claims::CLAIMS`), each fault it claims to survive and the passing scenarios that
//! switch it on, with their shares (`1/1`: every seed; below: in the swarm mix). A claimed fault
//! that no passing scenario switches on is `missing`: a bug in its path could pass.

use std::path::PathBuf;

use crate::family::claims::{CLAIMS, Claim};
use crate::scenario::{Expect, Scenario};
use crate::sim::choice::Ratio;

/// One claimed fault of a variant, and the passing scenarios that switch it on.
#[derive(Clone, Debug)]
pub struct Cell {
    pub fault: &'static str,
    /// `(scenario file, share)` for every passing scenario of the variant that names the fault.
    pub on_in: Vec<(PathBuf, Ratio)>,
}

impl Cell {
    /// Some passing scenario switches it on in every seed.
    pub fn in_every_seed(&self) -> bool {
        self.on_in.iter().any(|(_, s)| s.num >= s.den)
    }

    /// Some passing scenario switches it on in a share of the seeds, among the others' faults.
    pub fn in_swarm(&self) -> bool {
        self.on_in.iter().any(|(_, s)| s.num < s.den)
    }
}

/// One variant's row: its claim, a cell per claimed fault, and how many passing scenarios it has.
#[derive(Clone, Debug)]
pub struct Row {
    pub claim: Claim,
    pub passing: usize,
    pub cells: Vec<Cell>,
}

impl Row {
    /// The claimed faults no passing scenario switches on.
    pub fn missing(&self) -> Vec<&'static str> {
        (self.cells.iter())
            .filter(|c| c.on_in.is_empty())
            .map(|c| c.fault)
            .collect()
    }
}

/// The matrix of `claims` over `scenarios`.
pub fn matrix_of(claims: &[Claim], scenarios: &[Scenario]) -> Vec<Row> {
    claims
        .iter()
        .map(|claim| {
            let passing: Vec<&Scenario> = (scenarios.iter())
                .filter(|s| {
                    s.host.name() == claim.host
                        && s.wake == claim.wake
                        && matches!(s.expect, Expect::Pass)
                })
                .collect();
            let cells = (claim.survives.iter())
                .map(|&fault| Cell {
                    fault,
                    on_in: (passing.iter())
                        .filter_map(|s| {
                            let on = s.host.family().faults_on(&s.config);
                            let share = on.iter().find(|(f, _)| *f == fault)?.1;
                            Some((s.path.clone(), share))
                        })
                        .collect(),
                })
                .collect();
            Row {
                claim: *claim,
                passing: passing.len(),
                cells,
            }
        })
        .collect()
}

/// The matrix of every fixed variant's claim over `scenarios`.
pub fn matrix(scenarios: &[Scenario]) -> Vec<Row> {
    matrix_of(CLAIMS, scenarios)
}

/// One cell of the run matrix (issue 28, item 1): a fixed variant's wake logic on another
/// scenario's mix (its host, producers, timing, faults and bounds), expected to pass.
#[derive(Clone, Debug)]
pub struct Variant {
    pub claim: Claim,
    /// The scenario file whose mix it runs.
    pub source: PathBuf,
    /// The variant's own scenario file text: the source with `wake` replaced, its `[expect]`
    /// and `[coverage]` tables left out (the windows a mix reaches depend on the logic), and
    /// `verdict = "pass"`.
    pub text: String,
}

/// Whether a line opens a TOML table (`[name]` or `[a.b]`, an optional comment after it).
fn is_table_header(line: &str) -> Option<&str> {
    let t = line.trim_end();
    let rest = t.strip_prefix('[')?;
    let end = rest.find(']')?;
    let name = &rest[..end];
    let after = rest[end + 1..].trim_start();
    let simple = !name.is_empty()
        && (name.chars()).all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
    (simple && (after.is_empty() || after.starts_with('#'))).then_some(name)
}

/// The top-level `key = "value"` of a scenario text (before its first table), unquoted.
pub fn top_level_string(text: &str, key: &str) -> Option<String> {
    for line in text.lines() {
        if is_table_header(line).is_some() {
            return None;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if k.trim() == key {
            let v = v.trim();
            return v
                .strip_prefix('"')
                .and_then(|v| v.split_once('"'))
                .map(|(s, _)| s.to_string());
        }
    }
    None
}

/// The text of `source`'s mix run by `wake`, expected to pass (see [`Variant::text`]); `None`
/// when its top-level `wake` is not a plain name (an adapter or a real host's table).
pub fn variant_text(source: &str, wake: &str, from: &str) -> Option<String> {
    let mut out = format!(
        "# The scenario matrix (issue 28): {from}'s mix run by {wake}, which claims every fault it\n\
         # switches on. Written by tests/matrix.rs; replay a seed with `wakesim replay` of this file.\n"
    );
    let mut top = true;
    let mut skipping = false;
    let mut replaced = false;
    for line in source.lines() {
        if let Some(name) = is_table_header(line) {
            top = false;
            skipping = name == "expect" || name == "coverage";
        }
        if skipping {
            continue;
        }
        if top {
            let key = line.split_once('=').map(|(k, _)| k.trim());
            match key {
                Some("wake") => {
                    let v = line.split_once('=').expect("a key").1.trim();
                    if !v.starts_with('"') {
                        return None;
                    }
                    out.push_str(&format!("wake = \"{wake}\"\n"));
                    replaced = true;
                    continue;
                }
                // Its saved failures are the source logic's, not this one's.
                Some("regressions") | Some("snapshot_seed") => continue,
                _ => {}
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    if !replaced {
        return None;
    }
    out.push_str("\n[expect]\nverdict = \"pass\"\n");
    Some(out)
}

/// Bounds a claim's logic is judged by on a mix whose file leaves them to the default, each with
/// why: `(wake, key of [check], value, why)`. A failing scenario's file keeps the default where
/// its logic strands for good; the fixed logic's documented recovery needs the bound derived for
/// it.
pub const CLAIM_BOUNDS: &[(&str, &str, &str, &str)] = &[(
    "pi.gentle-fixed",
    "latency_ms_max",
    "95000",
    "each failed wake costs one 30 s start window, a seed may fail it twice, and a user's input the wake must not race costs one more: three windows and the host's own steps (g4-fixed-passes)",
)];

/// Producer kinds a claim's logic has no path for, each with why: `(wake, [producers] key)`; a
/// mix that turns one on (a value other than 0) is not in its row.
pub const CLAIM_PRODUCERS_NOT: &[(&str, &str, &str)] = &[(
    "gptme.w2-one-wake-per-burst",
    "completions",
    "W2 wakes for watch events; subagent completions are gptme.w2-subagent's path (w2-subagent-completions-reordered, w2-subagent-mixed-drain-refuses-itself)",
)];

/// Whether `text`'s `[producers]` sets `key` to something other than 0.
fn producer_on(text: &str, key: &str) -> bool {
    let mut inside = false;
    for line in text.lines() {
        if let Some(name) = is_table_header(line) {
            inside = name == "producers";
            continue;
        }
        if let Some((k, v)) = line.split_once('=').filter(|_| inside) {
            if k.trim() == key {
                return v.trim() != "0";
            }
        }
    }
    false
}

/// `text` with `key = value` in its `[check]` table, unless that sets `key` already.
fn with_check(text: &str, key: &str, value: &str, why: &str) -> String {
    let mut in_check = false;
    for line in text.lines() {
        if let Some(name) = is_table_header(line) {
            in_check = name == "check";
        } else if in_check && line.split_once('=').is_some_and(|(k, _)| k.trim() == key) {
            return text.to_string();
        }
    }
    let add = format!("# The run matrix's bound for this logic: {why}.\n{key} = {value}\n");
    let mut out = String::new();
    let mut done = false;
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        if !done && is_table_header(line) == Some("check") {
            out.push_str(&add);
            done = true;
        }
    }
    if !done {
        let at = out.rfind("\n[expect]").unwrap_or(out.len());
        out.insert_str(at, &format!("\n[check]\n{add}"));
    }
    out
}

/// Every cell of the run matrix over `sources` (`(path, text)` of scenario files): for each
/// claim on a model host, each scenario of that host, run by a built-in wake logic (not an
/// adapter or a real host), whose switched-on faults the claim all claims, other than the
/// claim's own passing scenarios (the gate runs those). `parse` reads a variant's text as a
/// scenario; a variant that does not parse is returned as an error naming it.
pub fn variants(
    claims: &[Claim],
    sources: &[(PathBuf, String)],
    parse: &dyn Fn(&std::path::Path, &str) -> crate::error::Result<Scenario>,
) -> Result<Vec<Variant>, String> {
    let mut out = Vec::new();
    for claim in claims {
        for (path, text) in sources {
            if top_level_string(text, "host").as_deref() != Some(claim.host) {
                continue;
            }
            let own = top_level_string(text, "wake").as_deref() == Some(claim.wake)
                && text.lines().any(|l| l.trim() == "verdict = \"pass\"");
            let from = path.display().to_string();
            if (CLAIM_PRODUCERS_NOT.iter())
                .any(|(w, key, _)| *w == claim.wake && producer_on(text, key))
            {
                continue;
            }
            let Some(mut vt) = variant_text(text, claim.wake, &from) else {
                continue;
            };
            for (_, key, value, why) in CLAIM_BOUNDS.iter().filter(|b| b.0 == claim.wake) {
                vt = with_check(&vt, key, value, why);
            }
            if own {
                continue;
            }
            let scn = parse(path, &vt).map_err(|e| format!("{from} run by {}: {e}", claim.wake))?;
            let on = scn.host.family().faults_on(&scn.config);
            if !on.iter().all(|(f, _)| claim.survives.contains(f)) {
                continue;
            }
            out.push(Variant {
                claim: *claim,
                source: path.clone(),
                text: vt,
            });
        }
    }
    Ok(out)
}
