//! pi narration: the host-specific records of the timeline and how they read.

use std::fmt::Write;

use super::api::{DeliverAs, SendOptions};
use crate::family::common::host_states;
use crate::sim::msg::{MsgId, Payload};
use crate::sim::record::{self, InStory, Role};

host_states! {
    /// Host states, as the timeline's last column shows them (`docs/hosts/pi.md`).
    pub enum State {
        Idle = 0 => "IDLE", Preparing = 1 => "PREPARING", PrepCompact = 2 => "PREP-COMPACT",
        Running = 3 => "RUNNING", Settling = 4 => "SETTLING", Compacting = 5 => "COMPACTING",
        Disposed = 6 => "DISPOSED",
    }
}

/// Extension events a handler is called for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    SessionStart,
    AgentStart,
    TurnEnd,
    AgentEnd,
    AgentSettled,
    SessionCompact,
    SessionCompactFailed,
    SessionTree,
    Input,
    BeforeAgentStart,
    Message(MsgId),
    Timer(u32),
}

/// Where `sendCustomMessage` routed a message (§2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    NextTurn,
    Steer,
    FollowUp,
    /// Idle with triggerTurn: `_runAgentPrompt` directly, skipping before_agent_start.
    DirectRun(u32),
    /// pi 1.x, idle with triggerTurn: `_startRun`, which runs before_agent_start first.
    PreparedRun(u32),
    /// triggerTurn while agent_settled handlers run: deferred until after them.
    Deferred,
    /// triggerTurn false while streaming: appended at turn_end.
    PendingCustom,
    /// triggerTurn false while idle: appended to the session now, no turn.
    Appended,
}

/// A step of `prompt()` (§2.3) and what happened there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    DeferredWhileSettling,
    AwaitInput,
    InputHandledByWake,
    InputSwallowed,
    QueuedWhileStreaming(DeliverAs),
    AwaitAuth,
    PrePromptCompaction,
    CompactionDone,
    BeforeAgentStart,
    AwaitImages,
    CompactionFailed,
}

/// Errors that pi reports only on the extension error channel (or to the user's prompt).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostError {
    /// Step 5: "Agent is already processing. Specify streamingBehavior ..."
    AlreadyProcessing,
    /// `Agent.prompt`: "Agent is already processing a prompt."
    AgentBusy,
    /// `Agent.continue`: "Agent is already processing. Wait for completion before continuing."
    ContinueBusy,
    /// Step 2: "Cannot submit a prompt while compaction is in progress."
    CompactionInProgress,
    AuthFailed,
    /// sendUserMessage with deliverAs nextTurn is not a streamingBehavior.
    InvalidDeliverAs,
    /// `Agent.continue`: "Cannot continue from message role: assistant" (nothing queued).
    ContinueFromReply,
}

impl HostError {
    pub fn text(self) -> &'static str {
        match self {
            HostError::AlreadyProcessing => {
                "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
            }
            HostError::AgentBusy => "Agent is already processing a prompt.",
            HostError::ContinueBusy => {
                "Agent is already processing. Wait for completion before continuing."
            }
            HostError::CompactionInProgress => {
                "Cannot submit a prompt while compaction is in progress."
            }
            HostError::AuthFailed => "No API key / auth check failed.",
            HostError::InvalidDeliverAs => "deliverAs nextTurn is not a streamingBehavior.",
            HostError::ContinueFromReply => "Cannot continue from message role: assistant",
        }
    }
}

