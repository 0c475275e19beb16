"""The gptme-shaped facades: what gptme's wake logic sees, in Python.

A wake module for gptme is written as gptme's own code is, with its imports taken from here:

Server (`host = "gptme-server"`): the module defines `retry_deferred_watch_wakes(conversation_id)`
(gptme's `SessionManager.retry_deferred_watch_wakes`, run at step completion, in `finish_command`
and after a subagent completion) and, optionally, `deliver(conversation_id, logdir, watch_id,
text)` (the watch tool's `_deliver`; without it wakesim runs gptme's own). They call
`take_queued_watch_events(logdir)` (a list of `(watch_id, text)`), `requeue_watch_event(logdir,
watch_id, text)` (back at the head), `queue_watch_event(logdir, watch_id, text)`
(`_pending_deliveries.append`), `SessionManager.request_watch_wake(conversation_id, message,
branch="main")` (True once persisted; it sets `generating` before it returns),
`take_queued_completions(logdir)` (a list of `(agent, status, summary, branch)`) and
`completion_queue.put(completion)` (at the tail). `logdir` is `get_logs_dir() / conversation_id`.

CLI (`host = "gptme-cli"`): the module registers hooks with `register_hook(name, hook_type, func,
priority)`, at most one STEP_PRE and one LOOP_CONTINUE hook; a hook is called as gptme calls it,
`hook(manager, interactive, prompt_queue)`, and yields `Message`s and `StopPropagation()`. It sees
the job registry and files through `claim_completed_jobs(conversation_id)` (the completion hook's
atomic claim of queued completions of still-registered jobs), `background_jobs()` (every
registered job: `id`, `conversation_id`, `is_running()`, `_completion_notified`, `_wait_expired`;
setting `job._wait_expired = True` marks it), `take_prompt_queue(logdir, max_items)` (regular
records, then steer records, as dicts `{"content", "steer"}`), `read_control(logdir)` (the
contents of `control.jsonl`, or None when empty), `subagent_pending(logdir)`, `job_lock` (gptme's
`_job_lock`, an RLock) and `job_condition(conversation_id)` (`_job_conditions[cid]`, with
`wait(timeout)`). `GPTME_WATCH_IDLE_MAX` is in `os.environ`.

Blocking in a LOOP_CONTINUE hook: the hook runs on its own thread, strictly alternating with the
adapter's loop, so it can block where gptme's blocks. `job_condition(cid).wait(t)` suspends it (a
`wait` terminator) until the simulator notifies it or the timeout passes. Releasing `job_lock`
lets the other threads run: the hook's next call to the host (a file read in `wait_input`, say)
happens only after the simulator let them (an `unlock` terminator, resumed with `io`). Taking the
lock again before any call cancels that: nothing was read outside the lock. A STEP_PRE hook runs
atomically and cannot wait.

What a hook yields: a `Message` whose content carries producer messages (the markers
`[wakesim mN]` in a claimed job's output or a taken prompt) delivers them; a message that carries
none must say what it is, `Message("system", text, notice="input")` (the wait yields to pending
session input: the `control.jsonl` the hook read last) or `notice="timeout"` (the jobs the hook
marked `_wait_expired` and did not report yet).

Time is the simulation's (`time.monotonic()`, `time.monotonic_ns()`, ...: whole virtual
milliseconds; compare deadlines in `monotonic_ns`, which is exact); `random` is reseeded every
run; `options()` is the scenario's `options` table.
"""

from __future__ import annotations

import _thread
import copy
import enum
import math
import os
import pathlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

from .pi import carries
from .protocol import Clock, Fatal, Link, Loader, Msg, drive

LOGS = pathlib.PurePosixPath("/wakesim/logs")
# A wait without a timeout still ends, at the longest a scenario runs.
WAIT_MS_MAX = 24 * 3_600_000


class Binding:
    """Which facade the module-level functions below reach: the one whose `reset` loaded the
    module under test, bound for the run until the next reset. One process serves one host
    family, so one facade is bound at a time; a test makes its own `Binding` and facades on it."""

    def __init__(self) -> None:
        self._facade: ServerFacade | CliFacade | None = None

    def bind(self, facade: ServerFacade | CliFacade) -> None:
        self._facade = facade

    def get(self) -> ServerFacade | CliFacade:
        if self._facade is None:
            raise RuntimeError("the gptme facade is used outside a run (at import time, say)")
        return self._facade

    def cli(self, fn: str) -> CliFacade:
        f = self.get()
        if not isinstance(f, CliFacade):
            raise TypeError(f"{fn} is for gptme-cli modules")
        return f


