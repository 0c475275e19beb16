"""The remote-host driver of the real gptme (docs/remote-host.md, protocol 1): 0.35.1, and any
release pinned under `adapters/python/real/` whose package has what the lane needs
(`real_gptme_patch.missing`; 0.33.0 and 0.34.0 drive the CLI lane).

wakesim sends `hello` (the family, `gptme-server` or `gptme-cli`; the version; the `wake` table;
the scenario's resolved sections; the limits), then one `run` per seed. For each run the driver
draws the plan with `choose` (faults switched on, producer instants, reply kinds, durations), runs
gptme's own code under the deterministic scheduler (every choice of which thread goes next is a
draw of kind `order`), asks `produce` for each producer message's id, reports what happens as
`obs` and `note` lines, and ends with `end`. It never reads a clock or a random source of its own.
Its `hello` asks for draws ahead (docs/remote-host.md, "Draws made ahead"): the uniform draws and
chances are then made here from wakesim's material and reported in the next `choose` or `end`
(`drawn`), and `produce` lines carry their own `id`; delays and instants stay `choose` lines.

The `wake` table of a gptme scenario names the wake logic: `{"variant": NAME}` with NAME one of
`real_variants.NAMES` (`w2` and `b1`, gptme's own code, by default), or `{"patch": PATH}`, a
Python file whose `apply(G, RUN)` patches the loaded modules for one run (it must only replace
functions, as the variants do; the next run's reset undoes what `real_variants` knows about, and
a patch file's `undo(G)` the rest).

The sections default to the model host's defaults (`src/family/gptme_server/config.rs`,
`src/family/gptme_cli/config.rs`) where the Rust side sends none. Each family's plan is drawn as
its model draws it, in the model's order and with its labels (`plan_server.py`, `plan_cli.py`),
so one seed gives the same producer messages and faults in both lanes (`wakesim conform`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any, NoReturn

from . import plan_cli, plan_server, real_variants, sched
from . import real_gptme as R
from .real_gptme_run import Record
from .real_wire import (
    AHEAD,
    SCHED_NOW,
    Fatal,
    LocalChooser,
    RemoteChooser,
    Wire,
    _dumps,
    _head,
)

__all__ = ["Driver", "Fatal", "LocalChooser", "RemoteChooser", "Wire", "main"]

Msg = dict[str, Any]

PROTOCOL = 1
DRIVER = "wakesim-gptme-driver/0.1.0"
HOST = "gptme[server]@{version}"
CPU_LOG = os.environ.get("WAKESIM_DRIVER_CPU_LOG")

# ---- observations in the protocol's names

_REFUSED = {"Run": "run", "Tools": "tools", "Command": "command", "PersistFailed": "persist-failed",
            # watch_autowake off or no model: protocol 1 has no name for it (proposal: "disabled").
            "Disabled": "disabled"}


def _wire_obs(ev: dict[str, Any], ids: dict[int, int]) -> Msg | None:
    """A Run record's observation as the protocol's `ev` and fields (None: not an observation
    the protocol carries, such as `Produced`, which `produce` records)."""
    (name, body), = ev.items()
    mid = ids.get
    if name == "Appended":
        return {"ev": "appended", "msg": mid(body["msg"])}
    if name == "Request":
        return {"ev": "request", "req": body["req"] + 1, "harness": True}
    if name == "Dropped":
        return {"ev": "dropped", "msg": mid(body["msg"]), "reason": "storm-coalesced"}
    if name == "Pass":
        return {"ev": "pass", "pass": body["pass"], "on": body["on"]}
    if name == "Wake":
        r = body["refused"]
        refused: Any = None if r is None else {"wake": r["Wake"]} if isinstance(r, dict) else _REFUSED[r]
        return {"ev": "wake", "pass": body["pass"], "wake": body["wake"],
                "msgs": [mid(m) for m in body["msgs"]], "refused": refused}
    if name == "Work":
        op = body["op"]
        op = ({"finished": mid(op["Finished"])} if isinstance(op, dict)
              else {"Started": "started", "Killed": "killed"}[op])
        return {"ev": "work", "work": body["work"], "shown": body["shown"],
                "conv": 0 if body["conv"] == "A" else 1, "op": op}
    if name == "Mark":
        return {"ev": "mark", "window": body["window"]}
    if name == "Waiting":
        return {"ev": "waiting", "own": body["own"], "foreign": body["foreign"]}
    if name == "InputInterrupt":
        return {"ev": "input_interrupt", "input": body["input"]}
    if name == "SessionEnd":
        return {"ev": "session_end",
                "cause": {"QueueEmpty": "queue-empty", "SessionComplete": "session-complete"}[body["cause"]]}
    return None


def _names(ms: list[int]) -> str:
    return " ".join(f"m{m}" for m in ms) or "nothing"


def _narrate(ev: dict[str, Any]) -> str | None:
    """The timeline's line for an observation the report does not render itself."""
    (name, b), = ev.items()
    if name == "Pass":
        return f"retry_deferred_watch_wakes({b['conv']}): pass {b['pass']} " + \
            ("starts" if b["on"] else "ends")
    if name == "Wake":
        r = b["refused"]
        if r is None:
            res = "True: persisted, generating set, step thread started"
        elif isinstance(r, dict):
            res = f"False (busy: generating, set by wake #{r['Wake']})"
        else:
            res = {"Run": "False (busy: generating, a step the user or a tool started)",
                   "Tools": "False (busy: a tool call pending or executing)",
                   "Command": "False (busy: a slash command owns it)",
                   "PersistFailed": "False (persisting failed: OSError)",
                   "Disabled": "False (watch_autowake off or no model)"}[r]
        return f"request_watch_wake({b['conv']}, [{_names(b['msgs'])}]) = wake #{b['wake']} → {res}"
    if name == "Appended":
        return f"m{b['msg']} appended to {b['conv']}'s log"
    if name == "Work":
        op = b["op"]
        what = "started" if op == "Started" else "killed" if op == "Killed" else \
            f"finished (m{op['Finished']})"
        return f"background job #{b['shown']} of {b['conv']} {what}"
    if name == "Dropped":
        return f"m{b['msg']} coalesced by the watch's storm guard"
    return None


