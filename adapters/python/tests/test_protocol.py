"""The adapter's host-independent core (`protocol.py`): the virtual clock and its timers, `drive`,
the module loader's fresh import at every reset, the time module's virtual clocks, and the protocol
loop end to end over real pipes (`run.py` in a subprocess with a pi module): the handshake, a reset,
an event and its calls, and the errors a malformed session gets. Standard library only (no gptme)."""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tests.fakes import FakeLink  # noqa: E402
from wakesim_adapter import PROTOCOL, protocol  # noqa: E402


class ClockTest(unittest.TestCase):
    def test_timers_are_host_calls_and_fire_once(self) -> None:
        link = FakeLink()
        clock = protocol.Clock(link)
        fired: list[tuple[str, int]] = []
        a = clock.set_timeout(lambda x: fired.append(("a", x)), 250, 7)
        b = clock.set_timeout(lambda: fired.append(("b", 0)), -5)
        self.assertEqual(link.sent, [{"type": "set_timeout", "timer": a, "ms": 250},
                                     {"type": "set_timeout", "timer": b, "ms": 0}])
        clock.fire(a)
        clock.fire(a)   # a timer fires once: the second delivery finds nothing
        self.assertEqual(fired, [("a", 7)])
        clock.clear_timeout(b)
        clock.clear_timeout(b)   # already cleared: no second call
        self.assertEqual(link.types().count("clear_timeout"), 1)
        clock.fire(b)
        self.assertEqual(fired, [("a", 7)])

    def test_ids_are_unique_per_run_and_restart_at_reset(self) -> None:
        link = FakeLink()
        clock = protocol.Clock(link)
        ids = [clock.set_timeout(lambda: None, 1), clock.queue_microtask(lambda: None)]
        self.assertEqual(ids, [1, 2])
        self.assertEqual(link.sent[1], {"type": "queue_microtask", "timer": 2})
        clock.now_ms = 900
        clock.reset()
        self.assertEqual((clock.now_ms, clock.set_timeout(lambda: None, 1)), (0, 1))

    def test_a_timer_callback_may_be_a_coroutine(self) -> None:
        clock = protocol.Clock(FakeLink())
        seen = []

        async def later() -> None:
            seen.append("ran")

        clock.fire(clock.set_timeout(later, 0))
        self.assertEqual(seen, ["ran"])


class _Forever:
    def __await__(self):  # an await that never finishes
        while True:
            yield


class DriveTest(unittest.TestCase):
    def test_plain_values_pass_through(self) -> None:
        self.assertEqual(protocol.drive(5), 5)
        self.assertIsNone(protocol.drive(None))

    def test_a_coroutine_runs_to_its_value(self) -> None:
        async def handler() -> int:
            return 42
        self.assertEqual(protocol.drive(handler()), 42)

    def test_a_coroutine_awaiting_real_io_is_refused(self) -> None:
        async def stuck() -> None:
            await _Forever()
        coro = stuck()
        with self.assertRaisesRegex(RuntimeError, "kept awaiting"):
            protocol.drive(coro)
        coro.close()


class VirtualTimeTest(unittest.TestCase):
    def test_the_time_module_reads_the_clock(self) -> None:
        saved = {n: getattr(time, n) for n in ("time", "time_ns", "monotonic", "monotonic_ns",
                                               "perf_counter", "perf_counter_ns")}
        try:
            clock = protocol.Clock(FakeLink())
            protocol.install_clock(clock)
            clock.now_ms = 1500
            self.assertEqual(time.time(), protocol.EPOCH_S + 1.5)
            self.assertEqual(time.monotonic(), 1.5)
            self.assertEqual(time.monotonic_ns(), 1_500_000_000)
            self.assertEqual(time.perf_counter(), 1.5)
        finally:
            for n, f in saved.items():
                setattr(time, n, f)


