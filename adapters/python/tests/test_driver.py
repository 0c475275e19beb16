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

    def send(self, obj):
        self.p.stdin.write((json.dumps(obj) + "\n").encode())
        self.p.stdin.flush()

    def line(self):
        raw = self.p.stdout.readline()
        if not raw:
            raise AssertionError("driver exited: " + self.p.stderr.read().decode()[-2000:])
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
        self.p.stdin.close()
        self.p.wait(timeout=30)
        self.p.stdout.close()
        self.p.stderr.close()


class Driver(unittest.TestCase):
    def test_server_runs_are_deterministic_across_processes(self):
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

    def test_cli_run_reports_the_session_end(self):
        w = FakeWakesim()
        self.assertEqual(w.hello("gptme-cli")["type"], "hello")
        lines, produced = w.run(3)
        evs = [m.get("ev") for m in lines if m["type"] == "obs"]
        self.assertIn("session_end", evs)
        self.assertEqual(evs.count("request"), 3)   # PR #3843's three calls
        self.assertEqual(produced, 1)
        w.close()

    def test_a_deadlocking_patch_ends_its_runs_with_the_cause_deadlock(self):
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

    def test_a_fault_the_plan_cannot_act_on_is_refused(self):
        w = FakeWakesim()
        m = w.hello("gptme-cli", {}, {"faults": [{"name": "sigterm", "share": [1, 1]}]})
        self.assertEqual(m["type"], "error")
        self.assertIn("does not implement the fault 'sigterm'", m["message"])
        w.close()

    def test_bad_hello_is_an_error_line(self):
        w = FakeWakesim()
        m = w.hello("pi")
        self.assertEqual(m["type"], "error")
        self.assertIn("gptme-server", m["message"])
        w.close()


if __name__ == "__main__":
    unittest.main()
