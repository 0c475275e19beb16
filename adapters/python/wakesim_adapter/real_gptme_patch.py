"""The real gptme's boundaries, patched (`load`, once per process): what is faked around the
unchanged code under test (see `real_gptme`'s docstring), the observation wrappers around gptme's
own functions, and the state they reach: the loaded modules (`G`) and the run in progress (`RUN`,
made current by `real_gptme.reset`).

A release is driven by what its package has, not by its version number (`G.shape`, `missing`):
gptme 0.35.1 registers a job the driver runs (`register_background_job`,
`complete_background_job`: the "registry" shape); 0.33.0 and 0.34.0 start a job's process
themselves (`start_background_job`, `subprocess.Popen`, a reader thread: the "popen" shape, where
the process, its signals and its reader are the boundary). The server lane needs the watch tool
and the server's watch wakes, which 0.35.1 has and the earlier releases do not.

gptme is not type-checked here (its package is the pinned venv's, not the dev tools'): what it
hands back is `Any`.
"""

from __future__ import annotations

import contextvars
import logging
import os
import pathlib
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from . import sched, sched_patch
from .real_gptme_jobs import FakeProcess as FakeProcess
from .real_gptme_jobs import _popen_boundary, registered
from .real_gptme_jobs import append_output_locked as append_output_locked
from .real_gptme_jobs import complete_job as complete_job
from .real_gptme_jobs import missing as missing
from .sched import SCHED
from .sched_sync import SimLock

if TYPE_CHECKING:
    from .real_gptme_run import Run

MARK = re.compile(r"\[wakesim m(\d+)\]")
MODEL = "anthropic/claude-sonnet-4-5"
TOOL_REPLY = "Running it.\n\n```shell\necho hello\n```\n"
TEXT_REPLY = "Done for now."
YIELDED = "Background wait yielded to pending session input."


def carries(text: str | None) -> list[int]:
    """The producer messages (`[wakesim mN]` markers) a text carries, in order."""
    return [int(x) for x in MARK.findall(text or "")]


G: Any = None             # the loaded gptme modules (a namespace), once per process
RUN: Run | None = None    # the current Run


def current() -> Run:
    """The run in progress (`real_gptme.reset` made it current)."""
    run = RUN
    if run is None:
        raise RuntimeError("gptme's patched boundary was reached outside a run (no reset yet)")
    return run


def set_run(run: Run) -> None:
    """Make `run` the current run (`real_gptme.reset`)."""
    global RUN
    RUN = run


class _Namespace:
    """The loaded gptme modules and what `load` keeps of them, as attributes."""


