//! The bridge: wakesim's pi host model inside a madsim runtime.
//!
//! - **The host is one task.** The driver (the future the runtime's `block_on` runs) owns the
//!   `PiHost` and its `Kernel`. The kernel's events are scheduled on madsim's clock: the driver
//!   sleeps until the next one is due, and one kernel millisecond is one madsim millisecond. The
//!   host's own draws (its plan, its delays, the order of its same-instant events) still come
//!   from the kernel's `Choices`, seeded with the same seed as the runtime.
//! - **The wake logic is tasks.** It is started as a madsim task (and may spawn more) and hears
//!   from the host through [`Events`]: every `PiWake` handler of the kernel lane becomes an
//!   [`Event`] that a forwarding `PiWake` posts and the host does not await, as an extension
//!   handler that only enqueues for a coordinator task.
//! - **Calls are round trips.** A task acts on the host with [`Host::call`]: a closure that gets
//!   the same `Pi` handle the kernel lane's handlers get and runs, on the driver, in one
//!   synchronous segment at the current virtual time. Between two calls of a task, other host
//!   events and other tasks may run, in the order madsim's seeded scheduler picks.
//!   [`Host::call_current`] runs its closure only if the task has taken every event the host has
//!   posted so far, so a decision is never made on a stale view.
//! - **One instant.** A host microtask runs before anything else (a promise chain is never
//!   interrupted). Otherwise the driver yields to madsim's scheduler before each host event and
//!   each call it serves, so whether a woken task acts before the host's next event of the same
//!   instant is madsim's choice, and serves one call at a time.
//! - **The end.** Producers and faults stop when madsim's clock reaches the active phase's end;
//!   the run ends when madsim's clock reaches the horizon (`duration_ms + quiesce_ms_max`). Wake
//!   tasks' own timers fire on the way, so a reservation expiring after the host went quiet is
//!   still honoured; the end time the checkers see is the last instant anything happened.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use wakesim::family::pi::api::{
    CompactOutcome, Ctx, InputAction, InputEvent, Message, Pi, PiWake, TimerId,
};
use wakesim::family::pi::{PiHost, PiKernel};
use wakesim::sim::sink::Sink;
use wakesim::sim::time::Ms;
use wakesim::sim::{End, World};

/// What the host tells the wake logic: one variant per `PiWake` handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A producer hands the extension a message to deliver.
    Message(Message),
    SessionStart(Ctx),
    AgentStart(Ctx),
    TurnEnd(Ctx),
    AgentEnd(Ctx),
    AgentSettled(Ctx),
    SessionCompact(Ctx, CompactOutcome),
    SessionTree(Ctx),
    /// A prompt entered `prompt()` step 3. The forwarding handler answers `Continue`: a handler
    /// that only enqueues cannot claim the input.
    Input(Ctx, InputEvent),
    BeforeAgentStart(Ctx),
    /// A `Pi::set_timeout` timer fired (async logics usually sleep on `tokio::time` instead).
    Timer(TimerId),
}

/// The receiving end of the host's events, for the wake logic's coordinator task.
pub struct Events {
    rx: mpsc::UnboundedReceiver<Event>,
    taken: u64,
}

impl Events {
    /// The next event; `None` once the host is gone.
    pub async fn recv(&mut self) -> Option<Event> {
        let ev = self.rx.recv().await;
        if ev.is_some() {
            self.taken += 1;
        }
        ev
    }

    /// How many events this receiver has taken: what [`Host::call_current`] compares with the
    /// number the host has posted.
    pub fn taken(&self) -> u64 {
        self.taken
    }
}

