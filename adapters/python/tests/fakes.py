"""Stand-ins for the simulator's side of the protocol, for the facades' unit tests: a link that
records what the adapter sends and answers queries from a table, and a loader that hands a facade
a module made in the test."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

Msg = dict[str, Any]


class FakeLink:
    """`protocol.Link`: `call`s are recorded; a `query` is recorded and answered by `answers[type]`
    (a whole result message, or a function of the query returning one)."""

    def __init__(self, answers: dict[str, Msg | Callable[[Msg], Msg]] | None = None) -> None:
        self.sent: list[Msg] = []
        self.answers = answers or {}

    def call(self, obj: Msg) -> None:
        self.sent.append(obj)

    def query(self, obj: Msg) -> Msg:
        self.sent.append(obj)
        answer = self.answers.get(obj["type"])
        if answer is None:
            raise AssertionError(f"no answer for the query {obj!r}")
        return answer(obj) if callable(answer) else answer

    def types(self) -> list[str]:
        return [m["type"] for m in self.sent]


def result(value: Any) -> Msg:
    """The simulator's answer to a query."""
    return {"type": "result", "value": value}


class FakeLoader:
    """What `ModuleLoader` gives a facade: `load()` runs `body(module)` on a fresh module each
    time (as a reset imports the user's module afresh), `load_factory()` returns its `wake`."""

    def __init__(self, body: Callable[[types.ModuleType], None]) -> None:
        self.body = body
        self.loads = 0

    def load(self) -> types.ModuleType:
        self.loads += 1
        module = types.ModuleType(f"fake_wake_{self.loads}")
        self.body(module)
        return module

    def load_factory(self) -> Any:
        return self.load().wake
