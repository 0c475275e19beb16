"""A deterministic thread scheduler for Python: real threads, one at a time, on a virtual clock.

The code under test (gptme's server and chat loop) runs its threads as real OS threads, but only
the thread holding the scheduler's baton runs; every other one is parked on its own raw lock.
Control passes only at the points where the real code can be preempted in a way that matters:

- `Lock`/`RLock` acquire and release, `Condition.wait`/`notify`/`notify_all`, `Event.wait`/`set`,
  `queue.Queue` (built on these), `Semaphore`;
- `time.sleep` (a timed block on the virtual clock), thread start and join;
- reads of the clock (`time.time`, `time.monotonic`, `time.perf_counter`, their `_ns` forms, and
  `datetime.now`/`utcnow`/`today` where a module imported the class).

At each point the runnable threads are the candidates (the running one first, then the others in
creation order), and which one goes next is `chooser.choose(len(candidates), label)`: a draw from
wakesim's `Choices` over the protocol, or any seeded source behind the same method in tests. A
point with one candidate draws nothing (as the kernel's choices do), and value 0 keeps the running
thread: all zeros is the run with no preemption, the simplest. Re-entering an RLock the thread
holds is no point (it can neither block nor change what another thread sees).

Time never passes while a thread can run. When none can, the clock jumps to the earliest deadline
(a sleep, a timed wait); the threads due then become runnable. No runnable thread and no deadline,
with a thread unfinished, is a deadlock verdict (`Verdict.DEADLOCK`, naming what each thread waits
for); so is a thread blocked on a lock whose holder finished without releasing it. The run also
ends at its horizon (virtual time) or its step budget (scheduling points).

The primitives are `sched_sync` (locks, conditions, events, semaphores, threads,
`threading.local`); the clocks and the process-wide patching are `sched_patch`.

`sched_patch.install()` replaces `threading.Thread`, `Lock`, `RLock`, `Condition`, `Event`, `Semaphore`,
`BoundedSemaphore`, `local` and `current_thread`, and the `time` module's clocks and `sleep`,
process-wide,
before the code under test is imported (dataclass `default_factory=threading.Lock` fields capture
the factory at import). `patch_module(m)` rebinds names a module imported directly (`from time
import time`, `from datetime import datetime`), and `patch_dataclass_factories` the
`default_factory=datetime.now` fields. Outside a run the primitives behave as plain uncontended
ones (module imports, resets between runs); a contended one outside a run is an error, never a
real block.

Between runs, `Scheduler.run` unwinds every thread the run left blocked (it raises `Abandoned`
inside it, so its `finally` blocks release what they hold), so the next run starts with no thread
of the previous one alive. OS threads are pooled and reused (starting one costs more than a run's
switches); each simulated thread still starts with an empty `contextvars` context and its own
`threading.local` attributes, as a new thread does, so a run does not depend on the runs before it
in the process.
"""

from __future__ import annotations

import _thread
import contextvars
import threading as _threading
import time as _time
from collections.abc import Callable
from typing import Any, NoReturn, Protocol

# The originals, for the scheduler's own use and for `uninstall`.
_REAL: dict[str, Any] = {
    "Thread": _threading.Thread, "Lock": _threading.Lock, "RLock": _threading.RLock,
    "Condition": _threading.Condition, "Event": _threading.Event,
    "Semaphore": _threading.Semaphore, "BoundedSemaphore": _threading.BoundedSemaphore,
    "current_thread": _threading.current_thread, "currentThread": _threading.currentThread,
    "local": _threading.local,
}
_REAL_TIME: dict[str, Callable[..., Any]] = {
    n: getattr(_time, n) for n in ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter",
                                   "perf_counter_ns", "sleep")}
_get_ident = _thread.get_ident
_allocate = _thread.allocate_lock

# time.time() is this epoch plus virtual time: realistic, and the same in every run.
EPOCH_S = 1767225600  # 2026-01-01T00:00:00Z
NS = 1_000_000_000