def load() -> Any:
    """Install the scheduler, import gptme, patch its boundaries (once per process)."""
    global G
    if G is not None:
        return G
    sched_patch.install()
    logging.disable(logging.CRITICAL)
    # gptme reads the user's config and data directories: point them at an empty sandbox, so
    # no configuration of this machine's user enters a run.
    import tempfile
    sandbox = tempfile.mkdtemp(prefix="wakesim-gptme-")
    for var, sub in (("HOME", "home"), ("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"),
                     ("XDG_CACHE_HOME", "cache"), ("GPTME_LOGS_HOME", "logs")):
        os.makedirs(os.path.join(sandbox, sub), exist_ok=True)
        os.environ[var] = os.path.join(sandbox, sub)
    for var in [v for v in os.environ if v.startswith("GPTME_") and v != "GPTME_LOGS_HOME"]:
        del os.environ[var]
    import uuid

    import gptme.config as config
    import gptme.hooks as hooks

    # Kept in `g` through `locals()` below (no other use here): the namespace reset and the
    # patches reach them there.
    import gptme.hooks.registry as hooks_registry  # noqa: F401
    import gptme.llm.models as models  # noqa: F401
    import gptme.logmanager as logmanager
    import gptme.model_attestation as attestation
    import gptme.prompt_queue as prompt_queue
    import gptme.server.session_models as session_models
    import gptme.server.session_step as session_step
    import gptme.tools as tools_pkg  # noqa: F401
    import gptme.tools.base as tools_base
    import gptme.tools.shell as shell
    import gptme.tools.shell_background as shell_background
    import gptme.tools.subagent as subagent
    import gptme.tools.subagent.hooks as subagent_hooks
    import gptme.tools.subagent.types as subagent_types  # noqa: F401
    import gptme.util.cost_tracker as cost_tracker  # noqa: F401
    try:
        # The watch tool (the server lane's producers) is in 0.35.1, not in 0.33.0 or 0.34.0.
        import gptme.tools.watch as watch
    except ImportError:
        watch = None

    g: Any = _Namespace()
    for name, value in list(locals().items()):
        if not name.startswith("_") and name not in ("g",):
            setattr(g, name, value)
    g.SessionManager = session_models.SessionManager
    g.shape = "registry" if hasattr(shell_background, "register_background_job") else "popen"
    sched_patch.patch_package("gptme")
    if g.shape == "popen":
        _popen_boundary(shell_background)
    # An outside input that ends the background wait (the control-file notice) is reported
    # with the file's fingerprint, as the model reports it: NO-SPIN judges repeats. (A release
    # without the wait hook has neither: 0.33.0.)
    real_wait_input: Any = getattr(shell_background, "_background_wait_input", None)

    def wait_input(manager: Any) -> Any:
        r = real_wait_input(manager)
        if isinstance(r, list) and any(getattr(m, "content", None) == YIELDED for m in r):
            import hashlib
            try:
                with open(os.path.join(str(manager.logdir), "control.jsonl"), "rb") as f:
                    data = f.read()
            except OSError:
                data = b""
            fp = int.from_bytes(hashlib.sha256(data).digest()[:8], "big")
            run = current()
            if run.control_fingerprint is not None:
                fp = run.control_fingerprint(data)   # the model's name for these contents
            run.obs("host", {"InputInterrupt": {"input": fp}})
        return r

    if real_wait_input is not None:
        shell_background._background_wait_input = wait_input
    # The wait hook takes its condition with `_job_conditions.setdefault` right before
    # `condition.wait`: the moment the model reports `Waiting`.
    if hasattr(shell_background, "_job_conditions"):
        shell_background._job_conditions = _Conditions(shell_background._job_conditions)
    real_notify = getattr(shell_background, "_notify_completion", None)
    real_reset_jobs = shell_background.reset_background_jobs
    g.reset_background_jobs_real = real_reset_jobs

    def reset_background_jobs(*args: Any, **kwargs: Any) -> Any:
        # A job whose process exited while its reader still drains is popped without a kill
        # (`is_running()` is false) and its late callback dropped: its result will never come,
        # which the model reports as the job `Killed` at the pop (`WorkOp::Killed`).
        if RUN is None or not RUN.draining:
            return real_reset_jobs(*args, **kwargs)
        conversation_id = args[0] if args else kwargs.get("conversation_id")
        all_conversations = kwargs.get("all_conversations", True)
        sb = shell_background
        with sb._job_lock:
            popped = [p for p in RUN.draining.values()
                      if (all_conversations or p.conv == conversation_id)
                      and registered(p.job)]
            real_reset_jobs(*args, **kwargs)
            for p in popped:
                RUN.job_killed(p)

    shell_background.reset_background_jobs = reset_background_jobs
    shell.reset_background_jobs = reset_background_jobs
    if real_notify is not None:
        shell_background._notify_completion = \
            lambda job: current().notify_completion(job, real_notify)
    g.shell_background_originals = {
        n: getattr(shell_background, n) for n in (
            "_control_wait_keys", "_background_wait_input", "background_job_completion_hook",
            "_pending_wait_jobs") if hasattr(shell_background, n)}
    # The user configuration, loaded once (from the empty sandbox): a Config made in a fresh
    # context (every step thread has one) would read the files again at each step.
    import gptme.config.core as config_core
    g.user_config = config.load_user_config()
    _set_factory(config_core.Config, "user", lambda: G.user_config)

    # Deterministic ids: uuid4 draws from a per-run counter (session and tool ids are dict keys
    # and set members whose order decides which session a wake picks).
    uuid.uuid4 = lambda: uuid.UUID(int=RUN.next_uuid() if RUN is not None else 0)

    # ---- boundaries
    session_step.prepare_execution_environment = prepare_execution_environment
    session_step.prepare_messages = lambda msgs, logdir=None, **kw: list(msgs)
    session_step._chat_complete = _chat_complete
    session_step._stream = _stream
    session_step._try_auto_name_and_notify = lambda *a, **k: None
    attestation.record_runtime_selection = lambda *a, **k: None
    session_step.LogManager = FakeLogManager
    logmanager.LogManager = FakeLogManager
    config.ChatConfig.load_or_create = classmethod(lambda cls, logdir, default=None: current().config(logdir))
    tools_base.ToolUse.execute = _execute_tool
    real_start: Any = getattr(session_step, "_start_step_thread", None)

    def start_step_thread(*args: Any, **kwargs: Any) -> Any:
        # A fault at the thread boundary: starting a wake's step thread fails (`can't start
        # new thread`), as `threading.Thread.start` can (the model's DispatchFailure).
        run = current()
        waking = kwargs.get("reserved") and sched._get_ident() in run.waking
        if run.dispatch_fault is not None:
            fails = waking and run.dispatch_fault()
        else:
            fails = waking and run.dispatch_fails > 0
            run.dispatch_fails -= 1 if fails else 0
        if fails:
            run.note("host", "starting the step thread fails (RuntimeError)")
            raise RuntimeError("can't start new thread (a wakesim fault)")
        return real_start(*args, **kwargs)

    if real_start is not None:
        session_step._start_step_thread = start_step_thread
    session_step.get_logs_dir = lambda: current().logs_dir
    import gptme.dirs as dirs
    dirs.get_logs_dir = lambda: current().logs_dir
    g.dirs = dirs
    import gptme.chat as chat
    import gptme.message as message
    import gptme.tools.complete as complete
    g.chat = chat
    g.message = message
    g.complete = complete
    g.tools = {"shell": shell.tool, "subagent": subagent.tool, "complete": complete.tool}
    if watch is not None:
        g.tools["watch"] = watch.tool
    # The CLI loop's boundaries: a step is the model call and the tool it asks for; no
    # compaction, no naming thread (a model call), no cost printing; the chat config in memory.
    chat.step = _cli_step
    # The loop's break is the session's end: reported before its SESSION_END hooks (the shell
    # tool's closes the conversation's jobs), as the model reports it before the exit cleanup.
    real_trigger = chat.trigger_hook

    def trigger_hook(hook_type: Any, *args: Any, **kwargs: Any) -> Any:
        if hook_type == hooks.HookType.SESSION_END and RUN is not None:
            RUN.end_session("QueueEmpty")
        return real_trigger(hook_type, *args, **kwargs)

    chat.trigger_hook = trigger_hook
    chat._run_post_tool_compaction = lambda manager: False
    chat._start_auto_naming_thread = lambda *a, **k: None
    chat.print_inline_cost = lambda *a, **k: None
    config.ChatConfig.from_logdir = classmethod(lambda cls, logdir: current().config(logdir))
    # flock between threads of one process would block the process for real: the prompt
    # queue's file lock is a scheduler lock per lock file (it orders the simulated steering
    # writer and the loop as the real flock orders two processes).
    prompt_queue.fcntl = _SimFlock()
    # Real log directories for the files the CLI reads and writes (prompt queue, control file),
    # on tmpfs when there is one.
    import tempfile
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    g.files_dir = os.path.realpath(tempfile.mkdtemp(prefix="wakesim-gptme-logs-", dir=base))
    _fast_paths(g.files_dir, chat_config=config.ChatConfig)
    _remembered_signatures()

    # ---- observation wrappers (they call the real functions, and only report)
    if watch is None or not hasattr(g.SessionManager, "request_watch_wake"):
        # No watch wakes to observe: the server lane refuses this release (`missing`).
        G = g
        return g
    SM = g.SessionManager
    real_wake = SM.request_watch_wake.__func__
    real_retry = SM.retry_deferred_watch_wakes.__func__
    real_record = watch._record_event

    def request_watch_wake(cls: Any, conversation_id: str, message: Any, *,
                           branch: str = "main") -> Any:
        return current().observe_wake(lambda: real_wake(cls, conversation_id, message, branch=branch),
                                conversation_id, message)

    def retry_deferred_watch_wakes(cls: Any, conversation_id: str) -> Any:
        return current().observe_pass(lambda: g.variant_retry(cls, conversation_id), conversation_id)

    real_add_event = SM.add_event.__func__

    def add_event(cls: Any, conversation_id: str, event: Any) -> Any:
        # A step's end (`step_complete`, sent under step_lock right after `generating =
        # False`): until the same thread's retry starts, a wake from another thread is in the
        # step-end gap (`Run.observe_wake`).
        if RUN is not None and isinstance(event, dict) and event.get("type") == "step_complete":
            RUN.step_ending.setdefault(conversation_id, set()).add(sched._get_ident())
        return real_add_event(cls, conversation_id, event)

    SM.add_event = classmethod(add_event)

    def taking(real_take: Callable[[Any], list[Any]]) -> Callable[[Any], list[Any]]:
        # What a retry took from a deferred queue (`Run.in_step_end_gap`).
        def take(logdir: Any) -> list[Any]:
            me = sched._get_ident()
            counting = RUN is not None and me in RUN.retrying
            # Counted as taken from the call on: the take's lock release is a scheduling point,
            # and a wake another thread makes there, the queue already popped, is in the gap.
            ahead = 1 if counting and current().deferred(logdir) else 0
            if counting:
                current().retrying[me] += ahead
            got = real_take(logdir)
            if counting:
                current().retrying[me] += len(got) - ahead
            return got
        return take

    watch.take_queued_watch_events = taking(watch.take_queued_watch_events)
    subagent_hooks.take_queued_completions = taking(subagent_hooks.take_queued_completions)
    g.real_retry = real_retry
    g.variant_retry = real_retry
    SM.request_watch_wake = classmethod(request_watch_wake)
    SM.retry_deferred_watch_wakes = classmethod(retry_deferred_watch_wakes)

    def record_event(w: Any, text: str) -> Any:
        kept = real_record(w, text)
        if not kept:
            for m in carries(text):
                current().obs("host", {"Dropped": {"msg": m, "reason": "Coalesced"}})
        return kept

    watch._record_event = record_event
    real_deliver = watch._deliver

    def deliver(w: Any, text: str) -> Any:
        # The watch thread's delivery is a pass of its own, as the model's `fire` runs one
        # (a driver that compares with the model asks for it: `Run.deliver_passes`).
        if not current().deliver_passes:
            return real_deliver(w, text)
        return current().observe_pass(lambda: real_deliver(w, text), w.logdir.name, retry=False)

    watch._deliver = deliver
    G = g
    return g


