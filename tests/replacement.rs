//! pi's session replacement (`/new`, P-7) excuses exactly what the host discards, never what the
//! wake logic loses (issue 15, class 2; `mutants/teeth-plan.md` 3.1). Purpose-built wake logics:
//! one keeps a message in its own memory across `/new` and forgets it (NO-LOSS must fire), one
//! carries it into the new session (it must pass), one strands a message in nextTurn before
//! `/new` (BOUNDED-LATENCY must fire exactly when the strand outlasted the bound).

mod common;
use common::inline;

use wakesim::check::Invariant;
use wakesim::engine::{Outcome, Runner};
use wakesim::family::Registry;
use wakesim::family::pi::api::{Ctx, CustomMessage, Message, Pi, PiWake, SendOptions, TimerId};
use wakesim::sim::msg::{MsgId, Payload};
use wakesim::sim::record::{Actor, Ev};

/// When a holding logic hands its messages over: after every `/new` the fault can make (the
/// scenario's replacement comes in `[1, 4000)` ms, its session_start at most 40 ms later).
const HOLD_MS: u64 = 5_000;

/// Holds every message in its own memory and hands what it holds over `HOLD_MS` after the first
/// (stored, then a wake prompt). At session_start it forgets what it holds (as G4 does with its
/// queues), or with `carry` keeps it for the new session.
struct Holds {
    carry: bool,
    held: Vec<MsgId>,
    armed: bool,
}

impl PiWake for Holds {
    fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message) {
        self.held.push(msg.id);
        if !self.armed {
            self.armed = true;
            pi.set_timeout(HOLD_MS);
        }
    }
    fn on_timer(&mut self, pi: &mut Pi<'_>, _t: TimerId) {
        self.armed = false;
        if self.held.is_empty() {
            return;
        }
        for id in self.held.drain(..) {
            pi.send_message(CustomMessage::carrying(id), SendOptions::store());
        }
        pi.send_user_message(Payload::None, None);
    }
    fn on_session_start(&mut self, _pi: &mut Pi<'_>, _ctx: Ctx) {
        if !self.carry {
            self.held.clear();
        }
    }
}

/// Queues every message into pi's nextTurn and never starts a turn: the host holds it until
/// `/new` discards it.
struct Strands;
impl PiWake for Strands {
    fn on_message(&mut self, pi: &mut Pi<'_>, msg: Message) {
        pi.send_message(CustomMessage::carrying(msg.id), SendOptions::next_turn());
    }
}

fn registry() -> Registry {
    let holds = |carry| Holds {
        carry,
        held: Vec::new(),
        armed: false,
    };
    Registry::builtin()
        .with_pi("test.forgets", "forgets what it holds at /new", move || {
            Box::new(holds(false))
        })
        .with_pi(
            "test.carries",
            "carries what it holds into the new session",
            move || Box::new(holds(true)),
        )
        .with_pi("test.strands", "strands messages in nextTurn", || {
            Box::new(Strands)
        })
}

/// One message at 0 ms, one `/new` in `[1, 4000)` ms, then the host settles.
fn scenario(wake: &str, check: &str, expect: &str) -> String {
    format!(
        "name = \"{wake}\"\nhost = \"pi\"\nwake = \"{wake}\"\nseeds = 60\nsnapshot_seed = 0\nduration_ms = 4000\n\
         [producers]\nmessages = {{ min = 1, max = 1 }}\nstart_ms = {{ min = 0, max = 0 }}\nkinds = [\"completion\"]\nsubagents = 1\n\
         [faults]\nsession_replacement = {{ share = \"1/1\", max = 1 }}\n{check}\n[expect]\n{expect}\n"
    )
}

fn broken(r: &wakesim::engine::RunResult) -> Vec<Invariant> {
    match &r.outcome {
        Outcome::Fail(v) => v.iter().map(|v| v.invariant).collect(),
        Outcome::Pass => Vec::new(),
        other => panic!("seed {}: {other:?}", r.seed),
    }
}

#[test]
fn a_message_held_across_new_and_forgotten_is_a_loss() {
    let registry = registry();
    let scn = inline(
        &scenario(
            "test.forgets",
            "",
            "verdict = \"fail\"\ninvariant = \"no-loss\"\nalso = [\"bounded-latency\"]",
        ),
        &registry,
    );
    let mut runner = Runner::new(&registry);
    for seed in 0..scn.seeds {
        let r = runner.run_seed(&scn, seed, true);
        assert!(
            broken(&r).contains(&Invariant::NoLoss),
            "seed {seed}: the message the wake logic forgot at /new is excused: {:?}",
            r.outcome
        );
        // The host discarded nothing of its own: the message was never in its queues.
        assert!(
            !r.trace.iter().any(|x| matches!(x.ev, Ev::Dropped { .. })),
            "seed {seed}: a drop the host did not make"
        );
    }
    let rep = runner.run_scenario(&scn, 0..scn.seeds);
    assert!(rep.met, "{:?}", rep.why);
    assert_eq!(rep.counts.get("no-loss"), Some(&scn.seeds));
}

#[test]
fn a_message_carried_into_the_new_session_is_delivered() {
    let registry = registry();
    let scn = inline(
        &scenario("test.carries", "", "verdict = \"pass\""),
        &registry,
    );
    let mut runner = Runner::new(&registry);
    for seed in 0..scn.seeds {
        let r = runner.run_seed(&scn, seed, true);
        assert_eq!(r.outcome, Outcome::Pass, "seed {seed}");
        // The replacement (the only fault on) happened before the hand-over: the message
        // crossed sessions.
        let replaced = r.trace.iter().position(|x| x.actor == Actor::Fault);
        let request = r
            .trace
            .iter()
            .position(|x| matches!(x.ev, Ev::Request { .. }));
        assert!(
            matches!((replaced, request), (Some(a), Some(b)) if a < b),
            "seed {seed}: /new at {replaced:?}, request at {request:?}"
        );
    }
}

#[test]
fn a_strand_in_next_turn_longer_than_the_bound_before_new_breaks_latency() {
    let registry = registry();
    let bound = 1_000;
    let scn = inline(
        &scenario(
            "test.strands",
            &format!("[check]\nlatency_ms_max = {bound}"),
            "verdict = \"fail\"\ninvariant = \"bounded-latency\"",
        ),
        &registry,
    );
    let mut runner = Runner::new(&registry);
    let (mut late, mut early) = (0, 0);
    for seed in 0..scn.seeds {
        let r = runner.run_seed(&scn, seed, true);
        // The host discards its nextTurn at the replacement instant: a documented drop.
        let dropped_at = r
            .trace
            .iter()
            .find(|x| matches!(x.ev, Ev::Dropped { msg: MsgId(0), .. }))
            .unwrap_or_else(|| panic!("seed {seed}: nextTurn not dropped at /new"))
            .t;
        let broke = broken(&r);
        assert!(
            !broke.contains(&Invariant::NoLoss),
            "seed {seed}: {broke:?}"
        );
        let stranded_too_long = dropped_at.0 > bound;
        assert_eq!(
            broke.contains(&Invariant::BoundedLatency),
            stranded_too_long,
            "seed {seed}: dropped at {dropped_at}: {:?}",
            r.outcome
        );
        if stranded_too_long {
            late += 1;
            let Outcome::Fail(v) = &r.outcome else {
                unreachable!()
            };
            assert_eq!(v[0].t.0, bound, "dated when the bound was crossed");
        } else {
            early += 1;
        }
    }
    assert!(late > 0 && early > 0, "{late} late, {early} early /new");
}
