"""The gptme driver's side of the remote-host protocol (docs/remote-host.md): lines on stdin and
stdout (`Wire`), and the choosers that draw through them (`RemoteChooser`: every draw is
wakesim's, uniform ones made here from the material wakesim sends ahead; `LocalChooser`: a seeded
stand-in for tests and benchmarks). `real_driver` runs gptme's plans with them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import IO, Any, NoReturn

from . import sched

Msg = dict[str, Any]

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


