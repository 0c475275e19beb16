//! Rendering a run's records: the timeline's lines (for people, snapshots, JSON and diagrams)
//! and the story (the timeline reduced to what a reader needs to follow the race).

use super::{Line, LineKind};
use crate::check::{Invariant, Violation};
use crate::family::HostKind;
use crate::sim::msg::{MsgId, MsgInfo, MsgKind, id_list};
use crate::sim::record::{Actor, Ev, InStory, Record, Role};

/// Render records and violations into timeline lines, in time order. Observations that only
/// checkers need (idle edges, run-flag writes, appends) are not shown; a model request lists the
/// messages it carries.
pub fn lines(
    host: HostKind,
    trace: &[Record],
    messages: &[MsgInfo],
    violations: &[Violation],
) -> Vec<Line> {
    let mut out = Vec::with_capacity(trace.len());
    let mut carried: Vec<MsgId> = Vec::new();
    let mut vi = 0;
    let push_violations = |out: &mut Vec<Line>, upto: Option<u64>, vi: &mut usize| {
        while *vi < violations.len() && upto.is_none_or(|t| violations[*vi].t.0 < t) {
            let v = &violations[*vi];
            out.push(Line {
                t: v.t.0,
                actor: Actor::Check,
                text: format!("✗ {}: {}", v.invariant, v.detail),
                state: "",
                kind: LineKind::Violation,
            });
            *vi += 1;
        }
    };
    // gptme hosts make many messages at one instant (a prompt flood) and drop many at one exit:
    // a run of consecutive ids that read alike is one line.
    let family = host.family();
    let merge = family.compact_runs();
    let mut skip = 0;
    for (i, r) in trace.iter().enumerate() {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        push_violations(&mut out, Some(r.t.0), &mut vi);
        let text = match &r.ev {
            Ev::Produced { msg } => {
                let info = &messages[msg.0 as usize];
                let run = if merge {
                    run_len(&trace[i..], |a, b| match (a, b) {
                        (Ev::Produced { msg: x }, Ev::Produced { msg: y }) => {
                            let (p, q) = (&messages[x.0 as usize], &messages[y.0 as usize]);
                            y.0 == x.0 + 1
                                && (p.kind, p.source, p.origin, p.conv)
                                    == (q.kind, q.source, q.origin, q.conv)
                        }
                        _ => false,
                    })
                } else {
                    1
                };
                skip = run - 1;
                let (ids, n) = (id_run(*msg, run), run as u32);
                match info.kind {
                    MsgKind::Watch => format!("{ids} ready: {} fired", info.source_name()),
                    MsgKind::Job => format!("{ids} ready: {} finished", info.source_name()),
                    MsgKind::Prompt if n > 1 => {
                        format!("{ids} ready: {n} records for {}", info.source_name())
                    }
                    MsgKind::Prompt => format!("{ids} ready: a record for {}", info.source_name()),
                    _ => format!(
                        "{ids} ready ({} from {})",
                        info.kind.name(),
                        info.source_name()
                    ),
                }
            }
            Ev::Appended { msg } => {
                carried.push(*msg);
                continue;
            }
            Ev::Request { req, harness } => {
                let what = if carried.is_empty() {
                    String::new()
                } else if merge {
                    format!(" carrying {}", id_list(&carried))
                } else {
                    let ids: Vec<String> = carried.iter().map(|m| m.to_string()).collect();
                    format!(" carrying {}", ids.join(" "))
                };
                carried.clear();
                if *harness {
                    format!("model request #{req}{what}")
                } else {
                    format!("model request #{req}{what} WITHOUT the before_agent_start harness")
                }
            }
            Ev::Dropped { msg, reason } => {
                let run = if merge {
                    run_len(&trace[i..], |a, b| match (a, b) {
                        (
                            Ev::Dropped { msg: x, reason: r1 },
                            Ev::Dropped { msg: y, reason: r2 },
                        ) => y.0 == x.0 + 1 && r1 == r2,
                        _ => false,
                    })
                } else {
                    1
                };
                skip = run - 1;
                format!("{} dropped: {}", id_run(*msg, run), reason.text)
            }
            Ev::Mark(w) => format!("◆ race window: {}", w.describe),
            Ev::Note(n) => n.render(),
            Ev::SessionEnd { cause } => format!("session ends: {}", cause.text),
            Ev::InputInterrupt { input } => {
                format!("outside input interrupts the idle wait (fingerprint {input:016x})")
            }
            Ev::Idle { .. }
            | Ev::RunFlag { .. }
            | Ev::AgentRun { .. }
            | Ev::Starter { .. }
            | Ev::Settled
            | Ev::Pass { .. }
            | Ev::Wake { .. }
            | Ev::Work { .. }
            | Ev::WorkNoticed { .. }
            | Ev::Waiting { .. }
            | Ev::OwnerClaimed { .. } => {
                continue;
            }
        };
        out.push(Line {
            t: r.t.0,
            actor: r.actor,
            text,
            state: family.state_name(r.state),
            kind: match &r.ev {
                Ev::Note(n) => match n.role() {
                    Role::Handler => LineKind::Handler,
                    Role::Call => LineKind::Call,
                    Role::Plain => LineKind::Plain,
                },
                _ => LineKind::Plain,
            },
        });
    }
    push_violations(&mut out, None, &mut vi);
    out
}

