//! A Mermaid sequence diagram of one run (`wakesim replay --format mermaid`).

use std::fmt::Write;

use super::{LineKind, lines};
use crate::engine::RunResult;
use crate::scenario::Scenario;
use crate::sim::record::Actor;

/// Mermaid treats `;` and `#` specially in messages; use its entity codes.
fn escape(s: &str) -> String {
    // One pass: escaping `#` first and `;` after would escape the `;` of `#35;` again.
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            '"' => out.push_str("#quot;"),
            c => out.push(c),
        }
    }
    out
}

pub fn diagram(scn: &Scenario, r: &RunResult) -> String {
    let mut s = String::from("sequenceDiagram\n");
    for (id, name) in [
        ("P", "Producer"),
        ("U", "User"),
        ("F", "Fault"),
        ("W", "Wake logic"),
        ("H", "Host"),
    ] {
        let _ = writeln!(s, "    participant {id} as {name}");
    }
    let _ = writeln!(
        s,
        "    Note over P,H: {}",
        escape(&format!(
            "{} · {} · seed {}",
            scn.host.version_label(),
            scn.wake,
            r.seed
        ))
    );
    for l in lines(scn.host, &r.trace, &r.messages, r.outcome.violations()) {
        let text = escape(&format!("{} ms: {}", l.t, l.text));
        if l.kind == LineKind::Violation {
            let _ = writeln!(s, "    Note over W,H: {text}");
            continue;
        }
        let arrow = match (l.actor, l.kind) {
            (Actor::Producer, _) => "P->>W",
            (Actor::User, _) => "U->>H",
            (Actor::Fault, _) => "F->>H",
            (Actor::Wake, LineKind::Handler) => "H->>W",
            (Actor::Wake, _) => "W->>H",
            _ => "",
        };
        if arrow.is_empty() {
            let _ = writeln!(s, "    Note over H: {text}");
        } else {
            let _ = writeln!(s, "    {arrow}: {text}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_each_special_character_once() {
        assert_eq!(
            super::escape("wake #1; \"x\""),
            "wake #35;1#59; #quot;x#quot;"
        );
    }
}