# The binding the functions a wake module imports from here reach (`serve` makes the facades on it).
BINDING = Binding()


def _current() -> ServerFacade | CliFacade:
    return BINDING.get()


def _cli(fn: str) -> CliFacade:
    return BINDING.cli(fn)


def get_logs_dir() -> pathlib.PurePosixPath:
    """gptme's `gptme.dirs.get_logs_dir()`: conversation `A`'s logdir is `get_logs_dir() / "A"`."""
    return LOGS


def options() -> Any:
    """The scenario's `wake.options` table (a copy)."""
    return copy.deepcopy(_current()._options)


def _name(logdir: object, allow_all: bool = False) -> str | None:
    if logdir is None:
        if allow_all:
            return None
        raise ValueError("a logdir is needed here, not None")
    return pathlib.PurePosixPath(str(logdir)).name


class Message:
    """gptme's `Message(role, content)`. `notice` says what a message that carries no producer
    message is: "input" or "timeout" (CLI hooks)."""

    def __init__(self, role: str, content: str, notice: str | None = None, **_kwargs: Any) -> None:
        if notice not in (None, "input", "timeout"):
            raise ValueError(f"notice must be 'input', 'timeout' or None, not {notice!r}")
        self.role = role
        self.content = content
        self.notice = notice

    def __repr__(self) -> str:
        return f"Message({self.role!r}, {self.content!r})"


class StopPropagation:
    """Yielded by a hook: the hooks of lower priority of the same type do not run."""


class HookType(enum.Enum):
    """The hook types the simulator runs (gptme's `HookType`, the two that matter)."""

    STEP_PRE = "step_pre"
    LOOP_CONTINUE = "loop_continue"


Hook: TypeAlias = Callable[..., Any]


def register_hook(name: str, hook_type: HookType | str, func: Hook, priority: int = 0) -> None:
    """gptme's hook registration. The simulator runs one STEP_PRE and one LOOP_CONTINUE hook of
    the module, at `priority` among its own hooks (auto-reply 999, the subagent hook 50)."""
    f = _cli("register_hook")
    kind = HookType(hook_type).value
    if kind in f.hooks:
        raise ValueError(f"a second {kind} hook ({name}): the simulator runs one of each type")
    if not callable(func):
        raise TypeError(f"hook {name} is not callable")
    f.hooks[kind] = (str(name), int(priority), func)


# ---- server


def take_queued_watch_events(logdir: object) -> list[tuple[Any, ...]]:
    """Remove and return every deferred watch event of `logdir` (of every logdir for None), in
    FIFO order, as `(watch_id, text)` pairs."""
    r = _current().query({"type": "take_queued_watch_events", "logdir": _name(logdir, True)})
    return [tuple(p) for p in r]


def _one(text: str, fn: str) -> list[int]:
    ids = carries(text)
    if len(ids) != 1:
        raise ValueError(f"{fn}: the text must be an event's text (one [wakesim mN] marker): {text!r}")
    return ids


def requeue_watch_event(logdir: object, watch_id: object, text: str) -> None:
    """Put an event back at the head of the queue (`appendleft`)."""
    _current().send({"type": "requeue_watch_event", "logdir": _name(logdir),
                     "carries": _one(text, "requeue_watch_event")})


def queue_watch_event(logdir: object, watch_id: object, text: str) -> None:
    """`_pending_deliveries.append((logdir, watch_id, text))`: defer an event (at the tail)."""
    _current().send({"type": "queue_watch_event", "logdir": _name(logdir),
                     "carries": _one(text, "queue_watch_event")})


def take_queued_completions(logdir: object) -> list[tuple[Any, ...]]:
    """Remove and return this parent's subagent completions: `(agent, status, summary, branch)`."""
    r = _current().query({"type": "take_queued_completions", "logdir": _name(logdir)})
    return [tuple(c) for c in r]


class _CompletionQueue:
    """gptme's subagent `_completion_queue`, as a retry puts a completion back."""

    def put(self, completion: str) -> None:
        """`_completion_queue.put(c)`: back at the tail."""
        _current().send({"type": "put_completion",
                         "carries": _one(completion, "completion_queue.put")})


completion_queue = _CompletionQueue()


