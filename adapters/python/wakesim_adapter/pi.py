"""The pi-shaped facade: what a pi extension's wake logic sees, in Python.

    def factory(pi, options):
        pi.on("agent_end", lambda event, ctx: ...)
        def send(message, options): ...
        return send

`pi.send_message(message, {"deliver_as": ..., "trigger_turn": ...})`,
`pi.send_user_message(content, {"deliver_as": ...})`, `ctx.is_idle()` (raises `StaleCtx` once the
session was replaced), and timers on virtual time: `pi.set_timeout(fn, ms)`,
`pi.clear_timeout(id)`, `pi.queue_microtask(fn)`, `pi.now()` (ms). Producer messages are dicts
`{"custom_type", "content", "display", "details": {"id", "kind", "source"}}`; a send carries every
producer message whose marker "[wakesim mN]" appears in what it sends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .protocol import Clock, Link, Loader, Msg, drive

MARKER = re.compile(r"\[wakesim m(\d+)\]")
DELIVER_AS = ("steer", "followUp", "nextTurn")
DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "completion": {"deliver_as": "steer", "trigger_turn": True},
    "notification": {"deliver_as": "steer", "trigger_turn": True},
    "orchestrator": {"deliver_as": "followUp", "trigger_turn": True},
}
STALE = "This extension ctx is stale after session replacement or reload."
# The text a send_user_message shows on the timeline, at most this many UTF-8 bytes, ellipsis
# included: the simulator's bound (`USER_MESSAGE_TEXT_BYTES_MAX`, src/limits.rs), applied here too
# so a long text is not written whole only to be cut.
USER_TEXT_BYTES_MAX = 200
ELLIPSIS = "\u2026"


class StaleCtx(Exception):
    """pi's stale-ctx error."""


def carries(value: object) -> list[int]:
    """The producer messages a value carries: its `[wakesim mN]` markers, as 0-based ids, in
    order, each once."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    ids: list[int] = []
    for m in MARKER.finditer(text):
        i = int(m.group(1)) - 1
        if i >= 0 and i not in ids:
            ids.append(i)
    return ids


def cut_text(text: str, limit: int = USER_TEXT_BYTES_MAX) -> str:
    """`text` in at most `limit` UTF-8 bytes: whole if it fits, else cut at a character boundary
    so that with the ellipsis it fits (the simulator's cut, which leaves this one as it is)."""
    # A lone surrogate is no UTF-8 (nor JSON the simulator reads): written as "?".
    raw = text.encode("utf-8", errors="replace")
    if len(raw) <= limit:
        return raw.decode("utf-8")
    room = limit - len(ELLIPSIS.encode("utf-8"))
    return raw[:room].decode("utf-8", errors="ignore") + ELLIPSIS


def user_text(content: object) -> str | None:
    """What a send_user_message's content says as text: a string itself, a list of content parts
    its text parts joined by newlines; None for anything else (the timeline shows what it
    carries)."""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = [p["text"] for p in content
                 if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)]
        if not parts:
            return None
        text = "\n".join(parts)
    else:
        return None
    return cut_text(text)


def deliver_as(options: dict[str, Any] | None, fn: str) -> str | None:
    d = (options or {}).get("deliver_as")
    if d is not None and d not in DELIVER_AS:
        raise ValueError(f"{fn}: deliver_as must be one of {DELIVER_AS}, not {d!r}")
    return d


class Ctx:
    """The `ctx` a handler gets: its session, asked whether it is idle."""

    def __init__(self, pi: Pi, session: int) -> None:
        self._pi = pi
        self.session = session

    def is_idle(self) -> bool:
        pi = self._pi
        if pi._hint_valid and pi._hint_ctx == self.session:
            # The event's `idle` holds until the handler's first send: answered here, and the
            # simulator checks the `known` answer instead of sending one (docs/protocol.md).
            hint = pi._hint
            pi._conn.call({"type": "is_idle", "ctx": self.session,
                           "known": "stale_ctx" if hint is None else hint})
            if hint is None:
                raise StaleCtx(STALE)
            return hint
        r: Msg = pi._conn.query({"type": "is_idle", "ctx": self.session})
        if r.get("error") == "stale_ctx":
            raise StaleCtx(STALE)
        return r.get("value") is True


