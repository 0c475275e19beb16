//! Conformance: a family's model host against a real host, seed by seed (`wakesim conform`).
//!
//! A real-host scenario (`host = "pi@0.99.1"`, `wake = { extension = ... }`) has a *model twin*:
//! the same file on the real host's model host (`RealHost::model`), with the same code run by
//! the family's adapter (`Family::twin`: for pi, the Node adapter, the factory convention). Both
//! lanes draw the per-seed plan with the same draws in the same order (the driver mirrors the
//! model's plan, whose labels the family declares as `Family::PLAN_LABELS`), so one seed gives
//! both the same producer messages at the same instants and the same faults. After the plan, the
//! driver's scheduling points mirror the model's where the real host has the same awaits, so:
//!
//! 1. *Strong match*: the model replayed on the real run's own choice sequence gives the real
//!    observation stream, record for record.
//! 2. *Match*: some model run with the same plan gives it. The model's other choices (same-instant
//!    and microtask orders, delays the real host drew at other sites) are enumerated depth first,
//!    up to `runs_max` runs, then, if none matched, by fewest orders changed (`few_deviations`),
//!    up to `runs_max` more: the real behaviour is one the model can produce (refinement).
//! 3. *Weak match*: the closest model run has the same observations in the same order, at other
//!    times (the search paired some delays with other sites).
//! 4. *Divergence*: no model run within the bound gives it; the closest one (the longest common
//!    prefix) is kept, for `report::conform` to show where the two part.
//!
//! The streams compared are the observations checkers read (`Produced`, `Request` with what it
//! carries and its harness, `Starter`, `RunFlag`, `AgentRun`, `Settled`, `Dropped`, ...), each
//! with its time; notes, coverage marks, `Idle` (which a driver derives from the real host's
//! fields rather than reads) and a gptme delivery pass's brackets (`Pass`: atomic in the model,
//! not in the real code; each `Wake` keeps its pass number) are left out.

use std::collections::BTreeMap;

use super::runner::Runner;
use crate::adapter::AdapterSpec;
use crate::family::{HostKind, Twin};
use crate::limits::ADAPTER_START_TIMEOUT_MS_DEFAULT;
use crate::outcome::RunResult;
use crate::scenario::Scenario;
use crate::sim::choice::Choice;
use crate::sim::msg::MsgId;
use crate::sim::record::{Ev, Record, Starter};

/// Model runs tried per seed before a seed is reported as diverging.
pub const RUNS_MAX_DEFAULT: u64 = 2_000;
/// Refinements of one guided sequence (its draws depend on earlier values) before it is taken.
const REFINE_MAX: u64 = 128;

/// The model twin of a real-host scenario: the family's model host, the same code through the
/// family's adapter.
pub fn twin(real: &Scenario) -> Result<Scenario, String> {
    let spec = (real.remote.as_ref())
        .ok_or_else(|| format!("{} does not name a real host", real.path.display()))?;
    let family = real.host.family();
    let model = real.host.model().ok_or_else(|| {
        let declared: Vec<_> = (HostKind::real_hosts())
            .filter(|h| h.family().name() == family.name())
            .map(|h| h.name())
            .collect();
        format!(
            "{} has no model twin: conformance is declared for {}",
            real.host.name(),
            declared.join(", ")
        )
    })?;
    let (wake, adapter) = match family.twin(&spec.wake)? {
        Twin::Adapter(command) => {
            // The twin's adapter is embedded: it runs from the sources' directory in the cache.
            let root = crate::remote::home::sources()?;
            let adapter = AdapterSpec {
                command,
                cwd: root.to_path_buf(),
                constants_ms: spec.constants_ms.clone(),
                timeout_ms: spec.timeout_ms,
                start_timeout_ms: ADAPTER_START_TIMEOUT_MS_DEFAULT,
                options: spec.wake.get("options").cloned().unwrap_or_default(),
                origin: spec.origin.clone(),
            };
            (format!("{} (model twin)", real.wake), Some(adapter))
        }
        Twin::Builtin(name) => (name.to_string(), None),
    };
    Ok(Scenario {
        host: model,
        wake,
        adapter,
        remote: None,
        ..real.clone()
    })
}

/// One entry of the compared stream.
#[derive(Clone, Debug, PartialEq)]
pub enum Obs {
    /// An observation as recorded (not `Appended`, which is folded into requests).
    Ev(Ev),
    /// A model request with the messages appended since the previous one, in order.
    Request {
        req: u32,
        harness: bool,
        carries: Vec<MsgId>,
    },
    /// Messages appended after the last request (never requested), at the last one's append.
    Unrequested(Vec<MsgId>),
}

