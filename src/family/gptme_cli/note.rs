//! The gptme CLI's narration: the records of a CLI timeline and how they read. Observations
//! (appends, model requests, session ends) are rendered by `report`.

use crate::family::common::bracketed as payload;
use crate::family::common::conv::ConvId;
use crate::family::common::host_states;
use crate::sim::msg::{MsgId, Payload, conv_name};
use crate::sim::record::{self, InStory, Role};

host_states! {
    /// CLI states: the chat loop running its queue and hooks; a model request in flight; a tool call
    /// executing; the idle wait blocked in `cond.wait`; the session ended.
    pub enum CliState {
        Loop = 0 => "LOOP", Generating = 1 => "GENERATING", Tools = 2 => "TOOLS",
        Waiting = 3 => "WAITING", Ended = 4 => "ENDED",
    }
}

/// What a CLI model reply does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CliReply {
    /// Plain text, no tool call ("the job is running").
    Text,
    /// A foreground tool call.
    Tool,
    /// A `bg` tool call that starts background job #n.
    Job(u32),
}

/// A job as people read it: `job #2`, or `job #1 of B` for another conversation's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobName {
    pub conv: u8,
    pub id: u32,
}

impl std::fmt::Display for JobName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.conv {
            0 => write!(f, "job #{}", self.id),
            c => write!(f, "job #{} of {}", self.id, conv_name(c)),
        }
    }
}

/// What the CLI pops from its prompt queue and appends to the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Popped {
    /// The prompt `gptme -n` was started with.
    Initial,
    Completion(JobName, MsgId),
    Prompt(MsgId, bool),
    /// "Background wait yielded to pending session input."
    InputPending,
    /// The wait's timeout notice for these jobs.
    Timeout(Box<[JobName]>),
    /// auto_reply's "No tool call detected in last message..."
    Nudge(u8),
    Subagent(MsgId),
}

/// One gptme-cli narration record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// A STEP_PRE hook appended what it yielded.
    StepPre {
        hook: &'static str,
        payload: Payload,
    },
    CliStart {
        auto_reply: bool,
        stale_control: bool,
    },
    /// The loop pops its next message and appends it to the log.
    Pop(Popped),
    /// `drain_external_prompt_queue` moved records into the prompt queue.
    DrainFile {
        payload: Payload,
    },
    /// Noninteractive and nothing queued: the closing protocol.
    Closing {
        reopened: bool,
    },
    CliReply {
        reply: CliReply,
    },
    JobExits {
        job: JobName,
    },
    /// `_notify_completion`: the completion is queued and the condition notified.
    Notify {
        job: JobName,
        msg: MsgId,
        woke: bool,
    },
    LateCallback {
        job: JobName,
    },
    /// The host calls a LOOP_CONTINUE hook.
    Hook {
        name: &'static str,
        priority: i32,
    },
    /// What a LOOP_CONTINUE hook yielded: messages, the input notice, the timeout notice.
    Yield {
        name: &'static str,
        payload: Payload,
        input: bool,
        timeout: bool,
        stop: bool,
    },
    Claim {
        cid: ConvId,
        payload: Payload,
    },
    TakePrompts {
        payload: Payload,
        left: u32,
    },
    MarkExpired {
        job: JobName,
    },
    /// The waiter blocks in `cond.wait`.
    Wait {
        timeout_ms: u64,
        own: u32,
    },
    /// The waiter was woken by `notify_all`, after `rechecks` timed re-checks.
    Woken {
        rechecks: u32,
    },
    /// The hook returned after `rechecks` timed re-checks without being notified.
    WaitEnded {
        rechecks: u32,
    },
    Nudge {
        count: u8,
    },
    Reset {
        cid: Option<ConvId>,
    },
    /// A reset popped a job before its completion was queued.
    Killed {
        job: JobName,
        running: bool,
    },
    Purged {
        msg: MsgId,
    },
    Writer {
        payload: Payload,
        steer: bool,
        malformed: bool,
        refused: bool,
    },
    ControlWrite {
        size: u32,
        same_size: bool,
    },
    ForeignJob {
        job: JobName,
    },
    OwnerClaims {
        job: JobName,
        msg: Option<MsgId>,
    },
    ConcurrentDrain {
        payload: Payload,
    },
    Sigterm,
}

/// `n` cond.wait timeouts, in words.
fn timeouts(n: u32) -> String {
    match n {
        1 => "its cond.wait timed out once".to_string(),
        n => format!("its cond.wait timed out {n} times"),
    }
}

impl record::Note for Note {
    const TAG: u64 = 19;

