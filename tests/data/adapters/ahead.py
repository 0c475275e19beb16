"""A pi adapter for tests/adapter_ahead.rs: quiet handlers, and now and then one that is not.

    python3 ahead.py MODE [--ahead]

`--ahead` says `"speculate": true` in `hello`, so the simulator sends quiet-predicted events
ahead of their answers (src/adapter/speculate.rs); without it every event is waited for. The
same MODE must give the same runs either way. Every `message` is answered with a prompt carrying
it (a call, so never sent ahead). `turn_end`, `agent_end` and `agent_settled` answer `done`,
except when `now % 97 == 5` (about one in a hundred: the predictor keeps predicting them quiet),
where MODE says what the handler does:

  calls    sends a marker message (a call on the host)
  query    sends a marker, then asks isIdle() (in an event sent ahead it cannot wait for the
           answer: it abandons the handler, as lib/realm.js does)
  throws   ends with an error
  crash    exits
  garbage  writes a line that is not JSON
  silent   stops answering
"""
import json
import sys
import time

MODE = sys.argv[1]
AHEAD = "--ahead" in sys.argv[2:]


def out(obj):
    sys.stdout.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
    sys.stdout.flush()


def err(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def odd(msg):
    if MODE == "calls":
        out({"type": "send_message", "custom_type": "ahead", "deliver_as": "followUp"})
    elif MODE == "query":
        out({"type": "send_message", "custom_type": "ahead", "deliver_as": "followUp"})
        out({"type": "is_idle", "ctx": msg["ctx"]})
        if msg.get("spec"):
            out({"type": "done", "error": "abandoned: a query in an event sent ahead"})
            return
        answer = json.loads(sys.stdin.readline())
        assert answer["type"] == "result", answer
    elif MODE == "throws":
        out({"type": "done", "error": "Error: the handler threw on purpose"})
        return
    elif MODE == "crash":
        err("ahead: crashed on purpose")
        sys.exit(1)
    elif MODE == "garbage":
        out("this is not JSON {")
        return
    elif MODE == "silent":
        err("ahead: going silent")
        time.sleep(3600)
    out({"type": "done"})


for line in sys.stdin:
    msg = json.loads(line)
    t = msg["type"]
    if t == "hello":
        hello = {"type": "hello", "protocol": 1, "adapter": "ahead"}
        if AHEAD:
            hello["speculate"] = True
        out(hello)
    elif t == "reset":
        out({"type": "ready", "events": ["message", "turn_end", "agent_end", "agent_settled"]})
    elif t == "event":
        ev = msg["event"]
        if ev == "message":
            out({"type": "send_user_message", "carries": [msg["message"]["id"]], "deliver_as": "followUp"})
            out({"type": "done"})
        elif ev in ("turn_end", "agent_end", "agent_settled") and msg["now"] % 97 == 5:
            odd(msg)
        else:
            out({"type": "done"})
