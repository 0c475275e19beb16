//! Facts the Rust side and the JavaScript and Python sides each keep in their own language, checked
//! equal here, so that a change on one side that the others miss fails `cargo test`.
//!
//! The Rust constants are the source where there is one: pi's fault order (`PiFault::ALL`, the
//! order a plan draws faults in) against the pi driver's `FAULTS` and the fixed variant's claim,
//! which lists every fault in that order; the default send options per message kind
//! (`Message::default_options`) against the pi driver's, the Node adapter's and the Python
//! adapter's tables. The virtual epoch (2026-01-01T00:00:00Z) has no Rust counterpart: its four
//! copies (Node adapter, Python adapter, Python scheduler, the drivers' virtual clock) are checked
//! equal to it. The line framing is not a copy at all: the test checks that the Node adapter and the
//! drivers' wire both use `adapters/node/lib/lines.mjs` and read stdin nowhere else.
//!
//! Each side's value is read from its file by a small pattern written out below; a file that no
//! longer matches the pattern fails with its name, so the check cannot pass by finding nothing.
use std::fs;
use std::path::Path;
use wakesim::family::claims::CLAIMS;
use wakesim::family::common::faults::FaultKind;
use wakesim::family::pi::api::Message;
use wakesim::family::pi::faults::PiFault;
use wakesim::sim::msg::{MsgId, MsgKind};

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The text between the first `start` after `anchor` and the next `end`.
fn between<'a>(text: &'a str, path: &str, anchor: &str, start: &str, end: &str) -> &'a str {
    let at = text
        .find(anchor)
        .unwrap_or_else(|| panic!("{path}: no `{anchor}` (the pattern this test reads)"));
    let rest = &text[at..];
    let s = rest
        .find(start)
        .unwrap_or_else(|| panic!("{path}: no `{start}` after `{anchor}`"))
        + start.len();
    let e = rest[s..]
        .find(end)
        .unwrap_or_else(|| panic!("{path}: no `{end}` closing `{anchor}`"));
    &rest[s..s + e]
}

/// The double-quoted strings of `text`, in order.
fn quoted(text: &str) -> Vec<String> {
    text.split('"')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

fn pi_fault_names() -> Vec<String> {
    PiFault::ALL.iter().map(|f| f.name().to_string()).collect()
}

#[test]
fn pis_fault_order_is_the_drivers_and_the_claims() {
    let want = pi_fault_names();
    let path = "hosts/pi/driver.mjs";
    let driver = read(path);
    let list = between(&driver, path, "const FAULTS = [", "[", "];");
    assert_eq!(
        quoted(list),
        want,
        "{path}: FAULTS is not PiFault::ALL's order (src/family/pi/faults.rs)"
    );
    // The variant that claims every pi fault lists them in the model's order.
    let all: Vec<_> = CLAIMS
        .iter()
        .filter(|c| c.host == "pi" && c.not_claimed.is_empty())
        .collect();
    assert!(
        !all.is_empty(),
        "src/family/claims.rs: no pi variant claims every fault"
    );
    for claim in all {
        let got: Vec<String> = claim.survives.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            got, want,
            "src/family/claims.rs: {}'s faults are not in PiFault::ALL's order",
            claim.wake
        );
    }
    // Every pi claim names only pi faults.
    for claim in CLAIMS.iter().filter(|c| c.host == "pi") {
        for f in claim
            .survives
            .iter()
            .chain(claim.not_claimed.iter().map(|(f, _)| f))
        {
            assert!(
                want.iter().any(|w| w == f),
                "src/family/claims.rs: {} names {f}, not a pi fault",
                claim.wake
            );
        }
    }
}

/// `kind -> (deliverAs, triggerTurn)` as the Rust model sends a producer message.
fn rust_default_options() -> Vec<(String, String, bool)> {
    [
        MsgKind::Completion,
        MsgKind::Notification,
        MsgKind::Orchestrator,
    ]
    .iter()
    .map(|&kind| {
        let o = Message {
            id: MsgId(0),
            kind,
            source: 0,
        }
        .default_options();
        let d = o.deliver_as.expect("a default option names its deliverAs");
        (
            kind.name().to_string(),
            d.name().to_string(),
            o.trigger_turn,
        )
    })
    .collect()
}

