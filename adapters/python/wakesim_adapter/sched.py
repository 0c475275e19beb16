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

`install()` replaces `threading.Thread`, `Lock`, `RLock`, `Condition`, `Event`, `Semaphore`,
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

import _thread
import contextvars
import datetime as _datetime
import sys
import threading as _threading
import time as _time

# The originals, for the scheduler's own use and for `uninstall`.
_REAL = {
    "Thread": _threading.Thread, "Lock": _threading.Lock, "RLock": _threading.RLock,
    "Condition": _threading.Condition, "Event": _threading.Event,
    "Semaphore": _threading.Semaphore, "BoundedSemaphore": _threading.BoundedSemaphore,
    "current_thread": _threading.current_thread, "currentThread": _threading.currentThread,
    "local": _threading.local,
}
_REAL_TIME = {n: getattr(_time, n) for n in ("time", "time_ns", "monotonic", "monotonic_ns",
                                             "perf_counter", "perf_counter_ns", "sleep")}
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
    QUIET = "quiet"          # every thread finished
    HORIZON = "horizon"      # virtual time reached the horizon with threads still waiting
    STEPS = "steps"          # the step budget (scheduling points) ran out
    DEADLOCK = "deadlock"    # no thread can ever run again, or one waits on a dead holder
    ERROR = "error"          # the root function raised


class Outcome:
    def __init__(self, verdict, now_ns, points, detail="", error=None, errors=(), stuck=0):
        self.verdict = verdict
        self.stuck = stuck          # a deadlock's threads that can never run again
        self.now_ns = now_ns
        self.points = points
        self.detail = detail
        self.error = error          # the root's exception
        self.errors = list(errors)  # uncaught exceptions of other threads: (name, exception)

    @property
    def now_ms(self):
        return self.now_ns // 1_000_000

    def __repr__(self):
        return f"Outcome({self.verdict}, t={self.now_ms} ms, points={self.points}, {self.detail!r})"


class SeededChooser:
    """A seeded source behind the `choose` interface, for runs without wakesim."""

    def __init__(self, seed):
        import random
        self._rng = random.Random(seed)
        self.log = []

    def choose(self, bound, label):
        v = self._rng.randrange(bound)
        self.log.append((v, bound, label))
        return v


class FirstChooser:
    """Always the first candidate: the simplest run."""

    def choose(self, bound, label):
        return 0


class _Task:
    __slots__ = ("id", "name", "thread", "fn", "state", "baton", "waitlist", "deadline",
                 "woken", "what", "abandoned", "joiners", "ident", "ran")

    def __init__(self, tid, name, thread, fn):
        self.id = tid
        self.name = name
        self.thread = thread
        self.fn = fn
        self.state = NEW
        self.baton = _allocate()
        self.baton.acquire()
        self.waitlist = None
        self.deadline = None
        self.woken = None
        self.what = ""
        self.abandoned = False
        self.joiners = []
        self.ident = None
        self.ran = False

    def __repr__(self):
        return f"<task {self.id} {self.name} {self.state}>"


class _Ended(BaseException):
    """Internal: the run ended while this thread waited; park it until it is abandoned."""


