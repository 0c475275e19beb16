//! The gptme server's state and the synchronous API its wake logics call: what happens under
//! `conversation_lock` and the queue locks, atomically. The scheduled parts (step threads,
//! commands, producers) live in `mod.rs`.

use std::collections::VecDeque;

use super::api::{SubagentCompletion, SystemMessage, WatchEvent};
use super::config::{ServerConfig, ServerFault};
use super::note::{Note, ServerState, StepOrigin, WakeResult};
use super::{SrvEv, SrvKernel, vocab};
use crate::family::common::conv::{ConvId, take_where};
use crate::family::common::faults::Faults;
use crate::family::common::{Calls, Core};
use crate::sim::msg::Payload;
use crate::sim::record::{Actor, Ev, Refusal};
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
    Done,
}

pub(super) struct StepTask {
    pub session: usize,
    pub phase: SPhase,
}

/// The server's state. The wake logic reaches it only through [`Server`].
pub struct ServerCore {
    pub(super) cfg: ServerConfig,
    pub(super) faults: Faults<ServerFault>,
    pub(super) sessions: Vec<Session>,
    /// `cid in _active_commands`.
    pub(super) command: bool,
    /// `_pending_deliveries`: the global deque of deferred watch events.
    pub(super) pending: VecDeque<WatchEvent>,
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
        ServerCore {
            cfg,
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

/// The handle a server wake logic calls. Every call acts on the host at once.
pub struct Server<'a> {
    pub(super) core: &'a mut ServerCore,
    pub(super) k: &'a mut SrvKernel,
}

impl Server<'_> {
    /// `monotonic()` on virtual time.
    pub fn now(&self) -> Ms {
        self.k.now()
    }

    /// `SessionManager.request_watch_wake(cid, msg)`: under the conversation lock, refuse when
    /// the conversation is busy; otherwise persist the message, set `generating` on the most
    /// recently active session (before returning: the next call sees it busy) and start a step
    /// thread. Returns True once the message is persisted, even when the thread fails to start.
    pub fn request_watch_wake(&mut self, cid: ConvId, msg: SystemMessage) -> bool {
        self.core.calls.count();
        let c = &mut *self.core;
        c.wakes += 1;
        let wake = c.wakes;
        let pass = c.pass;
        let payload = msg.payload;
        let refused = match c.busy() {
            Some(r) => Some(r),
            None if c.faults.fires(self.k, ServerFault::PersistFailure) => {
                Some(Refusal::Other(vocab::PERSIST_FAILED))
            }
            None => None,
        };
        let result = match refused {
            Some(r) => {
                if c.retrying && !matches!(r, Refusal::Wake(_)) {
                    c.mark(self.k, vocab::WAKE_WHILE_BUSY);
                }
                WakeResult::Refused(r)
            }
            None => {
                let session = (0..c.sessions.len())
                    .max_by_key(|&i| (c.sessions[i].last_activity, std::cmp::Reverse(i)))
                    .expect("a conversation has a session");
                c.append(self.k, &payload);
                let s = &mut c.sessions[session];
                s.step_seq += 1;
                s.generating = Some(StepOrigin::Wake(wake));
                s.last_activity = self.k.now();
                let dispatched = !c.faults.fires(self.k, ServerFault::DispatchFailure);
                if !dispatched {
                    // The reservation is undone; the message stays persisted (True, not a
                    // duplicate).
                    c.sessions[session].generating = None;
                }
                WakeResult::Accepted {
                    session: session as u8 + 1,
                    dispatched,
                }
            }
        };
        c.emit(
            self.k,
            Actor::Host,
            Ev::Wake {
                pass,
                wake,
                msgs: payload.clone(),
                refused,
            },
        );
        c.note(
            self.k,
            Actor::Wake,
            Note::RequestWake {
                cid,
                wake,
                payload,
                result,
            },
        );
        if let WakeResult::Accepted {
            session,
            dispatched: true,
        } = result
        {
            c.start_step(self.k, usize::from(session) - 1);
        }
        refused.is_none()
    }

    /// `take_queued_watch_events(logdir)`: remove and return every deferred event of `logdir`
    /// (all of them for `None`), in FIFO order.
    pub fn take_queued_watch_events(&mut self, logdir: Option<ConvId>) -> Vec<WatchEvent> {
        self.core.calls.count();
        let taken = self.core.take_watch(logdir);
        if taken.len() >= 2 {
            self.core.mark(self.k, vocab::BURST_DRAINED);
        }
        let ids: Vec<_> = taken.iter().map(|e| e.msg).collect();
        self.taken("take_queued_watch_events", &ids);
        taken
    }

    /// `requeue_watch_event(logdir, id, text)`: put an event back at the head (`appendleft`).
    pub fn requeue_watch_event(&mut self, event: WatchEvent) {
        self.core.calls.count();
        self.core.pending.push_front(event);
        self.core
            .note(self.k, Actor::Wake, Note::Requeue { msg: event.msg });
    }

    /// `_pending_deliveries.append(...)`: defer an event for a later retry (at the tail).
    pub fn queue_watch_event(&mut self, event: WatchEvent) {
        self.core.calls.count();
        self.core.pending.push_back(event);
        self.core
            .note(self.k, Actor::Wake, Note::Defer { msg: event.msg });
    }

    /// `take_queued_completions(logdir)`: remove and return this parent's subagent completions.
    pub fn take_queued_completions(&mut self, logdir: ConvId) -> Vec<SubagentCompletion> {
        self.core.calls.count();
        let taken = self.core.take_completions(logdir);
        let ids: Vec<_> = taken.iter().map(|e| e.msg).collect();
        self.taken("take_queued_completions", &ids);
        taken
    }

    /// Narrate what a take removed from its queue (nothing, when it was empty).
    fn taken(&mut self, call: &'static str, ids: &[crate::sim::msg::MsgId]) {
        if !ids.is_empty() {
            let payload = Payload::from_slice(ids);
            self.core
                .note(self.k, Actor::Wake, Note::Take { call, payload });
        }
    }

    /// `_completion_queue.put(c)`: at the tail.
    pub fn put_completion(&mut self, c: SubagentCompletion) {
        self.core.calls.count();
        self.core.completions.push_back(c);
        self.core
            .note(self.k, Actor::Wake, Note::PutCompletion { msg: c.msg });
    }
}