type Job = Box<dyn FnOnce(Option<&mut Pi<'_>>) + Send>;

/// One call from a wake task: run `job` on the host, or (when the caller's view is stale) tell
/// it so by running it with `None`.
pub(crate) struct Request {
    job: Job,
    /// For `call_current`: the events the caller had taken when it called.
    taken: Option<u64>,
}

/// The wake logic's handle on the host. Cheap to clone; `Send`, so tasks may hold it.
#[derive(Clone)]
pub struct Host {
    tx: mpsc::UnboundedSender<Request>,
}

impl Host {
    /// Run `f` on the host, in one synchronous segment at the current virtual time, with the same
    /// [`Pi`] handle the kernel lane's handlers get. Returns once the host has run it.
    pub async fn call<R, F>(&self, f: F) -> R
    where
        F: FnOnce(&mut Pi<'_>) -> R + Send + 'static,
        R: Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |pi| {
            if let Some(pi) = pi {
                let _ = tx.send(f(pi));
            }
        });
        self.send(Request { job, taken: None }, rx).await
    }

    /// Like [`Host::call`], but `f` runs only if `events` has taken every event the host has
    /// posted by the time the call is served; otherwise nothing happens and this returns `None`
    /// (take the pending events, then decide again). A coordinator that acts only through this
    /// never acts on a view of the host that misses something the host already did.
    pub async fn call_current<R, F>(&self, events: &Events, f: F) -> Option<R>
    where
        F: FnOnce(&mut Pi<'_>) -> R + Send + 'static,
        R: Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |pi| {
            let _ = tx.send(pi.map(f));
        });
        let taken = Some(events.taken());
        self.send(Request { job, taken }, rx).await
    }

    async fn send<T>(&self, req: Request, rx: oneshot::Receiver<T>) -> T {
        if self.tx.send(req).is_err() {
            // The run is over and the driver gone: this task will never be polled again.
            return std::future::pending().await;
        }
        match rx.await {
            Ok(r) => r,
            Err(_) => std::future::pending().await,
        }
    }
}

/// The wake logic as the host model sees it: every handler posts an [`Event`].
pub(crate) struct Forward {
    tx: mpsc::UnboundedSender<Event>,
    posted: Arc<AtomicU64>,
    constants_ms: Vec<u64>,
}

impl Forward {
    fn post(&self, ev: Event) {
        self.posted.fetch_add(1, Ordering::Relaxed);
        // A coordinator that has returned no longer listens; the host does not care.
        let _ = self.tx.send(ev);
    }
}

impl PiWake for Forward {
    fn constants_ms(&self) -> Vec<u64> {
        self.constants_ms.clone()
    }
    fn on_message(&mut self, _pi: &mut Pi<'_>, msg: Message) {
        self.post(Event::Message(msg));
    }
    fn on_session_start(&mut self, _pi: &mut Pi<'_>, ctx: Ctx) {
        self.post(Event::SessionStart(ctx));
    }
    fn on_agent_start(&mut self, _pi: &mut Pi<'_>, ctx: Ctx) {
        self.post(Event::AgentStart(ctx));
    }
    fn on_turn_end(&mut self, _pi: &mut Pi<'_>, ctx: Ctx) {
        self.post(Event::TurnEnd(ctx));
    }
    fn on_agent_end(&mut self, _pi: &mut Pi<'_>, ctx: Ctx) {
        self.post(Event::AgentEnd(ctx));
    }
    fn on_agent_settled(&mut self, _pi: &mut Pi<'_>, ctx: Ctx) {
        self.post(Event::AgentSettled(ctx));
    }
    fn on_session_compact(&mut self, _pi: &mut Pi<'_>, ctx: Ctx, outcome: CompactOutcome) {
        self.post(Event::SessionCompact(ctx, outcome));
    }
    fn on_session_tree(&mut self, _pi: &mut Pi<'_>, ctx: Ctx) {
        self.post(Event::SessionTree(ctx));
    }
    fn on_input(&mut self, _pi: &mut Pi<'_>, ctx: Ctx, input: InputEvent) -> InputAction {
        self.post(Event::Input(ctx, input));
        InputAction::Continue
    }
    fn on_before_agent_start(&mut self, _pi: &mut Pi<'_>, ctx: Ctx) {
        self.post(Event::BeforeAgentStart(ctx));
    }
    fn on_timer(&mut self, _pi: &mut Pi<'_>, timer: TimerId) {
        self.post(Event::Timer(timer));
    }
}

