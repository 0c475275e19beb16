"""A recorded run of the real gptme, replayed without wakesim: the driver (`real_driver.Driver`)
runs against `ReplayWire`, which plays wakesim's side of the wire from a recording of the
run's decisions (what every draw decided at its named site: which thread goes next at a
scheduling point, whether a fault fires, each delay and instant, the plan's counts). The
exported reproducer runs it (`python -c '... real_gptme_replay.main("session.json")'`).

The recording holds decisions, not the generator's words: with words, the driver would make its
uniform draws itself, and a patched gptme (one more lock, one fewer thread) would draw a
different number of them and run off the recording from that point on. Here the driver asks
every draw over the wire (its `run` carries no material), and each question is answered at its
site: the site's next recorded decision when the question is the same (its label, its kind and
its range), else a stated default, the simplest answer: 0 for a thread order or a uniform
choice (the running thread goes on: no preemption), the lower bound for a delay or an instant,
"no" for a chance (the fault does not fire). So the replay of the released package is the
recorded run, decision for decision, and the replay of a patched one follows the recorded
schedule as far as the patched code asks the same questions, deterministically beyond. Where it
first left the recording is written to stderr and in the `end` line (`replay`).
"""

from __future__ import annotations

import json
import os
import sys
from collections import deque
from typing import IO, Any

from .real_wire import Fatal, Wire

Msg = dict[str, Any]

# The fields that make two questions at one site the same question.
_RANGE = ("bound", "lo", "hi", "num", "den")


def site(d: Msg) -> tuple[str, str]:
    """A decision's site: its label and kind."""
    return str(d.get("label")), str(d.get("kind"))


def default(ask: Msg) -> int:
    """The answer to a question the recording does not answer: the simplest one."""
    kind = ask.get("kind")
    if kind in ("delay", "instant"):
        return int(ask["lo"])
    return 0   # a thread order, a uniform choice, a chance ("no")


class Decisions:
    """The recorded decisions, queued by site, answering questions as they come."""

    def __init__(self, decisions: list[Msg]) -> None:
        self.sites: dict[tuple[str, str], deque[Msg]] = {}
        for d in decisions:
            self.sites.setdefault(site(d), deque()).append(d)
        self.recorded = len(decisions)
        self.asked = 0
        self.answered = 0     # from the recording
        self.defaulted = 0    # by the default
        self.diverged: Msg | None = None

    def answer(self, ask: Msg) -> int:
        """The value for `ask` (a `choose` line's fields)."""
        self.asked += 1
        queue = self.sites.get(site(ask))
        rec = queue.popleft() if queue else None
        if rec is not None and all(rec.get(k) == ask.get(k) for k in _RANGE):
            self.answered += 1
            return int(rec["value"])
        self.defaulted += 1
        v = default(ask)
        if self.diverged is None:
            q = {k: ask[k] for k in ("label", "kind", *_RANGE) if k in ask}
            self.diverged = {"question": self.asked, "asked": q,
                             "recorded": None if rec is None else
                             {k: rec[k] for k in ("label", "kind", *_RANGE, "value") if k in rec},
                             "answered": v}
            print(f"replay: question {self.asked} ({json.dumps(q)}) is not the recording's "
                  f"(recorded at its site: {json.dumps(self.diverged['recorded'])}); answered "
                  f"{v}, the default (later questions are still answered at their sites)",
                  file=sys.stderr)
        return v

    def summary(self) -> Msg:
        """What the replay took from the recording (the `end` line's `replay`)."""
        return {"recorded": self.recorded, "asked": self.asked, "answered": self.answered,
                "defaulted": self.defaulted, "unused": self.recorded - self.answered,
                "diverged": self.diverged}


class ReplayWire(Wire):
    """The wire the driver speaks, with wakesim's side played here: the recorded `hello`, one
    `run` (without draws made ahead: every draw is a question), each question answered from
    the recording (`Decisions`), each message numbered in order. The driver's own lines
    (observations, notes, the end) go to stdout, one JSON object a line."""

    def __init__(self, hello: Msg, decisions: list[Msg], out: IO[bytes] | None = None) -> None:
        super().__init__(inp=None, out=out or os.fdopen(os.dup(1), "wb", buffering=0))
        self.inbox: deque[Msg] = deque([hello, {"type": "run", "run": 1}])
        self.decisions = Decisions(decisions)
        self.produced = 0
        self._value: int | None = None

    # What the driver writes: a question is answered here; the rest is its output.
    def send(self, obj: Msg) -> None:
        if obj.get("type") == "end":
            obj = {**obj, "replay": self.decisions.summary()}
        self.line(json.dumps(obj, separators=(",", ":")), obj.get("type") != "obs")

    def line(self, text: str, answered: bool) -> None:
        if answered:
            msg: Msg = json.loads(text)
            ty = msg.get("type")
            if ty == "choose":
                self._value = self.decisions.answer(msg)
                return
            if ty == "produce" and "id" not in msg:
                self._value = self.produced
                msg["id"] = self.produced
                self.produced += 1
                text = json.dumps(msg, separators=(",", ":"))
        super().line(text, answered)

    def read(self) -> Msg:
        if not self.inbox:
            sys.exit(0)
        return self.inbox.popleft()

    def answer(self) -> tuple[int, Msg | None]:
        v, self._value = self._value, None
        if v is None:
            raise Fatal("the driver read an answer to a question it did not ask")
        return v, None


def main(session_path: str) -> None:
    """Replay the recording in `session_path` (a reproducer's session.json)."""
    from .real_driver import Driver
    with open(session_path, encoding="utf-8") as f:
        session: Msg = json.load(f)
    Driver(ReplayWire(session["hello"], session["decisions"])).serve()
