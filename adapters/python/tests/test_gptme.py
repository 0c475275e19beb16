"""The gptme-shaped facades (`gptme.py`) against a recording link: the binding that module-level
functions reach (none outside a run; each facade binds itself at its reset), the server's events
and calls (markers checked), the CLI's hooks (registration rules, what a hook may yield, a
LOOP_CONTINUE hook that waits and is resumed, `job_lock` released between two calls), and a job's
`_wait_expired` mark. Standard library only (no gptme)."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from tests.fakes import FakeLink, FakeLoader, result  # noqa: E402
from wakesim_adapter import gptme as G  # noqa: E402
from wakesim_adapter.protocol import Clock, Fatal  # noqa: E402


def server(body, answers=None):
    link = FakeLink(answers)
    f = G.ServerFacade(link, Clock(link), {})   # on the module's BINDING, as serve makes it
    return f, link, f.reset(FakeLoader(body))


def cli(body, answers=None):
    link = FakeLink(answers)
    f = G.CliFacade(link, Clock(link), {"x": 1})   # on the module's BINDING, as serve makes it
    return f, link, f.reset(FakeLoader(body))


class BindingTest(unittest.TestCase):
    def test_nothing_is_bound_before_a_reset(self) -> None:
        with self.assertRaisesRegex(RuntimeError, "outside a run"):
            G.Binding().get()

    def test_each_facade_binds_itself_at_its_reset(self) -> None:
        binding = G.Binding()
        link = FakeLink()

        def body(m):
            m.retry_deferred_watch_wakes = lambda cid: None
        a = G.ServerFacade(link, Clock(link), {}, binding)
        b = G.ServerFacade(link, Clock(link), {}, binding)
        a.reset(FakeLoader(body))
        self.assertIs(binding.get(), a)
        b.reset(FakeLoader(body))
        self.assertIs(binding.get(), b)
        with self.assertRaisesRegex(TypeError, "for gptme-cli modules"):
            binding.cli("register_hook")


class ServerTest(unittest.TestCase):
    def test_the_module_must_define_the_retry(self) -> None:
        with self.assertRaisesRegex(TypeError, "retry_deferred_watch_wakes"):
            server(lambda m: None)

    def test_events_run_the_module_and_its_calls_reach_the_host(self) -> None:
        seen = []

        def body(m):
            def retry(cid):
                logdir = G.get_logs_dir() / cid
                for watch_id, text in G.take_queued_watch_events(logdir):
                    ok = G.SessionManager.request_watch_wake(cid, G.Message("system", text))
                    seen.append((watch_id, ok))
                    if not ok:
                        G.requeue_watch_event(logdir, watch_id, text)
            m.retry_deferred_watch_wakes = retry

        answers = {"take_queued_watch_events": result([["w1", "e [wakesim m4]"]]),
                   "request_watch_wake": result(False)}
        f, link, ready = server(body, answers)
        self.assertEqual(ready, {"events": ["retry_deferred_watch_wakes"]})
        self.assertIsNone(f.dispatch({"event": "retry_deferred_watch_wakes", "conversation_id": "A"}))
        self.assertEqual(seen, [("w1", False)])
        self.assertEqual(link.sent, [
            {"type": "take_queued_watch_events", "logdir": "A"},
            {"type": "request_watch_wake", "conversation_id": "A", "carries": [3]},
            {"type": "requeue_watch_event", "logdir": "A", "carries": [3]},
        ])

    def test_a_requeue_carries_exactly_one_event(self) -> None:
        def body(m):
            m.retry_deferred_watch_wakes = lambda cid: G.queue_watch_event(G.LOGS / cid, "w", "none")
        f, _, _ = server(body)
        with self.assertRaisesRegex(ValueError, "one \\[wakesim mN\\] marker"):
            f.dispatch({"event": "retry_deferred_watch_wakes", "conversation_id": "A"})

    def test_an_unknown_event_is_fatal(self) -> None:
        f, _, _ = server(lambda m: setattr(m, "retry_deferred_watch_wakes", lambda cid: None))
        with self.assertRaises(Fatal):
            f.dispatch({"event": "nope"})


class CliTest(unittest.TestCase):
    def test_hooks_register_once_per_type(self) -> None:
        def body(m):
            G.register_hook("a", G.HookType.STEP_PRE, lambda *a: None, 5)
            G.register_hook("b", "loop_continue", lambda *a: None)
        _, _, ready = cli(body)
        self.assertEqual(ready["events"], ["step_pre", "loop_continue"])
        self.assertEqual(ready["hooks"]["step_pre"], {"name": "a", "priority": 5})

        def twice(m):
            G.register_hook("a", G.HookType.STEP_PRE, lambda *a: None)
            G.register_hook("b", G.HookType.STEP_PRE, lambda *a: None)
        with self.assertRaisesRegex(ValueError, "a second step_pre hook"):
            cli(twice)
        with self.assertRaisesRegex(TypeError, "registers a STEP_PRE or LOOP_CONTINUE hook"):
            cli(lambda m: None)

    def test_step_pre_items_and_stop_propagation(self) -> None:
        def hook(manager, interactive, queue):
            yield G.Message("system", f"done [wakesim m{len(queue) + 1}]")
            yield G.Message("system", "ignored", notice="timeout")
            yield G.StopPropagation()
            yield G.Message("system", "never reached [wakesim m9]")

        f, _, _ = cli(lambda m: G.register_hook("h", G.HookType.STEP_PRE, hook))
        out = f.dispatch({"event": "step_pre", "conversation_id": "A", "prompt_queue": 2})
        self.assertEqual(out, {"items": [{"carries": [2]}, {"notice": "timeout"}]})  # 0-based

    def test_a_yield_must_say_what_it_is(self) -> None:
        def plain(manager, interactive, queue):
            yield G.Message("system", "no marker and no notice")
        f, _, _ = cli(lambda m: G.register_hook("h", G.HookType.STEP_PRE, plain))
        with self.assertRaisesRegex(ValueError, "a Message carrying producer messages"):
            f.dispatch({"event": "step_pre", "conversation_id": "A"})
        with self.assertRaisesRegex(ValueError, "notice must be"):
            G.Message("system", "x", notice="later")
        with self.assertRaisesRegex(ValueError, "carries producer messages"):
            f._item(G.Message("system", "[wakesim m1]", notice="input"))

    def test_a_loop_continue_hook_waits_and_is_resumed(self) -> None:
        def hook(manager, interactive, queue):
            cid = manager.chat_id
            with G.job_lock:
                notified = G.job_condition(cid).wait(2.5)
            jobs = G.claim_completed_jobs(cid)
            if notified and jobs:
                yield G.Message("system", jobs[0].stdout)

        job = {"job": 7, "id": 1, "conversation_id": "A", "stdout": "ok [wakesim m2]"}
        answers = {"claim_completions": result([job])}
        f, link, _ = cli(lambda m: G.register_hook("h", G.HookType.LOOP_CONTINUE, hook), answers)
        out = f.dispatch({"event": "loop_continue", "conversation_id": "A", "idle_max_ms": 1500})
        self.assertEqual(out, {"type": "wait", "timeout_ms": 2500})
        self.assertEqual(os.environ.get("GPTME_WATCH_IDLE_MAX"), "1.5")
        # The lock was released before the claim: the others run first (an `unlock` end).
        out = f.dispatch({"event": "resume", "why": "notified"})
        self.assertEqual(out, {"type": "unlock"})
        out = f.dispatch({"event": "resume", "why": "io"})
        self.assertEqual(out, {"items": [{"carries": [1]}], "stop": False})
        self.assertEqual(link.types(), ["claim_completions"])
        with self.assertRaises(Fatal):
            f.dispatch({"event": "resume", "why": "io"})   # nothing suspended now

    def test_a_wait_outside_a_loop_continue_hook_is_an_error(self) -> None:
        def hook(manager, interactive, queue):
            with G.job_lock:
                G.job_condition("A").wait(1)
            return []
        f, _, _ = cli(lambda m: G.register_hook("h", G.HookType.STEP_PRE, hook))
        with self.assertRaisesRegex(RuntimeError, "only a LOOP_CONTINUE hook can wait"):
            f.dispatch({"event": "step_pre", "conversation_id": "A"})

    def test_marking_a_job_wait_expired_tells_the_host_once(self) -> None:
        jobs = [{"job": 3, "id": 2, "conversation_id": "B", "running": True, "wait_expired": False}]
        f, link, _ = cli(lambda m: G.register_hook("h", G.HookType.STEP_PRE, lambda *a: None),
                         {"jobs": result(jobs)})
        (job,) = G.background_jobs()
        self.assertTrue(job.is_running())
        job._wait_expired = True
        job._wait_expired = True
        self.assertEqual(link.sent[-1], {"type": "mark_wait_expired", "job": 3})
        self.assertEqual(link.types().count("mark_wait_expired"), 1)

    def test_seconds_for_the_idle_max(self) -> None:
        self.assertEqual(G._seconds(1_800_000), "1800")
        self.assertEqual(G._seconds(1500), "1.5")


if __name__ == "__main__":
    unittest.main()