/// Steps of an agent run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunNote {
    AgentStart {
        inner: u32,
    },
    Request {
        req: u32,
        harness: bool,
    },
    ToolCalls,
    TurnEnd,
    AgentEnd {
        inner: u32,
    },
    Retry,
    CompactionStart,
    CompactionDone,
    Continue,
    ContinueScheduled,
    Settle {
        spurious: bool,
    },
    DeferredActions {
        count: u32,
    },
    /// A deferred action threw: the `count` actions after it never run.
    DeferredDropped {
        count: u32,
    },
    Done,
    /// pi 1.x's `_startRun`: the run flag is set and the run prepares (the compaction check,
    /// `before_agent_start`) before `Agent.prompt`.
    Preparing,
    /// pi 1.x's `_prepareRun` returned: nextTurn taken, held custom messages flushed.
    Prepared,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerOp {
    Set { delay_ms: u64 },
    Fire,
    Clear,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultNote {
    ManualCompactionStart,
    ManualCompactionEnd { failed: bool },
    TreeStart,
    TreeEnd { cancelled: bool },
    Replaced { session: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    Steering,
    FollowUp,
    PendingCustom,
}

/// One pi narration record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    SessionStart {
        session: u32,
    },
    Handler(Hook),
    IsIdle {
        result: Option<bool>,
    },
    SendMessage {
        custom_type: &'static str,
        payload: Payload,
        opts: SendOptions,
        route: Route,
    },
    SendUserMessage {
        prompt: u32,
        payload: Payload,
        /// The text an adapter's module sent, where it says more than the payload (neither
        /// messages carried nor the blank `" "`); `None` for every built-in logic.
        text: Option<Box<str>>,
        deliver_as: Option<DeliverAs>,
    },
    UserPrompt {
        prompt: u32,
        steer: bool,
    },
    Step {
        prompt: u32,
        step: Step,
    },
    /// Step 12: the prompt takes `nextTurn` and starts its run in one synchronous segment; on
    /// 0.58 (`early`) it takes them before `before_agent_start` instead.
    TookNextTurn {
        prompt: u32,
        payload: Payload,
        items: u32,
        early: bool,
    },
    /// Messages a rejected starter had taken: gone with its local array.
    Lost {
        payload: Payload,
    },
    Error {
        prompt: Option<u32>,
        error: HostError,
    },
    Run {
        run: u32,
        note: RunNote,
    },
    Polled {
        run: u32,
        queue: Queue,
        payload: Payload,
    },
    Timer {
        id: u32,
        op: TimerOp,
    },
    Fault(FaultNote),
    /// A deferred action of the settled phase starts.
    DeferredRuns {
        prompt: Option<u32>,
    },
}

pub(crate) fn payload(p: &Payload) -> String {
    let ids = p.ids();
    if ids.is_empty() {
        return "[]".to_string();
    }
    let mut s = String::from("[");
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{id}");
    }
    s.push(']');
    s
}

fn opts(o: &SendOptions) -> String {
    match (o.deliver_as, o.trigger_turn) {
        (Some(d), true) => format!("{}, triggerTurn", d.name()),
        (Some(d), false) => d.name().to_string(),
        (None, true) => "triggerTurn".to_string(),
        (None, false) => "triggerTurn: false".to_string(),
    }
}

fn content(custom_type: &str, p: &Payload) -> String {
    if p.is_empty() {
        custom_type.to_string()
    } else {
        payload(p)
            .trim_matches(|c| c == '[' || c == ']')
            .to_string()
    }
}

impl Note {
    /// Who acts in this note when the host did not say otherwise.
    pub fn is_wake_call(&self) -> bool {
        matches!(
            self,
            Note::IsIdle { .. }
                | Note::SendMessage { .. }
                | Note::SendUserMessage { .. }
                | Note::Timer { .. }
        )
    }
}

impl record::Note for Note {
    const TAG: u64 = 10;