NEW, RUNNABLE, BLOCKED, DONE = "new", "runnable", "blocked", "done"


class Abandoned(BaseException):
    """Raised inside a thread its run left behind, to unwind it (a BaseException: gptme's
    `except Exception` blocks do not swallow it)."""


class SchedulerError(Exception):
    """The scheduler was used in a way it cannot honour (a contended lock outside a run)."""


class Verdict:
    """How a run ended (`Outcome.verdict`)."""

    QUIET = "quiet"          # every thread finished
    HORIZON = "horizon"      # virtual time reached the horizon with threads still waiting
    STEPS = "steps"          # the step budget (scheduling points) ran out
    DEADLOCK = "deadlock"    # no thread can ever run again, or one waits on a dead holder
    ERROR = "error"          # the root function raised


class Outcome:
    """What `Scheduler.run` returns: how the run ended, when, after how many points."""

    def __init__(self, verdict: str, now_ns: int, points: int, detail: str = "",
                 error: BaseException | None = None,
                 errors: list[tuple[str, BaseException]] | tuple[()] = (), stuck: int = 0) -> None:
        self.verdict = verdict
        self.stuck = stuck          # a deadlock's threads that can never run again
        self.now_ns = now_ns
        self.points = points
        self.detail = detail
        self.error = error          # the root's exception
        self.errors = list(errors)  # uncaught exceptions of other threads: (name, exception)
        self.result: Any = None     # the root function's return value

    @property
    def now_ms(self) -> int:
        return self.now_ns // 1_000_000

    def __repr__(self) -> str:
        return f"Outcome({self.verdict}, t={self.now_ms} ms, points={self.points}, {self.detail!r})"


class Chooser(Protocol):
    """What draws the next thread at a scheduling point: wakesim's `Choices` over the protocol,
    or a seeded source."""

    def choose(self, bound: int, label: str) -> int: ...


class SeededChooser:
    """A seeded source behind the `choose` interface, for runs without wakesim."""

    def __init__(self, seed: int) -> None:
        import random
        self._rng = random.Random(seed)
        self.log: list[tuple[int, int, str]] = []

    def choose(self, bound: int, label: str) -> int:
        v = self._rng.randrange(bound)
        self.log.append((v, bound, label))
        return v


class FirstChooser:
    """Always the first candidate: the simplest run."""

    def choose(self, bound: int, label: str) -> int:
        return 0


class _Task:
    __slots__ = ("id", "name", "thread", "fn", "state", "baton", "waitlist", "deadline",
                 "woken", "what", "abandoned", "joiners", "ident", "ran")

    def __init__(self, tid: int, name: str, thread: Any, fn: Callable[[], object]) -> None:
        self.id = tid
        self.name = name
        self.thread = thread      # its SimThread, or what `current_thread()` made for the root
        self.fn = fn
        self.state = NEW
        self.baton = _allocate()
        self.baton.acquire()
        self.waitlist: Waitlist | None = None
        self.deadline: int | None = None
        self.woken: str | None = None
        self.what = ""
        self.abandoned = False
        self.joiners: list[_Task] = []
        self.ident: int | None = None
        self.ran = False

    def __repr__(self) -> str:
        return f"<task {self.id} {self.name} {self.state}>"


class _Ended(BaseException):
    """Internal: the run ended while this thread waited; park it until it is abandoned."""


class Held(Protocol):
    """A lock as the scheduler sees it: who holds it (a task, the outside marker, or None)."""

    _owner: object


class Waitlist(list[_Task]):
    """Threads waiting on one primitive, in arrival order; `lock` names the lock, if any."""
    __slots__ = ("lock",)

    def __init__(self, lock: Held | None = None) -> None:
        super().__init__()
        self.lock = lock


class _Worker:
    """A pooled OS thread: parked on `wake` until it is handed a task."""
    __slots__ = ("task", "wake")

    def __init__(self, task: _Task) -> None:
        self.wake = _allocate()
        self.wake.acquire()
        self.task: _Task | None = task