class SessionManager:
    """gptme's server `SessionManager`, as a wake module calls it."""

    @classmethod
    def request_watch_wake(cls, conversation_id: str, message: Message | str, *,
                           branch: str = "main") -> bool:
        """Refused (False) when the conversation is busy; otherwise persist the message, set
        `generating` and start a step (True, even when the step fails to start)."""
        content = message.content if isinstance(message, Message) else message
        r = _current().query({"type": "request_watch_wake", "conversation_id": conversation_id,
                              "carries": carries(content)})
        return r is True


class ServerFacade:
    """The gptme server family's facade: the module's `retry_deferred_watch_wakes` and
    `deliver` run as the server's events."""

    def __init__(self, conn: Link, clock: Clock, options: Msg,
                 binding: Binding = BINDING) -> None:
        self._conn = conn
        self._clock = clock
        self._options = options
        self._binding = binding
        self._module: Any = None

    def query(self, obj: Msg) -> Any:
        return self._conn.query(obj)["value"]

    def send(self, obj: Msg) -> None:
        self._conn.call(obj)

    def reset(self, loader: Loader) -> Msg:
        self._binding.bind(self)
        self._module = module = loader.load()
        events = [name for name in ("deliver", "retry_deferred_watch_wakes")
                  if callable(getattr(module, name, None))]
        if not events:
            raise TypeError("a gptme-server module defines retry_deferred_watch_wakes("
                            "conversation_id) (and may define deliver(conversation_id, logdir, "
                            "watch_id, text))")
        return {"events": events}

    def dispatch(self, ev: Msg) -> Msg | None:
        name = ev["event"]
        if name == "retry_deferred_watch_wakes":
            drive(self._module.retry_deferred_watch_wakes(ev["conversation_id"]))
        elif name == "deliver":
            drive(self._module.deliver(ev["conversation_id"], LOGS / ev["logdir"], ev["watch"],
                                       ev["text"]))
        else:
            raise Fatal(f"the gptme server has no event {name!r}")
        return None


# ---- CLI


class Abandoned(BaseException):
    """Raised inside a suspended hook the run left behind (the next run resets the adapter)."""


class Fiber:
    """A hook on its own thread, strictly alternating with the adapter's loop: exactly one of the
    two runs at any time, so the hook's calls and the loop's reads never interleave."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn
        # Raw locks as binary semaphores (a lock may be released by another thread than the one
        # that took it): each side blocks on its own until the other releases it.
        self._to_fiber = _thread.allocate_lock()
        self._to_fiber.acquire()
        self._to_main = _thread.allocate_lock()
        self._to_main.acquire()
        self._report: tuple[str, Any] | None = None
        self._resumed_with: str | None = None
        self.abandoned = False
        self.thread = threading.Thread(target=self._run, name="wakesim-hook", daemon=True)

    def _run(self) -> None:
        try:
            self._report = ("done", self._fn())
        except Abandoned:
            self._report = ("abandoned", None)
        except (Fatal, SystemExit, KeyboardInterrupt) as e:
            self._report = ("raise", e)
        except BaseException as e:  # noqa: BLE001 (the module's own failure)
            self._report = ("error", e)
        self._to_main.release()

    def start(self) -> tuple[str, Any] | None:
        self.thread.start()
        self._to_main.acquire()
        return self._report

    def suspend(self, terminator: Msg) -> str | None:
        """On the hook's thread: end this segment with `terminator`; returns the resume's `why`."""
        self._report = ("suspend", terminator)
        self._to_main.release()
        self._to_fiber.acquire()
        if self.abandoned:
            raise Abandoned()
        return self._resumed_with

    def resume(self, why: str) -> tuple[str, Any] | None:
        self._resumed_with = why
        self._to_fiber.release()
        self._to_main.acquire()
        return self._report

    def abandon(self) -> None:
        """Unwind a suspended hook (its calls from now on raise Abandoned, reaching nobody)."""
        self.abandoned = True
        if self.thread.is_alive() and self._report and self._report[0] == "suspend":
            self._to_fiber.release()
            self._to_main.acquire(timeout=5)


class Job:
    """A background job as the registry shows it (a snapshot taken by the call that returned it)."""

    _handle: Any
    id: int
    conversation_id: str
    command: str
    returncode: int | None
    stdout: str
    stderr: str
    _running: bool
    _completion_notified: bool
    _wait_expired: bool

    def __init__(self, d: Msg) -> None:
        self.__dict__.update(
            _handle=d["job"], id=d["id"], conversation_id=d["conversation_id"],
            command=d.get("command", ""), returncode=d.get("returncode"),
            stdout=d.get("stdout", ""), stderr=d.get("stderr", ""),
            _running=d.get("running", False), _completion_notified=d.get("notified", True),
            _wait_expired=d.get("wait_expired", False))

    def is_running(self) -> bool:
        return self._running

    def get_output(self) -> tuple[str, str]:
        return self.stdout, self.stderr

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "_wait_expired" and value and not self._wait_expired:
            _current().send({"type": "mark_wait_expired", "job": self._handle})
        self.__dict__[name] = value

    def __repr__(self) -> str:
        return f"<job #{self.id} of {self.conversation_id}>"


class _JobLock:
    """gptme's `_job_lock` (re-entrant). Releasing it from a LOOP_CONTINUE hook lets the other
    threads run before the hook's next call to the host."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        f = _cli("job_lock")
        f.lock_count += 1
        f.released = False
        return True

    def release(self) -> None:
        f = _cli("job_lock")
        if f.lock_count == 0:
            raise RuntimeError("cannot release un-acquired lock")
        f.lock_count -= 1
        if f.lock_count == 0 and f.in_hook_thread():
            f.released = True

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()


