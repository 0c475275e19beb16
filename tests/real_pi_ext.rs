//! Published pi extensions on the real pi host (`scenarios/real-pi-ext*/`, `hosts/pi-ext/`,
//! `hosts/pi/peers/`): installed from npm at pinned versions, loaded unchanged by pi's loader,
//! their asynchronous content driven through their own transports by fake peers.
//!
//! What this proves (the scenarios' budgets, windows, exploration and snapshots are
//! `tests/scenarios.rs`'s, their golden hashes `tests/golden.rs`'s):
//! - a peer-driven seed gives the same trace alone, after other seeds and in another driver, and
//!   `wakesim replay` prints the same bytes run to run (the peers draw nothing of their own);
//! - the findings, asserted on observations: pi-processes' killed-job notification (`nextTurn`)
//!   never reaches the model on pi 0.99.1, even across two later runs, and reaches it after the
//!   message that started the run on pi 1.6.0; pi-collaborating-agents' inbox message starts a
//!   run without `before_agent_start` on pi 0.99.1; pi-subagents' background results reach the
//!   model batched (notify.ts's 150 ms debounce) by a direct run
//!   without `before_agent_start`, a result sent while the user's prompt prepares loses a later
//!   result on pi 0.99.1, and no background run starts at all on pi 1.6.0;
//! - the gentle-shell command: not run (exit 2, saying why) without `WAKESIM_GENTLE_SHELL`, run
//!   from the checkout it names (a stand-in checkout here);
//! - bad `package`, `peer:` and `checkout` values are exit-2 errors naming file, line and key.
//!
//! The first driver installs Node 22, pi and the extension's package if they are missing (npm
//! ci, under a lock); `.ci/run` installs them up front.

mod common;

use common::{broke, root, run_traced as run, scenario, wakesim};
use wakesim::engine::{Outcome, RunResult, Runner};
use wakesim::family::Registry;
use wakesim::sim::record::Ev;

const KILL: &str = "scenarios/real-pi-ext/processes-kill-waits-for-prompt.toml";
const KILL_16: &str = "scenarios/real-pi-ext-1.6.0/processes-kill-waits-for-prompt.toml";
const COLLAB: &str = "scenarios/real-pi-ext/collab-inbox-wakes-idle.toml";
const SUBAGENTS: &str = "scenarios/real-pi-ext/subagents-result-wakes-idle.toml";
const SUBAGENTS_RACE: &str = "scenarios/real-pi-ext/subagents-results-race-user-prompt.toml";
const SUBAGENTS_16: &str = "scenarios/real-pi-ext-1.6.0/subagents-result-wakes-idle.toml";

/// The message ids appended to the conversation, in order.
fn appended(r: &RunResult) -> Vec<u32> {
    r.trace
        .iter()
        .filter_map(|rec| match &rec.ev {
            Ev::Appended { msg } => Some(msg.0),
            _ => None,
        })
        .collect()
}

fn produced(r: &RunResult) -> usize {
    r.trace
        .iter()
        .filter(|rec| matches!(rec.ev, Ev::Produced { .. }))
        .count()
}

