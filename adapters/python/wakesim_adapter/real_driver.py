"""The remote-host driver of the real gptme 0.35.1 (docs/remote-host.md, protocol 1).

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
from typing import IO, Any, NoReturn

from . import plan_cli, plan_server, real_variants, sched
from . import real_gptme as R
from .real_gptme_run import Record

Msg = dict[str, Any]

PROTOCOL = 1
DRIVER = "wakesim-gptme-driver/0.1.0"
HOST = "gptme[server]@0.35.1"
CPU_LOG = os.environ.get("WAKESIM_DRIVER_CPU_LOG")
# A prefix: the driver copies the lines it reads to PREFIX.PID.in and those it writes to
# PREFIX.PID.out, for `bench.py --replay` (the driver's own CPU on the same lines, and its output
# compared byte for byte after a change). Measurement only; nothing else reads it.
TRANSCRIPT = os.environ.get("WAKESIM_DRIVER_TRANSCRIPT")


class _Tee:
    """A pipe end whose traffic is also copied to a file (`TRANSCRIPT`)."""

    def __init__(self, pipe: Any, path: str) -> None:
        self._pipe = pipe
        self._copy = open(path, "wb", buffering=0)  # noqa: SIM115 (open for the process's life)

    def readline(self) -> bytes:
        line: bytes = self._pipe.readline()
        self._copy.write(line)
        return line

    def write(self, data: bytes) -> int:
        self._copy.write(data)
        n: int = self._pipe.write(data)
        return n


class Fatal(Exception):
    """The driver cannot go on: reported to wakesim as an `error` line."""


def _encoder() -> Callable[[Any], str]:
    """`json.dumps(obj, separators=(",", ":"))`, the same bytes, without building an encoder
    at each call: the C encoder made once (no circular-reference check: a line is a tree of
    dicts, lists, strings and numbers)."""
    from json import encoder
    je: Any = encoder
    if je.c_make_encoder is None:
        return json.JSONEncoder(separators=(",", ":")).encode

    def default(o: object) -> NoReturn:
        raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")

    chunks = je.c_make_encoder(None, default, je.encode_basestring_ascii, None, ":", ",",
                               False, False, True)

    def dumps(obj: Any) -> str:
        return "".join(chunks(obj, 0))
    return dumps


_dumps = _encoder()
_VALUE = b'{"type":"value","value":'
_CHOOSE: dict[str, str] = {}   # label -> the start of its `choose` line
_NAMES: dict[str, str] = {}    # an actor's or a state's name -> its JSON string


def _head(t: float, actor: str, state: str) -> str:
    """`"t":T,"actor":A,"state":S,` of an `obs` or `note` line."""
    a = _NAMES.get(actor)
    if a is None:
        a = _NAMES[actor] = _dumps(actor)
    st = _NAMES.get(state)
    if st is None:
        st = _NAMES[state] = _dumps(state)
    return f'"t":{int(t)},"actor":{a},"state":{st},'


class Wire:
    """Lines on stdin/stdout; stdout is the protocol, so `sys.stdout` points at stderr."""

    def __init__(self, inp: IO[bytes] | None = None, out: IO[bytes] | None = None) -> None:
        self._in: Any = inp or sys.stdin.buffer
        self._out: Any = out or os.fdopen(os.dup(1), "wb", buffering=0)
        if TRANSCRIPT and inp is None and out is None:
            self._in = _Tee(self._in, f"{TRANSCRIPT}.{os.getpid()}.in")
            self._out = _Tee(self._out, f"{TRANSCRIPT}.{os.getpid()}.out")
        self._buf: list[str] = []
        sys.stdout = sys.stderr

    def send(self, obj: Msg) -> None:
        """A line that needs no answer waits in a buffer; a line that does (`choose`,
        `produce`), and the run's `end`, `hello` and `error`, flush it: one write a turn."""
        self._buf.append(_dumps(obj))
        if obj["type"] not in ("obs", "note"):
            self.flush()

    def line(self, text: str, answered: bool) -> None:
        """A line already in JSON (`_dumps`'s bytes); `answered`: it needs an answer, flush."""
        self._buf.append(text)
        if answered:
            self.flush()

    def flush(self) -> None:
        self._buf.append("")
        self._out.write("\n".join(self._buf).encode())
        self._buf = []

    def read(self) -> Msg:
        line: bytes = self._in.readline()
        if not line:
            sys.exit(0)
        try:
            msg: Msg = json.loads(line)
        except ValueError:
            raise Fatal(f"wakesim sent a line that is not JSON: {line[:200]!r}") from None
        return msg

    def answer(self) -> tuple[int, Msg | None]:
        """A `value` line: (value, None), or (value, the whole message) when it carries more
        (the next draws' material)."""
        line: bytes = self._in.readline()
        if line.startswith(_VALUE) and line.endswith(b"}\n"):
            digits = line[24:-2]
            if digits.isdigit():
                return int(digits), None
        if not line:
            sys.exit(0)
        try:
            msg: Msg = json.loads(line)
        except ValueError:
            raise Fatal(f"wakesim sent a line that is not JSON: {line[:200]!r}") from None
        if msg.get("type") != "value" or not isinstance(msg.get("value"), int) or \
                isinstance(msg.get("value"), bool):
            raise Fatal(f"expected a value, got {msg!r}")
        return msg["value"], msg

    def value(self) -> int:
        """A `value` line's value (what else it carries is not read here)."""
        return self.answer()[0]