class Scheduler:
    """One process-wide scheduler; `run(fn)` runs `fn` as the root thread of one run."""

    def __init__(self):
        self.active = False
        self.now_ns = 0
        self.chooser = FirstChooser()
        self.tasks = []
        self.by_ident = {}
        self.current = None
        self.points = 0
        self.steps_max = 1_000_000
        self.horizon_ns = None
        self.record = None         # a list to log the schedule into, or None
        self.on_point = None       # a hook called at each scheduling point (tests)
        self._controller = _allocate()
        self._controller.acquire()
        self._end = None
        self._errors = []
        self._n_runnable = 0
        self._idle = []
        self.run_id = 0

    # ---- the run

    def run(self, fn, chooser, *, horizon_ms=None, steps_max=1_000_000, start_ns=0,
            name="main", record=None):
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
        SimThread._counter = 0  # thread names are per run: Thread-1 is the run's first
        self.run_id += 1
        result = {}

        def root():
            result["value"] = fn()

        task = self._new_task(name, None, root)
        self._make_runnable(task)
        self._spawn(task)
        self.current = task
        task.baton.release()
        self._controller.acquire()   # until the run ends
        end = self._end
        try:
            self._abandon_all()
        finally:
            self.active = False
            self.current = None
        verdict, detail, error = end[:3]
        stuck = end[3] if len(end) > 3 else 0
        out = Outcome(verdict, self.now_ns, self.points, detail, error, self._errors, stuck)
        out.result = result.get("value")
        return out

    def _new_task(self, name, thread, fn):
        t = _Task(len(self.tasks), name, thread, fn)
        self.tasks.append(t)
        return t

    def _spawn(self, task):
        # OS threads are reused across tasks and runs: starting one costs more than a run's
        # switches. A parked worker takes the task; otherwise a new one starts.
        if self._idle:
            worker = self._idle.pop()
            worker[1] = task
            worker[0].release()
        else:
            worker = [_allocate(), task]
            worker[0].acquire()
            _thread.start_new_thread(self._worker, (worker,))

    def _worker(self, worker):
        while True:
            task = worker[1]
            worker[1] = None
            self._body(task, worker)
            worker[0].acquire()

    def _body(self, task, worker=None):
        task.ident = _get_ident()
        self.by_ident[task.ident] = task
        task.baton.acquire()
        failed = None
        try:
            if not task.abandoned:
                task.ran = True
                # A new thread starts with an empty context, whatever the pooled OS thread's
                # previous task set in its own (contextvars, as Python gives a new thread).
                contextvars.Context().run(task.fn)
        except (Abandoned, _Ended):
            pass
        except BaseException as e:  # noqa: BLE001: reported, never lost
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
                self._finish((Verdict.ERROR, f"the root thread raised {failed!r}", failed))
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

    def _set_done(self, task):
        if task.state == RUNNABLE:
            self._n_runnable -= 1
        task.state = DONE
        for j in task.joiners:
            self._wake(j, "joined")
        task.joiners = []

    def _finish(self, end):
        if self._end is None:
            self._end = end

    def _abandon_all(self):
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
    def ended(self):
        """The run is over (a deadlock, the horizon, the budget) and its threads are being
        unwound: what they do now (finally blocks) is not part of the run."""
        return self.active and self._end is not None

    def task(self):
        """The managed thread calling, or None (outside a run, or a foreign thread)."""
        if not self.active:
            return None
        return self.by_ident.get(_get_ident())

    def _make_runnable(self, task):
        if task.state != RUNNABLE:
            task.state = RUNNABLE
            self._n_runnable += 1

    def _wake(self, task, why):
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

    def point(self, kind):
        """A scheduling point of the running thread: maybe another runnable thread goes first."""
        if not self.active:
            return
        t = self.by_ident.get(_get_ident())
        if t is None or t.abandoned:
            return
        self._reschedule(t, kind)

    def block(self, t, waitlist, deadline_ns, what):
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

    def _reschedule(self, cur, kind):
        self.points += 1
        if self._n_runnable == 1 and cur.state is RUNNABLE and self.on_point is None and \
                self.record is None and self.points <= self.steps_max:
            # The running thread is the only one that can run, and nothing watches: it goes on
            # (what the general path below decides too, drawing nothing).
            return
        if self.on_point is not None:
            self.on_point(self, cur, kind)
        if self.points > self.steps_max:
            self._finish((Verdict.STEPS, f"{self.steps_max} scheduling points", None))
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

    def _advance(self):
        """No thread can run: jump the clock to the earliest deadline. False when the run is
        over (nothing timed left: quiet or deadlock; or the horizon passed)."""
        timed = [x for x in self.tasks if x.state == BLOCKED and x.deadline is not None]
        if not timed:
            waiting = [x for x in self.tasks if x.state in (BLOCKED, NEW)]
            if waiting:
                self._finish((Verdict.DEADLOCK, "every thread is blocked: " + "; ".join(
                    f"{x.name} waits for {x.what}" for x in waiting), None, len(waiting)))
            else:
                self._finish((Verdict.QUIET, "", None))
            return False
        d = min(x.deadline for x in timed)
        if self.horizon_ns is not None and d > self.horizon_ns:
            self.now_ns = max(self.now_ns, self.horizon_ns)
            dead = self._dead_holders()
            if dead:
                self._finish((Verdict.DEADLOCK, "; ".join(dead), None, len(dead)))
            else:
                self._finish((Verdict.HORIZON, "", None))
            return False
        self.now_ns = max(self.now_ns, d)
        for x in timed:
            if x.deadline == d:
                self._wake(x, "timeout")
        return True

    def _dead_holders(self):
        out = []
        for x in self.tasks:
            lock = getattr(x.waitlist, "lock", None) if x.state == BLOCKED else None
            if lock is not None and isinstance(lock._owner, _Task) and lock._owner.state == DONE:
                out.append(f"{x.name} waits for {x.what}, held by {lock._owner.name}, which ended")
        return out

    def _park(self, cur):
        """The run is over: give control back to the controller, wait to be unwound."""
        self.current = None
        self._controller.release()
        if cur.state == DONE:
            raise _Ended()
        cur.baton.acquire()
        raise Abandoned()

    # ---- time

    def sleep(self, seconds):
        t = self.task()
        if t is None:
            if seconds > 0 and self.active:
                raise SchedulerError("time.sleep outside a managed thread during a run")
            return
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        ns = _ns(seconds)
        if ns == 0:
            self.point("sleep")
        else:
            self.block(t, None, self.now_ns + ns, f"sleep({seconds})")

    def read_clock(self):
        if self.active:
            t = self.by_ident.get(_get_ident())
            if t is not None and not t.abandoned:
                self._reschedule(t, "clock")
        return self.now_ns