# ---- boundaries


def _fast_paths(root: str, chat_config: Any) -> None:
    """The file system's answers gptme asks for at every step and wake, without the system
    calls: `Path.resolve` of a path under the driver's own log directories (made by the driver,
    `root` already resolved, no symbolic link inside: the path itself, as `os.path.realpath`
    would find it, one `lstat` per component), and the working directory a `ChatConfig()` takes
    by default (`Path.cwd`, the same `Path` while the directory is the same). Any other path
    resolves as before."""
    real_resolve = pathlib.Path.resolve
    under = root + os.sep

    def resolve(self: pathlib.Path, strict: bool = False) -> pathlib.Path:
        s = str(self)
        if not strict and (s == root or (s.startswith(under) and "/.." not in s)):
            return self
        return real_resolve(self, strict)

    pathlib.Path.resolve = resolve  # type: ignore[method-assign,assignment]
    cwd: list[Any] = [None, None]

    def cached_cwd() -> pathlib.Path:
        here = os.getcwd()
        if cwd[0] != here:
            cwd[0], cwd[1] = here, pathlib.Path(here)
        path: pathlib.Path = cwd[1]
        return path

    _set_factory(chat_config, "workspace", cached_cwd)


def _remembered_signatures() -> None:
    """`inspect.signature` of the same function object, remembered: the interpreter's answer
    for a function never changes (a `Signature` is immutable), and gptme's hook registry asks
    for its hooks' signatures at every trigger (`_filter_kwargs_for_hook`), a B1-pre seed some
    hundreds of times. The default form only (`follow_wrapped`, no annotations evaluated), for
    objects that take a weak reference; anything else, or a signature that cannot be made (it
    raises as before), is asked of `inspect` each time. The same objects as before, so the same
    run."""
    import inspect
    import weakref
    real_signature = inspect.signature
    known: weakref.WeakKeyDictionary[Any, inspect.Signature] = weakref.WeakKeyDictionary()

    def signature(obj: Any, *, follow_wrapped: bool = True, globals: Any = None,
                  locals: Any = None, eval_str: bool = False) -> inspect.Signature:
        if follow_wrapped and globals is None and locals is None and not eval_str:
            try:
                return known[obj]
            except (KeyError, TypeError):
                pass
            sig = real_signature(obj)
            try:
                known[obj] = sig
            except TypeError:
                pass
            return sig
        return real_signature(obj, follow_wrapped=follow_wrapped, globals=globals,
                              locals=locals, eval_str=eval_str)

    inspect.signature = signature