class Pi:
    """One per run."""

    def __init__(self, conn: Link, clock: Clock) -> None:
        self._conn = conn
        self._clock = clock
        self._handlers: dict[str, list[Callable[..., Any]]] = {}
        # The event's `idle` for its ctx, valid until a send (the only calls that change it).
        self._hint: bool | None = None
        self._hint_ctx = 0
        self._hint_valid = False

    def on(self, event: str, handler: Callable[..., Any] | None = None
           ) -> Callable[[Callable[..., Any]], Callable[..., Any]] | None:
        """`pi.on("agent_end", fn)`, or as a decorator: `@pi.on("agent_end")`."""
        if handler is None:
            def register(fn: Callable[..., Any]) -> Callable[..., Any]:
                self.on(event, fn)
                return fn
            return register
        self._handlers.setdefault(event, []).append(handler)
        return None

    def send_message(self, message: Any, options: dict[str, Any] | None = None) -> None:
        self._hint_valid = False
        options = options or {}
        custom = message.get("custom_type") if isinstance(message, dict) else None
        self._conn.call({
            "type": "send_message",
            "custom_type": custom,
            "carries": carries(message),
            "deliver_as": deliver_as(options, "pi.send_message"),
            "trigger_turn": bool(options.get("trigger_turn")),
        })

    def send_user_message(self, content: Any, options: dict[str, Any] | None = None) -> None:
        self._hint_valid = False
        self._conn.call({
            "type": "send_user_message",
            "carries": carries(content),
            "deliver_as": deliver_as(options, "pi.send_user_message"),
            "text": user_text(content),
        })

    def now(self) -> int:
        return self._clock.now_ms

    def set_timeout(self, fn: Callable[..., object], ms: float, *args: Any) -> int:
        return self._clock.set_timeout(fn, ms, *args)

    def clear_timeout(self, tid: int) -> None:
        self._clock.clear_timeout(tid)

    def queue_microtask(self, fn: Callable[..., object], *args: Any) -> int:
        return self._clock.queue_microtask(fn, *args)


class PiFacade:
    """The pi family's facade: a fresh `Pi` per run, the module's factory called with it."""

    def __init__(self, conn: Link, clock: Clock, options: Msg) -> None:
        self._conn = conn
        self._clock = clock
        self._options = options
        self._pi = Pi(conn, clock)
        self._send: Callable[..., Any] | None = None
        self._ctxs: dict[int, Ctx] = {}

    def reset(self, loader: Loader) -> Msg:
        factory = loader.load_factory()
        self._pi = Pi(self._conn, self._clock)
        self._ctxs = {}
        send = factory(self._pi, json.loads(json.dumps(self._options)))
        if not callable(send):
            raise TypeError(
                "the factory returned no send function: a wake module's factory takes pi and "
                "returns send(message, options), which wakesim calls for each producer message"
            )
        self._send = send
        events = ["message", "session_start"]
        for name in self._pi._handlers:
            wire = "session_compact" if name == "session_compact_failed" else name
            if wire not in events:
                events.append(wire)
        return {"events": events}

    def _ctx(self, session: int) -> Ctx:
        c = self._ctxs.get(session)
        if c is None:
            c = self._ctxs[session] = Ctx(self._pi, session)
        return c

    def _run(self, name: str, event: Msg, ctx: Ctx) -> list[Any]:
        results = []
        for h in self._pi._handlers.get(name, ()):
            r = drive(h(event, ctx))
            results.append(r)
            if name == "input" and isinstance(r, dict) and r.get("action") == "handled":
                break
        return results

    def dispatch(self, ev: Msg) -> Msg | None:
        pi = self._pi
        pi._hint_valid = "idle" in ev
        pi._hint = ev.get("idle")
        pi._hint_ctx = ev["ctx"]
        ctx = self._ctx(ev["ctx"])
        name = ev["event"]
        if name == "message":
            m = ev["message"]
            message = {
                "custom_type": f"wakesim.{m['kind']}",
                "content": m["text"],
                "display": True,
                "details": {"id": m["name"], "kind": m["kind"], "source": m["source"]},
            }
            if self._send is None:
                raise RuntimeError("an event before the reset that loads the module")
            drive(self._send(message, dict(DEFAULT_OPTIONS[m["kind"]])))
            return None
        if name == "timer":
            self._clock.fire(ev["timer"])
            return None
        if name == "input":
            inp = ev["input"]
            event = {"type": "input", "text": "", "source": inp["source"],
                     "streaming_behavior": inp.get("streaming_behavior")}
            results = self._run("input", event, ctx)
            handled = any(isinstance(r, dict) and r.get("action") == "handled" for r in results)
            return {"action": "handled" if handled else "continue"}
        if name == "session_compact":
            name = "session_compact_failed" if ev.get("outcome") == "failed" else "session_compact"
        self._run(name, {"type": name}, ctx)
        return None