def _ns(seconds):
    return max(0, round(seconds * NS))


SCHED = Scheduler()


# ---- primitives

_OUTSIDE = object()  # the owner of a primitive taken outside a run


class _Waitlist(list):
    """Threads waiting on one primitive, in arrival order; `lock` names the lock, if any."""
    __slots__ = ("lock",)

    def __init__(self, lock=None):
        super().__init__()
        self.lock = lock


def _creation_site():
    """`file.py:line` of the first caller outside this module and generated code (a dataclass's
    `__init__` is `<string>`): where gptme made a lock, for what a deadlock names."""
    f = sys._getframe(2)
    while f is not None and (f.f_code.co_filename == __file__
                             or f.f_code.co_filename.startswith("<")):
        f = f.f_back
    if f is None:
        return "?"
    return f"{f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_lineno}"


class SimLock:
    """`threading.Lock` (and `RLock` with `reentrant`) under the scheduler."""

    _reentrant = False

    def __init__(self):
        self._owner = None
        self._count = 0
        self._waiters = _Waitlist(self)
        self._site = _creation_site()

    def acquire(self, blocking=True, timeout=-1):
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
            deadline = s.now_ns + _ns(timeout)
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

    def _take(self, t):
        self._owner = t
        self._count = 1

    def _acquire_outside(self, blocking):
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

    def release(self):
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

    def locked(self):
        return self._owner is not None

    def _at_fork_reinit(self):
        # os.register_at_fork callbacks (concurrent.futures, logging) reset locks in a child.
        self._owner = None
        self._count = 0
        self._waiters = _Waitlist(self)

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()

    # RLock's private interface, used by the stdlib's Condition on an RLock.
    def _is_owned(self):
        t = SCHED.task()
        return self._owner is (t if t is not None else _OUTSIDE)

    def _release_save(self):
        count = self._count
        self._count = 1
        self.release()
        return count

    def _acquire_restore(self, count):
        self.acquire()
        self._count = count

    def _describe(self):
        kind = "RLock" if self._reentrant else "Lock"
        # Never the object's address: a deadlock's note is part of the trace, which must be the
        # same in every process. An unlabelled lock is named by where it was created.
        return f"{kind} {getattr(self, 'label', None) or 'from ' + self._site}"

    def __repr__(self):
        owner = self._owner.name if isinstance(self._owner, _Task) else self._owner
        return f"<sim {self._describe()} owner={owner} count={self._count}>"


class SimRLock(SimLock):
    _reentrant = True


class SimCondition:
    """`threading.Condition(lock)`; the lock is an RLock by default, as in the stdlib."""

    def __init__(self, lock=None):
        self._lock = lock if lock is not None else SimRLock()
        self._waiters = _Waitlist()
        self.acquire = self._lock.acquire
        self.release = self._lock.release

    def __enter__(self):
        return self._lock.__enter__()

    def __exit__(self, *exc):
        return self._lock.__exit__(*exc)

    def _owned(self, t):
        lock = self._lock
        if isinstance(lock, SimLock):
            if lock._reentrant:
                return lock._owner is (t if t is not None else _OUTSIDE)
            return lock._owner is not None
        return True

    def wait(self, timeout=None):
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
        deadline = None if timeout is None else s.now_ns + _ns(max(0.0, timeout))
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

    def wait_for(self, predicate, timeout=None):
        s = SCHED
        end = None if timeout is None else s.now_ns + _ns(timeout)
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

    def notify(self, n=1):
        t = SCHED.task()
        if not self._owned(t):
            raise RuntimeError("cannot notify on un-acquired lock")
        for w in list(self._waiters)[:n]:
            SCHED._wake(w, "notified")
        SCHED.point("notify")

    def notify_all(self):
        self.notify(len(self._waiters))

    notifyAll = notify_all