job_lock = _JobLock()


class _Condition:
    """`_job_conditions[cid]`, on `job_lock`."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the simulator notifies this conversation's condition (True) or `timeout`
        seconds pass (False). Only a LOOP_CONTINUE hook holding `job_lock` can wait."""
        f = _cli("job_condition(cid).wait")
        if not f.in_hook_thread() or f.fiber is None:
            raise RuntimeError("only a LOOP_CONTINUE hook can wait (a STEP_PRE hook runs atomically)")
        if f.lock_count == 0:
            raise RuntimeError("cannot wait on un-acquired lock")
        if timeout is None:
            ms = WAIT_MS_MAX
        elif not math.isfinite(timeout) or timeout < 0:
            raise ValueError(f"wait: timeout must be finite and >= 0, not {timeout!r}")
        else:
            ms = min(WAIT_MS_MAX, round(timeout * 1000))
        why = f.fiber.suspend({"type": "wait", "timeout_ms": ms})
        if why == "notified":
            return True
        if why == "timed_out":
            return False
        raise Fatal(f"a waiting hook was resumed with {why!r}, not notified or timed_out")


def job_condition(conversation_id: str) -> _Condition:
    """`_job_conditions[cid]`."""
    return _Condition(conversation_id)


def claim_completed_jobs(conversation_id: str) -> list[Job]:
    """Atomically claim the queued completions of `conversation_id`'s still-registered jobs
    (each is delivered once); the jobs, with their output."""
    return [Job(d) for d in _current().query({"type": "claim_completions",
                                              "conversation_id": conversation_id})]


def background_jobs() -> list[Job]:
    """Every registered job of every conversation."""
    return [Job(d) for d in _current().query({"type": "jobs"})]


def take_prompt_queue(logdir: object, max_items: int = 100) -> Any:
    """Take up to `max_items` records of `prompt-queue.jsonl`: regular ones first, then steer
    ones. Malformed lines and what is over the cap stay, in order."""
    return _current().query({"type": "take_prompts", "max": int(max_items)})


def read_control(logdir: object) -> str | None:
    """The contents of `control.jsonl`, or None when it is empty or absent."""
    r = _current().query({"type": "control_file"})
    return None if r is None else str(r["contents"])


def subagent_pending(logdir: object) -> bool:
    """This session's subagent completion or progress queues are non-empty."""
    return _current().query({"type": "subagent_pending"}) is True


class Manager:
    """The `manager` a hook gets: the conversation's logdir and id."""

    def __init__(self, conversation_id: str) -> None:
        self.chat_id = conversation_id
        self.logdir = LOGS / conversation_id