/// What checkers read of a trace, with times, each instant in a canonical order
/// (`commute_requests`). `Appended` is folded into the request that
/// follows it ("a request with what it carries"): the model appends a prompt's messages at step
/// 12 and pi 0.99.1 after the `agent_start` handlers, one handler delay apart, and only what
/// each request carries decides a verdict. Prompts are numbered by the order they first reach
/// a start: two prompts prepared side by side are told apart by which starts first.
pub fn observations(trace: &[Record]) -> Vec<(u64, Obs)> {
    let mut out = Vec::new();
    let mut pending: Vec<MsgId> = Vec::new();
    let mut appended_at = 0;
    let mut prompts: BTreeMap<u32, u32> = BTreeMap::new();
    for r in trace {
        let obs = match &r.ev {
            Ev::Appended { msg } => {
                pending.push(*msg);
                appended_at = r.t.0;
                continue;
            }
            Ev::Request { req, harness } => Obs::Request {
                req: *req,
                harness: *harness,
                carries: std::mem::take(&mut pending),
            },
            // A delivery pass's brackets: the model runs a pass as one atomic event, the real
            // gptme on threads, where another thread's request or message can fall between a
            // pass's start and end. What a checker reads of a pass is the number each `Wake`
            // carries, which is compared.
            // Who sent a prompt (`PromptSent`, read by no-wasted-wake) is reported by the pi
            // model only; the real pi driver does not report it yet, so it is not compared. Nor
            // are gptme's `InputChanged` and `WaitEnded` (read by input-heard), which only the
            // CLI model reports, nor pi's `Boundary` (read by boundary-flush), which only the pi
            // model reports.
            ev if ev.is_note()
                || matches!(
                    ev,
                    Ev::Mark(_)
                        | Ev::Idle { .. }
                        | Ev::Pass { .. }
                        | Ev::PromptSent { .. }
                        | Ev::InputChanged { .. }
                        | Ev::WaitEnded
                        | Ev::Boundary { .. }
                ) =>
            {
                continue;
            }
            Ev::Starter {
                who: Starter::Prompt(p),
                accepted,
            } => {
                let next = prompts.len() as u32 + 1;
                let n = *prompts.entry(*p).or_insert(next);
                Obs::Ev(Ev::Starter {
                    who: Starter::Prompt(n),
                    accepted: *accepted,
                })
            }
            ev => Obs::Ev(ev.clone()),
        };
        out.push((r.t.0, obs));
    }
    // At the last of those appends: what follows them in a trace (a lane's notes, a timer that
    // finds nothing to do, a check) differs between the lanes and is no observation.
    if !pending.is_empty() {
        out.push((appended_at, Obs::Unrequested(pending)));
    }
    commute_requests(&mut out);
    out
}

/// Does `o` commute with a model request at the same instant? A message made or dropped, a
/// refused wake, or background work changing state (a job finishing with its completion, which
/// is queued, not appended) neither appends to the conversation (what a request carries) nor
/// reads what a request changes: the two orders are one behaviour. The model makes a step's
/// request in an event of its own, after the delivery or retry that woke it, and runs a step's
/// STEP_PRE hooks and its request as one event; the real gptme's step thread can make it while
/// that delivery's thread, a producer or a job's reader is still at work in the same instant.
fn commutes_with_request(o: &Obs) -> bool {
    matches!(
        o,
        Obs::Ev(
            Ev::Produced { .. }
                | Ev::Dropped { .. }
                | Ev::Work { .. }
                | Ev::Wake {
                    refused: Some(_),
                    ..
                }
        )
    )
}

/// The canonical order of each instant: a request after every observation that commutes with it
/// (`commutes_with_request`), so that two streams differing only in such orders compare equal.
fn commute_requests(out: &mut [(u64, Obs)]) {
    let mut moved = true;
    while moved {
        moved = false;
        for i in 1..out.len() {
            let (a, b) = (&out[i - 1], &out[i]);
            if a.0 == b.0 && matches!(a.1, Obs::Request { .. }) && commutes_with_request(&b.1) {
                out.swap(i - 1, i);
                moved = true;
            }
        }
    }
}

