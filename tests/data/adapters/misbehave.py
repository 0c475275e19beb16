"""A deliberately broken adapter for tests/external.rs: it speaks the protocol (docs/protocol.md)
until its MODE says otherwise, at the second producer message of a run unless noted.

MODE: exit-at-start | bad-version | silent-hello | crash | not-json | not-protocol |
      unknown-call | wrong-known (answers isIdle() itself, wrongly) | silent | throws |
      chatty (fine, but floods stderr)
"""
import json
import sys
import time

MODE = sys.argv[1]


def out(obj):
    sys.stdout.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
    sys.stdout.flush()


def err(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


if MODE == "exit-at-start":
    err("misbehave: exiting before the handshake")
    sys.exit(3)

messages = 0
for line in sys.stdin:
    msg = json.loads(line)
    t = msg["type"]
    if t == "hello":
        if MODE == "silent-hello":
            err("misbehave: never answering hello")
            time.sleep(3600)
        out({"type": "hello", "protocol": 99 if MODE == "bad-version" else 1, "adapter": "misbehave"})
    elif t == "reset":
        messages = 0
        out({"type": "ready", "events": ["message"]})
    elif t == "event":
        if msg["event"] != "message":
            out({"type": "done"})
            continue
        messages += 1
        if MODE == "chatty":
            for i in range(2000):
                err(f"misbehave: chatter line {i} " + "x" * 60)
        if messages < 2:
            # A normal answer: a prompt carrying the message.
            out({"type": "send_user_message", "carries": [msg["message"]["id"]], "deliver_as": "followUp"})
            out({"type": "done"})
            continue
        if MODE == "crash":
            err("Traceback (most recent call last):\nmisbehave: RuntimeError: crashed on purpose")
            sys.exit(1)
        elif MODE == "not-json":
            err("misbehave: about to write garbage")
            out("this is not JSON {")
        elif MODE == "not-protocol":
            out({"kind": "done"})
        elif MODE == "wrong-known":
            wrong = "stale_ctx" if msg["idle"] is not None else True
            out({"type": "is_idle", "ctx": msg["ctx"], "known": wrong})
            out({"type": "done"})
        elif MODE == "unknown-call":
            out({"type": "launch_missiles", "count": 3})
        elif MODE == "silent":
            err("misbehave: going silent")
            time.sleep(3600)
        elif MODE == "throws":
            out({"type": "done", "error": "Error: the wake logic threw on purpose"})
        else:
            out({"type": "send_user_message", "carries": [msg["message"]["id"]], "deliver_as": "followUp"})
            out({"type": "done"})