def _seconds(ms: int) -> str:
    return str(ms // 1000) if ms % 1000 == 0 else repr(ms / 1000)


class CliFacade:
    """The gptme CLI family's facade: the module's STEP_PRE and LOOP_CONTINUE hooks run as
    gptme's hook runner runs them (a LOOP_CONTINUE hook on its own `Fiber`)."""

    def __init__(self, conn: Link, clock: Clock, options: Msg,
                 binding: Binding = BINDING) -> None:
        self._conn = conn
        self._clock = clock
        self._options = options
        self._binding = binding
        self.hooks: dict[str, tuple[str, int, Hook]] = {}
        self.fiber: Fiber | None = None
        self.lock_count = 0
        self.released = False

    def in_hook_thread(self) -> bool:
        return self.fiber is not None and threading.current_thread() is self.fiber.thread

    def _before_call(self) -> None:
        """From a LOOP_CONTINUE hook that released `job_lock` since its last call to the host,
        the other threads run first (an `unlock` segment end, resumed with `io`)."""
        fiber = self.fiber if self.in_hook_thread() else None
        if fiber is not None and fiber.abandoned:
            raise Abandoned()
        if fiber is not None and self.released:
            self.released = False
            why = fiber.suspend({"type": "unlock"})
            if why != "io":
                raise Fatal(f"an unlocked hook was resumed with {why!r}, not io")

    def query(self, obj: Msg) -> Any:
        """A call the host answers."""
        self._before_call()
        return self._conn.query(obj)["value"]

    def send(self, obj: Msg) -> None:
        """A call without an answer."""
        self._before_call()
        self._conn.call(obj)

    def _abandon(self) -> None:
        if self.fiber is not None:
            self.fiber.abandon()
            self.fiber = None
        self.lock_count = 0
        self.released = False

    def reset(self, loader: Loader) -> Msg:
        self._abandon()
        self._binding.bind(self)
        self.hooks = {}
        loader.load()
        events = [kind for kind in ("step_pre", "loop_continue") if kind in self.hooks]
        if not events:
            raise TypeError("a gptme-cli module registers a STEP_PRE or LOOP_CONTINUE hook with "
                            "register_hook(name, HookType.X, func, priority)")
        hooks = {k: {"name": self.hooks[k][0], "priority": self.hooks[k][1]} for k in events}
        return {"events": events, "hooks": hooks}

    def _item(self, msg: object) -> Msg:
        if isinstance(msg, Message):
            ids = carries(msg.content)
            if msg.notice is not None:
                if ids:
                    raise ValueError(f"a {msg.notice} notice carries producer messages: {msg!r}")
                return {"notice": msg.notice}
            if ids:
                return {"carries": ids}
        raise ValueError(f"a hook yielded {msg!r}: a Message carrying producer messages "
                         "([wakesim mN] markers), a notice (Message(..., notice='input' or "
                         "'timeout')) or StopPropagation()")

    def _collect(self, hook: Hook, ev: Msg) -> tuple[list[Msg], bool]:
        """Run a hook as gptme's hook runner does: its messages, and whether it stopped
        propagation."""
        prompt_queue = [Message("user", "(queued)")] * ev.get("prompt_queue", 0)
        result = hook(Manager(ev["conversation_id"]), ev.get("interactive", False), prompt_queue)
        items: list[Msg] = []
        stop = False
        if result is None:
            return items, stop
        if isinstance(result, Message):
            result = [result]
        it: Iterator[Any] = iter(result)
        try:
            for x in it:
                if isinstance(x, StopPropagation) or x is StopPropagation:
                    stop = True
                    break
                items.append(self._item(x))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()
        return items, stop

    def _end(self, report: tuple[str, Any] | None) -> Msg:
        if report is None:
            raise Fatal("a hook's segment ended without a report")
        kind, value = report
        if kind == "suspend":
            terminator: Msg = value
            return terminator
        self.fiber = None
        if kind == "done":
            items, stop = value
            return {"items": items, "stop": stop}
        raise value  # "error": the module's own exception; "raise": the adapter's

    def dispatch(self, ev: Msg) -> Msg | None:
        name = ev["event"]
        if name == "step_pre":
            items, _stop = self._collect(self.hooks["step_pre"][2], ev)
            return {"items": items}
        if name == "loop_continue":
            self._abandon()
            os.environ["GPTME_WATCH_IDLE_MAX"] = _seconds(ev["idle_max_ms"])
            hook = self.hooks["loop_continue"][2]
            self.fiber = Fiber(lambda: self._collect(hook, ev))
            return self._end(self.fiber.start())
        if name == "resume":
            if self.fiber is None:
                raise Fatal("`resume` while no hook is suspended")
            return self._end(self.fiber.resume(ev["why"]))
        raise Fatal(f"the gptme CLI has no event {name!r}")