/// A started wake logic: the root task's future.
pub type WakeFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The two ends the runner wires up for one run.
pub(crate) struct Wiring {
    pub forward: Forward,
    pub host: Host,
    pub events: Events,
    pub requests: mpsc::UnboundedReceiver<Request>,
    pub posted: Arc<AtomicU64>,
    /// Kept by the driver so `requests` never reports closed while it runs.
    pub keep: mpsc::UnboundedSender<Request>,
}

pub(crate) fn wire(constants_ms: Vec<u64>) -> Wiring {
    let (ev_tx, ev_rx) = mpsc::unbounded_channel();
    let (req_tx, req_rx) = mpsc::unbounded_channel();
    let posted = Arc::new(AtomicU64::new(0));
    Wiring {
        forward: Forward {
            tx: ev_tx,
            posted: posted.clone(),
            constants_ms,
        },
        host: Host { tx: req_tx.clone() },
        events: Events {
            rx: ev_rx,
            taken: 0,
        },
        requests: req_rx,
        posted,
        keep: req_tx,
    }
}

/// How a driven run ended, and how many calls it served.
pub(crate) struct Driven {
    pub end: End,
    pub calls: u64,
}

/// The driver: run the host's events on madsim's clock and serve the wake tasks' calls, until the
/// horizon or the step budget (kernel events plus calls served). Runs inside `block_on`.
pub(crate) async fn drive(
    world: &mut PiHost,
    k: &mut PiKernel,
    mut requests: mpsc::UnboundedReceiver<Request>,
    posted: &AtomicU64,
) -> Driven {
    let start = Instant::now();
    let clock = || Ms(start.elapsed().as_millis() as u64);
    let at = |t: Ms| start + Duration::from_millis(t.0);
    let limits = *k.limits();
    let active_end = Ms(limits.active_ms);
    let horizon = active_end + limits.quiesce_ms_max;
    let mut calls = 0u64;
    let mut waiting: Option<Request> = None;

    world.start(k);
    let end = loop {
        if k.steps() + calls >= limits.steps_max {
            break End::StepBudget;
        }
        // A promise chain of the host runs to its end before anything else happens.
        if k.micro_pending() {
            let ev = k.pop_event().expect("a microtask is pending");
            world.step(k, ev);
            continue;
        }
        // Let the tasks the last step woke run first, if madsim's scheduler says so.
        tokio::task::yield_now().await;
        let now = clock();
        if !k.quiescent() && now >= active_end {
            k.advance_to(active_end);
            k.begin_quiescence();
            world.quiesce(k);
        }
        // One call at a time: what it schedules for this instant is ordered before the next.
        if let Some(req) = waiting.take().or_else(|| requests.try_recv().ok()) {
            k.advance_to(now);
            serve(world, k, req, posted.load(Ordering::Relaxed));
            calls += 1;
            continue;
        }
        let next = k.next_time();
        if let Some(t) = next
            && t <= now
        {
            let ev = k.pop_event().expect("an event is due");
            world.step(k, ev);
            continue;
        }
        // Nothing due: sleep until the next event, the end of the active phase or the horizon,
        // unless a wake task calls first.
        let mut deadline = next.unwrap_or(horizon).min(horizon);
        if !k.quiescent() {
            deadline = deadline.min(active_end);
        }
        if deadline <= now {
            // Only the horizon is left, and it has come.
            if next.is_some() {
                k.advance_to(horizon);
                break End::Horizon;
            }
            break End::Quiet;
        }
        tokio::select! {
            biased;
            req = requests.recv() => waiting = req,
            () = tokio::time::sleep_until(at(deadline)) => {}
        }
    };
    world.finish(k);
    if end != End::StepBudget {
        let t = k.now();
        k.sink.finish(t);
    }
    Driven { end, calls }
}

fn serve(world: &mut PiHost, k: &mut PiKernel, req: Request, posted: u64) {
    let Request { job, taken } = req;
    if taken.is_none_or(|taken| taken == posted) {
        world.enter(k, move |pi| job(Some(pi)));
    } else {
        job(None);
    }
}