class _Conditions(dict[Any, Any]):
    """`shell_background._job_conditions`, reporting each wait (`setdefault`, under `_job_lock`,
    right before `condition.wait`) as the model's `Waiting`, when the run asks for it."""

    def setdefault(self, key: Any, default: Any = None) -> Any:
        c = dict.setdefault(self, key, default)
        if RUN is not None and RUN.emit_waiting:
            RUN.waiting(key)
        return c


class FakeLog:
    """gptme's `Log`, in memory: its `messages`."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.messages)

    def __reversed__(self) -> Iterator[Any]:
        return reversed(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    def __getitem__(self, i: Any) -> Any:
        return self.messages[i]


class FakeManager:
    """What `LogManager.load` returns: a view of the conversation's persisted log. As gptme's,
    `append` adds to this manager's log and writes; a write that fails (a fault) leaves the
    message in this manager's memory only: the next `load` does not see it."""

    def __init__(self, conversation_id: str, logdir: Any, workspace: Any,
                 store: list[Any] | None = None) -> None:
        self.chat_id = conversation_id
        self.logdir = logdir
        self.workspace = workspace
        self.store = store if store is not None else []
        self.log = FakeLog()
        self.log.messages = list(self.store)
        self._unpersisted: list[Any] = []
        self.current_view = None
        self.name = conversation_id

    def append(self, msg: Any) -> None:
        self.log.messages.append(msg)
        self._unpersisted.append(msg)
        self.write()

    def write(self, sync: bool = False) -> None:
        if not self._unpersisted:
            return
        current().log_write(self.chat_id)
        for msg in self._unpersisted:
            self.store.append(msg)
            current().appended(self.chat_id, msg)
        self._unpersisted = []

    def get_last_message_not_role(self, *a: Any, **k: Any) -> None:
        return None