class SimEvent:
    def __init__(self):
        self._flag = False
        self._waiters = _Waitlist()

    def is_set(self):
        return self._flag

    isSet = is_set

    def set(self):
        self._flag = True
        for w in list(self._waiters):
            SCHED._wake(w, "set")
        SCHED.point("event-set")

    def clear(self):
        self._flag = False

    def wait(self, timeout=None):
        s = SCHED
        t = s.task()
        if t is None:
            if self._flag or (timeout is not None and timeout <= 0):
                return self._flag
            raise SchedulerError("Event.wait outside a managed thread would block forever")
        s._reschedule(t, "event-wait")
        if self._flag:
            return True
        deadline = None if timeout is None else s.now_ns + _ns(max(0.0, timeout))
        s.block(t, self._waiters, deadline, "Event")
        return self._flag


class SimSemaphore:
    def __init__(self, value=1):
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        self._cond = SimCondition(SimLock())
        self._value = value

    def acquire(self, blocking=True, timeout=None):
        with self._cond:
            if not blocking and self._value == 0:
                return False
            if not self._cond.wait_for(lambda: self._value > 0, timeout):
                return False
            self._value -= 1
            return True

    __enter__ = acquire

    def release(self, n=1):
        with self._cond:
            self._value += n
            self._cond.notify(n)

    def __exit__(self, *exc):
        self.release()


class SimBoundedSemaphore(SimSemaphore):
    def __init__(self, value=1):
        super().__init__(value)
        self._initial = value

    def release(self, n=1):
        with self._cond:
            if self._value + n > self._initial:
                raise ValueError("Semaphore released too many times")
            self._value += n
            self._cond.notify(n)


class SimThread:
    """`threading.Thread` under the scheduler: a real OS thread that runs only with the baton."""

    _counter = 0

    def __init__(self, group=None, target=None, name=None, args=(), kwargs=None, *, daemon=None):
        SimThread._counter += 1
        self._target = target
        self._args = args
        self._kwargs = kwargs or {}
        self._name = name or f"Thread-{SimThread._counter}"
        self.daemon = bool(daemon)
        self._task = None
        self._started = False

    @property
    def name(self):
        return self._name

    @name.setter
    def name(self, v):
        self._name = str(v)

    @property
    def ident(self):
        return self._task.ident if self._task is not None else None

    native_id = ident

    def getName(self):
        return self._name

    def setName(self, v):
        self._name = str(v)

    def isDaemon(self):
        return self.daemon

    def setDaemon(self, v):
        self.daemon = v

    def run(self):
        if self._target is not None:
            self._target(*self._args, **self._kwargs)

    def start(self):
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

    def join(self, timeout=None):
        s = SCHED
        t = s.task()
        if not self._started:
            raise RuntimeError("cannot join thread before it is started")
        if self._task is t:
            raise RuntimeError("cannot join current thread")
        if t is None:
            if self._task.state != DONE:
                raise SchedulerError("join outside a managed thread would block")
            return
        s._reschedule(t, "join")
        if self._task.state == DONE:
            return
        deadline = None if timeout is None else s.now_ns + _ns(max(0.0, timeout))
        self._task.joiners.append(t)
        s.block(t, None, deadline, f"join({self._name})")
        if t in self._task.joiners:
            self._task.joiners.remove(t)

    def is_alive(self):
        return self._task is not None and self._task.state != DONE

    def __repr__(self):
        return f"<SimThread {self._name}>"


_RUN_KEY = object()


