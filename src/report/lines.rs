//! Rendering a run's records: the timeline's lines (for people, snapshots, JSON and diagrams)
//! and the story (the timeline reduced to what a reader needs to follow the race).

use super::{Line, LineKind};
use crate::check::Violation;
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
    let family = host.family();
    let mut out = Vec::with_capacity(trace.len());
    let mut pending = Violations {
        list: violations,
        next: 0,
    };
    let mut text = Texts {
        trace,
        messages,
        // gptme hosts make many messages at one instant (a prompt flood) and drop many at one
        // exit: a run of consecutive ids that read alike is one line.
        merge: family.compact_runs(),
        carried: Vec::new(),
        produced: Vec::new(),
        delivered: Vec::new(),
    };
    let mut i = 0;
    while i < trace.len() {
        let r = &trace[i];
        pending.before(Some(r.t.0), &mut out);
        let (shown, used) = text.of(i);
        i += used;
        let (produced, delivered) = (take(&mut text.produced), take(&mut text.delivered));
        let Some(shown) = shown else { continue };
        out.push(Line {
            produced,
            delivered,
            t: r.t.0,
            actor: r.actor,
            text: shown,
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
    pending.before(None, &mut out);
    out
}

fn take(v: &mut Vec<MsgId>) -> Vec<MsgId> {
    std::mem::take(v)
}

/// The violations not shown yet, in time order.
struct Violations<'a> {
    list: &'a [Violation],
    next: usize,
}

impl Violations<'_> {
    /// Show every violation before `t` (all of them for `None`).
    fn before(&mut self, t: Option<u64>, out: &mut Vec<Line>) {
        while let Some(v) = self.list.get(self.next)
            && t.is_none_or(|t| v.t.0 < t)
        {
            out.push(Line {
                produced: Vec::new(),
                delivered: Vec::new(),
                t: v.t.0,
                actor: Actor::Check,
                text: format!("✗ {}: {}", v.invariant, v.detail),
                state: "",
                kind: LineKind::Violation,
            });
            self.next += 1;
        }
    }
}

/// The text of each record, as the timeline shows it.
struct Texts<'a> {
    trace: &'a [Record],
    messages: &'a [MsgInfo],
    merge: bool,
    /// Messages appended since the last model request: the next one carries them.
    carried: Vec<MsgId>,
    /// The messages the last line made, and those it delivered (a request carrying them).
    produced: Vec<MsgId>,
    delivered: Vec<MsgId>,
}

impl Texts<'_> {
    /// The line of record `i` (none for an observation the timeline does not show), and how
    /// many records it stands for.
    fn of(&mut self, i: usize) -> (Option<String>, usize) {
        let text = match &self.trace[i].ev {
            Ev::Produced { msg } => return self.produced(i, *msg),
            Ev::Dropped { msg, reason } => {
                let run = self.run(i, |a, b| match (a, b) {
                    (Ev::Dropped { msg: x, reason: r1 }, Ev::Dropped { msg: y, reason: r2 }) => {
                        y.0 == x.0 + 1 && r1 == r2
                    }
                    _ => false,
                });
                let text = format!("{} dropped: {}", id_run(*msg, run), reason.text);
                return (Some(text), run);
            }
            Ev::Appended { msg } => {
                self.carried.push(*msg);
                return (None, 1);
            }
            Ev::Request { req, harness } => self.request(*req, *harness),
            Ev::Mark(w) => format!("◆ race window: {}", w.describe),
            Ev::Note(n) => n.render(),
            Ev::SessionEnd { cause } => format!("session ends: {}", cause.text),
            Ev::InputInterrupt { input } => {
                format!("outside input interrupts the idle wait (fingerprint {input:016x})")
            }
            Ev::Deadlock { threads } => {
                format!("deadlock: {threads} thread(s) can never run again")
            }
            Ev::Interleaved { req, msg } => {
                let what = msg.map_or("an entry".to_string(), |m| m.to_string());
                format!(
                    "model request #{} has {what} between a tool call and its result",
                    req
                )
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
            | Ev::OwnerClaimed { .. }
            | Ev::PromptSent { .. }
            | Ev::InputChanged { .. }
            | Ev::WaitEnded
            | Ev::Boundary { .. } => return (None, 1),
        };
        (Some(text), 1)
    }

    /// How many records from `i` one line stands for: one, or (when runs merge) the run of
    /// records at its instant that `next` accepts pairwise.
    fn run(&self, i: usize, next: impl Fn(&Ev, &Ev) -> bool) -> usize {
        if self.merge {
            run_len(&self.trace[i..], next)
        } else {
            1
        }
    }

    /// A message (or a run of alike messages) made.
    fn produced(&mut self, i: usize, msg: MsgId) -> (Option<String>, usize) {
        let messages = self.messages;
        let run = self.run(i, |a, b| match (a, b) {
            (Ev::Produced { msg: x }, Ev::Produced { msg: y }) => {
                let (p, q) = (&messages[x.0 as usize], &messages[y.0 as usize]);
                y.0 == x.0 + 1
                    && (p.kind, p.source, p.origin, p.conv) == (q.kind, q.source, q.origin, q.conv)
            }
            _ => false,
        });
        let info = &messages[msg.0 as usize];
        let (ids, n) = (id_run(msg, run), run as u32);
        self.produced = (0..n).map(|k| MsgId(msg.0 + k)).collect();
        let text = match info.kind {
            MsgKind::Watch => format!("{ids} ready: {} fired", info.source_name()),
            MsgKind::Job => format!("{ids} ready: {} finished", info.source_name()),
            MsgKind::Prompt if n > 1 => {
                format!("{ids} ready: {n} records for {}", info.source_name())
            }
            MsgKind::Prompt => format!("{ids} ready: a record for {}", info.source_name()),
            MsgKind::Completion | MsgKind::Notification | MsgKind::Orchestrator => format!(
                "{ids} ready ({} from {})",
                info.kind.name(),
                info.source_name()
            ),
        };
        (Some(text), run)
    }

    /// A model request, with what it carries.
    fn request(&mut self, req: u32, harness: bool) -> String {
        let what = if self.carried.is_empty() {
            String::new()
        } else if self.merge {
            format!(" carrying {}", id_list(&self.carried))
        } else {
            let ids: Vec<String> = self.carried.iter().map(|m| m.to_string()).collect();
            format!(" carrying {}", ids.join(" "))
        };
        self.delivered = std::mem::take(&mut self.carried);
        if harness {
            format!("model request #{req}{what}")
        } else {
            format!("model request #{req}{what} WITHOUT the before_agent_start harness")
        }
    }
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
        .filter(|i| !i.is_liveness())
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
                | Ev::PromptSent { .. }
                | Ev::InputChanged { .. }
                | Ev::WaitEnded
                | Ev::Boundary { .. }
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