/// How many records from the first, at its instant, continue a run `next` accepts pairwise.
fn run_len(records: &[Record], next: impl Fn(&Ev, &Ev) -> bool) -> usize {
    let mut n = 1;
    while n < records.len()
        && records[n].t == records[0].t
        && next(&records[n - 1].ev, &records[n].ev)
    {
        n += 1;
    }
    n
}

/// `m3`, or `m3–m103` for a run of consecutive ids.
fn id_run(first: MsgId, len: usize) -> String {
    match len {
        1 => first.to_string(),
        n => format!("{first}–{}", MsgId(first.0 + n as u32 - 1)),
    }
}

/// The story of a run: its timeline reduced to what a reader needs to follow the race. Handler
/// entries are folded into the calls they make (`[agent_end] sendMessage(...)`), awaits and run
/// phases that change nothing visible are dropped, and for a safety invariant (one that breaks
/// at an instant, not at the end) the story stops at the violation of `target`.
pub fn story(
    host: HostKind,
    trace: &[Record],
    messages: &[MsgInfo],
    violations: &[Violation],
    target: Option<crate::check::Invariant>,
) -> Vec<Line> {
    let stop = target
        .filter(|i| !matches!(i, Invariant::NoLoss | Invariant::BoundedLatency))
        .and_then(|i| violations.iter().find(|v| v.invariant == i))
        .map(|v| v.t.0);
    let keep_violation = |l: &Line| match target {
        Some(t) => l.text.starts_with(&format!("✗ {t}:")),
        None => true,
    };
    // Which records survive, in step with `lines` (which skips observations it does not show).
    let mut context: Option<&'static str> = None;
    let mut out = Vec::new();
    let mut all = lines(host, trace, messages, violations).into_iter();
    let shown = trace.iter().filter(|r| {
        !matches!(
            r.ev,
            Ev::Appended { .. }
                | Ev::Idle { .. }
                | Ev::RunFlag { .. }
                | Ev::AgentRun { .. }
                | Ev::Starter { .. }
                | Ev::Settled
        )
    });
    let mut records = shown.peekable();
    for line in all.by_ref() {
        if stop.is_some_and(|t| line.t > t) {
            break;
        }
        if line.kind == LineKind::Violation {
            if keep_violation(&line) {
                out.push(line);
            }
            continue;
        }
        let Some(rec) = records.next() else { break };
        let keep = match &rec.ev {
            Ev::Note(n) => match n.in_story() {
                InStory::Keep => true,
                InStory::Drop => false,
                InStory::Enters { context: c, keep } => {
                    context = c;
                    keep
                }
            },
            Ev::Mark(_) => false,
            _ => true,
        };
        if !keep {
            continue;
        }
        let mut line = line;
        if line.kind == LineKind::Call
            && let Some(c) = context
        {
            line.text = format!("[{c}] {}", line.text);
        }
        if line.actor != Actor::Wake {
            context = None;
        }
        out.push(line);
    }
    out
}
