"""An evil pi adapter for tests/reliability.rs: each MODE misbehaves in one way, at the second
producer message of a run unless noted. Its first act is to write its process group id to the
file PGFILE, so the test can check that nothing of the group outlives the run.

usage: evil.py MODE PGFILE

MODE: exit-at-once | never-answer (reads hello, never answers) | garbage (hello is garbage) |
      huge-line (a 2 MB line) | invalid-utf8 | wrong-protocol (protocol 99) |
      not-protocol (JSON, not a message) | hang-mid-run | crash-mid-run |
      never-read-stdin (never reads a byte: the scenario's options make the hello big) |
      flood-stderr (floods stderr all along, then crashes) |
      fork-holding-stdout (a child keeps stdout open, the parent exits) |
      sleeper-child (starts a detached sleeper, then hangs) |
      unknown-id | future-id (carries an id not produced yet) | out-of-turn (`ready` in a handler) |
      unknown-call | drops-then-crashes (drops every message in the first run, crashes in the
      second)
"""
import json
import os
import sys
import threading
import time

MODE = sys.argv[1]
with open(sys.argv[2], "w") as f:
    f.write(str(os.getpgrp()))


def out(obj):
    sys.stdout.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
    sys.stdout.flush()


def err(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def hang():
    time.sleep(3600)


if MODE == "exit-at-once":
    err("evil: exiting before the handshake")
    sys.exit(3)
if MODE == "never-read-stdin":
    err("evil: never reading stdin")
    hang()
if MODE == "flood-stderr":
    def flood():
        while True:
            sys.stderr.write("evil: flood " + "x" * 200 + "\n")
    threading.Thread(target=flood, daemon=True).start()

messages = 0
runs = 0
for line in sys.stdin:
    msg = json.loads(line)
    t = msg["type"]
    if t == "hello":
        if MODE == "never-answer":
            err("evil: never answering")
            hang()
        if MODE == "garbage":
            out("\x00garbage{{{")
            continue
        out({"type": "hello", "protocol": 99 if MODE == "wrong-protocol" else 1, "adapter": "evil"})
    elif t == "reset":
        messages = 0
        runs += 1
        out({"type": "ready", "events": ["message"]})
    elif t == "event":
        if msg["event"] != "message":
            out({"type": "done"})
            continue
        messages += 1
        mid = msg["message"]["id"]
        if MODE == "drops-then-crashes":
            if runs > 1:
                os._exit(1)
            out({"type": "done"})
            continue
        if messages < 2:
            out({"type": "send_user_message", "carries": [mid], "deliver_as": "followUp"})
            out({"type": "done"})
            continue
        if MODE == "huge-line":
            out("x" * (2 << 20))
        elif MODE == "invalid-utf8":
            sys.stdout.buffer.write(b'{"type": "done", "error": "\xff\xfe\xfd"}\n')
            sys.stdout.flush()
        elif MODE == "not-protocol":
            out({"kind": "done"})
        elif MODE == "hang-mid-run":
            err("evil: hanging mid-run")
            hang()
        elif MODE in ("crash-mid-run", "flood-stderr"):
            err("evil: crashing on purpose")
            os._exit(1)
        elif MODE == "fork-holding-stdout":
            if os.fork() == 0:
                hang()
            err("evil: parent exits, its child keeps stdout")
            os._exit(0)
        elif MODE == "sleeper-child":
            import subprocess
            subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            err("evil: started a sleeper, hanging")
            hang()
        elif MODE == "unknown-id":
            out({"type": "send_user_message", "carries": [999], "deliver_as": "followUp"})
            out({"type": "done"})
        elif MODE == "future-id":
            out({"type": "send_message", "carries": [mid + 1], "deliver_as": "followUp"})
            out({"type": "done"})
        elif MODE == "out-of-turn":
            out({"type": "ready", "events": ["message"]})
        elif MODE == "unknown-call":
            out({"type": "launch_missiles", "count": 3})
        else:
            out({"type": "send_user_message", "carries": [mid], "deliver_as": "followUp"})
            out({"type": "done"})