class ModuleLoaderTest(unittest.TestCase):
    def test_each_load_imports_the_module_and_its_helpers_afresh(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "helper_for_loader_test.py"), "w") as f:
                f.write("STATE = []\n")
            path = os.path.join(d, "wake_for_loader_test.py")
            with open(path, "w") as f:
                f.write("import helper_for_loader_test as h\nh.STATE.append(1)\n"
                        "def wake(pi, options):\n    return lambda m, o: None\n")
            loader = protocol.ModuleLoader(path, "wake")
            first = loader.load()
            second = loader.load()
            self.assertIsNot(first, second)
            # The helper is the user's too: re-imported, so its state does not carry over.
            self.assertEqual(second.h.STATE, [1])
            self.assertTrue(callable(loader.load_factory()))

    def test_a_missing_module_or_export_is_a_load_error(self) -> None:
        with self.assertRaises(protocol.Fatal) as e:
            protocol.ModuleLoader("/nonexistent/wake.py", "wake")
        self.assertEqual(e.exception.kind, "load")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "no_export_for_loader_test.py")
            with open(path, "w") as f:
                f.write("x = 1\n")
            with self.assertRaisesRegex(protocol.Fatal, "is not a function"):
                protocol.ModuleLoader(path, "wake").load_factory()

    def test_describe_names_the_users_frames_only(self) -> None:
        try:
            protocol.drive(None)
            raise ValueError("boom")
        except ValueError as exc:
            text = protocol.describe(exc)
        self.assertTrue(text.startswith("ValueError: boom"))
        self.assertIn("test_protocol.py", text)


PI_MODULE = """
def wake(pi, options):
    def send(message, opts):
        pi.send_message(message, {"deliver_as": opts["deliver_as"], "trigger_turn": True})
    return send
"""


class ServeTest(unittest.TestCase):
    """`run.py` over its pipes, as wakesim runs it."""

    def session(self, lines: list[object]) -> tuple[list[dict[str, Any]], int]:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "wake.py")
            with open(path, "w") as f:
                f.write(PI_MODULE)
            text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
            p = subprocess.run([sys.executable, os.path.join(ROOT, "run.py"), path], input=text,
                               capture_output=True, text=True, timeout=60)
        return [json.loads(x) for x in p.stdout.splitlines()], p.returncode

    def test_hello_reset_event(self) -> None:
        msg = {"kind": "completion", "text": "done [wakesim m3]", "name": "job", "source": "s"}
        out, code = self.session([
            {"type": "hello", "protocol": PROTOCOL, "host": "pi", "options": {}},
            {"type": "reset"},
            {"type": "event", "now": 10, "ctx": 1, "event": "message", "message": msg},
        ])
        self.assertEqual(code, 0)
        self.assertEqual(out[0]["type"], "hello")
        self.assertEqual(out[0]["protocol"], PROTOCOL)
        self.assertEqual(out[1]["type"], "ready")
        self.assertIn("message", out[1]["events"])
        self.assertEqual(out[2], {"type": "send_message", "custom_type": "wakesim.completion",
                                  "carries": [2], "deliver_as": "steer", "trigger_turn": True})
        self.assertEqual(out[3], {"type": "done"})

    def test_an_event_before_hello_is_an_error(self) -> None:
        out, code = self.session([{"type": "reset"}])
        self.assertEqual(code, 1)
        self.assertEqual(out[-1]["type"], "error")
        self.assertIn("hello first", out[-1]["message"])

    def test_a_line_that_is_not_json_is_an_error(self) -> None:
        out, code = self.session(["{not json"])
        self.assertEqual(code, 1)
        self.assertIn("not JSON", out[-1]["message"])

    def test_another_protocol_or_host_is_refused(self) -> None:
        out, code = self.session([{"type": "hello", "protocol": PROTOCOL + 1, "host": "pi"}])
        self.assertEqual((code, out[-1]["type"]), (1, "error"))
        out, code = self.session([{"type": "hello", "protocol": PROTOCOL, "host": "nope"}])
        self.assertIn("not nope", out[-1]["message"])


if __name__ == "__main__":
    unittest.main()
