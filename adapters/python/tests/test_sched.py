"""The deterministic thread scheduler on its own (standard library only, no gptme)."""

import _thread
import datetime
import os
import queue
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from wakesim_adapter import sched, sched_patch  # noqa: E402
from wakesim_adapter.sched import SCHED, SeededChooser, Verdict  # noqa: E402

sched_patch.install()


def bank(log):
    """Two workers move money under one lock, one reads without it, a third sleeps: the
    interleaving shows in the log."""
    lock = threading.Lock()
    acct = {"a": 100, "b": 0}

    def mover(name, n):
        for i in range(n):
            with lock:
                x = acct["a"]
                time.monotonic()  # a clock read: a scheduling point inside the critical section
                acct["a"] = x - 1
                acct["b"] += 1
                log.append(f"{name}{i}")

    def peeker():
        for _ in range(3):
            log.append(f"peek{acct['a'] + acct['b']}@{int(time.monotonic() * 1000)}")
            time.sleep(0.005)

    ts = [threading.Thread(target=mover, args=("x", 4)), threading.Thread(target=mover, args=("y", 4)),
          threading.Thread(target=peeker)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return acct


def run_bank(seed):
    log: list[str] = []
    rec: list[tuple[int, str, str, str]] = []
    out = SCHED.run(lambda: bank(log), SeededChooser(seed), record=rec)
    return out, log, rec


class Determinism(unittest.TestCase):
    def test_same_seed_same_schedule(self) -> None:
        a = run_bank(7)
        b = run_bank(7)
        self.assertEqual(a[0].verdict, Verdict.QUIET)
        self.assertEqual(a[1], b[1])
        self.assertEqual(repr(a[2]), repr(b[2]))
        self.assertEqual(a[0].result, {"a": 92, "b": 8})

    def test_same_seed_in_a_fresh_process(self) -> None:
        code = (f"import sys; sys.path.insert(0, {os.path.dirname(HERE)!r}); "
                "from tests.test_sched import run_bank; "
                "o, log, rec = run_bank(7); print(repr(log)); print(repr(rec))")
        outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env={**os.environ, "PYTHONHASHSEED": str(h)}, check=True).stdout
                for h in (1, 2)]
        _, log, rec = run_bank(7)
        self.assertEqual(outs[0], outs[1])
        self.assertEqual(outs[0], repr(log) + "\n" + repr(rec) + "\n")

    def test_different_seeds_different_interleavings(self) -> None:
        logs = {tuple(run_bank(seed)[1]) for seed in range(20)}
        self.assertGreater(len(logs), 10)

    def test_mutual_exclusion_holds_under_every_seed(self) -> None:
        for seed in range(50):
            out, log, _ = run_bank(seed)
            self.assertEqual(out.verdict, Verdict.QUIET, out)
            self.assertEqual(out.result, {"a": 92, "b": 8})
            # The peeker reads between critical sections only (the sum is conserved).
            self.assertTrue(all(e.startswith("peek100@") for e in log if e.startswith("peek")), log)


class Deadlocks(unittest.TestCase):
    def abba(self):
        a, b = threading.Lock(), threading.Lock()
        a.label, b.label = "A", "B"  # type: ignore[attr-defined]  # a SimLock's name

        def one():
            with a:
                with b:
                    pass

        def two():
            with b:
                with a:
                    pass

        ts = [threading.Thread(target=one, name="one"), threading.Thread(target=two, name="two")]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    def test_lock_order_inversion_is_found(self) -> None:
        verdicts: dict[str, sched.Outcome] = {}
        for seed in range(40):
            out = SCHED.run(self.abba, SeededChooser(seed))
            verdicts.setdefault(out.verdict, out)
        self.assertIn(Verdict.QUIET, verdicts)
        self.assertIn(Verdict.DEADLOCK, verdicts)
        detail = verdicts[Verdict.DEADLOCK].detail
        self.assertIn("one waits for Lock B", detail)
        self.assertIn("two waits for Lock A", detail)
        self.assertEqual(verdicts[Verdict.DEADLOCK].stuck, 3, detail)  # main joins them too
        self.assertEqual(verdicts[Verdict.QUIET].stuck, 0)

    def test_no_thread_of_a_run_outlives_it(self) -> None:
        before = _thread._count()
        for seed in range(40):
            SCHED.run(self.abba, SeededChooser(seed))
            self.assertTrue(all(t.state == sched.DONE for t in SCHED.tasks))
        # Unwound threads' OS threads are parked for reuse: at most one per thread of a run.
        self.assertLessEqual(_thread._count(), before + 3)

    def test_waiting_on_a_never_set_event_is_a_deadlock(self) -> None:
        ev = threading.Event()

        def main():
            t = threading.Thread(target=ev.wait, name="waiter")
            t.start()
            t.join()

        out = SCHED.run(main, SeededChooser(0))
        self.assertEqual(out.verdict, Verdict.DEADLOCK)
        self.assertIn("waiter waits for Event", out.detail)

    def test_a_lock_whose_holder_ended_blocks_forever(self) -> None:
        lock = threading.Lock()
        lock.label = "L"  # type: ignore[attr-defined]  # a SimLock's name

        def main():
            t = threading.Thread(target=lock.acquire, name="taker")
            t.start()
            t.join()
            t2 = threading.Thread(target=lock.acquire, name="blocked")
            t2.start()
            time.sleep(100)

        out = SCHED.run(main, SeededChooser(0), horizon_ms=10_000)
        self.assertEqual(out.verdict, Verdict.DEADLOCK, out)
        self.assertIn("blocked waits for Lock L, held by taker, which ended", out.detail)
        self.assertEqual(out.stuck, 1)