class SimLocal:
    """`threading.local` under the scheduler: one attribute dict per simulated thread (a pooled
    OS thread serves many), and one for the code outside a run. As the stdlib's pure-Python
    version does, a subclass's `__init__` runs again, with the same arguments, in each thread
    that first touches the object."""

    __slots__ = ("_sim_dicts", "_sim_args", "__weakref__")

    def __new__(cls, *args, **kwargs):
        if (args or kwargs) and cls.__init__ is object.__init__:
            raise TypeError("Initialization arguments are not supported")
        self = object.__new__(cls)
        object.__setattr__(self, "_sim_args", (args, kwargs))
        object.__setattr__(self, "_sim_dicts", {_RUN_KEY: SCHED.run_id,
                                                _KEY_OF(): {}})
        return self

    def _sim_dict(self):
        key = _KEY_OF()
        dicts = object.__getattribute__(self, "_sim_dicts")
        if dicts.get(_RUN_KEY) != SCHED.run_id:
            # A new run: the threads of earlier runs are gone, and so are their attributes.
            outside = dicts.get(_OUTSIDE)
            dicts.clear()
            dicts[_RUN_KEY] = SCHED.run_id
            if outside is not None:
                dicts[_OUTSIDE] = outside
        d = dicts.get(key)
        if d is None:
            d = dicts[key] = {}
            init = type(self).__init__
            if init is not object.__init__:
                args, kwargs = object.__getattribute__(self, "_sim_args")
                init(self, *args, **kwargs)
        return d

    def __getattribute__(self, name):
        if name in ("_sim_dict", "_sim_dicts", "_sim_args", "__class__"):
            return object.__getattribute__(self, name)
        d = object.__getattribute__(self, "_sim_dict")()
        if name == "__dict__":
            return d
        if name in d:
            return d[name]
        return object.__getattribute__(self, name)

    def __setattr__(self, name, value):
        object.__getattribute__(self, "_sim_dict")()[name] = value

    def __delattr__(self, name):
        d = object.__getattribute__(self, "_sim_dict")()
        try:
            del d[name]
        except KeyError:
            raise AttributeError(name) from None


def _KEY_OF():
    t = SCHED.task()
    return t if t is not None else _OUTSIDE


def current_thread():
    t = SCHED.task()
    if t is not None:
        if t.thread is None:
            t.thread = _MainProxy(t)
        return t.thread
    return _REAL["current_thread"]()


class _MainProxy:
    """What `current_thread()` is in the root thread of a run."""

    def __init__(self, task):
        self._task = task
        self.name = task.name
        self.daemon = False
        self.ident = None

    def is_alive(self):
        return True


# ---- clocks


def _vtime():
    return EPOCH_S + SCHED.read_clock() / NS


def _time_ns():
    return EPOCH_S * NS + SCHED.read_clock()


def _monotonic():
    return SCHED.read_clock() / NS


def _monotonic_ns():
    return SCHED.read_clock()


def _sleep(seconds):
    SCHED.sleep(seconds)


class SimDatetime(_datetime.datetime):
    """`datetime.datetime` whose `now`/`utcnow`/`today` read the virtual clock."""

    @classmethod
    def now(cls, tz=None):
        return cls.fromtimestamp(_vtime(), tz)

    @classmethod
    def utcnow(cls):
        return cls.fromtimestamp(_vtime(), _datetime.timezone.utc).replace(tzinfo=None)

    @classmethod
    def today(cls):
        return cls.now()


_CLOCKS = {"time": _vtime, "time_ns": _time_ns, "monotonic": _monotonic,
           "monotonic_ns": _monotonic_ns, "perf_counter": _monotonic,
           "perf_counter_ns": _monotonic_ns, "sleep": _sleep}

_PRIMITIVES = {"Thread": SimThread, "Lock": SimLock, "RLock": SimRLock, "local": SimLocal,
               "Condition": SimCondition, "Event": SimEvent, "Semaphore": SimSemaphore,
               "BoundedSemaphore": SimBoundedSemaphore, "current_thread": current_thread,
               "currentThread": current_thread}

_installed = False


def install():
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


def uninstall():
    global _installed
    for name, value in _REAL.items():
        setattr(_threading, name, value)
    for name, value in _REAL_TIME.items():
        setattr(_time, name, value)
    _installed = False


_BY_REAL = None


def patch_module(module):
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


_FACTORIES = None


def patch_dataclass_factories(cls):
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
    init = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    if code is None or not init.__closure__:
        return 0
    n = 0
    for name, cell in zip(code.co_freevars, init.__closure__):
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


def patch_package(prefix):
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
