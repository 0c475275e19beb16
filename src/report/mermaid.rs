//! A Mermaid sequence diagram of one run (`wakesim replay --format mermaid`).

use std::fmt::Write;

use super::{LineKind, lines};
use crate::run::RunResult;
use crate::scenario::Scenario;
use crate::trace::Actor;

/// Mermaid treats `;` and `#` specially in messages; use its entity codes.
fn escape(s: &str) -> String {
    s.replace('#', "#35;")
        .replace(';', "#59;")
        .replace('"', "#quot;")
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