_M64 = (1 << 64) - 1
# How many draws ahead the driver asks wakesim for (its `hello`'s `ahead`): a W1 seed makes about
# 120 uniform draws between 15 delays and instants, which stay `choose` lines.
AHEAD = int(os.environ.get("WAKESIM_DRIVER_AHEAD", "32"))   # 0: every draw asks (measurement)


def below(words: list[int], at: int, n: int) -> tuple[int, int] | None:
    """`below` of `src/sim/choice.rs` (Lemire's widening multiply with rejection) on wakesim's
    raw generator words from `words[at]`: (value, the next index), or None when they run out."""
    if at >= len(words):
        return None
    m = words[at] * n
    at += 1
    low = m & _M64
    if low < n:
        threshold = ((1 << 64) - n) % n
        while low < threshold:
            if at >= len(words):
                return None
            m = words[at] * n
            at += 1
            low = m & _M64
    return m >> 64, at


class RemoteChooser:
    """Every draw is wakesim's. Delays and instants are `choose` lines answered by `value`. A
    uniform `choose` (the scheduler's thread orders, the plan's counts) and a `chance` are drawn
    here, when wakesim sent the material of the next draws (`run` and each `value` answering a
    `choose`: its generator's next raw words, or in a replay the recording's next values), with
    the reduction wakesim's `Choices` applies to it; the draws made so go back in the next
    `choose` or `end` line (`drawn`), where wakesim draws them again, checks each value and logs
    them: the same choices, in the same order, without a round trip each."""

    def __init__(self, wire: Wire, start: Msg | None = None) -> None:
        self.wire = wire
        self._words: list[int] | None = None      # the generator's next raw words (random mode)
        self._recorded: list[int] | None = None   # the recording's next values (replay mode)
        self._ends = False      # ... after which the recording ends (every draw is 0)
        self._at = 0
        self._drawn: list[list[Any]] = []
        # A wakesim that sends draws ahead also takes `produce` lines numbered by the driver.
        self.numbers = start is not None and ("words" in start or "recorded" in start)
        if start is not None:
            self._take(start)

    def _take(self, msg: Msg) -> None:
        """The material a `run` or `value` line carries (none: every draw asks)."""
        self._words = msg.get("words")
        self._recorded = msg.get("recorded")
        self._ends = msg.get("ends") is True
        self._at = 0

    def _next_recorded(self) -> int | None:
        """The next recorded value (0 past the recording's end), or None when the material runs
        out before it."""
        rec = self._recorded
        assert rec is not None, "called in replay mode only"
        if self._at < len(rec):
            self._at += 1
            return rec[self._at - 1]
        return 0 if self._ends else None

    def take_drawn(self) -> list[list[Any]]:
        """The draws made here since the last line that carried them, then none."""
        drawn, self._drawn = self._drawn, []
        return drawn

    def tail(self) -> str:
        """`,"drawn":[...]` for the next line wakesim draws at, then none."""
        return ',"drawn":' + _dumps(self.take_drawn()) if self._drawn else ""

    def _ask(self, text: str, out: bool = False) -> int:
        """A `choose` line (its JSON without the closing brace) and wakesim's `value`. The line
        asks for as many draws' material as the last stretch used, twice over (at least 8, at
        most `AHEAD`; all of it when the material ran `out`): a CLI run makes few uniform draws
        between its delays, and unused words cost both sides their encoding."""
        if self.numbers:
            used = self._at if (self._words is not None or self._recorded is not None) else 0
            want = AHEAD if out else min(AHEAD, max(8, 2 * used))
            text = f'{text},"ahead":{want}'
        self.wire.line(f"{text}{self.tail()}}}", True)
        v, msg = self.wire.answer()
        if msg is None:
            self._words = self._recorded = None
        else:
            self._take(msg)
        return v

    def choose(self, bound: int, label: str) -> int:
        if bound == 1:
            return 0    # one option draws nothing (as `Choices::choose`)
        if self._words is not None:
            got = below(self._words, self._at, bound)
            if got is not None:
                v, self._at = got
                self._drawn.append([label, bound, v])
                return v
        elif self._recorded is not None:
            rv = self._next_recorded()
            if rv is not None:
                rv = min(rv, bound - 1)
                self._drawn.append([label, bound, rv])
                return rv
        # The scheduler's thread choices are same-instant orders. The line is the bytes
        # `_dumps` makes of {"type", "label", "kind", "bound"}, written without the dict.
        head = _CHOOSE.get(label)
        if head is None:
            kind = "order" if label.startswith("py.thread.") else "choose"
            head = _CHOOSE[label] = \
                f'{{"type":"choose","label":{_dumps(label)},"kind":"{kind}","bound":'
        v = self._ask(f"{head}{int(bound)}", self._words is not None or self._recorded is not None)
        if not 0 <= v < bound:
            raise Fatal(f"value {v} out of range for {label} (bound {bound})")
        return v

    def delay(self, lo: int, hi: int, label: str) -> int:
        if lo >= hi:
            return lo
        v = self._ask(_dumps({"type": "choose", "label": label, "kind": "delay", "lo": lo,
                              "hi": hi})[:-1])
        if not lo <= v <= hi:
            raise Fatal(f"delay {v} out of {lo}..={hi} for {label}")
        return v

    def instant(self, lo: int, hi: int, label: str) -> int:
        if lo >= hi:
            return lo
        v = self._ask(_dumps({"type": "choose", "label": label, "kind": "instant", "lo": lo,
                              "hi": hi})[:-1])
        if not lo <= v <= hi:
            raise Fatal(f"instant {v} out of {lo}..={hi} for {label}")
        return v

    def chance(self, num: int, den: int, label: str) -> bool:
        if num <= 0:
            return False
        if num >= den:
            return True
        v: int | None = None
        if self._words is not None:
            got = below(self._words, self._at, den)
            if got is not None:
                r, self._at = got
                v = int(r >= den - num)
        elif self._recorded is not None:
            rec = self._next_recorded()
            if rec is not None:
                v = min(rec, 1)
        if v is not None:
            self._drawn.append([label, num, den, v])
            return v == 1
        return self._ask(_dumps({"type": "choose", "label": label, "kind": "chance", "num": num,
                                 "den": den})[:-1], True) == 1


def SCHED_NOW() -> int:
    return sched.SCHED.now_ns // 1_000_000


class LocalChooser(sched.SeededChooser):
    """The same interface without wakesim (the driver's tests, benchmarks)."""

    def delay(self, lo: int, hi: int, label: str) -> int:
        if lo >= hi:
            return lo
        k = self.choose(3, label + ".class")
        return lo if k == 0 else hi if k == 1 else lo + self.choose(hi - lo + 1, label)

    instant = delay

    def chance(self, num: int, den: int, label: str) -> bool:
        if num <= 0:
            return False
        if num >= den:
            return True
        return self.choose(den, label) < num


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
    if any(c._waiters for c in R.P.G.shell_background._job_conditions.values()):
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
        if msg.get("host_version") != "0.35.1":
            raise Fatal(f"{DRIVER} has gptme 0.35.1 pinned, not {msg.get('host_version')!r}")
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
        self.wire.send({"type": "hello", "protocol": PROTOCOL, "driver": DRIVER, "host": HOST,
                        "ahead": AHEAD})

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

    def serve(self) -> NoReturn:
        try:
            while True:
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


def main() -> None:
    """The driver's entry point (`gptme_driver.py`)."""
    Driver(Wire()).serve()
