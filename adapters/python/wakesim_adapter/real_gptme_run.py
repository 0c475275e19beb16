"""One run of the real gptme (`Run`): its choices, observations, logs and configs, and the
state of the boundaries `real_gptme_patch` fakes; and the thread helpers a plan and the run
share (`spawn`, `at`, `confirm_tools`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import real_gptme_jobs as J
from . import real_gptme_patch as P
from .sched import SCHED, Chooser, _get_ident
from .sched_sync import SimThread

# A duration in virtual ms: fixed, or drawn between the bounds.
Span = int | tuple[int, int]
# One observation: (virtual ms, actor, event in wakesim's vocabulary).
Record = tuple[int, str, dict[str, Any]]


class Run:
    """One run's world: choices, observations, logs, configs and the faked boundaries' state."""

    def __init__(self, chooser: Chooser, *, tools: Iterable[str] = ("watch", "shell"),
                 replies: Mapping[str, Iterable[str]] | None = None,
                 model_ms: Span = (100, 2000), tool_ms: Span = (10, 500),
                 persist_fails: Iterable[str] = (), workspace: str | None = None,
                 emit: Callable[[str, Record], None] | None = None,
                 job_ms: Span | list[int] = (1000, 60_000), dispatch_fails: int = 0,
                 confirm_ms: int | None = None) -> None:
        self.chooser = chooser
        self.tools = tuple(tools)
        self.replies = {k: list(v) for k, v in (replies or {}).items()}
        self.model_ms = model_ms
        self.tool_ms = tool_ms
        self.persist_fails = set(persist_fails)   # conversation ids whose next write fails
        self.logs_dir = P.G.dirs.Path(P.G.files_dir)
        self.workspace = P.G.dirs.Path(workspace or os.getcwd())
        self.records: list[Record] = []
        self.emit = emit
        self._uuid = itertools.count(1)
        self._managers: dict[str, P.FakeManager] = {}
        self._stores: dict[str, list[Any]] = {}
        self._configs: dict[str, Any] = {}
        # (t_ms, conversation, [carried msgs in the request], reply kind)
        self.requests: list[tuple[int, str, list[int], str]] = []
        self.next_msg = 1
        self.passes = 0
        self.wakes = 0
        self.pass_stack: dict[int, int] = {}   # thread ident -> current pass number
        # (session id, step_seq) -> wake number that set generating
        self.wake_of_seq: dict[tuple[Any, int], int] = {}
        self.produced: dict[int, tuple[str, str]] = {}   # msg id -> (stream, conversation)
        self.delivered: dict[int, int] = {}   # msg id -> first request index carrying it
        self.appended_count: dict[int, int] = {}   # msg id -> times appended
        self.jobs: list[tuple[Any, J.FakeProcess]] = []
        self.work = 0
        self.job_ms: Span | list[int] = list(job_ms) if isinstance(job_ms, list) else job_ms
        self.exited = False
        self.session_end: str | None = None
        self.hooks_left_out: tuple[str, ...] = ()
        # (name, HookType member, function, priority)
        self.hooks_added: tuple[tuple[str, str, Any, int], ...] = ()
        self.dispatch_fails = dispatch_fails
        self.confirm_ms = confirm_ms   # the user confirms a tool call this long after the reply
        self.late_callbacks: list[int] = []
        self.waking: set[int] = set()
        self.persist_failed: set[int] = set()
        self.in_flight: dict[int, int] = {}   # thread ident -> the wake it is inside
        self.generating = 0
        # What a driver mirroring the model's plan sets (plan_server.py): the reply kind drawn
        # when the reply arrives, the persist and dispatch faults drawn at their opportunity,
        # confirmed tool calls that execute at once, the watch delivery as a pass, and the
        # producers' stream names and origins by the model's numbering.
        self.reply_after: Callable[[str], str] | None = None
        self.persist_fault: Callable[[], bool] | None = None
        self.dispatch_fault: Callable[[], bool] | None = None
        self.free_tool_runs = 0
        self.deliver_passes = False
        # The server's table (kind -> (name, stream)) or the CLI's function (`plan_cli`).
        self.produce_names: Any = None
        self.origin_index: dict[str, int] = {}
        # conversation -> step threads between their end and retry
        self.step_ending: dict[str, set[int]] = {}
        self.retrying: dict[int, int] = {}   # thread ident -> events its retry pass took so far
        # What a driver mirroring the CLI model's plan sets (plan_cli.py): the reader's drain
        # after a job exits, the control file's fingerprints by the model's versions, the tool
        # time of a `bg` call, and `Waiting` at each wait of the wait hook.
        self.drain_ms: Span | None = None
        # id(job) -> its process, between its reader's drain and notify
        self.finishing: dict[int, J.FakeProcess] = {}
        self.draining: dict[int, J.FakeProcess] = {}   # id(job) -> its process, while it drains
        self.control_fingerprint: Callable[[bytes], int] | None = None
        self.cli_bg_tool = False
        self.emit_waiting = False
        # The popen shape (0.33.0, 0.34.0): the fake process gptme's `subprocess.Popen` hands
        # out next (`real_gptme_patch._popen_boundary`).
        self.next_process: J.FakeProcess | None = None

    # ---- time and choices

    def now_ms(self) -> int:
        return SCHED.now_ns // 1_000_000

    def choose(self, bound: int, label: str) -> int:
        if bound <= 1:
            return 0
        return self.chooser.choose(bound, label)

    def draw_ms(self, span: Span, label: str) -> int:
        if isinstance(span, int):
            return span
        lo, hi = span
        delay = getattr(self.chooser, "delay", None)
        if delay is not None:
            ms: int = delay(lo, hi, label)
            return ms
        # Biased to the boundaries, as the kernel's `delay` is: lo, hi, or uniform between.
        k = self.choose(3, label + ".class")
        if k == 0:
            return lo
        if k == 1:
            return hi
        return lo + self.choose(hi - lo + 1, label)

    def next_uuid(self) -> int:
        return next(self._uuid)

    # ---- observations

    def obs(self, actor: str, ev: dict[str, Any]) -> None:
        if SCHED.ended:
            # A thread unwound after the run ended (its `finally` reports a pass's end, say):
            # not something the host did, so not a record.
            return
        rec: Record = (self.now_ms(), actor, ev)
        self.records.append(rec)
        if self.emit is not None:
            self.emit("obs", rec)

    def note(self, actor: str, text: str) -> None:
        if SCHED.ended:
            return
        rec: Record = (self.now_ms(), actor, {"Note": text})
        self.records.append(rec)
        if self.emit is not None:
            self.emit("note", rec)

    def produce(self, stream: str, conversation: str, kind: str = "watch",
                origin: str | None = None) -> int:
        """A producer message of FIFO stream `stream` (one queue of one conversation: its
        deferred watch events, its subagent completions, its job completions, its prompt or
        steer records), from `origin` (the watch, subagent or job, for its name)."""
        m = self.next_msg
        self.next_msg += 1
        self.produced[m] = (stream, conversation)
        self.obs("producer", {"Produced": {"msg": m, "kind": kind, "stream": stream,
                                           "origin": origin or stream, "conv": conversation}})
        return m

    def appended(self, conversation: str, msg: Any) -> None:
        for m in P.carries(msg.content):
            self.appended_count[m] = self.appended_count.get(m, 0) + 1
            self.obs("host", {"Appended": {"msg": m, "conv": conversation}})

    def log_write(self, conversation: str) -> None:
        # The fault is the wake's persist (request_watch_wake writing the watch message), as the
        # model's PersistFailure is; other writes succeed.
        if self.persist_fault is not None:
            fails = _get_ident() in self.waking and self.persist_fault()
        else:
            fails = conversation in self.persist_fails and _get_ident() in self.waking
        if fails:
            self.persist_fails.discard(conversation)
            self.persist_failed.add(_get_ident())
            self.note("host", f"log write of {conversation} fails (OSError)")
            raise OSError(28, "No space left on device (a wakesim fault)")

    def store(self, conversation: str) -> list[Any]:
        st = self._stores.get(conversation)
        if st is None:
            st = self._stores[conversation] = []
        return st

    def load(self, conversation: str) -> P.FakeManager:
        """A fresh view of the persisted log (`LogManager.load`)."""
        return P.FakeManager(conversation, self.logs_dir / conversation, self.workspace,
                           self.store(conversation))

    def manager(self, conversation: str) -> P.FakeManager:
        """The conversation's long-lived manager (the chat loop's; the plan's)."""
        m = self._managers.get(conversation)
        if m is None:
            m = self._managers[conversation] = self.load(conversation)
        return m

    def config(self, logdir: Any) -> Any:
        name = P.name_of(logdir)
        c = self._configs.get(name)
        if c is None:
            c = self._configs[name] = P.G.config.ChatConfig(
                name=name, model=P.MODEL, stream=False, workspace=self.workspace,
                tools=list(self.tools), interactive=False, tool_format="markdown")
        return c

    def model(self, messages: list[Any], reply_kind: bool = False) -> str:
        """A model request: report what it carries, take a drawn time, reply."""
        from gptme.hooks import current_conversation_id
        cid: str = current_conversation_id.get() or "?"
        seen: list[int] = []
        for msg in messages:
            seen.extend(P.carries(msg.content))
        req = len(self.requests)
        kinds = self.replies.get(cid)
        kind = kinds.pop(0) if kinds else "text"
        self.requests.append((self.now_ms(), cid, seen, kind))
        for m in seen:
            self.delivered.setdefault(m, req)
        self.generating += 1   # the state a request's line shows is GENERATING
        self.obs("host", {"Request": {"req": req, "harness": True, "conv": cid, "carries": seen}})
        self.generating -= 1
        ms = self.draw_ms(self.model_ms, "model")
        if kind == "tool" and self.confirm_ms is not None:
            # The user confirms the tool call `confirm_ms` after the reply shows it.
            at(self.now_ms() + ms + self.confirm_ms, confirm_tools, cid, name="user-confirms")
        self.generating += 1
        try:
            SCHED.sleep(ms / 1000)
        finally:
            self.generating -= 1
        if self.reply_after is not None:
            kind = self.reply_after(cid)
        if reply_kind:
            return kind
        return P.TOOL_REPLY if kind == "tool" else P.TEXT_REPLY

    # ---- background jobs (CLI)

    def start_job(self, command: str, conversation: str | None = None) -> Any:
        """Start a job with gptme's own registry (under the calling context's conversation) and
        its reader: it finishes after `job_ms`, unless killed or the process exited. 0.35.1
        registers the driver's process (`register_background_job`); an earlier release starts
        it itself (`start_background_job`, whose `subprocess.Popen` hands out this process)."""
        sb = P.G.shell_background
        proc = J.FakeProcess()
        if P.G.shape == "registry":
            job = sb.register_background_job(command, proc, kill_callback=proc.kill)
        else:
            self.next_process = proc
            job = sb.start_background_job(command)
        from gptme.hooks import current_conversation_id
        proc.conv = getattr(job, "conversation_id", None) or current_conversation_id.get() or "A"
        self.jobs.append((job, proc))
        proc.job = job
        proc.work = self.work   # numbered from 0, as the model's
        self.work += 1
        self.obs("host", {"Work": {"work": proc.work, "shown": job.id, "conv": proc.conv,
                                   "op": "Started"}})
        ms = self.job_ms.pop(0) if isinstance(self.job_ms, list) else \
            self.draw_ms(self.job_ms, "job")
        spawn(self._job_reader, job, proc, ms, name=f"reader-{proc.conv}-{job.id}")
        return job

    def _job_reader(self, job: Any, proc: J.FakeProcess, ms: int) -> None:
        SCHED.sleep(ms / 1000)
        if self.exited:
            return   # the process is gone, and its reader threads with it
        if proc.returncode is not None:
            # Killed: the reader drains what is left and reports the completion, as gptme's
            # does; `_notify_completion` drops it when the registry no longer holds the job.
            self.late_callbacks.append(job.id)
            J.complete_job(job, "", "killed")
            return
        proc.returncode = 0
        if self.drain_ms is not None:
            # The reader drains what is left after the process exits, then calls back; the
            # completion message is made when `_notify_completion` publishes it, under
            # `_job_lock` (`notify_completion` below), as the model makes it: not at all for a
            # job a reset popped meanwhile.
            self.draining[id(job)] = proc
            try:
                SCHED.sleep(self.draw_ms(self.drain_ms, "reader drain") / 1000)
            finally:
                self.draining.pop(id(job), None)
            if self.exited:
                return
            self.finishing[id(job)] = proc
            J.complete_job(job, "tests passed\n", "")
            return
        m = self.produce(f"job:{proc.conv}", proc.conv, kind="job", origin=f"job #{job.id}")
        self.obs("host", {"Work": {"work": proc.work, "shown": job.id, "conv": proc.conv,
                                   "op": {"Finished": m}}})
        J.complete_job(job, f"tests passed [wakesim m{m}]\n", "")

    def notify_completion(self, job: Any, real_notify: Callable[[Any], Any]) -> Any:
        """`_notify_completion(job)` of a job whose reader finished (`_job_reader`): under
        `_job_lock`, a registered job's completion message is made (`Produced`, `Work`
        finished, the marker in its output), then gptme's own `_notify_completion` queues it."""
        proc = self.finishing.pop(id(job), None)
        if proc is None:
            return real_notify(job)
        sb = P.G.shell_background
        with sb._job_lock:
            if J.registered(job):
                m = self.produce(f"job:{proc.conv}", proc.conv, kind="job",
                                 origin=f"job #{job.id}")
                self.obs("host", {"Work": {"work": proc.work, "shown": job.id,
                                           "conv": proc.conv, "op": {"Finished": m}}})
                # Its output is read only by a claim, which takes `_job_lock` too: no
                # `_buffer_lock` (a scheduling point of its own) needed.
                J.append_output_locked(job, f"[wakesim m{m}]\n")
            else:
                self.late_callbacks.append(job.id)
            return real_notify(job)

    def end_session(self, cause: str, conversation: str = "A") -> None:
        """The chat loop ends (once): `SessionEnd`."""
        if self.session_end is None:
            self.session_end = cause
            self.obs("host", {"SessionEnd": {"cause": cause, "conv": conversation}})

    def waiting(self, conversation: str) -> None:
        """The wait hook blocks on `conversation`'s condition: its unfinished own and foreign
        jobs (registered, not expired, completion not queued yet or queued and unclaimed), as
        the model's `Waiting`."""
        sb = P.G.shell_background
        queued = {id(j) for j in list(sb._completion_queue.queue)}
        own = foreign = 0
        for cid, jobs in sb._background_jobs.items():
            for j in jobs.values():
                if j._wait_expired or (j._completion_notified and id(j) not in queued):
                    continue
                if cid == conversation:
                    own += 1
                else:
                    foreign += 1
        self.obs("host", {"Waiting": {"own": own, "foreign": foreign, "conv": conversation}})

    def job_killed(self, proc: J.FakeProcess) -> None:
        self.obs("host", {"Work": {"work": proc.work, "shown": proc.job.id,
                                   "conv": proc.conv, "op": "Killed"}})

    # ---- wake observation

    def observe_pass(self, fn: Callable[[], Any], conversation: str, retry: bool = True) -> Any:
        self.passes += 1
        p = self.passes
        key = _get_ident()
        ending = key in self.step_ending.get(conversation, ())
        self.step_ending.get(conversation, set()).discard(key)
        if retry and ending:
            self.retrying[key] = 0
        outer = self.pass_stack.get(key)
        self.pass_stack[key] = p
        self.obs("wake", {"Pass": {"pass": p, "on": True, "conv": conversation}})
        try:
            return fn()
        finally:
            if retry and ending:
                self.retrying.pop(key, None)
            self.obs("wake", {"Pass": {"pass": p, "on": False, "conv": conversation}})
            if outer is None:
                self.pass_stack.pop(key, None)
            else:
                self.pass_stack[key] = outer

    def busy_reason(self, conversation: str) -> str | dict[str, int | None] | None:
        SM = P.G.SessionManager
        sessions = [s for sid in SM._conversation_sessions.get(conversation, ())
                    for s in [SM._sessions.get(sid)] if s is not None]
        for s in sessions:
            if s.generating:
                n = self.wake_of_seq.get((s.id, s.step_seq))
                if n is None:
                    # A wake still in flight on another thread may have set it (its call has
                    # not returned yet, so it is not in wake_of_seq).
                    me = _get_ident()
                    others = [w for ident, w in self.in_flight.items() if ident != me]
                    if others:
                        n = max(others)
                return {"Wake": n} if n is not None else "Run"
        if conversation in SM._active_commands:
            return "Command"
        if any(s.pending_tools or s._executing_tools for s in sessions):
            return "Tools"
        return None

    def observe_wake(self, fn: Callable[[], Any], conversation: str, message: Any) -> Any:
        self.wakes += 1
        n = self.wakes
        p = self.pass_stack.get(_get_ident(), 0)
        before = self.busy_reason(conversation)
        msgs = P.carries(getattr(message, "content", ""))
        me = _get_ident()
        self.waking.add(me)
        self.persist_failed.discard(me)
        self.in_flight[me] = n
        try:
            ok = fn()
        finally:
            self.waking.discard(me)
            self.in_flight.pop(me, None)
        if ok and self.in_step_end_gap(conversation, me):
            self.note("host", "step-end gap: a step ended and its retry has not woken for what it took; "
                              "events deferred before this wake wait behind it")
            self.obs("host", {"Mark": {"window": "step-end-gap"}})
        elif not ok and self.retry_has_taken(me):
            # Refused, but inside the same gap: another thread's retry took the deferred events
            # and has not finished waking for them. The model runs a step's end and its retry as
            # one event, so no model run puts this wake among the retry's own.
            self.note("host", "step-end gap: a wake falls among the wakes of a retry that took the "
                              "deferred events at a step's end")
            self.obs("host", {"Mark": {"window": "step-end-gap"}})
        if ok:
            SM = P.G.SessionManager
            for sid in SM._conversation_sessions.get(conversation, ()):
                s = SM._sessions.get(sid)
                if s is not None and s.generating:
                    self.wake_of_seq[(s.id, s.step_seq)] = n
            refused: str | dict[str, int | None] | None = None
        elif me in self.persist_failed:
            refused = "PersistFailed"
        else:
            # What made it busy: the state the refusal leaves (another thread may have taken
            # the conversation between this call's start and its busy check), else the state
            # at the call.
            refused = self.busy_reason(conversation) or before or "Disabled"
        self.obs("wake", {"Wake": {"pass": p, "wake": n, "msgs": msgs, "refused": refused,
                                   "conv": conversation}})
        return ok

    def retry_has_taken(self, me: int) -> bool:
        """Another thread's retry pass (at its step's end) took deferred events and runs."""
        return any(n > 0 for t, n in self.retrying.items() if t != me)

    def in_step_end_gap(self, conversation: str, me: int) -> bool:
        """A wake accepted between another thread's step end (`generating = False`) and the
        wake of that step's retry for events deferred before this one: the step has ended and
        its retry has not started or has not taken them yet while such events are queued, or
        its retry runs and has taken some."""
        if self.retry_has_taken(me):
            return True
        retry_due = any(t != me for t in self.step_ending.get(conversation, ())) or \
            any(t != me for t in self.retrying)
        if not retry_due:
            return False
        return self.deferred(self.logs_dir / conversation)

    def deferred(self, logdir: Any) -> bool:
        """Watch events or subagent completions of `logdir` wait in gptme's deferred queues."""
        return (any(item[0] == logdir for item in P.G.watch._pending_deliveries)
                or any(item[0] == logdir for item in list(P.G.subagent_types._completion_queue.queue)))

    # ---- judgments the tests use (wakesim's checkers judge the same records in a lane)

    def lost(self) -> list[int]:
        """Produced, not dropped by design, never reaching a model request."""
        dropped = {r[2]["Dropped"]["msg"] for r in self.records if "Dropped" in r[2]}
        return sorted(m for m in self.produced if m not in self.delivered and m not in dropped)

    def duplicated(self) -> list[int]:
        return sorted(m for m, n in self.appended_count.items() if n > 1)

    def self_refusals(self) -> list[tuple[int, int]]:
        """Wakes refused as busy with a wake of the same pass."""
        out = []
        by_wake: dict[int, dict[str, Any]] = {}
        for _, _, ev in self.records:
            w = ev.get("Wake")
            if w is None:
                continue
            by_wake[w["wake"]] = w
            r = w["refused"]
            if isinstance(r, dict) and w["pass"] and by_wake.get(r["Wake"], {}).get("pass") == w["pass"]:
                out.append((w["wake"], r["Wake"]))
        return out

    def delivery_order(self, stream: str | None = None) -> list[int]:
        """Producer messages in the order they first reached a request."""
        order = sorted(self.delivered, key=lambda m: (self.delivered[m], self._append_pos(m)))
        return [m for m in order if stream is None or self.produced[m][0] == stream]

    def _append_pos(self, m: int) -> int:
        for i, (_, _, ev) in enumerate(self.records):
            if ev.get("Appended", {}).get("msg") == m:
                return i
        return 1 << 30



def confirm_tools(conversation: str) -> None:
    """The user confirms every pending tool call (the confirm route: `start_tool_execution`)."""
    run = P.current()
    for s in P.G.SessionManager.get_sessions_for_conversation(conversation):
        for tool_id in list(s.pending_tools):
            run.note("user", f"user confirms tool {tool_id[-4:]} on {conversation}")
            P.G.session_step.start_tool_execution(conversation, s, tool_id, None, P.MODEL,
                                                  run.config(run.logs_dir / conversation))


def spawn(fn: Callable[..., object], *args: Any, name: str | None = None) -> SimThread:
    """Start `fn(*args)` on a new simulated thread."""
    t = SimThread(target=fn, args=args, name=name)
    t.start()
    return t


def at(ms: int, fn: Callable[..., object], *args: Any, name: str | None = None) -> SimThread:
    """Run fn(*args) on its own thread at virtual time `ms`."""
    def body() -> None:
        d = ms - P.current().now_ms()
        if d > 0:
            SCHED.sleep(d / 1000)
        fn(*args)
    return spawn(body, name=name)


