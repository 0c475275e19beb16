//! Words several families use for their senders (each family's `vocab::sender_name` says which
//! of its kinds they name).

/// A subagent, by letter (`subagent a`, `b`, ...), as pi and gptme both show theirs.
pub fn subagent(origin: u8) -> String {
    format!("subagent {}", (b'a' + origin % 26) as char)
}