    fn render(&self) -> String {
        match self {
            Note::StepPre { hook, payload: p } => {
                format!("STEP_PRE {hook} appends {}", payload(p))
            }
            Note::CliStart {
                auto_reply,
                stale_control,
            } => started(*auto_reply, *stale_control),
            Note::Pop(p) => format!("pops {}; appends it", p.text()),
            Note::DrainFile { payload: p } => {
                format!("drain_external_prompt_queue → {}", payload(p))
            }
            Note::Closing { reopened: false } => {
                "nothing queued: touches prompt-queue-closed; drains again: nothing".to_string()
            }
            Note::Closing { reopened: true } => {
                "nothing queued: touches prompt-queue-closed; drains again: a record came in, reopens".to_string()
            }
            Note::CliReply { reply } => match reply {
                CliReply::Text => "reply: text, no tool call".to_string(),
                CliReply::Tool => "reply: a tool call; it runs".to_string(),
                CliReply::Job(n) => {
                    format!("reply: bg tool call starts background job #{n} (\"it is running\")")
                }
            },
            Note::JobExits { job } => format!("{job} exits; its reader drains up to 1 s more"),
            Note::Notify { job, msg, woke } => {
                let who = if *woke {
                    "wakes the waiter"
                } else {
                    "nobody is waiting"
                };
                format!("_notify_completion({job}): {msg} queued; notify_all: {who}")
            }
            Note::LateCallback { job } => {
                format!("{job}'s late reader callback dropped: the job was reset")
            }
            Note::Hook { name, priority } => format!("LOOP_CONTINUE {name} ({priority})"),
            Note::Yield {
                name,
                payload: p,
                input,
                timeout,
                stop,
            } => yielded(name, p, *input, *timeout, *stop),
            Note::Claim { cid, payload: p } => {
                format!("background_job_completion_hook({cid}) claims {}", payload(p))
            }
            Note::TakePrompts { payload: p, left } => format!(
                "wait_input takes {} from prompt-queue.jsonl ({left} left on disk)",
                payload(p)
            ),
            Note::MarkExpired { job } => {
                format!("GPTME_WATCH_IDLE_MAX passed: {job} marked wait_expired")
            }
            Note::Wait { timeout_ms, own } => format!(
                "cond.wait({timeout_ms} ms): {own} own job{} pending",
                if *own == 1 { "" } else { "s" }
            ),
            Note::Woken { rechecks: 0 } => "waiter woken by notify_all".to_string(),
            Note::Woken { rechecks } => format!(
                "waiter woken by notify_all (after {})",
                timeouts(*rechecks)
            ),
            Note::WaitEnded { rechecks } => {
                format!("the wait ends after {}", timeouts(*rechecks))
            }
            Note::Nudge { count } => format!(
                "auto_reply: no tool call and nothing queued: nudge #{count}"
            ),
            Note::Reset { cid: Some(c) } => {
                format!("reset_background_jobs({c}): kill, purge, pop and notify its condition")
            }
            Note::Reset { cid: None } => {
                "exit cleanup: reset_background_jobs() kills every job, purges the queue, clears control keys".to_string()
            }
            Note::Killed { job, running: true } => format!("{job} killed: its result will never come"),
            Note::Killed {
                job,
                running: false,
            } => format!("{job} popped while its reader drained: its completion will be dropped"),
            Note::Purged { msg } => format!("{msg} purged from the completion queue"),
            Note::Writer {
                payload: p,
                steer,
                malformed,
                refused,
            } => written(p, *steer, *malformed, *refused),
            Note::ControlWrite { size, same_size } => {
                if *same_size {
                    format!("the parent rewrites control.jsonl: new contents, same size ({size} B)")
                } else {
                    format!("the parent writes control.jsonl ({size} B); nobody consumes it")
                }
            }
            Note::ForeignJob { job } => format!("conversation B starts {job}"),
            Note::OwnerClaims { job, msg } => match msg {
                Some(m) => format!("conversation B claims {m}, {job}'s completion"),
                None => format!("conversation B finds {job}'s completion gone"),
            },
            Note::ConcurrentDrain { payload: p } => format!(
                "concurrent drain: another session of A runs a step; its STEP_PRE claims {} into the log",
                payload(p)
            ),
            Note::Sigterm => "SIGTERM".to_string(),
        }
    }

    fn role(&self) -> Role {
        match self {
            Note::Hook { .. } => Role::Handler,
            Note::Claim { .. } | Note::TakePrompts { .. } | Note::MarkExpired { .. } => Role::Call,
            _ => Role::Plain,
        }
    }

    fn in_story(&self) -> InStory {
        InStory::Keep
    }
}

/// The session's start.
fn started(auto_reply: bool, stale_control: bool) -> String {
    let mut s = "gptme -n starts with its prompt queued".to_string();
    if auto_reply {
        s += "; complete tool loaded (auto-reply)";
    }
    if stale_control {
        s += "; a stale control.jsonl is in the logdir";
    }
    s
}

impl Popped {
    /// What the loop pops.
    fn text(&self) -> String {
        match self {
            Popped::Initial => "the initial prompt".to_string(),
            Popped::Completion(job, m) => format!("{job}'s completion {m}"),
            Popped::Prompt(m, false) => format!("prompt {m}"),
            Popped::Prompt(m, true) => format!("steer prompt {m}"),
            Popped::InputPending => {
                "\"Background wait yielded to pending session input.\"".to_string()
            }
            Popped::Timeout(jobs) => {
                let names: Vec<String> = jobs.iter().map(|j| j.to_string()).collect();
                format!("the timeout notice for {}", names.join(", "))
            }
            Popped::Nudge(n) => format!("auto-reply nudge #{n}"),
            Popped::Subagent(m) => format!("subagent report {m}"),
        }
    }
}

/// What a LOOP_CONTINUE hook yielded.
fn yielded(name: &str, p: &Payload, input: bool, timeout: bool, stop: bool) -> String {
    let mut what = Vec::new();
    if !p.is_empty() {
        what.push(payload(p));
    }
    if input {
        what.push("\"Background wait yielded to pending session input.\"".to_string());
    }
    if timeout {
        what.push("the timeout notice".to_string());
    }
    let what = if what.is_empty() {
        "nothing".to_string()
    } else {
        what.join(" + ")
    };
    let stop = if stop { " + StopPropagation" } else { "" };
    format!("{name} yields {what}{stop}")
}

/// What an outside writer did to `prompt-queue.jsonl`.
fn written(p: &Payload, steer: bool, malformed: bool, refused: bool) -> String {
    if refused {
        "a writer finds prompt-queue-closed: it does not queue".to_string()
    } else if malformed {
        "a writer appends a malformed line to prompt-queue.jsonl".to_string()
    } else {
        let kind = if steer { "steer records" } else { "records" };
        format!(
            "a writer appends {kind} {} to prompt-queue.jsonl",
            payload(p)
        )
    }
}