class ThreadState(unittest.TestCase):
    def test_each_thread_starts_with_an_empty_context_and_its_own_locals(self) -> None:
        import contextvars
        var = contextvars.ContextVar("v", default=None)
        loc = threading.local()

        def main():
            seen = []

            def child(n):
                seen.append((n, var.get(), getattr(loc, "x", None)))
                var.set(n)
                loc.x = n

            for n in range(4):   # pooled OS threads are reused by later threads
                t = threading.Thread(target=child, args=(n,))
                t.start()
                t.join()
            loc.x = "main"
            return seen, loc.x

        for _ in range(2):
            out = SCHED.run(main, SeededChooser(0))
            self.assertEqual(out.result, ([(n, None, None) for n in range(4)], "main"))


class Time(unittest.TestCase):
    def test_virtual_clock_jumps_to_deadlines(self) -> None:
        seen = []

        def main():
            t0 = time.time()
            time.sleep(30)
            seen.append(time.time() - t0)
            ev = threading.Event()
            seen.append(ev.wait(timeout=2.5))
            seen.append(time.monotonic())

        out = SCHED.run(main, SeededChooser(1))
        self.assertEqual(out.verdict, Verdict.QUIET)
        self.assertEqual(seen, [30.0, False, 32.5])
        self.assertEqual(out.now_ms, 32_500)

    def test_horizon_ends_a_polling_loop(self) -> None:
        def main():
            while True:
                time.sleep(1.0)

        out = SCHED.run(main, SeededChooser(1), horizon_ms=10_500)
        self.assertEqual(out.verdict, Verdict.HORIZON)
        self.assertEqual(out.now_ms, 10_500)

    def test_step_budget_ends_a_busy_loop(self) -> None:
        def main():
            while True:
                time.monotonic()

        out = SCHED.run(main, SeededChooser(1), steps_max=500)
        self.assertEqual(out.verdict, Verdict.STEPS)

    def test_datetime_now_is_virtual(self) -> None:
        def main():
            time.sleep(60)
            return sched_patch.SimDatetime.now(tz=datetime.UTC).isoformat()

        self.assertEqual(SCHED.run(main, SeededChooser(0)).result, "2026-01-01T00:01:00+00:00")


class Primitives(unittest.TestCase):
    def test_condition_wait_notify_and_timeout(self) -> None:
        def main():
            cond = threading.Condition(threading.RLock())
            box = []

            def producer():
                time.sleep(3)
                with cond:
                    box.append(1)
                    cond.notify_all()

            threading.Thread(target=producer).start()
            with cond:
                with cond:  # re-entrant: wait releases both levels
                    got = cond.wait_for(lambda: box, timeout=10)
                    t = time.monotonic()
                    late = cond.wait(timeout=1.0)
            return got, t, late, time.monotonic()

        for seed in range(10):
            out = SCHED.run(main, SeededChooser(seed))
            self.assertEqual(out.verdict, Verdict.QUIET)
            self.assertEqual(out.result, ([1], 3.0, False, 4.0))

    def test_queue_producer_consumer_in_order(self) -> None:
        def main():
            q: queue.Queue[object] = queue.Queue()
            got = []

            def consumer():
                while True:
                    x = q.get(timeout=5)
                    if x is None:
                        return
                    got.append(x)

            c = threading.Thread(target=consumer)
            c.start()
            for i in range(5):
                q.put(i)
                time.sleep(0.1)
            q.put(None)
            c.join()
            try:
                q.get(timeout=2)
            except queue.Empty:
                got.append("empty")
            return got, time.monotonic()

        for seed in range(10):
            out = SCHED.run(main, SeededChooser(seed))
            self.assertEqual(out.result, ([0, 1, 2, 3, 4, "empty"], 2.5))

    def test_outside_a_run_primitives_are_plain(self) -> None:
        lock = threading.RLock()
        with lock:
            with lock:
                pass
        plain = threading.Lock()
        plain.acquire()
        self.assertFalse(plain.acquire(blocking=False))
        with self.assertRaises(sched.SchedulerError):
            plain.acquire()
        plain.release()

    def test_thread_exceptions_are_reported(self) -> None:
        def boom():
            raise ValueError("boom")

        def main():
            t = threading.Thread(target=boom, name="b")
            t.start()
            t.join()

        out = SCHED.run(main, SeededChooser(0))
        self.assertEqual(out.verdict, Verdict.QUIET)
        self.assertEqual([(n, str(e)) for n, e in out.errors], [("b", "boom")])
        out = SCHED.run(boom, SeededChooser(0))
        self.assertEqual(out.verdict, Verdict.ERROR)


if __name__ == "__main__":
    unittest.main()
