//! The gptme server's state and the synchronous API its wake logics call: what happens under
//! `conversation_lock` and the queue locks, atomically. The handle the wake logic calls is in
//! `handle.rs`; the scheduled parts in `steps.rs` (step threads), `watch.rs` (producers, storm
//! guards) and `faults.rs`.

use std::collections::VecDeque;

use super::api::{SubagentCompletion, WatchEvent};
use super::config::{ServerConfig, ServerFault};
use super::note::{Note, ServerState, StepOrigin, WakeResult};
use super::watch::Watches;
use super::{SrvEv, SrvKernel, vocab};
use crate::family::common::conv::{ConvId, take_where};
use crate::family::common::faults::Faults;
use crate::family::common::{Calls, Core};
use crate::sim::msg::Payload;
use crate::sim::record::Refusal;
use crate::sim::time::Ms;

/// One `ConversationSession`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Session {
    /// `generating`, and who set it.
    pub generating: Option<StepOrigin>,
    pub pending_tools: bool,
    pub executing_tools: bool,
    pub step_seq: u32,
    pub last_activity: Ms,
}

/// A step thread's next phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SPhase {
    /// STEP_PRE hooks, then the model request.
    Start,
    /// The model replied.
    Reply,
    /// Tool calls finished executing.
    Tools,
    /// A confirmed tool call finished on its own thread (`start_tool_execution`, not reserved).
    Confirmed,
    Done,
}

pub(super) struct StepTask {
    pub session: usize,
    pub phase: SPhase,
}

/// The server's state. The wake logic reaches it only through [`super::api::Server`].
pub struct ServerCore {
    pub(super) cfg: ServerConfig,
    pub(super) faults: Faults<ServerFault>,
    pub(super) sessions: Vec<Session>,
    /// `cid in _active_commands`.
    pub(super) command: bool,
    /// `_pending_deliveries`: the global deque of deferred watch events.
    pub(super) pending: VecDeque<WatchEvent>,
    /// The planned watch events and the storm guards (`watch.rs`).
    pub(super) watches: Watches,
    /// `_completion_queue`: subagent completions.
    pub(super) completions: VecDeque<SubagentCompletion>,
    pub(super) steps: Vec<StepTask>,
    /// Step threads started and not finished.
    pub(super) live_steps: u32,
    /// Wake requests so far (accepted or not); the current delivery pass.
    pub(super) wakes: u32,
    pub(super) passes: u32,
    pub(super) pass: u32,
    /// The current pass is a retry (not the watch thread's `_deliver`).
    pub(super) retrying: bool,
    pub(super) requests: u32,
    pub(super) idle: bool,
    /// Calls the wake logic made in the current invocation.
    pub(super) calls: Calls,
}

impl ServerCore {
    pub(super) fn new(cfg: ServerConfig) -> ServerCore {
        let faults = Faults::new(&cfg.faults);
        let watches = Watches::new(cfg.producers.watches);
        ServerCore {
            cfg,
            watches,
            faults,
            sessions: vec![Session::default()],
            command: false,
            pending: VecDeque::new(),
            completions: VecDeque::new(),
            steps: Vec::new(),
            live_steps: 0,
            wakes: 0,
            passes: 0,
            pass: 0,
            retrying: false,
            requests: 0,
            idle: true,
            calls: Calls::default(),
        }
    }

    /// This core as `new(cfg.clone())` would make it, keeping its allocations (the
    /// configuration is copied only when it changed). Every field is named: a new field does not
    /// compile until it is renewed here.
    pub(super) fn renew(&mut self, cfg: &ServerConfig) {
        let ServerCore {
            cfg: own_cfg,
            faults,
            sessions,
            command,
            pending,
            watches,
            completions,
            steps,
            live_steps,
            wakes,
            passes,
            pass,
            retrying,
            requests,
            idle,
            calls,
        } = self;
        faults.renew_for(own_cfg, cfg, |c| &c.faults);
        watches.renew(own_cfg.producers.watches);
        sessions.clear();
        sessions.push(Session::default());
        *command = false;
        pending.clear();
        completions.clear();
        steps.clear();
        *live_steps = 0;
        *wakes = 0;
        *passes = 0;
        *pass = 0;
        *retrying = false;
        *requests = 0;
        *idle = true;
        *calls = Calls::default();
    }

