"""The delivery invariants a reproducer judges, over what the driver observed of the real host
(its `produce` and `obs` lines): NO-LOSS, EXACTLY-ONCE, FIFO and BOUNDED-LATENCY, in plain words
for the report. A port of the checkers of the tool that found the run (one ledger of what happened
to each message, then one function per invariant); that tool's tests run it on recorded runs and
require its verdict.

`judge(events, end_t, params, invariants)`: `events` in the driver's order, `{"type": "produce",
"t", "id", "kind", "source", "origin", "conv", "stream"}` and `{"type": "obs", "t", "ev", ...}`
(`appended` {msg}, `request` {req}, `dropped` {msg, reason}, `idle` {idle}, `owner_claimed`
{msg}). Returns the violations, first per invariant: dicts with `invariant`, `t`, `msg`, `detail`.
"""

import math


def plain(invariant, params):
    return {
        "no-loss": "every message sent to the agent reaches the model (a model request carries it) "
                   "by the end of the session, unless the host documents dropping it",
        "exactly-once": "a message enters the conversation at most once",
        "fifo": "the messages of one sender enter the conversation in the order they were sent",
        "bounded-latency": f"a message waiting for delivery waits at most {params['latency_ms_max']} ms "
                           "while the agent sits idle (nothing else will move it), and rides one of the "
                           f"next {params['latency_requests_max']} model requests while the agent works",
    }[invariant]


def _name(i):
    return f"m{i + 1}"


def _source_name(m):
    origin = m.get("origin", m["source"])
    if origin is None:
        origin = m["source"]
    kind = m.get("kind")
    if kind == "orchestrator":
        who = "orchestrator"
    elif kind == "watch":
        who = f"watch w{origin + 1}"
    elif kind == "job":
        who = f"job #{origin + 1}"
    elif kind == "prompt":
        who = "prompt-queue.jsonl" if origin == 0 else "prompt-queue.jsonl, steer"
    else:
        who = f"subagent {chr(97 + origin % 26)}"
    conv = m.get("conv") or 0
    return f"{who} of conversation {conv}" if conv else who


