#!/usr/bin/env python3
"""A real gptme release as a remote host (docs/remote-host.md): `python3 adapters/python/gptme_driver.py`.

wakesim's first line, `hello`, names the version (`host_version`); it is read here, byte by byte
so that nothing after it is taken from stdin, and the version's pinned venv is installed on first
use (wakesim_adapter/venv.py: under a lock, pip's output on stderr, stdout stays the protocol).
Then the driver runs with the venv's python and PYTHONHASHSEED=0 (gptme keeps sets of strings
whose order a run may depend on), handed the `hello` line in WAKESIM_GPTME_HELLO.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
HELLO_VAR = "WAKESIM_GPTME_HELLO"


def _first_line() -> str:
    """wakesim's first line, read without a buffer (the driver reads the rest)."""
    got = bytearray()
    while not got.endswith(b"\n"):
        b = os.read(0, 1)
        if not b:
            break
        got += b
    return got.decode(errors="replace")


def main() -> None:
    from wakesim_adapter import venv
    hello = os.environ.get(HELLO_VAR)
    if hello is None:
        hello = _first_line()
        if not hello:
            sys.exit(0)   # wakesim went away before it said hello
    try:
        version = json.loads(hello).get("host_version")
    except (ValueError, AttributeError):
        version = None   # the driver says what is wrong with the line
    try:
        if isinstance(version, str) and version != venv.DEFAULT_VERSION:
            venv.select(version)
        python = venv.python_path()
        here_python = os.path.realpath(sys.executable) == os.path.realpath(python) or \
            sys.prefix == os.path.realpath(venv.VENV)
        if not here_python or os.environ.get("PYTHONHASHSEED") != "0":
            python = venv.ensure()
            os.execve(python, [python, os.path.abspath(__file__), *sys.argv[1:]],
                      {**os.environ, "PYTHONHASHSEED": "0", HELLO_VAR: hello})
    except venv.InstallError as e:
        sys.stdout.write(json.dumps({"type": "error", "message": str(e)}) + "\n")
        sys.exit(1)
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
    os.environ.pop(HELLO_VAR, None)
    from wakesim_adapter import real_driver
    real_driver.main(first=hello)


if __name__ == "__main__":
    main()