def server_state() -> str:
    SM = R.P.G.SessionManager
    sessions = [s for sid in SM._conversation_sessions.get("A", ()) for s in [SM._sessions.get(sid)]
                if s is not None]
    if any(s.generating for s in sessions):
        return "GENERATING"
    if any(s.pending_tools or s._executing_tools for s in sessions):
        return "TOOLS"
    if "A" in SM._active_commands:
        return "COMMAND"
    return "IDLE"


def cli_state() -> str:
    run = R.current()
    if run.session_end is not None:
        return "ENDED"
    # (0.33.0 has no wait conditions: its loop never waits.)
    conditions = getattr(R.P.G.shell_background, "_job_conditions", {})
    if any(c._waiters for c in conditions.values()):
        return "WAITING"
    if run.generating:
        return "GENERATING"
    return "LOOP"


# ---- plans (the model host's defaults where the sections say nothing)

SERVER_DEFAULTS: Msg = {
    "producers": {"events": {"min": 1, "max": 6}, "watches": 2, "start_ms": {"min": 1, "max": 10_000},
                  "spacing_ms": {"min": 0, "max": 5_000}, "completions": {"min": 0, "max": 0},
                  "completion_ms": {"min": 1, "max": 60_000}},
    "timing": {"model_ms": {"min": 200, "max": 6_000}, "tool_ms": {"min": 10, "max": 3_000},
               "confirm_ms": {"min": 500, "max": 20_000}, "command_ms": {"min": 100, "max": 5_000}},
    # The model's defaults (`ServerFault::defaults`), in `ServerFault::ALL` order: rate, max,
    # whether it is timed; each on in half the seeds.
    "faults": [{"name": n, "share": [1, 2], "rate": r, "max": m, "timed": t} for n, r, m, t in (
        ("watch_tool", [1, 1], 1, False), ("user_steps", [1, 1], 3, True),
        ("tool_confirmation", [1, 3], 3, False), ("tool_calls", [1, 3], 6, False),
        ("slash_commands", [1, 1], 3, True), ("persist_failure", [1, 3], 2, False),
        ("dispatch_failure", [1, 3], 2, False))],
    "timed_retry_ms": 500, "timed_attempts_max": 40,
}

# The faults each plan acts on (the model's others are not implemented on the real host).
SERVER_FAULTS = ("watch_tool", "user_steps", "tool_confirmation", "tool_calls", "slash_commands",
                 "persist_failure", "dispatch_failure")
CLI_FAULTS = ("auto_reply", "tool_calls", "prompt_writes", "steer_writes", "control_writes",
              "stale_control", "teardown_reset")

CLI_DEFAULTS: Msg = {
    "producers": {"script": [], "jobs": {"min": 1, "max": 2}, "prompt_records": {"min": 1, "max": 3}},
    "timing": {"model_ms": {"min": 200, "max": 6_000}, "tool_ms": {"min": 10, "max": 2_000},
               "job_ms": {"min": 100, "max": 60_000}, "drain_ms": {"min": 0, "max": 1_000},
               "idle_max_ms": 1_800_000},
    "faults": [],
}


