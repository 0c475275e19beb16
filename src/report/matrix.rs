//! The scenario matrix in `wakesim list` (`engine::matrix`): per fixed variant, each fault it
//! claims to survive and the passing scenarios that switch it on; as text or as JSON Lines.

use std::fmt::Write;

use serde::Serialize;

use super::json::FORMAT;
use crate::engine::matrix::Row;

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum MatrixLine<'a> {
    /// One (variant, fault) cell.
    Matrix {
        format: &'static str,
        host: &'static str,
        wake: &'static str,
        fault: &'static str,
        /// `"claimed"` or `"not-claimed"`.
        claim: &'static str,
        /// Passing scenarios that switch it on, with their shares (`"1/4"`).
        on_in: Vec<(String, String)>,
        /// Why it is not claimed.
        #[serde(skip_serializing_if = "Option::is_none")]
        why: Option<&'a str>,
    },
}

/// The file name of a scenario path, for the text table.
fn short(p: &std::path::Path) -> String {
    p.file_stem()
        .map_or_else(|| p.display().to_string(), |s| s.to_string_lossy().into())
}

/// `wakesim list`'s matrix, one block per variant.
pub fn text(rows: &[Row]) -> String {
    let mut s = String::from(
        "\nscenario matrix (fixed variant × fault it claims to survive: the passing scenarios \
         that switch it on, with their shares; 1/1 = every seed):\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "  {} on {} ({} passing scenario(s)):",
            r.claim.wake, r.claim.host, r.passing
        );
        for c in &r.cells {
            let on: Vec<String> = (c.on_in.iter())
                .map(|(p, share)| format!("{} {share}", short(p)))
                .collect();
            let on = if on.is_empty() {
                "MISSING: no passing scenario switches it on".to_string()
            } else {
                on.join(", ")
            };
            let _ = writeln!(s, "    {:<24} {on}", c.fault);
        }
        for (fault, why) in r.claim.not_claimed {
            let _ = writeln!(s, "    {fault:<24} not claimed: {why}");
        }
    }
    s
}

/// `wakesim list --format json`'s matrix: one line per (variant, fault).
pub fn json(rows: &[Row]) -> String {
    let mut s = String::new();
    let mut push = |line: MatrixLine<'_>| {
        s += &serde_json::to_string(&line).expect("a matrix line serializes");
        s.push('\n');
    };
    for r in rows {
        for c in &r.cells {
            push(MatrixLine::Matrix {
                format: FORMAT,
                host: r.claim.host,
                wake: r.claim.wake,
                fault: c.fault,
                claim: "claimed",
                on_in: (c.on_in.iter())
                    .map(|(p, share)| (p.display().to_string(), share.to_string()))
                    .collect(),
                why: None,
            });
        }
        for (fault, why) in r.claim.not_claimed {
            push(MatrixLine::Matrix {
                format: FORMAT,
                host: r.claim.host,
                wake: r.claim.wake,
                fault,
                claim: "not-claimed",
                on_in: Vec::new(),
                why: Some(why),
            });
        }
    }
    s
}
