"""The remote-host driver over its pipes, with a stand-in for wakesim's side (a seeded answer to
every `choose`, ids for `produce`): framing, turn-taking, monotone times, message ids, and
determinism across driver processes."""

import json
import os
import random
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(os.path.dirname(HERE), "gptme_driver.py")


class FakeWakesim:
    def __init__(self):
        self.p = subprocess.Popen([sys.executable, DRIVER], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.p.stdin and self.p.stdout and self.p.stderr
        self.stdin, self.stdout, self.stderr = self.p.stdin, self.p.stdout, self.p.stderr

    def send(self, obj):
        self.stdin.write((json.dumps(obj) + "\n").encode())
        self.stdin.flush()

    def line(self):
        raw = self.stdout.readline()
        if not raw:
            raise AssertionError("driver exited: " + self.stderr.read().decode()[-2000:])
        return json.loads(raw)

    def hello(self, host, wake=None, scenario=None):
        self.send({"type": "hello", "protocol": 1, "host": host, "host_version": "0.35.1",
                   "wake": wake or {}, "scenario": scenario or {},
                   "limits": {"active_ms": 600_000, "quiesce_ms_max": 600_000, "steps_max": 200_000}})
        return self.line()

    def run(self, seed):
        rng = random.Random(seed)
        self.send({"type": "run", "run": seed})
        lines, produced, t = [], 0, 0
        while True:
            m = self.line()
            lines.append(m)
            if "t" in m:
                assert m["t"] >= t, m
                t = m["t"]
            if m["type"] == "choose":
                k = m.get("kind", "choose")
                if k in ("choose", "order"):
                    v = rng.randrange(m["bound"])
                elif k in ("delay", "instant"):
                    v = rng.choice([m["lo"], m["hi"], rng.randint(m["lo"], m["hi"])])
                else:
                    v = 1 if rng.randrange(m["den"]) < m["num"] else 0
                self.send({"type": "value", "value": v})
            elif m["type"] == "produce":
                self.send({"type": "value", "value": produced})
                produced += 1
            elif m["type"] == "obs":
                for key in ("msg",):
                    if key in m:
                        assert 0 <= m[key] < produced, m
            elif m["type"] == "end":
                return lines, produced
            elif m["type"] not in ("note", "mix"):
                raise AssertionError(f"unexpected line {m}")

    def close(self):
        self.stdin.close()
        self.p.wait(timeout=30)
        self.stdout.close()
        self.stderr.close()


def _below(words, n):
    """`below` of `src/sim/choice.rs` on a list of raw words it pops from the front."""
    m = words.pop(0) * n
    low = m & ((1 << 64) - 1)
    if low < n:
        while low < ((1 << 64) - n) % n:
            m = words.pop(0) * n
            low = m & ((1 << 64) - 1)
    return m >> 64


class Stream:
    """A stand-in for wakesim's `Choices` as the driver sees it: raw 64-bit words (random mode)
    or a recording (replay mode), the uniform and chance reductions, `ahead`, and the log."""

    def __init__(self, seed=None, recorded=None):
        self.rng = random.Random(seed)
        self.words = []
        self.recorded = recorded    # [(label, bound, value)] or None
        self.pos = 0
        self.log = []

    def _word(self, k):
        while len(self.words) < k:
            self.words.append(self.rng.getrandbits(64))

    def _raw(self, n):
        if self.recorded is None:
            self._word(64)
            return _below(self.words, n)
        self.pos += 1
        return self.recorded[self.pos - 1][2] if self.pos <= len(self.recorded) else 0

    def choose(self, bound, label):
        if bound <= 1:
            return 0
        v = self._raw(bound)
        v = v if self.recorded is None else min(v, bound - 1)
        self.log.append((label, bound, v))
        return v

    def chance(self, num, den, label):
        if num <= 0 or num >= den:
            return int(num > 0)
        r = self._raw(den)
        v = int(r >= den - num) if self.recorded is None else min(r, 1)
        self.log.append((label, 2, v))
        return v

    def delay(self, lo, hi, label):
        # Not the model's boundary classes: any pure function of the stream serves here.
        if hi <= lo:
            return lo
        k = self.choose(3, label)
        return lo if k == 0 else hi if k == 1 else lo + self.choose(hi - lo + 1, label)

    def ahead(self, n):
        if self.recorded is None:
            self._word(n)
            return {"words": self.words[:n]}
        rest = [c[2] for c in self.recorded[self.pos:self.pos + n]]
        return {"recorded": rest, "ends": self.pos + n >= len(self.recorded)}


def run_on(w, stream, ahead):
    """One run of driver `w` against `stream`: the draws it asks for, or (`ahead`) the
    material of the next ones with every `run` and `value`, its `drawn` draws re-drawn and
    checked. Returns the lines that are not draws (their `drawn` removed) and the stream."""
    w.send({"type": "run", "run": 0, **(stream.ahead(ahead) if ahead else {})})
    out, produced = [], 0
    while True:
        m = w.line()
        for d in m.pop("drawn", []):
            got = stream.choose(d[1], d[0]) if len(d) == 3 else stream.chance(d[1], d[2], d[0])
            assert got == d[-1], (d, got)
        if m["type"] == "choose":
            k = m.get("kind", "choose")
            if k in ("choose", "order"):
                v = stream.choose(m["bound"], m["label"])
            elif k in ("delay", "instant"):
                v = stream.delay(m["lo"], m["hi"], m["label"])
            else:
                v = stream.chance(m["num"], m["den"], m["label"])
            # As many draws' material as the line asks for (`ahead`), or as the run began with.
            w.send({"type": "value", "value": v,
                    **(stream.ahead(m.get("ahead", ahead)) if ahead else {})})
            continue
        if m["type"] == "produce":
            if "id" in m:
                assert m.pop("id") == produced, m
            else:
                w.send({"type": "value", "value": produced})
            produced += 1
        out.append(m)
        if m["type"] == "end":
            return out, stream


class Driver(unittest.TestCase):
    def test_server_runs_are_deterministic_across_processes(self) -> None:
        traces = []
        for _ in range(2):
            w = FakeWakesim()
            h = w.hello("gptme-server", {"variant": "w1"})
            self.assertEqual(h["type"], "hello", h)
            self.assertEqual(h["protocol"], 1)
            traces.append([w.run(seed)[0] for seed in range(12)])
            w.close()
        self.assertEqual(traces[0], traces[1])
        self.assertGreater(len({json.dumps(t) for t in traces[0]}), 6)
        # A seed alone in a fresh driver equals the same seed after eleven others.
        w = FakeWakesim()
        w.hello("gptme-server", {"variant": "w1"})
        self.assertEqual(w.run(11)[0], traces[0][11])
        w.close()
        # W1 refuses itself under some seed: a wake refused by a wake of the same pass.
        wakes = [m for t in traces[0] for m in t if m.get("ev") == "wake"]
        self.assertTrue(any(isinstance(m["refused"], dict) and m["pass"] for m in wakes))

    def test_cli_run_reports_the_session_end(self) -> None:
        w = FakeWakesim()
        self.assertEqual(w.hello("gptme-cli")["type"], "hello")
        lines, produced = w.run(3)
        evs = [m.get("ev") for m in lines if m["type"] == "obs"]
        self.assertIn("session_end", evs)
        self.assertEqual(evs.count("request"), 3)   # PR #3843's three calls
        self.assertEqual(produced, 1)
        w.close()

    def test_draws_made_ahead_are_the_draws_asked_for(self) -> None:
        # The same stream, every draw asked (a wakesim that sends no material) or the uniform
        # draws and chances made in the driver from the material sent ahead (a few words at a
        # time, so it runs out and asks mid-run): the same observations, notes, produced
        # messages and end, and the same choices logged in the same order. Then a replay of
        # that log, the recording's values sent ahead (past its end every draw is 0).
        for host, wake in (("gptme-server", {"variant": "w1"}), ("gptme-cli", {})):
            w = FakeWakesim()
            self.assertTrue(w.hello(host, wake).get("ahead"))
            orders = 0
            for seed in range(4):
                asked, s1 = run_on(w, Stream(seed), 0)
                ahead, s2 = run_on(w, Stream(seed), 5)
                self.assertEqual(asked, ahead, (host, seed))
                self.assertEqual(s1.log, s2.log, (host, seed))
                orders += sum(1 for c in s1.log if c[0].startswith("py.thread."))
                again, s3 = run_on(w, Stream(recorded=s1.log), 7)
                self.assertEqual(again, asked, (host, seed))
                self.assertEqual(s3.log, s1.log, (host, seed))
                cut, s4 = run_on(w, Stream(recorded=s1.log[:len(s1.log) // 2]), 3)
                short, s5 = run_on(w, Stream(recorded=s1.log[:len(s1.log) // 2]), 0)
                self.assertEqual(cut, short, (host, seed))
                self.assertEqual(s4.log, s5.log, (host, seed))
            self.assertGreater(orders, 0, host)
            w.close()

    def test_the_uniform_reduction_rejects_as_wakesim_does(self) -> None:
        from wakesim_adapter.real_wire import below
        # Word 0 times 3 leaves a low half of 0, under 2^64 mod 3 = 1: rejected, the next
        # word is read (as `below` in src/sim/choice.rs).
        self.assertEqual(below([0, 1 << 63], 0, 3), (1, 2))
        self.assertIsNone(below([0], 0, 3))
        self.assertEqual(below([(1 << 64) - 1], 0, 2), (1, 1))
        self.assertEqual(below([5, 6], 2, 2), None)

    def test_a_deadlocking_patch_ends_its_runs_with_the_cause_deadlock(self) -> None:
        # scenarios/real-gptme/patches/w2-step-lock-held.py holds step_lock across the retry,
        # which request_watch_wake takes again: the run ends `deadlock` (a verdict wakesim
        # judges, NO-DEADLOCK), with what each thread waits for in a note just before.
        patch = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))),
                             "scenarios", "real-gptme", "patches", "w2-step-lock-held.py")
        w = FakeWakesim()
        self.assertEqual(w.hello("gptme-server", {"patch": patch})["type"], "hello")
        ends = []
        for seed in range(12):
            lines, _ = w.run(seed)
            end = lines[-1]
            ends.append(end["cause"])
            if end["cause"] == "deadlock":
                self.assertGreaterEqual(end["threads"], 1, end)
                self.assertIn("state", end)
                self.assertTrue(lines[-2]["type"] == "note"
                                and lines[-2]["text"].startswith("deadlock: "), lines[-2])
                # Locks are named by where gptme made them, never by address (the note is in
                # the trace): the session's step_lock is a dataclass field made at
                # create_session.
                self.assertNotIn("0x", lines[-2]["text"])
                self.assertIn("waits for Lock from session_models.py:", lines[-2]["text"])
        w.close()
        self.assertIn("deadlock", ends)

    def test_a_fault_the_plan_cannot_act_on_is_refused(self) -> None:
        w = FakeWakesim()
        m = w.hello("gptme-cli", {}, {"faults": [{"name": "sigterm", "share": [1, 1]}]})
        self.assertEqual(m["type"], "error")
        self.assertIn("does not implement the fault 'sigterm'", m["message"])
        w.close()

    def test_bad_hello_is_an_error_line(self) -> None:
        w = FakeWakesim()
        m = w.hello("pi")
        self.assertEqual(m["type"], "error")
        self.assertIn("gptme-server", m["message"])
        w.close()


if __name__ == "__main__":
    unittest.main()
