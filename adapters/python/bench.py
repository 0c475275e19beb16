#!/usr/bin/env python3
"""Throughput of the real-gptme lane on one core: `python3 adapters/python/bench.py [SEEDS]`.

Runs the driver's drawn plans (server with gptme's own retry, CLI with its own wait hook) with a
seeded in-process chooser (no protocol), and the scheduler's own costs: a scheduling point
without a switch, a switch between two threads, a thread start and join. Wall-clock figures for
the README: they vary with the machine's load, and no test asserts them.

`python3 adapters/python/bench.py --replay T.in [T.out]` replays the lines wakesim sent a driver
in a recorded run (`WAKESIM_DRIVER_TRANSCRIPT=T`, see `real_driver.py`) into the driver in this
process: its CPU time a seed without wakesim and the pipes, and with `T.out` whether it writes
the same bytes as in the recording (exit 1 if not).
"""
from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main() -> int:
    from wakesim_adapter import venv
    if os.path.realpath(sys.prefix) != os.path.realpath(venv.VENV) or \
            os.environ.get("PYTHONHASHSEED") != "0":
        python = venv.ensure()
        os.execve(python, [python, os.path.abspath(__file__), *sys.argv[1:]],
                  {**os.environ, "PYTHONHASHSEED": "0"})
    import threading
    import time

    from wakesim_adapter import real_driver as D
    from wakesim_adapter import real_gptme as R
    from wakesim_adapter import sched
    pc = sched._REAL_TIME["perf_counter"]
    if sys.argv[1:2] == ["--replay"]:
        return replay(D, *sys.argv[2:4])
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    t0 = pc()
    R.load()
    print(f"import and patch gptme: {pc() - t0:.2f} s (once per process)")

    class Quiet:
        def send(self, obj: Any) -> None:
            pass

        def line(self, text: str, answered: bool) -> None:
            pass

    for family, variant in (("gptme-server", "w2"), ("gptme-cli", "b1")):
        d = D.Driver(Quiet())  # type: ignore[arg-type]  # a Wire that writes nothing
        d.family = family
        d.variant = variant
        d.sections = D._merge(D.SERVER_DEFAULTS if family == "gptme-server" else D.CLI_DEFAULTS, {})
        d.limits = {"active_ms": 600_000, "quiesce_ms_max": 600_000, "steps_max": 200_000}
        points = 0
        a = os.times()
        t0 = pc()
        for seed in range(n):
            _, out = d.run(D.LocalChooser(seed))
            points += out.points
        dt = pc() - t0
        b = os.times()
        cpu = (b.user - a.user) + (b.system - a.system)
        print(f"{family} ({variant}): {n / dt:.0f} seeds/s wall, {n / cpu:.0f} seeds/s of CPU, "
              f"{points / n:.0f} scheduling points/seed, {dt / points * 1e6:.1f} us/point")

    class Alternate:
        def choose(self, bound: int, label: str) -> int:
            return 1   # candidate 0 is the running thread: always the other one

    def ping_pong() -> None:
        def w() -> None:
            for _ in range(5000):
                time.sleep(0)
        ts = [threading.Thread(target=w) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    t0 = pc()
    out = sched.SCHED.run(ping_pong, Alternate())
    print(f"a switch between two threads: {(pc() - t0) / out.points * 1e6:.1f} us")

    def alone() -> None:
        for _ in range(20000):
            time.sleep(0)
    t0 = pc()
    out = sched.SCHED.run(alone, sched.FirstChooser())
    print(f"a scheduling point without a switch: {(pc() - t0) / out.points * 1e6:.2f} us")

    def spawner() -> None:
        for _ in range(2000):
            t = threading.Thread(target=lambda: None)
            t.start()
            t.join()
    t0 = pc()
    sched.SCHED.run(spawner, sched.FirstChooser())
    print(f"a thread start and join: {(pc() - t0) / 2000 * 1e6:.1f} us")
    return 0


def replay(D: ModuleType, lines_in: str, lines_out: str | None = None) -> int:
    """`bench.py --replay T.in [T.out]`: the driver's own CPU time a seed on the lines wakesim
    sent it in a recorded run (`WAKESIM_DRIVER_TRANSCRIPT=T wakesim run ... --threads 1` writes
    T.PID.in and T.PID.out), without wakesim and the pipes; with T.out, whether the driver
    writes the same bytes now (a change that must not move a trace)."""
    import hashlib
    import io

    class Out:
        def __init__(self) -> None:
            self.sha = hashlib.sha256()

        def write(self, data: bytes) -> None:
            self.sha.update(data)

    with open(lines_in, "rb") as f:
        data = f.read()
    runs = data.count(b'"type":"run"')
    out = Out()
    wire = D.Wire(inp=io.BytesIO(data), out=out)
    sys.stdout = sys.__stdout__   # the Wire points it at stderr (a driver's stdout is the wire)
    driver = D.Driver(wire)
    a = os.times()
    driver.hello(wire.read())
    b = os.times()
    try:
        driver.serve()
    except SystemExit:
        pass
    c = os.times()
    start = (b.user - a.user) + (b.system - a.system)
    per = ((c.user - b.user) + (c.system - b.system)) / max(runs, 1)
    print(f"{runs} runs: start {start:.2f} s of CPU, then {per * 1000:.2f} ms of CPU a run")
    if lines_out is not None:
        with open(lines_out, "rb") as f:
            same = hashlib.sha256(f.read()).digest() == out.sha.digest()
        print("output: the same bytes" if same else "output: DIFFERENT bytes")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