fn common_prefix(a: &[(u64, Obs)], b: &[(u64, Obs)]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The verdict of one seed.
#[derive(Clone)]
pub enum Verdict {
    /// The model on the real run's own choices gives the real stream.
    Strong,
    /// A model run with the same plan gives it (`runs` model runs tried).
    Match { runs: u64 },
    /// The closest model run has the same observations in the same order, at other times.
    Weak { runs: u64 },
    /// No model run within the bound does; the closest one parts at `at` (an index into the
    /// real stream).
    Diverged {
        at: usize,
        runs: u64,
        exhausted: bool,
        real: Box<RunResult>,
        model: Box<RunResult>,
    },
    /// No model run within the bound gives it, and the real run marked a window the model
    /// cannot have (`Family::UNMODELLED`, gptme's step-end gap): excluded, by that window.
    Excluded { window: &'static str, at: usize },
    /// The two lanes drew different plans: the driver does not mirror the model's plan.
    PlanMismatch {
        real: Vec<Choice>,
        model: Vec<Choice>,
    },
}

/// The choices of the per-seed plan: the leading draws with the family's plan labels.
fn plan_of(choices: &[Choice], labels: &[&str]) -> Vec<Choice> {
    (choices.iter())
        .take_while(|c| labels.contains(&c.label))
        .cloned()
        .collect()
}

/// Compare one seed of `real` with its model twin `model`.
pub fn conform_seed(
    runner: &mut Runner<'_>,
    real: &Scenario,
    model: &Scenario,
    seed: u64,
    runs_max: u64,
) -> Verdict {
    let labels = real.host.family().plan_labels();
    let r = runner.run_seed(real, seed, true);
    let target = observations(&r.trace);
    let m = runner.run_seed(model, seed, true);
    let (plan_r, plan_m) = (plan_of(&r.choices, labels), plan_of(&m.choices, labels));
    if plan_r != plan_m {
        return Verdict::PlanMismatch {
            real: plan_r,
            model: plan_m,
        };
    }
    // 1. The real run's own choices, on the model.
    let first = runner.run_choices(model, seed, r.choices.clone(), true);
    if observations(&first.trace) == target {
        return Verdict::Strong;
    }
    // 2. The real run's draws by site, the model's orders enumerated depth first.
    let fixed = plan_r.len();
    let mut best = (common_prefix(&observations(&first.trace), &target), first);
    let mut orders: Vec<u64> = Vec::new();
    let mut runs = 1u64;
    let exhausted = loop {
        if runs >= runs_max {
            break false;
        }
        let (run, bounds, n) = guided(runner, model, seed, &r.choices, fixed, &orders);
        runs += n;
        let obs = observations(&run.trace);
        if obs == target {
            return Verdict::Match { runs };
        }
        let cp = common_prefix(&obs, &target);
        if cp > best.0 {
            best = (cp, run);
        }
        // The next orders: bump the deepest order draw that can still grow.
        let mut next: Vec<u64> = (0..bounds.len())
            .map(|i| orders.get(i).copied().unwrap_or(0))
            .collect();
        let Some(i) = (0..next.len()).rev().find(|&i| next[i] + 1 < bounds[i]) else {
            break true;
        };
        next.truncate(i + 1);
        next[i] += 1;
        orders = next;
    };
    // 3. Depth first bumps the deepest orders first: a real run that parts from the model's
    // first order early (a user step before a same-instant delivery) is out of its reach.
    if !exhausted {
        let (found, n) = few_deviations(
            runner, model, seed, &r.choices, fixed, &target, &mut best, runs_max,
        );
        runs += n;
        if found {
            return Verdict::Match { runs };
        }
    }
    let untimed = |o: &[(u64, Obs)]| o.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>();
    if untimed(&observations(&best.1.trace)) == untimed(&target) {
        return Verdict::Weak { runs };
    }
    let unmodelled = real.host.family().unmodelled();
    let marked = r.trace.iter().find_map(|rec| match rec.ev {
        Ev::Mark(w) if unmodelled.iter().any(|u| u.code == w.code) => Some(w.name),
        _ => None,
    });
    if let Some(window) = marked {
        return Verdict::Excluded { window, at: best.0 };
    }
    Verdict::Diverged {
        at: best.0,
        runs,
        exhausted,
        real: Box::new(r),
        model: Box::new(best.1),
    }
}

/// Same-instant and microtask orders: the model's own freedom, enumerated by the search.
fn is_order(label: &str) -> bool {
    matches!(label, "same-instant order" | "microtask order")
}

/// A model run whose every draw but the orders takes the real run's value at the same site (the
/// next real draw with the same label, in order), and whose k-th order draw is `orders[k]` (0
/// past its end). Draws depend on earlier values, so the sequence is refined until the run
/// consumes exactly what it was given. Returns the run, the bounds of its order draws, and the
/// model runs it took.
fn guided(
    runner: &mut Runner<'_>,
    model: &Scenario,
    seed: u64,
    real: &[Choice],
    fixed: usize,
    orders: &[u64],
) -> (RunResult, Vec<u64>, u64) {
    let mut seq: Vec<Choice> = real[..fixed].to_vec();
    let mut n = 0;
    loop {
        let run = runner.run_choices(model, seed, seq.clone(), true);
        n += 1;
        let mut cursor: BTreeMap<&str, usize> = BTreeMap::new();
        let mut next: Vec<Choice> = real[..fixed].to_vec();
        let mut bounds = Vec::new();
        for c in &run.choices[fixed.min(run.choices.len())..] {
            let value = if is_order(c.label) {
                let v = orders.get(bounds.len()).copied().unwrap_or(0);
                bounds.push(c.bound);
                v
            } else {
                let at = cursor.entry(c.label).or_insert(fixed);
                match (*at..real.len()).find(|&i| real[i].label == c.label) {
                    Some(i) => {
                        *at = i + 1;
                        real[i].value
                    }
                    None => 0,
                }
            };
            next.push(Choice {
                bound: c.bound,
                value: value.min(c.bound.saturating_sub(1)),
                label: c.label,
            });
        }
        if next == run.choices || n >= REFINE_MAX {
            return (run, bounds, n);
        }
        seq = next;
    }
}

/// The model's order draws searched by how few of them leave the first option: every run with
/// one order changed (each draw, each other option), then two, and so on, up to `runs_max`
/// model runs. Among runs with as many changes, the children of the parent closest to the real
/// stream go first. Returns whether a run gave `target`, and the runs taken.
#[allow(clippy::too_many_arguments)]
fn few_deviations(
    runner: &mut Runner<'_>,
    model: &Scenario,
    seed: u64,
    real: &[Choice],
    fixed: usize,
    target: &[(u64, Obs)],
    best: &mut (usize, RunResult),
    runs_max: u64,
) -> (bool, u64) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    // (fewest changes, closest parent, first queued); the orders; the first draw a child may change.
    type Queued = (Reverse<usize>, usize, Reverse<u64>, Vec<u64>, usize);
    let mut heap: BinaryHeap<Queued> = BinaryHeap::new();
    let mut queued = 0u64;
    heap.push((Reverse(0), 0, Reverse(0), Vec::new(), 0));
    let mut runs = 0u64;
    while let Some((Reverse(changes), _, _, orders, from)) = heap.pop() {
        if runs >= runs_max {
            break;
        }
        let (run, bounds, n) = guided(runner, model, seed, real, fixed, &orders);
        runs += n;
        let obs = observations(&run.trace);
        if obs == target {
            return (true, runs);
        }
        let cp = common_prefix(&obs, target);
        // The queue holds at most 16 runs per allowed run (memory): a child past that is dropped.
        let cap = runs_max.saturating_mul(16) as usize;
        for (j, &bound) in bounds.iter().enumerate().skip(from) {
            for v in 1..bound {
                if heap.len() >= cap {
                    break;
                }
                let mut child: Vec<u64> = (0..j)
                    .map(|i| orders.get(i).copied().unwrap_or(0))
                    .collect();
                child.push(v);
                queued += 1;
                heap.push((Reverse(changes + 1), cp, Reverse(queued), child, j + 1));
            }
        }
        if cp > best.0 {
            *best = (cp, run);
        }
    }
    (false, runs)
}

/// Verdicts of a seed range, counted by tier.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub strong: u64,
    pub matched: u64,
    pub weak: u64,
    pub diverged: u64,
    pub first_diverged: Option<u64>,
    /// Seeds excluded by a window the model cannot have, by window.
    pub excluded: BTreeMap<&'static str, u64>,
}

impl Tally {
    pub fn add(&mut self, seed: u64, v: &Verdict) {
        match v {
            Verdict::Strong => self.strong += 1,
            Verdict::Match { .. } => self.matched += 1,
            Verdict::Weak { .. } => self.weak += 1,
            Verdict::Excluded { window, .. } => *self.excluded.entry(window).or_default() += 1,
            Verdict::Diverged { .. } | Verdict::PlanMismatch { .. } => {
                self.diverged += 1;
                self.first_diverged.get_or_insert(seed);
            }
        }
    }
}
