#!/usr/bin/env python3
"""A remote-host driver that misbehaves on purpose (tests/real_host_faults.rs).

`fake_driver.py MODE PIDFILE`: writes its pid (and a grandchild's, in `setsid` mode) to PIDFILE,
then speaks just enough of the remote-host protocol (docs/remote-host.md) to shake hands and run:
each run draws CHOICES values (`choose`, bound 4) and ends quiet at virtual time 0. MODE makes
it fail one way:

- ok: as above;
- die-mid-run: draws two values of a run, then exits (as a driver killed mid-run);
- stop-at-start: stops itself (SIGSTOP) before the handshake;
- silent: never answers the handshake;
- installing-then-silent: one `installing` line, then nothing (an install that hangs);
- slow: shakes hands, then takes 30 s before a run's first line;
- garbage: a line that is not JSON in the middle of a run;
- setsid: starts a grandchild in a session of its own (which leaves the process group), then ok.
"""
import json
import os
import signal
import subprocess
import sys
import time

CHOICES = 4


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def receive():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


def main():
    mode, pidfile = sys.argv[1], sys.argv[2]
    pids = [os.getpid()]
    if mode == "setsid":
        pids.append(subprocess.Popen(["sleep", "300"], start_new_session=True).pid)
    with open(pidfile + ".tmp", "w") as f:
        f.write(" ".join(map(str, pids)))
    os.rename(pidfile + ".tmp", pidfile)
    if mode == "stop-at-start":
        os.kill(os.getpid(), signal.SIGSTOP)
    if mode == "silent":
        time.sleep(600)
    if mode == "installing-then-silent":
        send({"type": "installing", "what": "a fake host"})
        time.sleep(600)
    receive()  # hello
    send({"type": "hello", "protocol": 1, "driver": "fake_driver.py", "host": "no host"})
    while True:
        run = receive()
        assert run["type"] == "run", run
        if mode == "slow":
            time.sleep(30)
        for i in range(CHOICES):
            if mode == "die-mid-run" and i == 2:
                os._exit(1)
            if mode == "garbage" and i == 2:
                sys.stdout.write("this is not JSON\n")
                sys.stdout.flush()
            send({"type": "choose", "label": "fake", "bound": 4})
            answer = receive()
            assert answer["type"] == "value", answer
        send({"type": "end", "t": 0, "cause": "quiet", "steps": 0})


if __name__ == "__main__":
    main()