fn texts(r: &RunResult) -> String {
    r.trace
        .iter()
        .filter_map(|rec| match &rec.ev {
            Ev::Note(n) => Some(n.render()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_peer_driven_seed_gives_the_same_trace_alone_after_others_and_in_another_driver() {
    let registry = Registry::builtin();
    let scn = scenario(COLLAB, &registry);
    let mut warm = Runner::new(&registry);
    for seed in 0..3 {
        warm.run_seed(&scn, seed, false);
    }
    let after_others = warm.run_seed(&scn, 5, true);
    let again = warm.run_seed(&scn, 5, true);
    let alone = Runner::new(&registry).run_seed(&scn, 5, true);
    assert_eq!(after_others.trace_hash, again.trace_hash);
    assert_eq!(after_others.trace_hash, alone.trace_hash);
    assert_eq!(after_others.trace, alone.trace, "record for record");
    assert_eq!(after_others.choices, alone.choices);
    let a = wakesim(&["replay", KILL, "--seed", "14"]);
    let b = wakesim(&["replay", KILL, "--seed", "14"]);
    assert_eq!(a.status.code(), Some(1), "a failing seed exits 1");
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn a_killed_jobs_notification_never_reaches_the_model_on_0_99_1() {
    // Seed 14: job 2 exits 0 (m1) and starts a direct run; job 1 is killed (m2) while that run
    // streams; job 3 exits 0 (m3) after it and starts a second run. Neither run takes m2.
    let r = run(KILL, 14);
    let notes = texts(&r);
    assert!(
        notes.contains("sendMessage(m2, {deliverAs: nextTurn, triggerTurn: false})"),
        "{notes}"
    );
    assert!(
        notes.contains("direct run R2"),
        "a second run follows: {notes}"
    );
    assert_eq!(produced(&r), 3);
    assert_eq!(
        appended(&r),
        vec![0, 2],
        "m1 and m3 reach the model, m2 never"
    );
    assert!(broke(&r, "no-loss") && broke(&r, "bounded-latency"));
}

#[test]
fn a_killed_jobs_notification_follows_the_next_runs_own_message_on_1_6_0() {
    // The same plan on pi 1.6.0: the direct run m3 starts takes the pending nextTurn m2, but
    // appends it after m3.
    let r = run(KILL_16, 14);
    assert!(texts(&r).contains("R2 takes nextTurn [m2]"));
    assert_eq!(appended(&r), vec![0, 2, 1]);
    assert!(broke(&r, "fifo"));
    assert!(!broke(&r, "no-loss"));
}

#[test]
fn an_inbox_message_starts_a_run_without_the_harness_on_0_99_1() {
    let r = run(COLLAB, 0);
    let notes = texts(&r);
    // Seed 0: an urgent message (steer) on the idle host, 40 ms of the extension's debounce.
    assert!(notes.contains("writes m1 to"), "{notes}");
    assert!(
        notes.contains("sendMessage(m1, {deliverAs: steer, triggerTurn: true})"),
        "{notes}"
    );
    assert!(broke(&r, "harness"));
    match r.outcome {
        Outcome::Fail(_) => {}
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn a_subagent_seed_gives_the_same_trace_alone_and_after_others() {
    // pi-subagents keeps its runs, results and indexes under its temporary root: the peer
    // empties it before each run, so a seed does not see the files of the seeds before it.
    let registry = Registry::builtin();
    let scn = scenario(SUBAGENTS_RACE, &registry);
    let mut warm = Runner::new(&registry);
    for seed in 0..3 {
        warm.run_seed(&scn, seed, false);
    }
    let after_others = warm.run_seed(&scn, 38, true);
    let alone = Runner::new(&registry).run_seed(&scn, 38, true);
    assert_eq!(after_others.trace_hash, alone.trace_hash);
    assert_eq!(after_others.trace, alone.trace, "record for record");
}

#[test]
fn background_results_reach_the_model_batched_through_the_watcher_on_0_99_1() {
    // Seed 0: two runs end at 10,000 ms; the watcher takes each result file at once (its
    // coalescer is scheduled with 0 ms), notify.ts batches both (150 ms debounce) into one sendMessage with
    // triggerTurn, which starts a direct run on the idle host: both reach the model, without
    // before_agent_start.
    let r = run(SUBAGENTS, 0);
    let notes = texts(&r);
    assert!(
        notes.contains("2 background subagent run(s) requested over pi-subagents' RPC"),
        "{notes}"
    );
    assert!(
        notes.contains("writes its complete result and exits 0"),
        "{notes}"
    );
    assert!(
        notes.contains("sendMessage(m1 m2, {triggerTurn: true})"),
        "one batched message: {notes}"
    );
    let sent = r
        .trace
        .iter()
        .find(|rec| matches!(&rec.ev, Ev::Note(n) if n.render().starts_with("sendMessage(m1 m2")))
        .expect("the batch is sent");
    assert_eq!(sent.t.0, 10_150, "the 150 ms batch debounce from 10,000 ms");
    assert_eq!(produced(&r), 2);
    assert_eq!(appended(&r).len(), 2, "both results reach the model");
    assert!(broke(&r, "harness"));
    assert!(!broke(&r, "no-loss"));
}

#[test]
fn a_result_during_the_users_prompt_preparation_loses_the_later_results_on_0_99_1() {
    // Seed 38: the user types at 150 ms; a stopped run's result (m1) is sent at 151 ms while the
    // prompt prepares and starts a direct run; the prompt reaches Agent.prompt and is rejected,
    // which clears the run flag under the direct run; the results of m2, m3 and m4 then see an
    // idle host and their direct runs are rejected too: they never reach the model.
    let r = run(SUBAGENTS_RACE, 38);
    let notes = texts(&r);
    for m in ["m1", "m2", "m3", "m4"] {
        assert!(
            notes.contains(&format!("sendMessage({m}, {{triggerTurn: true}})")),
            "{m}: {notes}"
        );
    }
    assert_eq!(produced(&r), 4);
    assert_eq!(appended(&r), vec![0], "only m1 reaches the model");
    assert!(broke(&r, "single-starter") && broke(&r, "flag-coherence"));
    assert!(broke(&r, "no-loss"));
}

#[test]
fn no_background_run_starts_on_1_6_0() {
    // pi-subagents 0.67.0 requires host packages pi 1.6.0 does not ship: every launch is
    // refused before the runner is spawned, and no result is ever written.
    let r = run(SUBAGENTS_16, 0);
    let notes = texts(&r);
    assert!(
        notes.contains("does not provide @earendil-works/pi-agent-core/node, @earendil-works/chord, @earendil-works/chord/context"),
        "{notes}"
    );
    assert!(!notes.contains("writes its"), "no runner ran: {notes}");
    assert!(produced(&r) > 0);
    assert!(appended(&r).is_empty());
    assert!(broke(&r, "no-loss"));
}

#[test]
fn the_gentle_shell_command_is_not_run_without_its_checkout_and_runs_with_one() {
    let dir = "examples/real-pi-gentle/";
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args(["run", dir, "--no-save"])
        .current_dir(root())
        .env_remove("WAKESIM_GENTLE_SHELL")
        .output()
        .expect("wakesim runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("gentle-agents-completions.toml:")
            && err.contains("not run: WAKESIM_GENTLE_SHELL is not set"),
        "{err}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args(["run", dir, "--no-save", "--seeds", "0..20"])
        .current_dir(root())
        .env("WAKESIM_GENTLE_SHELL", "tests/data/gentle-standin")
        .output()
        .expect("wakesim runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("gentle-agents.ts · 20 seeds · expect fail harness"),
        "{text}"
    );
}

#[test]
fn bad_package_peer_and_checkout_values_are_exit_2_errors_naming_the_key() {
    let dir = common::tempdir("real-pi-ext-bad");
    let cases = [
        (
            "wake = { package = \".\", extension = \"x/index.ts\" }",
            "is not pinned",
        ),
        (
            "wake = { extension = \"ext.ts\", deliver = \"peer:nobody\" }",
            "no fake peer `nobody`",
        ),
        (
            "wake = { extension = \"ext.ts\", deliver = \"peer:../peers\" }",
            "no fake peer",
        ),
        (
            "wake = { checkout = \"WAKESIM_TEST_NO_SUCH_VAR\", extension = \"ext.ts\" }",
            "not run: WAKESIM_TEST_NO_SUCH_VAR is not set",
        ),
        (
            "wake = { package = \".\", checkout = \"HOME\", extension = \"ext.ts\" }",
            "not both",
        ),
        (
            "wake = { command = [\"true\"], package = \".\" }",
            "are for a real host's `extension`",
        ),
    ];
    std::fs::write(dir.join("ext.ts"), "export default function () {}\n").expect("write");
    for (i, (wake, want)) in cases.iter().enumerate() {
        let f = dir.join(format!("bad-{i}.toml"));
        let text = format!(
            "name = \"bad\"\nhost = \"pi@0.99.1\"\n{wake}\nseeds = 1\nsnapshot_seed = 0\n[expect]\nverdict = \"pass\"\n"
        );
        std::fs::write(&f, text).expect("write");
        let out = wakesim(&["run", f.to_str().expect("utf-8")]);
        assert_eq!(out.status.code(), Some(2), "case {i}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(&format!("error: {}:", f.display())) && err.contains(want),
            "case {i}: {err}"
        );
    }
}