/// The three lines of a `DEFAULT_OPTIONS` table: `kind: { deliverAs: "x", triggerTurn: true }`
/// (JavaScript) or `"kind": {"deliver_as": "x", "trigger_turn": True}` (Python).
fn parse_options(path: &str, table: &str) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    // Up to the table's closing brace (a line of its own).
    for line in table
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with('}'))
        .filter(|l| !l.is_empty())
    {
        let (kind, rest) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("{path}: `{line}` is not `kind: {{...}}`"));
        let kind = kind.trim().trim_matches('"').to_string();
        let q = quoted(rest);
        // JS: ["steer"]; Python: ["deliver_as", "steer", "trigger_turn"].
        let deliver = if q.len() >= 2 && q[0] == "deliver_as" {
            q[1].clone()
        } else {
            q.first()
                .unwrap_or_else(|| panic!("{path}: no deliverAs in `{line}`"))
                .clone()
        };
        let trigger = if rest.contains("true") || rest.contains("True") {
            true
        } else if rest.contains("false") || rest.contains("False") {
            false
        } else {
            panic!("{path}: no triggerTurn in `{line}`")
        };
        out.push((kind, deliver, trigger));
    }
    out
}

#[test]
fn the_default_send_options_are_the_models_everywhere() {
    let want = rust_default_options();
    for (path, anchor) in [
        ("hosts/pi/driver.mjs", "const DEFAULT_OPTIONS = {"),
        ("adapters/node/lib/realm.js", "const DEFAULT_OPTIONS = {"),
        ("adapters/python/wakesim_adapter/pi.py", "DEFAULT_OPTIONS:"),
    ] {
        let text = read(path);
        let table = between(&text, path, anchor, "{\n", "\n\n");
        let got = parse_options(path, table);
        assert_eq!(
            got, want,
            "{path}: its default send options are not Message::default_options' (src/family/pi/api.rs)"
        );
    }
}

/// Days from 1970-01-01 to `y-m-d` (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The integer after `name` (up to the first non-digit, `_` separators allowed).
fn number_after(text: &str, path: &str, name: &str) -> i64 {
    let at = text
        .find(name)
        .unwrap_or_else(|| panic!("{path}: no `{name}`"))
        + name.len();
    let digits: String = text[at..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '_')
        .filter(|c| *c != '_')
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("{path}: `{name}` is not followed by a number"))
}

#[test]
fn the_virtual_epoch_is_one_instant_in_four_files() {
    let epoch_s = days_from_civil(2026, 1, 1) * 86_400;
    assert_eq!(epoch_s, 1_767_225_600, "the civil-date arithmetic");
    for (path, name, scale) in [
        ("adapters/node/lib/realm.js", "const EPOCH_MS =", 1000),
        ("hosts/lib/vclock.mjs", "export const EPOCH_MS =", 1000),
        (
            "adapters/python/wakesim_adapter/protocol.py",
            "EPOCH_S =",
            1,
        ),
        ("adapters/python/wakesim_adapter/sched.py", "EPOCH_S =", 1),
    ] {
        let text = read(path);
        assert_eq!(
            number_after(&text, path, name),
            epoch_s * scale,
            "{path}: {name} is not 2026-01-01T00:00:00Z"
        );
    }
}

#[test]
fn the_node_adapter_and_the_drivers_frame_lines_in_one_module() {
    for path in ["adapters/node/adapter.mjs", "hosts/lib/wire.mjs"] {
        let text = read(path);
        assert!(
            text.contains("/lines.mjs\"") && text.contains("LineReader"),
            "{path}: does not read its lines with adapters/node/lib/lines.mjs"
        );
        for own in ["fs.readSync(", "new StringDecoder(", "fs.writeSync(1"] {
            assert!(
                !text.contains(own),
                "{path}: frames lines itself ({own}); use adapters/node/lib/lines.mjs"
            );
        }
    }
}