    fn render(&self) -> String {
        match self {
            Note::SessionStart { session } => format!("session_start (session {session})"),
            Note::Handler(h) => match h {
                Hook::Message(id) => format!("receives {id}"),
                Hook::Timer(id) => format!("timer T{id} fires"),
                other => format!("{} handler", hook_name(*other)),
            },
            Note::IsIdle { result } => match result {
                Some(b) => format!("ctx.isIdle() → {b}"),
                None => "ctx.isIdle() throws: stale ctx".to_string(),
            },
            Note::SendMessage {
                custom_type,
                payload: p,
                opts: o,
                route,
            } => {
                format!(
                    "sendMessage({}, {}) → {}",
                    content(custom_type, p),
                    opts(o),
                    route.text()
                )
            }
            Note::SendUserMessage {
                prompt,
                payload: p,
                text: t,
                deliver_as,
            } => {
                // The text quoted as JSON quotes it (as the real-host driver shows it).
                let text = match t {
                    _ if !p.is_empty() => payload(p),
                    Some(t) => serde_json::Value::String(t.to_string()).to_string(),
                    None => "\" \"".to_string(),
                };
                match deliver_as {
                    Some(d) => format!("sendUserMessage({text}, {}) = P{prompt}", d.name()),
                    None => format!("sendUserMessage({text}) = P{prompt}"),
                }
            }
            Note::UserPrompt { prompt, steer } => {
                if *steer {
                    format!("types a prompt while streaming: steer = P{prompt}")
                } else {
                    format!("types a prompt = P{prompt}")
                }
            }
            Note::Step { prompt, step } => step.text(*prompt),
            Note::TookNextTurn {
                prompt,
                payload: p,
                items,
                early,
            } => format!(
                "P{prompt} {} nextTurn {} ({items} item{}){}",
                if *early { "takes" } else { "step 12 takes" },
                payload(p),
                if *items == 1 { "" } else { "s" },
                if *early {
                    " before before_agent_start"
                } else {
                    " and starts its run"
                }
            ),
            Note::Lost { payload: p } => format!("{} lost with the rejected starter", payload(p)),
            Note::Error { prompt, error } => match prompt {
                Some(p) => format!("P{p} rejects: \"{}\" (error channel only)", error.text()),
                None => format!("error channel: \"{}\"", error.text()),
            },
            Note::Run { run, note } => note.text(*run),
            Note::Polled {
                run,
                queue,
                payload: p,
            } => {
                let q = match queue {
                    Queue::Steering => "steering",
                    Queue::FollowUp => "follow-up",
                    Queue::PendingCustom => "pending custom messages",
                };
                format!("R{run} takes {q} {}", payload(p))
            }
            Note::Timer { id, op } => match op {
                TimerOp::Set { delay_ms } => format!("sets timer T{id} (+{delay_ms} ms)"),
                TimerOp::Fire => format!("timer T{id} fires"),
                TimerOp::Clear => format!("clears timer T{id}"),
            },
            Note::Fault(f) => f.text(),
            Note::DeferredRuns { prompt } => match prompt {
                Some(p) => format!("deferred P{p} resumes"),
                None => "deferred direct run starts".to_string(),
            },
        }
    }

    fn role(&self) -> Role {
        match self {
            Note::Handler(_) => Role::Handler,
            n if n.is_wake_call() => Role::Call,
            _ => Role::Plain,
        }
    }

    /// Handler entries are folded into the calls they make (a timer's stays); awaits and run
    /// phases that change nothing a reader follows are dropped; a cleared timer is noise; the
    /// first session's start is the obvious beginning.
    fn in_story(&self) -> InStory {
        match self {
            Note::Handler(h) => InStory::Enters {
                context: match h {
                    Hook::Message(_) | Hook::Timer(_) => None,
                    other => Some(hook_name(*other)),
                },
                keep: matches!(h, Hook::Timer(_)),
            },
            Note::Step { step, .. } => keep(!matches!(
                step,
                Step::AwaitInput | Step::AwaitAuth | Step::BeforeAgentStart | Step::AwaitImages
            )),
            Note::Run { note, .. } => keep(!matches!(
                note,
                RunNote::AgentStart { .. }
                    | RunNote::ToolCalls
                    | RunNote::TurnEnd
                    | RunNote::AgentEnd { .. }
                    | RunNote::Done
                    | RunNote::DeferredActions { .. }
            )),
            Note::Timer {
                op: TimerOp::Clear, ..
            } => InStory::Drop,
            Note::SessionStart { session } => keep(*session > 1),
            _ => InStory::Keep,
        }
    }
}

fn keep(yes: bool) -> InStory {
    if yes { InStory::Keep } else { InStory::Drop }
}

impl Route {
    /// Where `sendCustomMessage` put the message.
    fn text(self) -> String {
        match self {
            Route::NextTurn => "queued in nextTurn".to_string(),
            Route::Steer => "steering queue".to_string(),
            Route::FollowUp => "follow-up queue".to_string(),
            Route::DirectRun(r) => format!("direct run R{r}, no before_agent_start"),
            Route::PreparedRun(r) => {
                format!("direct run R{r} (_startRun: before_agent_start first)")
            }
            Route::Deferred => "deferred until agent_settled handlers return".to_string(),
            Route::PendingCustom => "pending until turn_end".to_string(),
            Route::Appended => "appended to the session, no turn".to_string(),
        }
    }
}

