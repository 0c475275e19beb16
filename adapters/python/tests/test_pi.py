"""The pi-shaped facade (`pi.py`) against a recording link: what the module's factory gets, the
calls a send makes (carried producer messages, deliver_as checked), `ctx.is_idle` with and without
the event's hint (and pi's stale-ctx error), the input event's `handled`, timers, and a factory
that returns no send function. Standard library only (no gptme)."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from tests.fakes import FakeLink, FakeLoader  # noqa: E402
from wakesim_adapter import pi as P  # noqa: E402
from wakesim_adapter.protocol import Clock  # noqa: E402

MSG = {"kind": "notification", "text": "watch fired [wakesim m2]", "name": "w", "source": "s"}


def facade(body, answers=None, options=None):
    link = FakeLink(answers)
    f = P.PiFacade(link, Clock(link), options or {})
    return f, link, f.reset(FakeLoader(body))


class CarriesTest(unittest.TestCase):
    def test_markers_are_zero_based_in_order_once(self) -> None:
        self.assertEqual(P.carries("[wakesim m3] then [wakesim m1] and [wakesim m3]"), [2, 0])
        self.assertEqual(P.carries({"content": "[wakesim m5]"}), [4])
        self.assertEqual(P.carries("[wakesim m0] nothing"), [])

    def test_deliver_as_is_checked(self) -> None:
        self.assertEqual(P.deliver_as({"deliver_as": "followUp"}, "f"), "followUp")
        self.assertIsNone(P.deliver_as(None, "f"))
        with self.assertRaisesRegex(ValueError, "deliver_as must be one of"):
            P.deliver_as({"deliver_as": "later"}, "pi.send_message")


class UserTextTest(unittest.TestCase):
    def test_the_text_is_a_string_or_a_lists_text_parts(self) -> None:
        self.assertEqual(P.user_text("You have new background results."),
                         "You have new background results.")
        self.assertEqual(P.user_text([{"type": "text", "text": "a"}, {"type": "image"},
                                      {"type": "text", "text": "b"}]), "a\nb")
        self.assertIsNone(P.user_text([{"type": "image"}]))
        self.assertIsNone(P.user_text({"content": "x"}))

    def test_a_long_text_is_cut_to_the_bound_with_an_ellipsis(self) -> None:
        cut = P.cut_text("\u00e9" * 150)
        self.assertEqual(cut, "\u00e9" * 98 + "\u2026")
        self.assertLessEqual(len(cut.encode()), P.USER_TEXT_BYTES_MAX)
        self.assertEqual(P.cut_text(cut), cut)
        self.assertEqual(P.cut_text("x" * 200), "x" * 200)


class FacadeTest(unittest.TestCase):
    def test_the_factory_gets_pi_and_a_copy_of_the_options(self) -> None:
        got = {}

        def body(m):
            def wake(pi, options):
                got["options"] = options
                options["mutated"] = True
                return lambda message, opts: None
            m.wake = wake

        f, _, ready = facade(body, options={"a": 1})
        self.assertEqual(got["options"], {"a": 1, "mutated": True})
        self.assertEqual(f._options, {"a": 1})   # the scenario's table is not the module's
        self.assertEqual(ready, {"events": ["message", "session_start"]})

    def test_a_message_event_calls_send_with_the_default_options(self) -> None:
        sends = []

        def body(m):
            def wake(pi, options):
                def send(message, opts):
                    sends.append((message, opts))
                    pi.send_message(message, opts)
                    pi.send_user_message("again " + message["content"], {"deliver_as": "followUp"})
                return send
            m.wake = wake

        f, link, _ = facade(body)
        self.assertIsNone(f.dispatch({"event": "message", "ctx": 1, "message": MSG}))
        message, opts = sends[0]
        self.assertEqual(message["custom_type"], "wakesim.notification")
        self.assertEqual(message["details"], {"id": "w", "kind": "notification", "source": "s"})
        self.assertEqual(opts, P.DEFAULT_OPTIONS["notification"])
        self.assertEqual(link.sent, [
            {"type": "send_message", "custom_type": "wakesim.notification", "carries": [1],
             "deliver_as": "steer", "trigger_turn": True},
            {"type": "send_user_message", "carries": [1], "deliver_as": "followUp",
             "text": "again watch fired [wakesim m2]"},
        ])

    def test_is_idle_uses_the_hint_until_a_send(self) -> None:
        answers = []

        def body(m):
            def wake(pi, options):
                def on_end(event, ctx):
                    answers.append(ctx.is_idle())
                    pi.send_message({"content": "x"}, {})
                    answers.append(ctx.is_idle())   # after a send: asked
                pi.on("agent_end", on_end)
                return lambda message, opts: None
            m.wake = wake

        f, link, ready = facade(body, {"is_idle": {"type": "result", "value": False}})
        self.assertIn("agent_end", ready["events"])
        f.dispatch({"event": "agent_end", "ctx": 3, "idle": True})
        self.assertEqual(answers, [True, False])
        self.assertEqual(link.sent[0], {"type": "is_idle", "ctx": 3, "known": True})
        self.assertEqual(link.sent[-1], {"type": "is_idle", "ctx": 3})

    def test_a_stale_ctx_raises_pis_error(self) -> None:
        errors = []

        def body(m):
            def wake(pi, options):
                @pi.on("agent_end")
                def on_end(event, ctx):
                    try:
                        ctx.is_idle()
                    except P.StaleCtx as e:
                        errors.append(str(e))
                return lambda message, opts: None
            m.wake = wake

        f, link, _ = facade(body, {"is_idle": {"type": "result", "error": "stale_ctx"}})
        f.dispatch({"event": "agent_end", "ctx": 1, "idle": None})   # the hint: stale
        f.dispatch({"event": "agent_end", "ctx": 1})                 # asked: stale
        self.assertEqual(errors, [P.STALE, P.STALE])
        self.assertEqual(link.sent[0]["known"], "stale_ctx")

    def test_input_is_handled_by_the_first_handler_that_says_so(self) -> None:
        calls = []

        def body(m):
            def wake(pi, options):
                def first(e, c):
                    calls.append(("a", e["source"]))
                    return {"action": "handled"}
                pi.on("input", first)
                pi.on("input", lambda e, c: calls.append(("b", e["source"])))
                return lambda message, opts: None
            m.wake = wake

        f, _, _ = facade(body)
        out = f.dispatch({"event": "input", "ctx": 1, "input": {"source": "extension"}})
        self.assertEqual(out, {"action": "handled"})
        self.assertEqual(calls, [("a", "extension")])

    def test_a_failed_compaction_reaches_its_own_handler(self) -> None:
        seen = []

        def body(m):
            def wake(pi, options):
                pi.on("session_compact_failed", lambda e, c: seen.append(e["type"]))
                return lambda message, opts: None
            m.wake = wake

        f, _, ready = facade(body)
        self.assertIn("session_compact", ready["events"])
        f.dispatch({"event": "session_compact", "ctx": 1, "outcome": "failed"})
        f.dispatch({"event": "session_compact", "ctx": 1, "outcome": "ok"})
        self.assertEqual(seen, ["session_compact_failed"])

    def test_timers_fire_through_the_timer_event(self) -> None:
        fired = []

        def body(m):
            def wake(pi, options):
                def send(message, opts):
                    pi.set_timeout(lambda: fired.append(pi.now()), 100)
                return send
            m.wake = wake

        f, link, _ = facade(body)
        f.dispatch({"event": "message", "ctx": 1, "message": MSG})
        timer = link.sent[-1]["timer"]
        f._clock.now_ms = 100
        f.dispatch({"event": "timer", "ctx": 1, "timer": timer})
        self.assertEqual(fired, [100])

    def test_a_factory_without_a_send_function_is_refused(self) -> None:
        def body(m):
            m.wake = lambda pi, options: None
        link = FakeLink()
        f = P.PiFacade(link, Clock(link), {})
        with self.assertRaisesRegex(TypeError, "returned no send function"):
            f.reset(FakeLoader(body))


if __name__ == "__main__":
    unittest.main()