End = tuple[str, str, BaseException | None, int]   # verdict, detail, the root's error, stuck


class Scheduler:
    """One process-wide scheduler; `run(fn)` runs `fn` as the root thread of one run."""

    def __init__(self) -> None:
        self.active = False
        self.now_ns = 0
        self.chooser: Chooser = FirstChooser()
        self.tasks: list[_Task] = []
        self.by_ident: dict[int, _Task] = {}
        self.current: _Task | None = None
        self.points = 0
        self.steps_max = 1_000_000
        self.horizon_ns: int | None = None
        # A list to log the schedule into (ms, kind, running thread, next thread), or None.
        self.record: list[tuple[int, str, str, str]] | None = None
        # A hook called at each scheduling point (tests).
        self.on_point: Callable[[Scheduler, _Task, str], None] | None = None
        self._controller = _allocate()
        self._controller.acquire()
        self._end: End | None = None
        self._errors: list[tuple[str, BaseException]] = []
        self._n_runnable = 0
        self._idle: list[_Worker] = []
        self.run_id = 0
        # Thread names are per run: Thread-1 is the run's first (`sched_sync.SimThread`).
        self.thread_counter = 0

    # ---- the run

    def run(self, fn: Callable[[], object], chooser: Chooser, *, horizon_ms: int | None = None,
            steps_max: int = 1_000_000, start_ns: int = 0, name: str = "main",
            record: list[tuple[int, str, str, str]] | None = None) -> Outcome:
        """Run `fn` on a new managed thread until the run ends; returns an `Outcome`.

        `fn`'s return value is `Outcome.result`. Threads left blocked are unwound before this
        returns."""
        if self.active:
            raise SchedulerError("a run is already active")
        self.active = True
        self.chooser = chooser
        self.now_ns = start_ns
        self.tasks = []
        self.by_ident = {}
        self.points = 0
        self.steps_max = steps_max
        self.horizon_ns = None if horizon_ms is None else horizon_ms * 1_000_000
        self.record = record
        self._end = None
        self._errors = []
        self._n_runnable = 0
        self.thread_counter = 0
        self.run_id += 1
        result: dict[str, object] = {}

        def root() -> None:
            result["value"] = fn()

        task = self._new_task(name, None, root)
        self._make_runnable(task)
        self._spawn(task)
        self.current = task
        task.baton.release()
        self._controller.acquire()   # until the run ends
        end = self._end
        assert end is not None, "the controller resumes only once the run ended"
        try:
            self._abandon_all()
        finally:
            self.active = False
            self.current = None
        verdict, detail, error, stuck = end
        out = Outcome(verdict, self.now_ns, self.points, detail, error, self._errors, stuck)
        out.result = result.get("value")
        return out

    def _new_task(self, name: str, thread: Any, fn: Callable[[], object]) -> _Task:
        t = _Task(len(self.tasks), name, thread, fn)
        self.tasks.append(t)
        return t

    def _spawn(self, task: _Task) -> None:
        # OS threads are reused across tasks and runs: starting one costs more than a run's
        # switches. A parked worker takes the task; otherwise a new one starts.
        if self._idle:
            worker = self._idle.pop()
            worker.task = task
            worker.wake.release()
        else:
            _thread.start_new_thread(self._worker, (_Worker(task),))

    def _worker(self, worker: _Worker) -> None:
        while True:
            task = worker.task
            assert task is not None, "a worker is woken only with a task"
            worker.task = None
            self._body(task, worker)
            worker.wake.acquire()

    def _body(self, task: _Task, worker: _Worker | None = None) -> None:
        task.ident = _get_ident()
        self.by_ident[task.ident] = task
        task.baton.acquire()
        failed: BaseException | None = None
        try:
            if not task.abandoned:
                task.ran = True
                # A new thread starts with an empty context, whatever the pooled OS thread's
                # previous task set in its own (contextvars, as Python gives a new thread).
                contextvars.Context().run(task.fn)
        except (Abandoned, _Ended):
            pass
        except BaseException as e:  # noqa: BLE001 (reported, never lost)
            failed = e
        self.by_ident.pop(task.ident, None)
        if task.abandoned:
            task.state = DONE
            if worker is not None:
                self._idle.append(worker)
            self._controller.release()
            return
        if failed is not None:
            if task.id == 0:
                self._finish((Verdict.ERROR, f"the root thread raised {failed!r}", failed, 0))
            else:
                self._errors.append((task.name, failed))
        if self._end is not None:
            # The run already ended (the root failed): hand back to the controller.
            if task.state != DONE:
                self._set_done(task)
            if worker is not None:
                self._idle.append(worker)
            if self.current is task:
                self.current = None
                self._controller.release()
            return
        self._set_done(task)
        # Parked for reuse before the hand-over: the next thread started may take this worker.
        # (Its wake lock may be released before it blocks on it; a lock allows that.)
        if worker is not None:
            self._idle.append(worker)
            worker = None
        try:
            self._reschedule(task, "exit")
        except _Ended:
            pass

    def _set_done(self, task: _Task) -> None:
        if task.state == RUNNABLE:
            self._n_runnable -= 1
        task.state = DONE
        for j in task.joiners:
            self._wake(j, "joined")
        task.joiners = []

    def _finish(self, end: End) -> None:
        if self._end is None:
            self._end = end

    def _abandon_all(self) -> None:
        # Unwind every thread still parked, one at a time, newest first: each raises Abandoned
        # at its parking point and runs its finally blocks (lock releases cannot switch now).
        for task in reversed(self.tasks):
            if task.state == DONE:
                continue
            task.abandoned = True
            if task.waitlist is not None:
                try:
                    task.waitlist.remove(task)
                except ValueError:
                    pass
                task.waitlist = None
            self.current = task
            task.baton.release()
            self._controller.acquire()

    # ---- scheduling

    @property
    def ended(self) -> bool:
        """The run is over (a deadlock, the horizon, the budget) and its threads are being
        unwound: what they do now (finally blocks) is not part of the run."""
        return self.active and self._end is not None

    def task(self) -> _Task | None:
        """The managed thread calling, or None (outside a run, or a foreign thread)."""
        if not self.active:
            return None
        return self.by_ident.get(_get_ident())

    def _make_runnable(self, task: _Task) -> None:
        if task.state != RUNNABLE:
            task.state = RUNNABLE
            self._n_runnable += 1

    def _wake(self, task: _Task, why: str) -> None:
        if task.state != BLOCKED:
            return
        if task.waitlist is not None:
            try:
                task.waitlist.remove(task)
            except ValueError:
                pass
            task.waitlist = None
        task.deadline = None
        task.woken = why
        self._make_runnable(task)

    def point(self, kind: str) -> None:
        """A scheduling point of the running thread: maybe another runnable thread goes first."""
        if not self.active:
            return
        t = self.by_ident.get(_get_ident())
        if t is None or t.abandoned:
            return
        self._reschedule(t, kind)

    def block(self, t: _Task, waitlist: Waitlist | None, deadline_ns: int | None,
              what: str) -> bool:
        """Park `t` on `waitlist` until woken (True) or its deadline passes (False)."""
        if t.abandoned:
            raise Abandoned()
        t.state = BLOCKED
        self._n_runnable -= 1
        t.waitlist = waitlist
        if waitlist is not None:
            waitlist.append(t)
        t.deadline = deadline_ns
        t.woken = None
        t.what = what
        self._reschedule(t, "block")
        return t.woken != "timeout"

    def _reschedule(self, cur: _Task, kind: str) -> None:
        self.points += 1
        if self._n_runnable == 1 and cur.state is RUNNABLE and self.on_point is None and \
                self.record is None and self.points <= self.steps_max:
            # The running thread is the only one that can run, and nothing watches: it goes on
            # (what the general path below decides too, drawing nothing).
            return
        if self.on_point is not None:
            self.on_point(self, cur, kind)
        if self.points > self.steps_max:
            self._finish((Verdict.STEPS, f"{self.steps_max} scheduling points", None, 0))
            self._park(cur)
        if self._n_runnable == 0 and not self._advance():
            self._park(cur)
        if self._n_runnable == 1 and cur.state == RUNNABLE:
            nxt = cur
        else:
            # The running thread first, then the others in creation order: value 0 is "no
            # preemption", the simplest run shrinking and exploration head for.
            cands = [x for x in self.tasks if x.state == RUNNABLE and x is not cur]
            if cur.state == RUNNABLE:
                cands.insert(0, cur)
            if len(cands) == 1:
                nxt = cands[0]
            else:
                nxt = cands[self.chooser.choose(len(cands), "py.thread." + kind)]
        if self.record is not None:
            self.record.append((self.now_ns // 1_000_000, kind, cur.name, nxt.name))
        if nxt is not cur:
            self.current = nxt
            nxt.baton.release()
            if cur.state == DONE:
                return
            cur.baton.acquire()
            if cur.abandoned:
                raise Abandoned()
            if self._end is not None:
                raise _Ended()

    def _advance(self) -> bool:
        """No thread can run: jump the clock to the earliest deadline. False when the run is
        over (nothing timed left: quiet or deadlock; or the horizon passed)."""
        timed = [x for x in self.tasks if x.state == BLOCKED and x.deadline is not None]
        if not timed:
            waiting = [x for x in self.tasks if x.state in (BLOCKED, NEW)]
            if waiting:
                self._finish((Verdict.DEADLOCK, "every thread is blocked: " + "; ".join(
                    f"{x.name} waits for {x.what}" for x in waiting), None, len(waiting)))
            else:
                self._finish((Verdict.QUIET, "", None, 0))
            return False
        d = min(x.deadline for x in timed if x.deadline is not None)
        if self.horizon_ns is not None and d > self.horizon_ns:
            self.now_ns = max(self.now_ns, self.horizon_ns)
            dead = self._dead_holders()
            if dead:
                self._finish((Verdict.DEADLOCK, "; ".join(dead), None, len(dead)))
            else:
                self._finish((Verdict.HORIZON, "", None, 0))
            return False
        self.now_ns = max(self.now_ns, d)
        for x in timed:
            if x.deadline == d:
                self._wake(x, "timeout")
        return True

    def _dead_holders(self) -> list[str]:
        out = []
        for x in self.tasks:
            lock = x.waitlist.lock if x.state == BLOCKED and x.waitlist is not None else None
            owner = lock._owner if lock is not None else None
            if isinstance(owner, _Task) and owner.state == DONE:
                out.append(f"{x.name} waits for {x.what}, held by {owner.name}, which ended")
        return out

    def _park(self, cur: _Task) -> NoReturn:
        """The run is over: give control back to the controller, wait to be unwound."""
        self.current = None
        self._controller.release()
        if cur.state == DONE:
            raise _Ended()
        cur.baton.acquire()
        raise Abandoned()

    # ---- time

    def sleep(self, seconds: float) -> None:
        t = self.task()
        if t is None:
            if seconds > 0 and self.active:
                raise SchedulerError("time.sleep outside a managed thread during a run")
            return
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        ns = ns_of(seconds)
        if ns == 0:
            self.point("sleep")
        else:
            self.block(t, None, self.now_ns + ns, f"sleep({seconds})")

    def read_clock(self) -> int:
        if self.active:
            t = self.by_ident.get(_get_ident())
            if t is not None and not t.abandoned:
                self._reschedule(t, "clock")
        return self.now_ns


def ns_of(seconds: float) -> int:
    """Seconds as whole virtual nanoseconds, never negative."""
    return max(0, round(seconds * NS))


SCHED = Scheduler()