class FakeLogManager:
    """gptme's `LogManager` class, as the code under test reaches it."""

    @classmethod
    def load(cls, conversation_id: Any, branch: str = "main", lock: bool = True,
             create: bool = False, **kwargs: Any) -> FakeManager:
        return current().load(name_of(conversation_id))

    @classmethod
    def get_current_log(cls) -> FakeManager | None:
        # chat() makes the loop's manager current in its context; the loop's conversation here.
        from gptme.hooks import current_conversation_id
        cid = current_conversation_id.get()
        return current().manager(cid) if cid else None


_NAMES: dict[str, str] = {}


def name_of(path: Any) -> str:
    """`Path(str(path)).name`, remembered per string (a conversation id or a log directory;
    gptme asks at every step and wake)."""
    key = str(path)
    n = _NAMES.get(key)
    if n is None:
        n = _NAMES[key] = str(G.dirs.Path(key).name)
    return n


def _set_factory(cls: Any, field: str, factory: Callable[[], object]) -> None:
    code = cls.__init__.__code__
    for name, cell in zip(code.co_freevars, cls.__init__.__closure__, strict=True):
        if name == "_dflt_" + field:
            cell.cell_contents = factory
            return
    raise RuntimeError(f"{cls.__name__}.{field} has no default factory to replace")


def prepare_execution_environment(workspace: Any, tools: Any = None,
                                   chat_config: Any = None) -> tuple[None, list[Any]]:
    # What gptme's prepare_execution_environment does that matters here: the configuration of
    # this context (set_config), and init_tools' registration of the enabled tools' hooks in
    # this context's registry.
    G.config.set_config(G.config.Config(user=G.user_config, chat=chat_config))
    registry = _REGISTRIES[(current().tools, current().hooks_left_out, current().hooks_added)]
    G.hooks_registry.set_registry(registry)
    G.tools_pkg._loaded_tools_var.set([G.tools[n] for n in current().tools])
    if hasattr(G.tools_pkg, "_tools_initialized_var"):   # 0.33.0 tells by the list alone
        G.tools_pkg._tools_initialized_var.set(True)
    return None, []