    /// The busy predicate `request_watch_wake` reads: any session generating, an active command,
    /// or any session's tools pending or executing. Names who holds the conversation.
    pub(super) fn busy(&self) -> Option<Refusal> {
        if let Some(origin) = self.sessions.iter().find_map(|s| s.generating) {
            return Some(match origin {
                StepOrigin::Wake(n) => Refusal::Wake(n),
                StepOrigin::User | StepOrigin::AfterTools => Refusal::Other(vocab::BUSY_RUN),
            });
        }
        if self.command {
            return Some(Refusal::Other(vocab::BUSY_COMMAND));
        }
        if self
            .sessions
            .iter()
            .any(|s| s.pending_tools || s.executing_tools)
        {
            return Some(Refusal::Other(vocab::BUSY_TOOLS));
        }
        None
    }

    pub(super) fn state(&self) -> ServerState {
        if self.sessions.iter().any(|s| s.generating.is_some()) {
            ServerState::Generating
        } else if self
            .sessions
            .iter()
            .any(|s| s.pending_tools || s.executing_tools)
        {
            ServerState::Tools
        } else if self.command {
            ServerState::Command
        } else {
            ServerState::Idle
        }
    }

    /// `take_queued_watch_events(logdir)` on the state: every deferred event of `logdir` (all of
    /// them for `None`), in FIFO order.
    pub(super) fn take_watch(&mut self, logdir: Option<ConvId>) -> Vec<WatchEvent> {
        take_where(&mut self.pending, |e| logdir.is_none_or(|l| l == e.logdir))
    }

    /// `take_queued_completions(logdir)` on the state.
    pub(super) fn take_completions(&mut self, logdir: ConvId) -> Vec<SubagentCompletion> {
        take_where(&mut self.completions, |e| e.logdir == logdir)
    }

    /// An accepted wake: the message is persisted (appended), `generating` set on the most
    /// recently active session before `request_watch_wake` returns, and the step thread started
    /// unless dispatching fails (then the reservation is undone; the message stays persisted).
    pub(super) fn accept_wake(
        &mut self,
        k: &mut SrvKernel,
        wake: u32,
        payload: &Payload,
    ) -> WakeResult {
        let session = (0..self.sessions.len())
            .max_by_key(|&i| (self.sessions[i].last_activity, std::cmp::Reverse(i)))
            .expect("a conversation has a session");
        self.append(k, payload);
        let s = &mut self.sessions[session];
        s.step_seq += 1;
        s.generating = Some(StepOrigin::Wake(wake));
        s.last_activity = k.now();
        let dispatched = !self.faults.fires(k, ServerFault::DispatchFailure);
        if !dispatched {
            // True, not a duplicate: the message is persisted.
            self.sessions[session].generating = None;
        }
        WakeResult::Accepted {
            session: session as u8 + 1,
            dispatched,
        }
    }

    /// Start a step thread on `session`; its `generating` flag is already set.
    pub(super) fn start_step(&mut self, k: &mut SrvKernel, session: usize) -> u32 {
        let id = self.steps.len() as u32;
        self.steps.push(StepTask {
            session,
            phase: SPhase::Start,
        });
        self.live_steps += 1;
        let d = self.cfg.timing.thread_ms.delay(k, "thread start");
        k.schedule(d, SrvEv::Step(id));
        id
    }
}

impl Core for ServerCore {
    type Ev = SrvEv;
    type Note = Note;

    fn state_code(&self) -> u8 {
        self.state() as u8
    }

    /// Nothing runs, waits for confirmation or owns the conversation: only a wake moves a
    /// deferred event now.
    fn quiet(&self) -> bool {
        self.busy().is_none() && self.live_steps == 0
    }

    fn idle_mut(&mut self) -> &mut bool {
        &mut self.idle
    }
}
