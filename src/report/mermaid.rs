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

/// The diagram, declaring only the participants its messages and notes use (in a fixed order:
/// producer, user, fault, wake logic, host), so a run without users or faults shows no empty
/// lifelines for them.
pub fn diagram(scn: &Scenario, r: &RunResult) -> String {
    let mut body = Vec::new();
    let mut used = [false; 5];
    const IDS: [(&str, &str); 5] = [
        ("P", "Producer"),
        ("U", "User"),
        ("F", "Fault"),
        ("W", "Wake logic"),
        ("H", "Host"),
    ];
    let mut mark = |ids: &str| {
        for id in ids.split([',', '-', '>']).filter(|s| !s.is_empty()) {
            if let Some(i) = IDS.iter().position(|(x, _)| *x == id) {
                used[i] = true;
            }
        }
    };
    for l in lines(scn.host, &r.trace, &r.messages, r.outcome.violations()) {
        let text = escape(&format!("{} ms: {}", l.t, l.text));
        if l.kind == LineKind::Violation {
            mark("W,H");
            body.push(format!("    Note over W,H: {text}"));
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
            mark("H");
            body.push(format!("    Note over H: {text}"));
        } else {
            mark(arrow);
            body.push(format!("    {arrow}: {text}"));
        }
    }
    // The header note spans the participants there are (the host at least).
    used[4] = true;
    let declared: Vec<(&str, &str)> = (0..IDS.len())
        .filter(|i| used[*i])
        .map(|i| IDS[i])
        .collect();
    let mut s = String::from("sequenceDiagram\n");
    for (id, name) in &declared {
        let _ = writeln!(s, "    participant {id} as {name}");
    }
    let (first, last) = (declared[0].0, declared[declared.len() - 1].0);
    let span = if first == last {
        first.to_string()
    } else {
        format!("{first},{last}")
    };
    let _ = writeln!(
        s,
        "    Note over {span}: {}",
        escape(&format!(
            "{} · {} · seed {}",
            scn.host.version_label(),
            scn.wake,
            r.seed
        ))
    );
    for b in body {
        s += &b;
        s.push('\n');
    }
    s
}

/// The participants a diagram declares, in order (for tests and readers).
pub fn participants(diagram: &str) -> Vec<&str> {
    (diagram.lines())
        .filter_map(|l| l.trim().strip_prefix("participant "))
        .filter_map(|p| p.split(' ').next())
        .collect()
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
