//! `wakesim conform`'s output: a divergence with both timelines up to where the real host and
//! the closest model run part, a plan mismatch, and the summary line.

use crate::engine::RunResult;
use crate::engine::conform::{Obs, Tally, Verdict, observations};
use crate::scenario::Scenario;
use crate::sim::choice::Choice;

/// A seed that did not match, in full: the first differing observation and both timelines up to
/// its instant. Empty for a seed that matched.
pub fn divergence(real_scn: &Scenario, model_scn: &Scenario, v: &Verdict) -> String {
    match v {
        Verdict::Diverged {
            at,
            runs,
            exhausted,
            real,
            model,
        } => {
            let (ro, mo) = (observations(&real.trace), observations(&model.trace));
            let show = |o: Option<&(u64, Obs)>| match o {
                Some((t, ev)) => format!("{t} ms {ev:?}"),
                None => "(the stream ends)".to_string(),
            };
            format!(
                "seed {}: the real host and the closest of {runs} model runs{} part at observation #{} \
                 (after {at} equal ones)\n  real:  {}\n  model: {}\n--- real ({}):\n{}--- model ({}):\n{}",
                real.seed,
                if *exhausted { " (all of them)" } else { "" },
                at + 1,
                show(ro.get(*at)),
                show(mo.get(*at)),
                real_scn.host.name(),
                timeline(real_scn, real, ro.get(*at)),
                model_scn.host.version_label(),
                timeline(model_scn, model, mo.get(*at).or(ro.get(*at))),
            )
        }
        Verdict::PlanMismatch { real, model } => format!(
            "the lanes drew different plans\n  real:  {}\n  model: {}",
            choices(real),
            choices(model)
        ),
        _ => String::new(),
    }
}

/// A run's timeline up to the instant of `until` (the whole run without it).
fn timeline(scn: &Scenario, r: &RunResult, until: Option<&(u64, Obs)>) -> String {
    let t = until.map_or(u64::MAX, |o| o.0);
    let trace: Vec<_> = (r.trace.iter())
        .take_while(|rec| rec.t.0 <= t)
        .cloned()
        .collect();
    let mut s = String::new();
    for l in super::lines(scn.host, &trace, &r.messages, &[]) {
        let actor = l.actor.name();
        s += &format!("{:>8}  {actor:<9} {:<70} {}\n", l.t, l.text, l.state);
    }
    s
}

fn choices(c: &[Choice]) -> String {
    (c.iter())
        .map(|c| format!("{}/{} {}", c.value, c.bound, c.label))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The closing line: seeds by tier, and the first divergence.
pub fn summary(real: &Scenario, model: &Scenario, seeds: u64, secs: f64, t: &Tally) -> String {
    format!(
        "conform {} ({} against {}): {seeds} seeds in {secs:.1} s · {} strong matches (same choices), \
         {} matches (a model run with the same plan), {} weak matches (same observations, other \
         times), {} divergences{}",
        real.path.display(),
        real.host.name(),
        model.host.version_label(),
        t.strong,
        t.matched,
        t.weak,
        t.diverged,
        (t.first_diverged).map_or(String::new(), |s| format!(" (first at seed {s})")),
    ) + &excluded(t)
}

/// The seeds excluded by a race the model cannot have, by window.
fn excluded(t: &Tally) -> String {
    (t.excluded.iter())
        .map(|(w, n)| {
            format!(" · {n} excluded: the real host's `{w}`, which the model cannot have")
        })
        .collect()
}