def judge(events, end_t, params, invariants=("no-loss", "exactly-once", "fifo", "bounded-latency")):
    on = set(invariants)
    msgs = []
    owed = []
    unrequested = []
    append_order = []
    out = []
    fired = set()

    def report(inv, t, msg, detail):
        if inv not in on or inv in fired:
            return
        fired.add(inv)
        out.append({"invariant": inv, "t": t, "msg": None if msg is None else _name(msg), "detail": detail})

    mx = params["latency_ms_max"]
    st = {"idle_since": None, "idle_closed": 0, "requests": 0}
    idle_at = []
    requests_at = []

    def close_idle(since, until):
        if owed:
            i = owed[0]
            produced = msgs[i]["info"]["t"]
            start = max(since, produced)
            before = st["idle_closed"] - idle_at[i] if produced < since else 0
            waited = math.inf if until is None else max(until - start, 0)
            if before + waited > mx:
                where = "appended but not in any request" if msgs[i]["appended_at"] is not None else "not delivered"
                earlier = f" (after {before} ms of earlier idle waits)" if before > 0 else ""
                tail = "and nothing left in the run would deliver it" if until is None else "before anything moved it"
                report("bounded-latency", start + max(mx - before, 0), i,
                       f"{_name(i)} ({_source_name(msgs[i]['info'])}) {where}: the host sat idle past "
                       f"latency_ms_max = {mx} ms{earlier} {tail}")
        if until is not None:
            st["idle_closed"] += max(until - since, 0)

    def judge_drop(t, i, why):
        m = msgs[i]
        if m["delivered_at"] is not None or m["dropped"] is not None:
            return
        since = st["idle_since"]
        open_ = 0 if since is None else max(t - since, 0)
        waited = max(st["idle_closed"] + open_ - idle_at[i], 0)
        if waited <= mx:
            return
        crossing = t - (waited - mx) if since is not None and waited - mx <= t - since else t
        report("bounded-latency", crossing, i,
               f"{_name(i)} ({_source_name(m['info'])}) waited {waited} ms while the host sat idle, past "
               f"latency_ms_max = {mx} ms, before it was dropped at {t} ms ({why})")

    def forget(i):
        if i in owed:
            owed.remove(i)

    for e in events:
        t = e.get("t")
        if e["type"] == "produce":
            i = e["id"]
            if i != len(msgs):
                raise ValueError(f"message ids are not dense: {_name(i)} after {len(msgs)} messages")
            msgs.append({"info": e, "appended_at": None, "delivered_at": None, "dropped": None})
            since = st["idle_since"]
            idle_at.append(st["idle_closed"] + (0 if since is None else max(t - since, 0)))
            requests_at.append(st["requests"])
            owed.append(i)
            continue
        if e["type"] != "obs":
            continue
        ev = e.get("ev")
        # The checkers see each observation before the ledger takes it in (as the tool's do).
        if ev == "appended":
            i = e["msg"]
            m = msgs[i]
            if m["appended_at"] is not None:
                report("exactly-once", t, i, f"{_name(i)} entered the conversation again (first at {m['appended_at']} ms)")
            if m["appended_at"] is None:
                m["appended_at"] = t
                append_order.append(i)
            if m["delivered_at"] is None and i not in unrequested:
                unrequested.append(i)
        elif ev == "request":
            st["requests"] += 1
            missing = next((i for i in owed if i not in unrequested), None)
            if missing is not None:
                missed = st["requests"] - requests_at[missing]
                if missed > params["latency_requests_max"]:
                    report("bounded-latency", t, missing,
                           f"{_name(missing)} ({_source_name(msgs[missing]['info'])}) missed {missed} model "
                           f"requests in a row (latency_requests_max = {params['latency_requests_max']}); "
                           f"request #{e.get('req')} went without it")
            for i in unrequested:
                if msgs[i]["delivered_at"] is None:
                    msgs[i]["delivered_at"] = t
                    forget(i)
            unrequested.clear()
        elif ev == "idle":
            if e.get("idle") and st["idle_since"] is None:
                st["idle_since"] = t
            elif not e.get("idle") and st["idle_since"] is not None:
                since = st["idle_since"]
                st["idle_since"] = None
                close_idle(since, t)
        elif ev == "dropped":
            i = e["msg"]
            judge_drop(t, i, e.get("reason"))
            m = msgs[i]
            if m["delivered_at"] is None and m["dropped"] is None:
                m["dropped"] = e.get("reason")
                forget(i)
                if i in unrequested:
                    unrequested.remove(i)
        elif ev == "owner_claimed":
            i = e["msg"]
            if msgs[i]["delivered_at"] is None:
                msgs[i]["delivered_at"] = t
            forget(i)

    if st["idle_since"] is not None:
        since = st["idle_since"]
        st["idle_since"] = None
        close_idle(since, None)
    last = {}
    for i in append_order:
        info = msgs[i]["info"]
        s = info["source"]
        prev = last.get(s)
        if prev is not None and prev > i:
            report("fifo", msgs[i]["appended_at"], i,
                   f"{_name(i)} entered the conversation after {_name(prev)}, though {_name(i)} was produced "
                   f"first (both from {info.get('stream') or _source_name(info)})")
            break
        last[s] = i
    if owed:
        first = owed[0]
        m = msgs[first]
        where = (f"appended at {m['appended_at']} ms but no model request followed"
                 if m["appended_at"] is not None else "never entered the conversation")
        more = f" ({len(owed) - 1} more undelivered)" if len(owed) > 1 else ""
        report("no-loss", end_t, first,
               f"{_name(first)} ({_source_name(m['info'])}, produced at {m['info']['t']} ms) {where} by the end of the run{more}")
    return sorted(out, key=lambda v: v["t"])