def _merge(defaults: Msg, given: Msg | None) -> Msg:
    out: Msg = json.loads(json.dumps(defaults))
    for k, v in (given or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k].update(v)
        else:
            out[k] = v
    return out


# ---- the driver


class Driver:
    """One driver process: a `hello`, then one `run` per seed."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.family: str | None = None
        self.variant = ""
        self.patch: ModuleType | None = None
        self.sections: Msg = {}
        self.limits: Msg = {"active_ms": 3_600_000, "quiesce_ms_max": 0, "steps_max": 200_000}

    def hello(self, msg: Msg) -> None:
        if msg.get("protocol") != PROTOCOL:
            raise Fatal(f"{DRIVER} speaks protocol {PROTOCOL}, not {msg.get('protocol')}")
        family = msg.get("host")
        if family not in ("gptme-server", "gptme-cli"):
            raise Fatal(f"{DRIVER} drives gptme-server and gptme-cli, not {family!r}")
        version = msg.get("host_version")
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as installed_version
        try:
            have = installed_version("gptme")
        except PackageNotFoundError:
            have = None
        if have != version:
            raise Fatal(f"{DRIVER} runs in the venv of gptme {have}, not {version!r}")
        self.family = family
        wake = msg.get("wake") or {}
        self.variant = wake.get("variant") or ("w2" if family == "gptme-server" else "b1")
        if self.variant not in real_variants.NAMES:
            raise Fatal(f"unknown gptme variant {self.variant!r}; known: "
                        f"{', '.join(real_variants.NAMES)}")
        if wake.get("patch"):
            import importlib.util
            spec = importlib.util.spec_from_file_location("wakesim_gptme_patch", wake["patch"])
            if spec is None or spec.loader is None:
                raise Fatal(f"the wake patch {wake['patch']!r} is not a Python file")
            self.patch = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(self.patch)
        defaults = SERVER_DEFAULTS if family == "gptme-server" else CLI_DEFAULTS
        self.sections = _merge(defaults, msg.get("scenario") or {})
        # A fault the plan cannot act on would be drawn and silently do nothing: refuse it.
        known = SERVER_FAULTS if family == "gptme-server" else CLI_FAULTS
        for f in self.sections.get("faults", []):
            if f.get("name") not in known:
                raise Fatal(f"the real {family} driver does not implement the fault "
                            f"{f.get('name')!r} (it implements {', '.join(known)})")
        self.limits.update(msg.get("limits") or {})
        R.load()
        # What the release lacks for this lane, variant and faults, read from its package.
        lacks = R.P.missing(family, self.variant,
                            [f.get("name") for f in self.sections.get("faults", [])])
        if lacks:
            raise Fatal(f"gptme {version} cannot be driven as {family} with the variant "
                        f"{self.variant!r}: its package lacks {', '.join(lacks)}")
        self.wire.send({"type": "hello", "protocol": PROTOCOL, "driver": DRIVER,
                        "host": HOST.format(version=version), "ahead": AHEAD})

    def run(self, chooser: LocalChooser | None = None,
            start: Msg | None = None) -> tuple[R.Run, sched.Outcome]:
        """One run: `start` is wakesim's `run` line (with the first draws' material)."""
        remote_ch = RemoteChooser(self.wire, start) if chooser is None else None
        ch: Any = chooser if chooser is not None else remote_ch
        setup: Callable[[R.Run], None] | None
        if self.family == "gptme-server":
            # The model's plan, drawn as the model draws it (conformance).
            plan, kwargs, setup = plan_server.server_plan(ch, self.sections, self.limits)
        else:
            # The model's plan, drawn as the model draws it (conformance).
            plan, kwargs, setup = plan_cli.cli_plan(ch, self.sections, self.limits)
        state = server_state if self.family == "gptme-server" else cli_state
        ids: dict[int, int] = {}
        streams: dict[str, int] = {}
        wire = self.wire
        remote = remote_ch is not None
        numbers = remote_ch is not None and remote_ch.numbers

        line = wire.line

        def emit(kind: str, rec: Record) -> None:
            # The bytes `_dumps` makes of {"type", "t", "actor", "state", fields...}, spliced
            # from encoded parts instead of a merged dict.
            t, actor, ev = rec
            if kind == "note":
                line(f'{{"type":"note",{_head(t, actor, state())}"text":{_dumps(ev["Note"])}}}',
                     False)
                return
            if "Produced" in ev:
                return
            body = _wire_obs(ev, ids)
            if body is not None:
                head = _head(t, actor, state())
                line(f'{{"type":"obs",{head}{_dumps(body)[1:]}', False)
                text = _narrate(ev)
                if text is not None:
                    line(f'{{"type":"note",{head}"text":{_dumps(text)}}}', False)

        run = R.Run(ch, emit=emit, **kwargs)

        origins: dict[str, int] = {}

        def produce(stream: str, conversation: str, kind: str = "watch",
                    origin: str | None = None) -> int:
            # wakesim numbers the message; the marker is m<id+1>, the local id id+1.
            if callable(run.produce_names):
                # The CLI model's (plan_cli.py).
                stream, src, org = run.produce_names(stream, conversation, kind, origin)
            elif run.produce_names is not None:
                # The model's stream names, FIFO sources and origins (plan_server.py).
                stream, src = run.produce_names[kind]
                if origin is None:
                    raise Fatal(f"a {kind} message without its origin")
                org = run.origin_index[origin]
            else:
                src = streams.setdefault(stream, len(streams))
                org = origins.setdefault(origin or stream, len(origins))
            t = SCHED_NOW()
            if numbers:
                # The id is the count of this run's messages: said, not asked (no round trip).
                pid = len(ids)
                line(_dumps({"type": "produce", "t": t, "kind": kind, "source": src,
                             "origin": org, "conv": 0 if conversation == "A" else 1,
                             "stream": stream, "state": state(), "id": pid}), False)
            elif remote:
                wire.send({"type": "produce", "t": t, "kind": kind, "source": src,
                           "origin": org, "conv": 0 if conversation == "A" else 1,
                           "stream": stream, "state": state()})
                pid = wire.value()
            else:
                pid = len(ids)
            m = pid + 1
            ids[m] = pid
            run.produced[m] = (stream, conversation)
            run.next_msg = max(run.next_msg, m + 1)
            return m

        run.produce = produce  # type: ignore[method-assign]
        if setup is not None:
            setup(run)
        R.reset(run)
        real_variants.apply(self.variant)
        if self.patch is not None:
            self.patch.apply(R.P.G, run)
        R.ready()
        horizon = self.limits["active_ms"] + self.limits.get("quiesce_ms_max", 0)
        out = sched.SCHED.run(plan, ch, horizon_ms=horizon, steps_max=self.limits["steps_max"])
        if out.verdict == sched.Verdict.ERROR:
            raise Fatal(f"the plan failed: {out.error!r}")
        if out.errors:
            name, e = out.errors[0]
            raise Fatal(f"thread {name} of gptme raised {e!r}")
        end: Msg = {"type": "end", "t": out.now_ms, "cause": out.verdict,
               # The run's steps, as wakesim counts events: its scheduling points.
               "steps": min(out.points, self.limits["steps_max"])}
        if out.verdict == sched.Verdict.DEADLOCK:
            # No thread of gptme can run again: the end cause `deadlock`, which wakesim judges
            # as a NO-DEADLOCK violation with the stuck threads' count; the note before it says
            # what each one waits for.
            wire.send({"type": "note", "t": out.now_ms, "actor": "check", "state": state(),
                       "text": f"deadlock: {out.detail}"})
            end.update(threads=out.stuck, state=state())
        if remote_ch is not None and remote_ch._drawn:
            end["drawn"] = remote_ch.take_drawn()
        wire.send(end)
        if CPU_LOG:
            # The driver's own CPU time so far (as hosts/lib/wire.mjs logs pi's): the lane's
            # cost split between wakesim and the driver, for the README's figures.
            t = os.times()
            with open(CPU_LOG, "a") as f:
                f.write(f"{os.getpid()} {t.user + t.system:.3f}\n")
        if self.patch is not None and hasattr(self.patch, "undo"):
            self.patch.undo(R.P.G)
        return run, out

    def serve(self, first: str | None = None) -> NoReturn:
        """Answer wakesim until it closes stdin; `first`: its first line, read already (the
        launcher read `hello` for the version)."""
        try:
            while True:
                if first is not None:
                    try:
                        msg = json.loads(first)
                    except ValueError:
                        raise Fatal(f"wakesim sent a line that is not JSON: {first[:200]!r}") \
                            from None
                    first = None
                else:
                    msg = self.wire.read()
                kind = msg.get("type")
                if kind == "hello":
                    self.hello(msg)
                elif self.family is None:
                    raise Fatal("wakesim did not say hello first")
                elif kind == "run":
                    self.run(start=msg)
                else:
                    raise Fatal(f"unexpected message from wakesim: {msg!r}")
        except Fatal as f:
            self.wire.send({"type": "error", "message": str(f)})
            sys.exit(1)


def main(first: str | None = None) -> None:
    """The driver's entry point (`gptme_driver.py`, which read the first line)."""
    Driver(Wire()).serve(first)

