"""The real gptme 0.35.1 under the scheduler: the reference's minimal interleavings G-1..G-12
(`docs/hosts/gptme.md`) scripted on gptme's own code, and each gptme finding of the README re-judged
on it. Run with the pinned venv's python (tests/run.py); `cargo test --test real_gptme` does.

The scenarios are `wakesim_adapter/real_scenarios.py`'s (`real_replay.py NAME --seed N` prints a
run). Where the interleaving at the race's instant matters, a test runs many seeds: a bug is shown
when some seed shows it, its absence when none of them does (the seeds are the scheduler's
choices, as in a lane).
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from wakesim_adapter import real_gptme as R  # noqa: E402
from wakesim_adapter import real_scenarios as S  # noqa: E402
from wakesim_adapter.sched import SeededChooser  # noqa: E402

R.load()
SEEDS = int(os.environ.get("WAKESIM_REAL_SEEDS", "40"))


def carried(r):
    return [c for _, _, c, _ in r.requests]


def wakes(r):
    return [ev["Wake"] for _, _, ev in r.records if "Wake" in ev]


def ends(r):
    return [(t, ev["SessionEnd"]["cause"]) for t, _, ev in r.records if "SessionEnd" in ev]


def work(r, op):
    out = []
    for _, _, ev in r.records:
        w = ev.get("Work")
        if w is not None and (w["op"] == op or (isinstance(w["op"], dict) and op in w["op"])):
            out.append(w)
    return out


def notices(text):
    return sum(1 for m in R.current().manager("A").log.messages if m.content == text)


YIELDED = "Background wait yielded to pending session input."


class ServerWatch(unittest.TestCase):
    """G-1, G-2, G-3, G-5 and the W findings, on SessionManager and the watch tool."""

    def test_g1_w1_burst_refuses_itself(self) -> None:
        # The retry drains the burst one wake per event: the second wake is refused because the
        # first set `generating` before it returned.
        for tools in (("watch", "shell"), ("shell",)):
            outcomes = set()
            for seed in range(SEEDS):
                r, _ = S.run("g1-burst", seed, variant="w1", tools=tools)
                self.assertEqual(r.self_refusals(), [(4, 3)], (tools, r.records))
                self.assertEqual(r.lost(), [])
                outcomes.add(repr(carried(r)))
            if "watch" in tools:
                # The woken step's STEP_PRE drain (_watch_drain_hook) races the retry's requeue
                # of e2: e2 rides the woken step when the requeue comes first, else it waits
                # for the woken step's end (one event per idle turn).
                self.assertEqual(outcomes, {"[[], [1, 2]]", "[[], [1], [1, 2]]"})
            else:
                # Without the watch tool's drain, e2 always waits for the next retry.
                self.assertEqual(outcomes, {"[[], [1], [1, 2]]"})

    def test_g1_real_retry_one_wake_per_burst(self) -> None:
        for seed in range(SEEDS):
            r, _ = S.run("g1-burst", seed, tools=("shell",))
            self.assertEqual(r.self_refusals(), [])
            self.assertEqual(carried(r), [[], [1, 2]])
            self.assertEqual([(w["msgs"], w["refused"]) for w in wakes(r) if w["pass"]],
                             [([1, 2], None)])

    def test_g2_w0_drops_the_refused_event(self) -> None:
        for seed in range(SEEDS // 4):
            r, _ = S.run("g2-refused-while-tools-pending", seed, variant="w0")
            self.assertEqual([w["refused"] for w in wakes(r)], ["Run", "Tools"])
            self.assertEqual(r.lost(), [1])
            self.assertEqual(list(R.P.G.watch._pending_deliveries), [])

    def test_g2_real_retry_keeps_the_refused_event(self) -> None:
        for seed in range(SEEDS):
            r, _ = S.run("g2-refused-while-tools-pending", seed)
            self.assertEqual(r.lost(), [])
            # After the confirmation the tool runs and its continuation step's STEP_PRE drain
            # (the watch tool is loaded) carries the event.
            self.assertEqual(carried(r), [[], [1]])

    def test_g3_order_kept_across_requeues(self) -> None:
        for variant, lost in (("w2", []), ("w1", []), ("w0", [1])):
            for seed in range(SEEDS // 4):
                r, _ = S.run("g3-order-across-requeues", seed, variant=variant)
                self.assertEqual(r.lost(), lost, variant)
                self.assertEqual(r.delivery_order(), [m for m in (1, 2, 3) if m not in lost],
                                 variant)

    def test_g5_dispatch_failure_persisted_not_dispatched(self) -> None:
        # The wake persists the event, then the step thread fails to start:
        # request_watch_wake still returns True (no duplicate), and nothing runs a step.
        r, _ = S.run("g5-dispatch-failure")
        self.assertEqual(r.appended_count, {1: 1})
        self.assertEqual(r.requests, [])
        self.assertEqual([w["refused"] for w in wakes(r)], [None])
        self.assertFalse(R.P.G.SessionManager.get_sessions_for_conversation("A")[0].generating)

    def test_finding_persist_failure_overtaken(self) -> None:
        # Found by wakesim (w2-persist-failure-overtaken): the first event of an idle
        # conversation fails to persist and is deferred; nothing retries it; the next event
        # wakes and reaches the model first.
        for seed in range(SEEDS // 4):
            r, _ = S.run("persist-failure-overtaken", seed)
            self.assertEqual([w["refused"] for w in wakes(r)], ["PersistFailed", None])
            self.assertEqual(r.lost(), [])
            self.assertEqual(r.delivery_order(), [2, 1])
            self.assertEqual(r.requests[0][0], 3000)   # m1 waited 2.9 s for m2's wake

    def test_found_on_real_code_step_end_gap_overtakes(self) -> None:
        # Not in the model (it runs a step's end and its retry as one atomic step): e2 fires
        # the instant the step ends, and its own wake can run in the gap between the step's
        # `generating = False` (step()'s finally, under step_lock) and the retry that follows.
        # e2 is persisted first; the retry's wake for the deferred e1 is refused (busy with
        # e2's wake, from another thread: no self-refusal) and requeued: e1 reaches the model
        # after e2. gptme's own retry and W1 alike.
        for variant in (None, "w1"):
            outcomes: dict[object, int] = {}
            for seed in range(SEEDS):
                r, _ = S.run("step-end-gap", seed, variant=variant)
                self.assertEqual(r.lost(), [])
                order = tuple(r.delivery_order())
                outcomes[order] = outcomes.get(order, 0) + 1
                if order == (2, 1):
                    self.assertIn({"Wake": 2}, [w["refused"] for w in wakes(r)])
            self.assertEqual(set(outcomes), {(1, 2), (2, 1)}, variant)

    def test_finish_command_retries(self) -> None:
        r, _ = S.run("finish-command-retries")
        self.assertEqual([(w["pass"], w["refused"]) for w in wakes(r)], [(0, "Command"), (1, None)])
        self.assertEqual(r.requests[0][0], 2100)


class ServerSubagents(unittest.TestCase):
    """G-4 and the mixed-drain finding, on the real retry's subagent part."""

    def test_g4_completions_reordered(self) -> None:
        for tools in (("watch", "shell"), ("watch", "shell", "subagent")):
            for seed in range(SEEDS // 4):
                r, _ = S.run("g4-completions-reordered", seed, tools=tools)
                self.assertEqual(r.lost(), [])
                # first, *rest = [c1, c2]; rest put back; c1's wake refused (a tool awaits
                # confirmation) and put back behind: c2 reaches the model first.
                self.assertEqual(r.delivery_order(), [2, 1], (tools, r.records))

    def test_finding_mixed_drain_refuses_itself(self) -> None:
        # Found by wakesim (w2-subagent-mixed-drain-refuses-itself): one retry delivers the
        # watch batch, then the first completion, whose wake the watch wake refuses.
        for tools in (("watch", "shell", "subagent"), ("watch", "shell")):
            outcomes = set()
            for seed in range(SEEDS):
                r, _ = S.run("mixed-drain", seed, tools=tools)
                self.assertEqual(r.self_refusals(), [(4, 3)], r.records)
                self.assertEqual(r.lost(), [])
                outcomes.add(repr(carried(r)))
            if "subagent" in tools:
                # The woken step's STEP_PRE subagent hook races the retry's put-back.
                self.assertEqual(outcomes, {"[[], [1, 2]]", "[[], [1], [1, 2]]"})
            else:
                self.assertEqual(outcomes, {"[[], [1], [1, 2]]"})


class CliBackgroundJobs(unittest.TestCase):
    """G-6..G-12 and the B findings, on the chat loop and background_job_wait_hook."""

    def test_g6_pr3843_fixed_three_calls(self) -> None:
        for seed in range(SEEDS // 4):
            r, _ = S.run("g6-pr3843", seed)
            self.assertEqual(carried(r), [[], [], [1]])
            self.assertEqual(r.appended_count, {1: 1})
            self.assertEqual(ends(r), [(7000, "QueueEmpty")])
            self.assertEqual(work(r, "Killed"), [])

    def test_g6_pr3843_baseline_two_calls_job_killed(self) -> None:
        for seed in range(SEEDS // 4):
            r, _ = S.run("g6-pr3843", seed, variant="b0")
            self.assertEqual(carried(r), [[], []])
            self.assertEqual(ends(r), [(2000, "QueueEmpty")])
            self.assertEqual(len(work(r, "Killed")), 1)
            self.assertEqual(r.produced, {})   # the job never finished: its result is lost

    def test_g7_stale_control_file(self) -> None:
        S.run("g7-stale-control", variant="b1-pre")
        self.assertGreater(notices(YIELDED), 20)      # a model call per loop until the job ends
        r, _ = S.run("g7-stale-control")
        self.assertEqual(notices(YIELDED), 1)
        self.assertEqual(len(r.requests), 4)
        S.run("g7-same-size-rewrite")
        self.assertEqual(notices(YIELDED), 2)         # new contents interrupt once more

    def test_g8_recheck_catches_the_notify(self) -> None:
        # Every interleaving of the reader's notify with the hook's drain, file reads and wait
        # at 2000 ms. With the recheck under _job_lock, no seed waits.
        late = {}
        for variant in ("b1", "b1-no-recheck", "b1-no-recheck-capped"):
            worst = 0
            for seed in range(SEEDS):
                r, _ = S.run("g8-notify-at-the-drain", seed, variant=variant)
                self.assertEqual(r.lost(), [])
                done = [t for t, _, ev in r.records if "Produced" in ev][0]
                worst = max(worst, r.requests[-1][0] - done)
            late[variant] = worst
        self.assertEqual(late["b1"], 0)
        # Without the recheck the completion slips between drain and wait: the waiter sleeps
        # the whole GPTME_WATCH_IDLE_MAX (1800 s), or 1 s with 0.35.1's cap on each wait.
        self.assertEqual(late["b1-no-recheck"], 1_800_000)
        self.assertEqual(late["b1-no-recheck-capped"], 1000)

    def test_g9_concurrent_drain_keeps_waiting(self) -> None:
        for seed in range(SEEDS // 2):
            r, _ = S.run("g9-concurrent-drain", seed)
            self.assertEqual(r.lost(), [])
            self.assertEqual(r.appended_count, {1: 1, 2: 1})
            self.assertEqual(ends(r)[0][1], "QueueEmpty")
            self.assertGreaterEqual(ends(r)[0][0], 9000)   # the wait kept waiting for J2

    def test_g10_foreign_job_neither_holds_nor_leaks(self) -> None:
        for seed in range(SEEDS // 4):
            r, _ = S.run("g10-foreign-job", seed)
            # A does not wait for B's job, and never sees its output.
            self.assertEqual(ends(r), [(1000, "QueueEmpty")])
            self.assertEqual(carried(r), [[]])
            # B's completion is still claimable by its owner, exactly once.
            b = R.current().load("B")
            claims = [list(R.P.G.shell_background.background_job_completion_hook(b))
                      for _ in range(2)]
            self.assertEqual([len(c) for c in claims], [1, 0])

    def test_g11_reset_while_waiting(self) -> None:
        for seed in range(SEEDS // 4):
            r, _ = S.run("g11-reset-while-waiting", seed)
            # The waiter wakes at the reset, the job is killed, its late reader callback is
            # dropped (no completion for a job the registry no longer holds).
            self.assertEqual(ends(r), [(5000, "QueueEmpty")])
            self.assertEqual(len(work(r, "Killed")), 1)
            self.assertEqual(r.appended_count, {})
            self.assertEqual(R.current().late_callbacks, [1])
            self.assertEqual(list(R.P.G.shell_background._completion_queue.queue), [])

    def test_g12_input_ends_the_wait(self) -> None:
        for name in ("g12-prompt-ends-wait", "g12-steer-ends-wait"):
            for seed in range(SEEDS // 4):
                r, _ = S.run(name, seed)
                # The wait's next one-second checkpoint takes it, as a user message.
                self.assertLessEqual(r.requests[2][0] - 5000, 1000)
                self.assertEqual(r.requests[2][2], [1])
                self.assertEqual(r.lost(), [])
                self.assertEqual(r.delivery_order(), [1, 2])

    def test_g12_malformed_record_does_not_end_the_wait(self) -> None:
        r, _ = S.run("g12-malformed-record")
        self.assertEqual([t for t, *_ in r.requests], [0, 1000, 21_000])

    def test_g12_prompts_over_the_cap_stay_in_order(self) -> None:
        r, _ = S.run("g12-flood")
        order = r.delivery_order(stream="prompt:A")
        self.assertEqual(order, sorted(order))
        self.assertEqual(len(order), 101)

    def test_finding_step_pre_overtakes_queued_completion(self) -> None:
        # Found by wakesim (b1-step-pre-overtakes-queued-completion): two prompts end the
        # wait; J1 ends during p1's turn; the LOOP_CONTINUE after p1 queues J1's completion
        # behind p2; J2 ends at that instant and p2's STEP_PRE claims it: J2 reaches the model
        # before J1. (Completions of one conversation's jobs are one FIFO stream.)
        outcomes: dict[object, int] = {}
        for seed in range(SEEDS):
            r, _ = S.run("step-pre-overtakes-completion", seed)
            self.assertEqual(r.lost(), [])
            order = tuple(r.delivery_order(stream="job:A"))
            outcomes[order] = outcomes.get(order, 0) + 1
        self.assertIn((4, 3), outcomes)
        self.assertIn((3, 4), outcomes)

    def test_finding_steer_overtakes_queued_steer(self) -> None:
        # Found by wakesim (b1-steer-overtakes-queued-steer): the wait takes s1 and s2 as
        # turns; s3 is written during s1's turn and a STEP_PRE of that turn (the subagent
        # tool's control hook drains steer records) takes it: s3 reaches the model before s2.
        outcomes: dict[object, int] = {}
        for seed in range(SEEDS):
            r, _ = S.run("steer-overtakes-steer", seed)
            self.assertEqual(r.lost(), [])
            order = tuple(r.delivery_order(stream="steer:A"))
            outcomes[order] = outcomes.get(order, 0) + 1
        self.assertIn((1, 3, 2), outcomes)
        self.assertEqual(set(outcomes) - {(1, 2, 3), (1, 3, 2)}, set(), outcomes)


class Determinism(unittest.TestCase):
    def test_a_run_alone_equals_the_run_after_others(self) -> None:
        # A fresh process (real_replay.py) against this one, where many runs came before.
        import subprocess
        root = os.path.dirname(HERE)
        for name, seed, variant in (("g1-burst", 7, "w1"), ("steer-overtakes-steer", 0, None)):
            for s_ in range(3):
                S.run(name, s_, variant=variant)
            here = S.timeline(name, seed, variant)
            args = [sys.executable, os.path.join(root, "real_replay.py"), name, "--seed", str(seed)]
            if variant:
                args += ["--variant", variant]
            alone = subprocess.run(args, capture_output=True, text=True, check=True,
                                   env={**os.environ, "PYTHONHASHSEED": "0"}).stdout
            self.assertEqual(alone, here + "\n")

    def test_same_seed_same_records_different_seeds_differ(self) -> None:
        for name, variant in (("mixed-drain", None), ("g3-order-across-requeues", "w1"),
                              ("step-pre-overtakes-completion", None)):
            for seed in range(5):
                a = S.run(name, seed, variant=variant)[0].records
                b = S.run(name, seed, variant=variant)[0].records
                self.assertEqual(repr(a), repr(b))
        # Drawn timings as well as interleavings: the driver-like plan of test_driver.py covers
        # whole plans; here a drawn model time on a scripted plan.
        plan = S.watch_plan([100, 200, 1500], subagents=[("a", 1600)])
        distinct = {repr(R.run_plan(plan, SeededChooser(s), model_ms=(100, 2000))[0].records)
                    for s in range(20)}
        self.assertGreater(len(distinct), 5)


if __name__ == "__main__":
    unittest.main()
