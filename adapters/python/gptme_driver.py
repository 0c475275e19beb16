#!/usr/bin/env python3
"""The real gptme 0.35.1 as a remote host (docs/remote-host.md): `python3 adapters/python/gptme_driver.py`.

Installs the pinned venv on first use (wakesim_adapter/venv.py: under a lock, pip's output on
stderr, stdout stays the protocol), then runs the driver with the venv's python and
PYTHONHASHSEED=0 (gptme keeps sets of strings whose order a run may depend on).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main() -> None:
    from wakesim_adapter import venv
    python = venv.python_path()
    here_python = os.path.realpath(sys.executable) == os.path.realpath(python) or \
        sys.prefix == os.path.realpath(venv.VENV)
    if not here_python or os.environ.get("PYTHONHASHSEED") != "0":
        try:
            python = venv.ensure()
        except venv.InstallError as e:
            import json
            sys.stdout.write(json.dumps({"type": "error", "message": str(e)}) + "\n")
            sys.exit(1)
        os.execve(python, [python, os.path.abspath(__file__), *sys.argv[1:]],
                  {**os.environ, "PYTHONHASHSEED": "0"})
    # One thread of gptme runs at a time, handing a baton to the next (wakesim_adapter/sched.py),
    # and the driver answers wakesim line by line: a thread woken by a hand-off or an answer
    # should not preempt the one that woke it, which blocks a moment later anyway (a preemption
    # there is two more context switches, and a wait for the GIL). SCHED_BATCH says so to Linux
    # (a woken batch thread never preempts); the threads started later inherit it. Where the
    # policy is missing or refused, nothing changes but the time a hand-off takes.
    if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_BATCH"):
        try:
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        except OSError:
            pass
    from wakesim_adapter import real_driver
    real_driver.main()


if __name__ == "__main__":
    main()