impl Step {
    /// Prompt `prompt` at this step.
    fn text(self, prompt: u32) -> String {
        let p = format!("P{prompt}");
        match self {
            Step::DeferredWhileSettling => {
                format!("{p} deferred: agent_settled handlers running")
            }
            Step::AwaitInput => format!("{p} awaits input handlers"),
            Step::InputHandledByWake => {
                format!("{p} handled by the wake logic's input handler: no run")
            }
            Step::InputSwallowed => {
                format!("{p} claimed by an input handler (fault): no run, no event")
            }
            Step::QueuedWhileStreaming(d) => {
                format!("{p} step 5: streaming, queued as {}", d.name())
            }
            Step::AwaitAuth => format!("{p} step 5 passes (not streaming); awaits auth"),
            Step::PrePromptCompaction => format!("{p} step 9 compacts before the run"),
            Step::CompactionDone => format!("{p} compaction done"),
            Step::CompactionFailed => {
                format!("{p} compaction fails: compaction_end with an error, the prompt goes on")
            }
            Step::BeforeAgentStart => format!("{p} before_agent_start: harness added"),
            Step::AwaitImages => format!("{p} awaits image normalisation"),
        }
    }
}

impl RunNote {
    /// Run `run` in this phase.
    fn text(self, run: u32) -> String {
        let r = format!("R{run}");
        match self {
            RunNote::AgentStart { inner } => format!("{r} agent_start (inner run {inner})"),
            RunNote::Request { req, harness } => {
                if harness {
                    format!("{r} model request #{req}")
                } else {
                    format!("{r} model request #{req} WITHOUT harness")
                }
            }
            RunNote::ToolCalls => format!("{r} executes tool calls"),
            RunNote::TurnEnd => format!("{r} turn_end"),
            RunNote::AgentEnd { inner } => format!("{r} agent_end (inner run {inner})"),
            RunNote::Retry => format!("{r} retryable error: auto_retry, backoff"),
            RunNote::CompactionStart => format!("{r} compacts between inner runs"),
            RunNote::CompactionDone => format!("{r} compaction done"),
            RunNote::Continue => format!("{r} agent.continue()"),
            RunNote::ContinueScheduled => {
                format!("{r} schedules continue() on a timer; host reads idle")
            }
            RunNote::Settle { spurious } => {
                if spurious {
                    format!("{r} settles: run flag cleared, agent_settled (spurious)")
                } else {
                    format!("{r} settles: run flag cleared, agent_settled")
                }
            }
            RunNote::DeferredActions { count } => {
                format!("{r} runs {count} deferred action(s), one after another")
            }
            RunNote::DeferredDropped { count } => {
                format!("{r}'s deferred action threw: {count} after it never run")
            }
            RunNote::Done => format!("{r} done"),
            RunNote::Preparing => {
                format!("{r} _startRun: run flag set; compaction check, before_agent_start next")
            }
            RunNote::Prepared => format!("{r} prepared: takes nextTurn, calls Agent.prompt"),
        }
    }
}

impl FaultNote {
    /// What a fault did to the host.
    fn text(self) -> String {
        match self {
            FaultNote::ManualCompactionStart => "/compact starts (no run)".to_string(),
            FaultNote::ManualCompactionEnd { failed } => {
                if failed {
                    "/compact fails: session_compact_failed".to_string()
                } else {
                    "/compact done: session_compact".to_string()
                }
            }
            FaultNote::TreeStart => "/tree branch summarization starts".to_string(),
            FaultNote::TreeEnd { cancelled } => {
                if cancelled {
                    "/tree summarization cancelled: no event".to_string()
                } else {
                    "/tree done: session_tree".to_string()
                }
            }
            FaultNote::Replaced { session } => {
                format!(
                    "/new: session replaced by session {session}; old ctx stale, old queues dropped"
                )
            }
        }
    }
}

pub fn hook_name(h: Hook) -> &'static str {
    match h {
        Hook::SessionStart => "session_start",
        Hook::AgentStart => "agent_start",
        Hook::TurnEnd => "turn_end",
        Hook::AgentEnd => "agent_end",
        Hook::AgentSettled => "agent_settled",
        Hook::SessionCompact => "session_compact",
        Hook::SessionCompactFailed => "session_compact_failed",
        Hook::SessionTree => "session_tree",
        Hook::Input => "input",
        Hook::BeforeAgentStart => "before_agent_start",
        Hook::Message(_) => "message",
        Hook::Timer(_) => "timer",
    }
}
