"""The virtual clocks, and the process-wide patching that puts the simulated primitives and
clocks where the code under test finds them.

`install()` replaces `threading.Thread`, `Lock`, `RLock`, `Condition`, `Event`, `Semaphore`,
`BoundedSemaphore`, `local` and `current_thread`, and the `time` module's clocks and `sleep`,
process-wide, before the code under test is imported (dataclass `default_factory=threading.Lock`
fields capture the factory at import). `patch_module(m)` rebinds names a module imported directly
(`from time import time`, `from datetime import datetime`), and `patch_dataclass_factories` the
`default_factory=datetime.now` fields.
"""

from __future__ import annotations

import datetime as _datetime
import sys
import threading as _threading
import time as _time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .sched import _REAL, _REAL_TIME, EPOCH_S, NS, SCHED
from .sched_sync import (
    SimBoundedSemaphore,
    SimCondition,
    SimEvent,
    SimLocal,
    SimLock,
    SimRLock,
    SimSemaphore,
    SimThread,
    current_thread,
)


def _vtime() -> float:
    return EPOCH_S + SCHED.read_clock() / NS


def _time_ns() -> int:
    return EPOCH_S * NS + SCHED.read_clock()


def _monotonic() -> float:
    return SCHED.read_clock() / NS


def _monotonic_ns() -> int:
    return SCHED.read_clock()


def _sleep(seconds: float) -> None:
    SCHED.sleep(seconds)


class SimDatetime(_datetime.datetime):
    """`datetime.datetime` whose `now`/`utcnow`/`today` read the virtual clock."""

    @classmethod
    def now(cls, tz: _datetime.tzinfo | None = None) -> SimDatetime:
        return cls.fromtimestamp(_vtime(), tz)

    @classmethod
    def utcnow(cls) -> SimDatetime:
        return cls.fromtimestamp(_vtime(), _datetime.UTC).replace(tzinfo=None)

    @classmethod
    def today(cls) -> SimDatetime:
        return cls.now()


_CLOCKS: dict[str, Callable[..., Any]] = {"time": _vtime, "time_ns": _time_ns, "monotonic": _monotonic,
           "monotonic_ns": _monotonic_ns, "perf_counter": _monotonic,
           "perf_counter_ns": _monotonic_ns, "sleep": _sleep}

_PRIMITIVES: dict[str, Any] = {"Thread": SimThread, "Lock": SimLock, "RLock": SimRLock, "local": SimLocal,
               "Condition": SimCondition, "Event": SimEvent, "Semaphore": SimSemaphore,
               "BoundedSemaphore": SimBoundedSemaphore, "current_thread": current_thread,
               "currentThread": current_thread}

_installed = False  # install() ran (it is idempotent)


def install() -> None:
    """Replace the threading primitives and the clocks process-wide (idempotent). Call before
    importing the code under test."""
    global _installed
    if _installed:
        return
    for name, value in _PRIMITIVES.items():
        setattr(_threading, name, value)
    for name, value in _CLOCKS.items():
        setattr(_time, name, value)
    # queue.Queue's timed get/put read `from time import monotonic as time`.
    import queue
    patch_module(queue)
    _installed = True


def uninstall() -> None:
    """Put the real primitives and clocks back."""
    global _installed
    for name, value in _REAL.items():
        setattr(_threading, name, value)
    for name, value in _REAL_TIME.items():
        setattr(_time, name, value)
    _installed = False


_BY_REAL: dict[int, Any] | None = None


def patch_module(module: ModuleType) -> int:
    """Rebind names `module` imported directly from `time`, `threading` or `datetime`; returns
    how many it rebound."""
    global _BY_REAL
    if _BY_REAL is None:
        _BY_REAL = {id(v): _PRIMITIVES[k] for k, v in _REAL.items()}
        _BY_REAL.update({id(v): _CLOCKS[k] for k, v in _REAL_TIME.items()})
        _BY_REAL[id(_datetime.datetime)] = SimDatetime
    n = 0
    d = module.__dict__
    for name, value in list(d.items()):
        repl = _BY_REAL.get(id(value))
        if repl is not None and d[name] is value:
            d[name] = repl
            n += 1
    return n


_FACTORIES: dict[Any, Any] | None = None


def patch_dataclass_factories(cls: type) -> int:
    """Point a dataclass's `default_factory=datetime.now` (or `time.time`, `threading.Lock` ...,
    captured at import) at the simulated ones; returns how many it changed."""
    global _FACTORIES
    if _FACTORIES is None:
        real_now = _datetime.datetime.now
        _FACTORIES = {real_now: SimDatetime.now, _datetime.datetime.utcnow: SimDatetime.utcnow}
        for k, v in _REAL.items():
            if k in _PRIMITIVES:
                _FACTORIES[v] = _PRIMITIVES[k]
        for k, v in _REAL_TIME.items():
            _FACTORIES[v] = _CLOCKS[k]
    init: Any = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    if code is None or not init.__closure__:
        return 0
    n = 0
    for name, cell in zip(code.co_freevars, init.__closure__, strict=True):
        if not name.startswith("_dflt_"):
            continue
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        try:
            repl = _FACTORIES.get(value)
        except TypeError:
            continue
        if repl is not None:
            cell.cell_contents = repl
            n += 1
    return n


def patch_package(prefix: str) -> int:
    """`patch_module` and `patch_dataclass_factories` over every loaded module under `prefix`."""
    n = 0
    for name, module in list(sys.modules.items()):
        if module is None or not (name == prefix or name.startswith(prefix + ".")):
            continue
        n += patch_module(module)
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == name and \
                    "__dataclass_fields__" in value.__dict__:
                n += patch_dataclass_factories(value)
    return n

