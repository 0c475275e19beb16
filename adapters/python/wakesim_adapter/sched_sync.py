"""The threading primitives under the deterministic scheduler (`sched.SCHED`).

`Lock`, `RLock`, `Condition`, `Event`, `Semaphore`, `BoundedSemaphore`, `Thread`, `local` and
`current_thread` as `threading` has them, each operation a scheduling point where it can block or
change what another thread sees (see `sched`'s docstring). Outside a run they behave as plain
uncontended primitives; a contended one outside a run is a `SchedulerError`, never a real block.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from .sched import (
    _REAL,
    BLOCKED,
    DONE,
    NS,
    SCHED,
    Abandoned,
    SchedulerError,
    Waitlist,
    _get_ident,
    _Task,
    ns_of,
)

_OUTSIDE = object()  # the owner of a primitive taken outside a run


def _creation_site() -> str:
    """`file.py:line` of the first caller outside this module and generated code (a dataclass's
    `__init__` is `<string>`): where gptme made a lock, for what a deadlock names."""
    f: FrameType | None = sys._getframe(2)
    while f is not None and (f.f_code.co_filename == __file__
                             or f.f_code.co_filename.startswith("<")):
        f = f.f_back
    if f is None:
        return "?"
    return f"{f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_lineno}"


class SimLock:
    """`threading.Lock` (and `RLock` with `reentrant`) under the scheduler."""

    _reentrant = False

    def __init__(self) -> None:
        self._owner: object = None    # a _Task, _OUTSIDE, or None
        self._count = 0
        self._waiters = Waitlist(self)
        self._site = _creation_site()
        self.label: str | None = None  # what a deadlock calls it, instead of its creation site

    def acquire(self, blocking: bool = True, timeout: float | None = -1) -> bool:
        s = SCHED
        t = s.by_ident.get(_get_ident()) if s.active else None
        if t is None:
            return self._acquire_outside(blocking)
        if self._reentrant and self._owner is t:
            # Re-entering a lock it holds cannot block and changes nothing another thread sees:
            # no scheduling point (a preemption here equals one at the thread's previous point).
            self._count += 1
            return True
        if t.abandoned:
            if self._owner is None:
                self._take(t)
                return True
            raise Abandoned()
        s._reschedule(t, "acquire")
        if self._owner is None:
            self._owner = t
            self._count = 1
            return True
        deadline = None
        if blocking and timeout is not None and timeout >= 0:
            deadline = s.now_ns + ns_of(timeout)
        while True:
            if self._owner is None:
                self._take(t)
                return True
            if self._reentrant and self._owner is t:
                self._count += 1
                return True
            if not blocking or (deadline is not None and deadline <= s.now_ns):
                return False
            if not s.block(t, self._waiters, deadline, self._describe()):
                if self._owner is None:
                    self._take(t)
                    return True
                return False

    def _take(self, t: _Task) -> None:
        self._owner = t
        self._count = 1

    def _acquire_outside(self, blocking: bool) -> bool:
        if self._owner is None:
            self._owner = _OUTSIDE
            self._count = 1
            return True
        if self._reentrant and self._owner is _OUTSIDE:
            self._count += 1
            return True
        if not blocking:
            return False
        raise SchedulerError(f"{self._describe()} is held ({self._owner!r}) and was acquired "
                             "again outside a simulated run: it would block forever")

    def release(self) -> None:
        s = SCHED
        t = s.by_ident.get(_get_ident()) if s.active else None
        if t is not None and t.abandoned and self._owner is not t:
            return  # unwinding a thread that lost the lock in a wait the run cut short
        if self._owner is None:
            raise RuntimeError("release unlocked lock")
        if self._reentrant and self._owner is not (t if t is not None else _OUTSIDE):
            raise RuntimeError("cannot release un-acquired lock")
        self._count -= 1
        if self._count > 0:
            return
        self._owner = None
        # Every waiter retries; which one gets the lock is the scheduler's choice.
        for w in list(self._waiters):
            s._wake(w, "released")
        if t is not None and not t.abandoned:
            s._reschedule(t, "release")

    def locked(self) -> bool:
        return self._owner is not None

    def _at_fork_reinit(self) -> None:
        # os.register_at_fork callbacks (concurrent.futures, logging) reset locks in a child.
        self._owner = None
        self._count = 0
        self._waiters = Waitlist(self)

    __enter__ = acquire

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    # RLock's private interface, used by the stdlib's Condition on an RLock.
    def _is_owned(self) -> bool:
        t = SCHED.task()
        return self._owner is (t if t is not None else _OUTSIDE)

    def _release_save(self) -> int:
        count = self._count
        self._count = 1
        self.release()
        return count

    def _acquire_restore(self, count: int) -> None:
        self.acquire()
        self._count = count

    def _describe(self) -> str:
        kind = "RLock" if self._reentrant else "Lock"
        # Never the object's address: a deadlock's note is part of the trace, which must be the
        # same in every process. An unlabelled lock is named by where it was created.
        return f"{kind} {self.label or 'from ' + self._site}"

    def __repr__(self) -> str:
        owner = self._owner.name if isinstance(self._owner, _Task) else self._owner
        return f"<sim {self._describe()} owner={owner} count={self._count}>"


class SimRLock(SimLock):
    _reentrant = True


class SimCondition:
    """`threading.Condition(lock)`; the lock is an RLock by default, as in the stdlib."""

    def __init__(self, lock: SimLock | None = None) -> None:
        self._lock = lock if lock is not None else SimRLock()
        self._waiters = Waitlist()
        self.acquire = self._lock.acquire
        self.release = self._lock.release

    def __enter__(self) -> bool:
        return self._lock.__enter__()

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._lock.__exit__(typ, exc, tb)

    def _owned(self, t: _Task | None) -> bool:
        lock = self._lock
        if isinstance(lock, SimLock):
            if lock._reentrant:
                return lock._owner is (t if t is not None else _OUTSIDE)
            return lock._owner is not None
        return True

    def wait(self, timeout: float | None = None) -> bool:
        s = SCHED
        t = s.task()
        if not self._owned(t):
            raise RuntimeError("cannot wait on un-acquired lock")
        if t is None:
            raise SchedulerError("Condition.wait outside a managed thread would block forever")
        lock = self._lock
        count = lock._count if isinstance(lock, SimLock) else 1
        if isinstance(lock, SimLock):
            lock._count = 1
        deadline = None if timeout is None else s.now_ns + ns_of(max(0.0, timeout))
        # Enqueue before releasing, as the stdlib does: a notify between the release and the
        # block must not be lost.
        t.state = BLOCKED
        s._n_runnable -= 1
        t.waitlist = self._waiters
        self._waiters.append(t)
        t.deadline = deadline
        t.woken = None
        t.what = f"Condition on {lock._describe() if isinstance(lock, SimLock) else lock}"
        if t.abandoned:
            raise Abandoned()
        try:
            lock.release()   # a scheduling point: others run (and may notify) from here
            if t.state == BLOCKED:
                s._reschedule(t, "wait")
            notified = t.woken != "timeout"
        finally:
            if not t.abandoned:
                lock.acquire()
                if isinstance(lock, SimLock):
                    lock._count = count
        return notified

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        s = SCHED
        end = None if timeout is None else s.now_ns + ns_of(timeout)
        result = predicate()
        while not result:
            if end is not None:
                left = (end - s.now_ns) / NS
                if left <= 0:
                    break
                self.wait(left)
            else:
                self.wait()
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        t = SCHED.task()
        if not self._owned(t):
            raise RuntimeError("cannot notify on un-acquired lock")
        for w in list(self._waiters)[:n]:
            SCHED._wake(w, "notified")
        SCHED.point("notify")

    def notify_all(self) -> None:
        self.notify(len(self._waiters))

    notifyAll = notify_all


class SimEvent:
    """`threading.Event`."""

    def __init__(self) -> None:
        self._flag = False
        self._waiters = Waitlist()

    def is_set(self) -> bool:
        return self._flag

    isSet = is_set

    def set(self) -> None:
        self._flag = True
        for w in list(self._waiters):
            SCHED._wake(w, "set")
        SCHED.point("event-set")

    def clear(self) -> None:
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        s = SCHED
        t = s.task()
        if t is None:
            if self._flag or (timeout is not None and timeout <= 0):
                return self._flag
            raise SchedulerError("Event.wait outside a managed thread would block forever")
        s._reschedule(t, "event-wait")
        if self._flag:
            return True
        deadline = None if timeout is None else s.now_ns + ns_of(max(0.0, timeout))
        s.block(t, self._waiters, deadline, "Event")
        return self._flag


class SimSemaphore:
    """`threading.Semaphore`."""

    def __init__(self, value: int = 1) -> None:
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        self._cond = SimCondition(SimLock())
        self._value = value

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        with self._cond:
            if not blocking and self._value == 0:
                return False
            if not self._cond.wait_for(lambda: self._value > 0, timeout):
                return False
            self._value -= 1
            return True

    __enter__ = acquire

    def release(self, n: int = 1) -> None:
        with self._cond:
            self._value += n
            self._cond.notify(n)

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


class SimBoundedSemaphore(SimSemaphore):
    """`threading.BoundedSemaphore`."""

    def __init__(self, value: int = 1) -> None:
        super().__init__(value)
        self._initial = value

    def release(self, n: int = 1) -> None:
        with self._cond:
            if self._value + n > self._initial:
                raise ValueError("Semaphore released too many times")
            self._value += n
            self._cond.notify(n)


class SimThread:
    """`threading.Thread` under the scheduler: a real OS thread that runs only with the baton."""

    def __init__(self, group: None = None, target: Callable[..., object] | None = None,
                 name: str | None = None, args: tuple[Any, ...] = (),
                 kwargs: dict[str, Any] | None = None, *, daemon: bool | None = None) -> None:
        SCHED.thread_counter += 1
        self._target = target
        self._args = args
        self._kwargs = kwargs or {}
        self._name = name or f"Thread-{SCHED.thread_counter}"
        self.daemon = bool(daemon)
        self._task: _Task | None = None
        self._started = False

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, v: object) -> None:
        self._name = str(v)

    @property
    def ident(self) -> int | None:
        return self._task.ident if self._task is not None else None

    native_id = ident

    def getName(self) -> str:
        return self._name

    def setName(self, v: object) -> None:
        self._name = str(v)

    def isDaemon(self) -> bool:
        return self.daemon

    def setDaemon(self, v: bool) -> None:
        self.daemon = v

    def run(self) -> None:
        if self._target is not None:
            self._target(*self._args, **self._kwargs)

    def start(self) -> None:
        if self._started:
            raise RuntimeError("threads can only be started once")
        s = SCHED
        t = s.task()
        if t is None:
            raise SchedulerError(f"thread {self._name} started outside a simulated run")
        if t.abandoned:
            raise Abandoned()
        self._started = True
        self._task = s._new_task(self._name, self, self.run)
        s._make_runnable(self._task)
        s._spawn(self._task)
        s._reschedule(t, "start")

    def join(self, timeout: float | None = None) -> None:
        s = SCHED
        t = s.task()
        task = self._task
        if not self._started or task is None:
            raise RuntimeError("cannot join thread before it is started")
        if task is t:
            raise RuntimeError("cannot join current thread")
        if t is None:
            if task.state != DONE:
                raise SchedulerError("join outside a managed thread would block")
            return
        s._reschedule(t, "join")
        if task.state == DONE:
            return
        deadline = None if timeout is None else s.now_ns + ns_of(max(0.0, timeout))
        task.joiners.append(t)
        s.block(t, None, deadline, f"join({self._name})")
        if t in task.joiners:
            task.joiners.remove(t)

    def is_alive(self) -> bool:
        return self._task is not None and self._task.state != DONE

    def __repr__(self) -> str:
        return f"<SimThread {self._name}>"


_RUN_KEY = object()


class SimLocal:
    """`threading.local` under the scheduler: one attribute dict per simulated thread (a pooled
    OS thread serves many), and one for the code outside a run. As the stdlib's pure-Python
    version does, a subclass's `__init__` runs again, with the same arguments, in each thread
    that first touches the object."""

    __slots__ = ("_sim_dicts", "_sim_args", "__weakref__")

    def __new__(cls, *args: Any, **kwargs: Any) -> SimLocal:
        if (args or kwargs) and cls.__init__ is object.__init__:
            raise TypeError("Initialization arguments are not supported")
        self = object.__new__(cls)
        object.__setattr__(self, "_sim_args", (args, kwargs))
        object.__setattr__(self, "_sim_dicts", {_RUN_KEY: SCHED.run_id,
                                                _KEY_OF(): {}})
        return self

    def _sim_dict(self) -> dict[str, Any]:
        key = _KEY_OF()
        dicts: dict[object, Any] = object.__getattribute__(self, "_sim_dicts")
        if dicts.get(_RUN_KEY) != SCHED.run_id:
            # A new run: the threads of earlier runs are gone, and so are their attributes.
            outside = dicts.get(_OUTSIDE)
            dicts.clear()
            dicts[_RUN_KEY] = SCHED.run_id
            if outside is not None:
                dicts[_OUTSIDE] = outside
        d: dict[str, Any] | None = dicts.get(key)
        if d is None:
            d = dicts[key] = {}
            init = type(self).__init__
            if init is not object.__init__:
                args, kwargs = object.__getattribute__(self, "_sim_args")
                init(self, *args, **kwargs)
        return d

    def __getattribute__(self, name: str) -> Any:
        if name in ("_sim_dict", "_sim_dicts", "_sim_args", "__class__"):
            return object.__getattribute__(self, name)
        d = object.__getattribute__(self, "_sim_dict")()
        if name == "__dict__":
            return d
        if name in d:
            return d[name]
        return object.__getattribute__(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__getattribute__(self, "_sim_dict")()[name] = value

    def __delattr__(self, name: str) -> None:
        d = object.__getattribute__(self, "_sim_dict")()
        try:
            del d[name]
        except KeyError:
            raise AttributeError(name) from None


def _KEY_OF() -> object:
    t = SCHED.task()
    return t if t is not None else _OUTSIDE


def current_thread() -> Any:
    """`threading.current_thread()`: the simulated thread calling, or the real one outside."""
    t = SCHED.task()
    if t is not None:
        if t.thread is None:
            t.thread = _MainProxy(t)
        return t.thread
    return _REAL["current_thread"]()


class _MainProxy:
    """What `current_thread()` is in the root thread of a run."""

    def __init__(self, task: _Task) -> None:
        self._task = task
        self.name = task.name
        self.daemon = False
        self.ident = None

    def is_alive(self) -> bool:
        return True


# ---- clocks
