"""A deliberately broken adapter for the gptme hosts (tests/external.rs): it speaks the protocol
(docs/protocol.md) until its MODE says otherwise, at the first retry (server) or the first
LOOP_CONTINUE hook (CLI) of a run.

Server MODE: requeue-unknown (requeues an event it was never handed) | wake-unknown (a
             request_watch_wake carrying an id never produced) | wrong-logdir |
             pi-call (a pi call on the server) | bad-ready (a pi event in `ready`)
CLI MODE:    wait-in-step-pre | item-unclaimed (yields a completion it never claimed) |
             input-without-control | no-hooks (`ready` without `hooks`) | mark-unknown-job |
             silent-resume (waits, then never answers the resume)
"""
import json
import sys
import time

MODE = sys.argv[1]


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def ask(obj):
    out(obj)
    answer = json.loads(sys.stdin.readline())
    assert answer["type"] == "result", answer
    return answer.get("value")


host = None
for line in sys.stdin:
    msg = json.loads(line)
    t = msg["type"]
    if t == "hello":
        host = msg["host"]
        out({"type": "hello", "protocol": 1, "adapter": "misbehave-gptme"})
    elif t == "reset" and host == "gptme-server":
        events = ["agent_end"] if MODE == "bad-ready" else ["retry_deferred_watch_wakes"]
        out({"type": "ready", "events": events})
    elif t == "reset":
        ready = {"type": "ready", "events": ["step_pre", "loop_continue"]}
        if MODE != "no-hooks":
            ready["hooks"] = {"step_pre": {"name": "pre", "priority": 900},
                              "loop_continue": {"name": "wait", "priority": 1500}}
        out(ready)
    elif t == "event" and msg["event"] == "retry_deferred_watch_wakes":
        if MODE == "requeue-unknown":
            out({"type": "requeue_watch_event", "logdir": "A", "carries": [999]})
        elif MODE == "wake-unknown":
            ask({"type": "request_watch_wake", "conversation_id": "A", "carries": [7]})
        elif MODE == "wrong-logdir":
            ask({"type": "take_queued_watch_events", "logdir": "B"})
        elif MODE == "pi-call":
            out({"type": "send_user_message", "carries": []})
        out({"type": "done"})
    elif t == "event" and msg["event"] == "step_pre":
        if MODE == "wait-in-step-pre":
            out({"type": "wait", "timeout_ms": 5})
        else:
            out({"type": "done", "items": []})
    elif t == "event" and msg["event"] == "loop_continue":
        if MODE == "item-unclaimed":
            out({"type": "done", "items": [{"carries": [0]}]})
        elif MODE == "input-without-control":
            out({"type": "done", "items": [{"notice": "input"}], "stop": True})
        elif MODE == "mark-unknown-job":
            out({"type": "mark_wait_expired", "job": 77})
            out({"type": "done"})
        elif MODE == "silent-resume":
            out({"type": "wait", "timeout_ms": 10})
        else:
            out({"type": "done"})
    elif t == "event" and msg["event"] == "resume":
        sys.stderr.write("misbehave-gptme: resumed, going silent\n")
        sys.stderr.flush()
        time.sleep(3600)
    else:
        out({"type": "done"})