_REGISTRIES: dict[tuple[Any, ...], Any] = {}


def ready() -> None:
    """Before a run starts (outside it): the hook registry of the run's tools, built once per
    set of tools and shared by every context (gptme builds one per context, with the same hooks).
    Built outside the run, so the first run of a process makes the same scheduling points as
    any later one."""
    run = current()
    key = (run.tools, run.hooks_left_out, run.hooks_added)
    if key in _REGISTRIES:
        return
    registry = G.hooks_registry.HookRegistry()
    ctx = contextvars.copy_context()

    def build() -> None:
        G.hooks_registry.set_registry(registry)
        for name in current().tools:
            G.tools[name].register_hooks()
        for name in current().hooks_left_out:   # a variant without one of gptme's hooks (B0)
            registry.unregister(name)
        for name, hook_type, func, priority in current().hooks_added:   # or with one of its own
            registry.register(name, getattr(G.hooks.HookType, hook_type), func, priority)
    ctx.run(build)
    _REGISTRIES[key] = registry


def _model_reply(messages: list[Any], model: Any) -> str:
    return str(current().model(messages))


def _chat_complete(messages: list[Any], model: Any, tools: Any, output_schema: Any = None,
                   max_tokens: Any = None, temperature: Any = None,
                   top_p: Any = None) -> tuple[str, None]:
    return _model_reply(messages, model), None


def _stream(messages: list[Any], model: Any, tools: Any, output_schema: Any = None,
            max_tokens: Any = None, temperature: Any = None, top_p: Any = None) -> Iterator[str]:
    return iter([_model_reply(messages, model)])


def _execute_tool(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
    current().note("host", f"tool {self.tool} executes")
    if current().free_tool_runs > 0:
        current().free_tool_runs -= 1   # a confirmed call: the model runs it at once
    else:
        SCHED.sleep(current().draw_ms(current().tool_ms, "tools") / 1000)
    from gptme.message import Message
    yield Message("system", "Ran command: `echo hello`\nhello", call_id=getattr(self, "call_id", None))


class _SimFlock:
    """`fcntl` for gptme.prompt_queue: `flock` is a scheduler lock per lock file."""

    LOCK_EX = 2
    LOCK_UN = 8

    def __init__(self) -> None:
        self._locks: dict[int, SimLock] = {}

    def flock(self, fd: Any, op: int) -> None:
        key = os.fstat(fd.fileno()).st_ino
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = SimLock()
            lock.label = "flock(.prompt-queue.lock)"
        if op == self.LOCK_EX:
            lock.acquire()
        elif op == self.LOCK_UN:
            lock.release()
        else:
            raise ValueError(f"flock op {op} is not simulated")


def _cli_step(log: Any, stream: bool = False, tool_format: Any = None, workspace: Any = None,
              model: Any = None, output_schema: Any = None, logdir: Any = None) -> Iterator[Any]:
    """The CLI's `step`: one model reply, and the tool it asks for. A `bg` reply starts a
    background job with gptme's own registry (a fake process); a `tool` reply runs a
    command."""
    from gptme.message import Message
    run = current()
    kind = run.model(list(log.messages), reply_kind=True)
    if kind == "bg":
        yield Message("assistant", "Starting it in the background.\n\n```shell\nbg make test\n```\n")
        job = run.start_job("make test")
        if run.cli_bg_tool:
            # Starting the job is a tool call, and takes the model's `tool` time.
            SCHED.sleep(run.draw_ms(run.tool_ms, "tool") / 1000)
        yield Message("system", f"Started background job #{job.id}: `make test`")
    elif kind == "tool":
        yield Message("assistant", TOOL_REPLY)
        SCHED.sleep(run.draw_ms(run.tool_ms, "tool") / 1000)
        yield Message("system", "Ran command: `echo hello`\nhello")
    else:
        yield Message("assistant", TEXT_REPLY if kind == "text" else kind)


