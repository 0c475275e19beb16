"""The real gptme 0.35.1 under the deterministic thread scheduler.

gptme's own modules, imported from the pinned package (`venv.py`), run unchanged: the server's
`SessionManager` (`request_watch_wake`, `retry_deferred_watch_wakes`, `finish_command`),
`session_step` (`_start_step_thread`, `step` with its compare-and-clear and the retry at step end,
`start_tool_execution`), the watch tool's `_fire`/`_record_event`/`_deliver`,
`_pending_deliveries`, `take_queued_watch_events` and `requeue_watch_event`, the subagent
`notify_completion`, `take_queued_completions` and hooks, and the shell tool's background-job
registry (`register_background_job`, `complete_background_job`, `_notify_completion`,
`background_job_completion_hook`, `background_job_wait_hook` with `GPTME_WATCH_IDLE_MAX`) and the
prompt-queue files. Their threads (step threads, tool threads, the producers' threads) are real
threads on `sched.SCHED`; every lock, condition, event, queue, sleep and clock read is a
scheduling point whose order is the chooser's.

What is faked is what lies outside the process or the code under test, at its boundary:

- the model: `session_step._chat_complete`/`_stream` return a scripted or drawn reply (plain text,
  or a shell tool call) after a drawn virtual delay, and report a `Request`;
- tool execution: `ToolUse.execute` sleeps a drawn delay and returns one system message;
- the conversation log: `LogManager.load` returns an in-memory log per conversation (appends
  report `Appended` for the producer messages a message carries; `write` can fail with OSError as
  a fault); `ChatConfig.load_or_create` an in-memory config;
- tool loading: `prepare_execution_environment` registers the hooks of the tools the run enables
  (`ToolSpec.register_hooks`, gptme's own hook tables) in the calling context, as gptme's
  `init_tools` does, without reading the workspace's config files; the default hooks
  (`init_hooks`: time and token awareness ...) are left out;
- naming the conversation (`_try_auto_name_and_notify`, a model call), `record_runtime_selection`;
- the producers: a watch source fires by calling gptme's own `watch._fire` at a planned instant
  (the probe or timer loop that would call it is the boundary); a subagent finishes by calling
  gptme's `notify_completion`; a background job is a fake process registered with gptme's
  `register_background_job` and finished with `complete_background_job`.

Producer messages carry a marker `[wakesim mN]` in their text, so every observation says which
producer messages a model request, a log append or a wake carried, in wakesim's vocabulary
(`Produced`, `Appended`, `Request`, `Dropped`, `Pass`, `Wake`, `Work`, `SessionEnd`, notes).

Module and class globals are reset between runs without re-importing gptme (`reset`), so a run
costs milliseconds.
"""

import contextvars
import itertools
import logging
import os
import re
import sys

from . import sched
from .sched import SCHED

MARK = re.compile(r"\[wakesim m(\d+)\]")
MODEL = "anthropic/claude-sonnet-4-5"
TOOL_REPLY = "Running it.\n\n```shell\necho hello\n```\n"
TEXT_REPLY = "Done for now."
YIELDED = "Background wait yielded to pending session input."


def carries(text):
    return [int(x) for x in MARK.findall(text or "")]


G = None       # the loaded gptme modules (a namespace), once per process
RUN = None     # the current Run


class _Namespace:
    pass


def load():
    """Install the scheduler, import gptme, patch its boundaries (once per process)."""
    global G
    if G is not None:
        return G
    sched.install()
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
    import gptme.hooks.registry as hooks_registry
    import gptme.llm.models as models
    import gptme.logmanager as logmanager
    import gptme.model_attestation as attestation
    import gptme.prompt_queue as prompt_queue
    import gptme.server.session_models as session_models
    import gptme.server.session_step as session_step
    import gptme.tools as tools_pkg
    import gptme.tools.base as tools_base
    import gptme.tools.shell as shell
    import gptme.tools.shell_background as shell_background
    import gptme.tools.subagent as subagent
    import gptme.tools.subagent.hooks as subagent_hooks
    import gptme.tools.subagent.types as subagent_types
    import gptme.tools.watch as watch
    import gptme.util.cost_tracker as cost_tracker

    g = _Namespace()
    for name, value in list(locals().items()):
        if not name.startswith("_") and name not in ("g",):
            setattr(g, name, value)
    g.SessionManager = session_models.SessionManager
    sched.patch_package("gptme")
    # An outside input that ends the background wait (the control-file notice) is reported
    # with the file's fingerprint, as the model reports it: NO-SPIN judges repeats.
    real_wait_input = shell_background._background_wait_input

    def wait_input(manager):
        r = real_wait_input(manager)
        if isinstance(r, list) and any(getattr(m, "content", None) == YIELDED for m in r):
            import hashlib
            try:
                with open(os.path.join(str(manager.logdir), "control.jsonl"), "rb") as f:
                    data = f.read()
            except OSError:
                data = b""
            fp = int.from_bytes(hashlib.sha256(data).digest()[:8], "big")
            if RUN.control_fingerprint is not None:
                fp = RUN.control_fingerprint(data)   # the model's name for these contents
            RUN.obs("host", {"InputInterrupt": {"input": fp}})
        return r

    shell_background._background_wait_input = wait_input
    # The wait hook takes its condition with `_job_conditions.setdefault` right before
    # `condition.wait`: the moment the model reports `Waiting`.
    shell_background._job_conditions = _Conditions(shell_background._job_conditions)
    real_notify = shell_background._notify_completion
    real_reset_jobs = shell_background.reset_background_jobs

    def reset_background_jobs(conversation_id=None, *, all_conversations=True):
        # A job whose process exited while its reader still drains is popped without a kill
        # (`is_running()` is false) and its late callback dropped: its result will never come,
        # which the model reports as the job `Killed` at the pop (`WorkOp::Killed`).
        if RUN is None or not RUN.draining:
            return real_reset_jobs(conversation_id, all_conversations=all_conversations)
        sb = shell_background
        with sb._job_lock:
            popped = [p for p in RUN.draining.values()
                      if (all_conversations or p.job.conversation_id == conversation_id)
                      and sb._background_jobs.get(p.job.conversation_id, {}).get(p.job.id) is p.job]
            real_reset_jobs(conversation_id, all_conversations=all_conversations)
            for p in popped:
                RUN.job_killed(p)

    shell_background.reset_background_jobs = reset_background_jobs
    shell.reset_background_jobs = reset_background_jobs
    shell_background._notify_completion = lambda job: RUN.notify_completion(job, real_notify)
    g.shell_background_originals = {
        n: getattr(shell_background, n) for n in (
            "_control_wait_keys", "_background_wait_input", "background_job_completion_hook",
            "_pending_wait_jobs")}
    # The user configuration, loaded once (from the empty sandbox): a Config made in a fresh
    # context (every step thread has one) would read the files again at each step.
    import gptme.config.core as config_core
    g.user_config = config.load_user_config()
    _set_factory(config_core.Config, "user", lambda: G.user_config)

    # Deterministic ids: uuid4 draws from a per-run counter (session and tool ids are dict keys
    # and set members whose order decides which session a wake picks).
    uuid.uuid4 = lambda: uuid.UUID(int=RUN.next_uuid() if RUN is not None else 0)

    # ---- boundaries
    session_step.prepare_execution_environment = _prepare_execution_environment
    session_step.prepare_messages = lambda msgs, logdir=None, **kw: list(msgs)
    session_step._chat_complete = _chat_complete
    session_step._stream = _stream
    session_step._try_auto_name_and_notify = lambda *a, **k: None
    attestation.record_runtime_selection = lambda *a, **k: None
    session_step.LogManager = FakeLogManager
    logmanager.LogManager = FakeLogManager
    config.ChatConfig.load_or_create = classmethod(lambda cls, logdir, default=None: RUN.config(logdir))
    tools_base.ToolUse.execute = _execute_tool
    real_start = session_step._start_step_thread

    def start_step_thread(*args, **kwargs):
        # A fault at the thread boundary: starting a wake's step thread fails (`can't start
        # new thread`), as `threading.Thread.start` can (the model's DispatchFailure).
        waking = kwargs.get("reserved") and sched._get_ident() in RUN.waking
        if RUN.dispatch_fault is not None:
            fails = waking and RUN.dispatch_fault()
        else:
            fails = waking and RUN.dispatch_fails > 0
            RUN.dispatch_fails -= 1 if fails else 0
        if fails:
            RUN.note("host", "starting the step thread fails (RuntimeError)")
            raise RuntimeError("can't start new thread (a wakesim fault)")
        return real_start(*args, **kwargs)

    session_step._start_step_thread = start_step_thread
    session_step.get_logs_dir = lambda: RUN.logs_dir
    import gptme.dirs as dirs
    dirs.get_logs_dir = lambda: RUN.logs_dir
    g.dirs = dirs
    import gptme.chat as chat
    import gptme.message as message
    import gptme.tools.complete as complete
    g.chat = chat
    g.message = message
    g.complete = complete
    g.tools = {"watch": watch.tool, "shell": shell.tool, "subagent": subagent.tool,
               "complete": complete.tool}
    # The CLI loop's boundaries: a step is the model call and the tool it asks for; no
    # compaction, no naming thread (a model call), no cost printing; the chat config in memory.
    chat.step = _cli_step
    # The loop's break is the session's end: reported before its SESSION_END hooks (the shell
    # tool's closes the conversation's jobs), as the model reports it before the exit cleanup.
    real_trigger = chat.trigger_hook

    def trigger_hook(hook_type, *args, **kwargs):
        if hook_type == hooks.HookType.SESSION_END and RUN is not None:
            RUN.end_session("QueueEmpty")
        return real_trigger(hook_type, *args, **kwargs)

    chat.trigger_hook = trigger_hook
    chat._run_post_tool_compaction = lambda manager: False
    chat._start_auto_naming_thread = lambda *a, **k: None
    chat.print_inline_cost = lambda *a, **k: None
    config.ChatConfig.from_logdir = classmethod(lambda cls, logdir: RUN.config(logdir))
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
    SM = g.SessionManager
    real_wake = SM.request_watch_wake.__func__
    real_retry = SM.retry_deferred_watch_wakes.__func__
    real_record = watch._record_event

    def request_watch_wake(cls, conversation_id, message, *, branch="main"):
        return RUN.observe_wake(lambda: real_wake(cls, conversation_id, message, branch=branch),
                                conversation_id, message)

    def retry_deferred_watch_wakes(cls, conversation_id):
        return RUN.observe_pass(lambda: g.variant_retry(cls, conversation_id), conversation_id)

    real_add_event = SM.add_event.__func__

    def add_event(cls, conversation_id, event):
        # A step's end (`step_complete`, sent under step_lock right after `generating =
        # False`): until the same thread's retry starts, a wake from another thread is in the
        # step-end gap (`Run.observe_wake`).
        if RUN is not None and isinstance(event, dict) and event.get("type") == "step_complete":
            RUN.step_ending.setdefault(conversation_id, set()).add(sched._get_ident())
        return real_add_event(cls, conversation_id, event)

    SM.add_event = classmethod(add_event)

    def taking(real_take):
        # What a retry took from a deferred queue (`Run.in_step_end_gap`).
        def take(logdir):
            me = sched._get_ident()
            counting = RUN is not None and me in RUN.retrying
            # Counted as taken from the call on: the take's lock release is a scheduling point,
            # and a wake another thread makes there, the queue already popped, is in the gap.
            ahead = 1 if counting and RUN.deferred(logdir) else 0
            if counting:
                RUN.retrying[me] += ahead
            got = real_take(logdir)
            if counting:
                RUN.retrying[me] += len(got) - ahead
            return got
        return take

    watch.take_queued_watch_events = taking(watch.take_queued_watch_events)
    subagent_hooks.take_queued_completions = taking(subagent_hooks.take_queued_completions)
    g.real_retry = real_retry
    g.variant_retry = real_retry
    SM.request_watch_wake = classmethod(request_watch_wake)
    SM.retry_deferred_watch_wakes = classmethod(retry_deferred_watch_wakes)

    def record_event(w, text):
        kept = real_record(w, text)
        if not kept:
            for m in carries(text):
                RUN.obs("host", {"Dropped": {"msg": m, "reason": "Coalesced"}})
        return kept

    watch._record_event = record_event
    real_deliver = watch._deliver

    def deliver(w, text):
        # The watch thread's delivery is a pass of its own, as the model's `fire` runs one
        # (a driver that compares with the model asks for it: `Run.deliver_passes`).
        if not RUN.deliver_passes:
            return real_deliver(w, text)
        return RUN.observe_pass(lambda: real_deliver(w, text), w.logdir.name, retry=False)

    watch._deliver = deliver
    G = g
    return g


# ---- boundaries


def _fast_paths(root, chat_config):
    """The file system's answers gptme asks for at every step and wake, without the system
    calls: `Path.resolve` of a path under the driver's own log directories (made by the driver,
    `root` already resolved, no symbolic link inside: the path itself, as `os.path.realpath`
    would find it, one `lstat` per component), and the working directory a `ChatConfig()` takes
    by default (`Path.cwd`, the same `Path` while the directory is the same). Any other path
    resolves as before."""
    import pathlib
    real_resolve = pathlib.Path.resolve
    under = root + os.sep

    def resolve(self, strict=False):
        s = str(self)
        if not strict and (s == root or (s.startswith(under) and "/.." not in s)):
            return self
        return real_resolve(self, strict)

    pathlib.Path.resolve = resolve
    cwd = [None, None]

    def cached_cwd():
        here = os.getcwd()
        if cwd[0] != here:
            cwd[0], cwd[1] = here, pathlib.Path(here)
        return cwd[1]

    _set_factory(chat_config, "workspace", cached_cwd)


def _remembered_signatures():
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
    known = weakref.WeakKeyDictionary()

    def signature(obj, *, follow_wrapped=True, globals=None, locals=None, eval_str=False):
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


class _Conditions(dict):
    """`shell_background._job_conditions`, reporting each wait (`setdefault`, under `_job_lock`,
    right before `condition.wait`) as the model's `Waiting`, when the run asks for it."""

    def setdefault(self, key, default=None):
        c = dict.setdefault(self, key, default)
        if RUN is not None and RUN.emit_waiting:
            RUN.waiting(key)
        return c


class FakeLog:
    """gptme's `Log`, in memory: its `messages`."""

    def __init__(self):
        self.messages = []

    def __iter__(self):
        return iter(self.messages)

    def __reversed__(self):
        return reversed(self.messages)

    def __len__(self):
        return len(self.messages)

    def __getitem__(self, i):
        return self.messages[i]


class FakeManager:
    """What `LogManager.load` returns: a view of the conversation's persisted log. As gptme's,
    `append` adds to this manager's log and writes; a write that fails (a fault) leaves the
    message in this manager's memory only: the next `load` does not see it."""

    def __init__(self, conversation_id, logdir, workspace, store=None):
        self.chat_id = conversation_id
        self.logdir = logdir
        self.workspace = workspace
        self.store = store if store is not None else []
        self.log = FakeLog()
        self.log.messages = list(self.store)
        self._unpersisted = []
        self.current_view = None
        self.name = conversation_id

    def append(self, msg):
        self.log.messages.append(msg)
        self._unpersisted.append(msg)
        self.write()

    def write(self, sync=False):
        if not self._unpersisted:
            return
        RUN.log_write(self.chat_id)
        for msg in self._unpersisted:
            self.store.append(msg)
            RUN.appended(self.chat_id, msg)
        self._unpersisted = []

    def get_last_message_not_role(self, *a, **k):
        return None


class FakeLogManager:
    @classmethod
    def load(cls, conversation_id, branch="main", lock=True, create=False, **kwargs):
        return RUN.load(_name(conversation_id))

    @classmethod
    def get_current_log(cls):
        # chat() makes the loop's manager current in its context; the loop's conversation here.
        from gptme.hooks import current_conversation_id
        cid = current_conversation_id.get()
        return RUN.manager(cid) if cid else None


_NAMES = {}


def _name(path):
    """`Path(str(path)).name`, remembered per string (a conversation id or a log directory;
    gptme asks at every step and wake)."""
    key = str(path)
    n = _NAMES.get(key)
    if n is None:
        n = _NAMES[key] = G.dirs.Path(key).name
    return n


def _set_factory(cls, field, factory):
    code = cls.__init__.__code__
    for name, cell in zip(code.co_freevars, cls.__init__.__closure__):
        if name == "_dflt_" + field:
            cell.cell_contents = factory
            return
    raise RuntimeError(f"{cls.__name__}.{field} has no default factory to replace")


def _prepare_execution_environment(workspace, tools=None, chat_config=None):
    # What gptme's prepare_execution_environment does that matters here: the configuration of
    # this context (set_config), and init_tools' registration of the enabled tools' hooks in
    # this context's registry.
    G.config.set_config(G.config.Config(user=G.user_config, chat=chat_config))
    registry = _REGISTRIES[(RUN.tools, RUN.hooks_left_out, RUN.hooks_added)]
    G.hooks_registry.set_registry(registry)
    G.tools_pkg._loaded_tools_var.set([G.tools[n] for n in RUN.tools])
    G.tools_pkg._tools_initialized_var.set(True)
    return None, []


_REGISTRIES = {}


def ready():
    """Before a run starts (outside it): the hook registry of the run's tools, built once per
    set of tools and shared by every context (gptme builds one per context, with the same hooks).
    Built outside the run, so the first run of a process makes the same scheduling points as
    any later one."""
    key = (RUN.tools, RUN.hooks_left_out, RUN.hooks_added)
    if key in _REGISTRIES:
        return
    registry = G.hooks_registry.HookRegistry()
    ctx = contextvars.copy_context()

    def build():
        G.hooks_registry.set_registry(registry)
        for name in RUN.tools:
            G.tools[name].register_hooks()
        for name in RUN.hooks_left_out:   # a variant without one of gptme's hooks (B0)
            registry.unregister(name)
        for name, hook_type, func, priority in RUN.hooks_added:   # or with one of its own
            registry.register(name, getattr(G.hooks.HookType, hook_type), func, priority)
    ctx.run(build)
    _REGISTRIES[key] = registry


def _model_reply(messages, model):
    return RUN.model(messages)


def _chat_complete(messages, model, tools, output_schema=None, max_tokens=None, temperature=None,
                   top_p=None):
    return _model_reply(messages, model), None


def _stream(messages, model, tools, output_schema=None, max_tokens=None, temperature=None,
            top_p=None):
    return iter([_model_reply(messages, model)])


def _execute_tool(self, *args, **kwargs):
    RUN.note("host", f"tool {self.tool} executes")
    if RUN.free_tool_runs > 0:
        RUN.free_tool_runs -= 1   # a confirmed call: the model runs it at once
    else:
        sched.SCHED.sleep(RUN.draw_ms(RUN.tool_ms, "tools") / 1000)
    from gptme.message import Message
    yield Message("system", "Ran command: `echo hello`\nhello", call_id=getattr(self, "call_id", None))


class _SimFlock:
    """`fcntl` for gptme.prompt_queue: `flock` is a scheduler lock per lock file."""

    LOCK_EX = 2
    LOCK_UN = 8

    def __init__(self):
        self._locks = {}

    def flock(self, fd, op):
        key = os.fstat(fd.fileno()).st_ino
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = sched.SimLock()
            lock.label = "flock(.prompt-queue.lock)"
        if op == self.LOCK_EX:
            lock.acquire()
        elif op == self.LOCK_UN:
            lock.release()
        else:
            raise ValueError(f"flock op {op} is not simulated")


class FakeProcess:
    """A background job's process: it exits when the plan says (or when killed)."""

    def __init__(self):
        self.returncode = None
        self.pid = 0

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        return self.returncode

    def kill(self):
        if self.returncode is None:
            self.returncode = -9
            RUN.job_killed(self)

    terminate = kill


def _cli_step(log, stream=False, tool_format=None, workspace=None, model=None,
              output_schema=None, logdir=None):
    """The CLI's `step`: one model reply, and the tool it asks for. A `bg` reply starts a
    background job with gptme's own registry (a fake process); a `tool` reply runs a
    command."""
    from gptme.message import Message
    kind = RUN.model(list(log.messages), reply_kind=True)
    if kind == "bg":
        yield Message("assistant", "Starting it in the background.\n\n```shell\nbg make test\n```\n")
        job = RUN.start_job("make test")
        if RUN.cli_bg_tool:
            # Starting the job is a tool call, and takes the model's `tool` time.
            SCHED.sleep(RUN.draw_ms(RUN.tool_ms, "tool") / 1000)
        yield Message("system", f"Started background job #{job.id}: `make test`")
    elif kind == "tool":
        yield Message("assistant", TOOL_REPLY)
        SCHED.sleep(RUN.draw_ms(RUN.tool_ms, "tool") / 1000)
        yield Message("system", "Ran command: `echo hello`\nhello")
    else:
        yield Message("assistant", TEXT_REPLY if kind == "text" else kind)


# ---- a run


class Run:
    """One run's world: choices, observations, logs, configs and the faked boundaries' state."""

    def __init__(self, chooser, *, tools=("watch", "shell"), replies=None, model_ms=(100, 2000),
                 tool_ms=(10, 500), persist_fails=(), workspace=None, emit=None,
                 job_ms=(1000, 60_000), dispatch_fails=0, confirm_ms=None):
        self.chooser = chooser
        self.tools = tuple(tools)
        self.replies = {k: list(v) for k, v in (replies or {}).items()}
        self.model_ms = model_ms
        self.tool_ms = tool_ms
        self.persist_fails = set(persist_fails)   # conversation ids whose next write fails
        self.logs_dir = G.dirs.Path(G.files_dir)
        self.workspace = G.dirs.Path(workspace or os.getcwd())
        self.records = []
        self.emit = emit
        self._uuid = itertools.count(1)
        self._managers = {}
        self._stores = {}
        self._configs = {}
        self.requests = []   # (t_ms, conversation, [carried msgs in the request], reply kind)
        self.next_msg = 1
        self.passes = 0
        self.wakes = 0
        self.pass_stack = {}      # thread ident -> current pass number
        self.wake_of_seq = {}     # (session id, step_seq) -> wake number that set generating
        self.produced = {}        # msg id -> (stream, conversation)
        self.delivered = {}       # msg id -> first request index carrying it
        self.appended_count = {}  # msg id -> times appended
        self.jobs = []
        self.work = 0
        self.job_ms = list(job_ms) if isinstance(job_ms, list) else job_ms
        self.exited = False
        self.session_end = None
        self.hooks_left_out = ()
        self.hooks_added = ()     # (name, HookType member, function, priority)
        self.dispatch_fails = dispatch_fails
        self.confirm_ms = confirm_ms   # the user confirms a tool call this long after the reply
        self.late_callbacks = []
        self.waking = set()
        self.persist_failed = set()
        self.in_flight = {}       # thread ident -> the wake it is inside
        self.generating = 0
        # What a driver mirroring the model's plan sets (plan_server.py): the reply kind drawn
        # when the reply arrives, the persist and dispatch faults drawn at their opportunity,
        # confirmed tool calls that execute at once, the watch delivery as a pass, and the
        # producers' stream names and origins by the model's numbering.
        self.reply_after = None
        self.persist_fault = None
        self.dispatch_fault = None
        self.free_tool_runs = 0
        self.deliver_passes = False
        self.produce_names = None
        self.origin_index = {}
        self.step_ending = {}     # conversation -> step threads between their end and retry
        self.retrying = {}        # thread ident -> events its retry pass took so far
        # What a driver mirroring the CLI model's plan sets (plan_cli.py): the reader's drain
        # after a job exits, the control file's fingerprints by the model's versions, the tool
        # time of a `bg` call, and `Waiting` at each wait of the wait hook.
        self.drain_ms = None
        self.finishing = {}       # id(job) -> its process, between its reader's drain and notify
        self.draining = {}        # id(job) -> its process, while its reader drains
        self.control_fingerprint = None
        self.cli_bg_tool = False
        self.emit_waiting = False

    # ---- time and choices

    def now_ms(self):
        return SCHED.now_ns // 1_000_000

    def choose(self, bound, label):
        if bound <= 1:
            return 0
        return self.chooser.choose(bound, label)

    def draw_ms(self, span, label):
        if isinstance(span, int):
            return span
        lo, hi = span
        if hasattr(self.chooser, "delay"):
            return self.chooser.delay(lo, hi, label)
        # Biased to the boundaries, as the kernel's `delay` is: lo, hi, or uniform between.
        k = self.choose(3, label + ".class")
        if k == 0:
            return lo
        if k == 1:
            return hi
        return lo + self.choose(hi - lo + 1, label)

    def next_uuid(self):
        return next(self._uuid)

    # ---- observations

    def obs(self, actor, ev):
        if SCHED.ended:
            # A thread unwound after the run ended (its `finally` reports a pass's end, say):
            # not something the host did, so not a record.
            return
        rec = (self.now_ms(), actor, ev)
        self.records.append(rec)
        if self.emit is not None:
            self.emit("obs", rec)

    def note(self, actor, text):
        if SCHED.ended:
            return
        rec = (self.now_ms(), actor, {"Note": text})
        self.records.append(rec)
        if self.emit is not None:
            self.emit("note", rec)

    def produce(self, stream, conversation, kind="watch", origin=None):
        """A producer message of FIFO stream `stream` (one queue of one conversation: its
        deferred watch events, its subagent completions, its job completions, its prompt or
        steer records), from `origin` (the watch, subagent or job, for its name)."""
        m = self.next_msg
        self.next_msg += 1
        self.produced[m] = (stream, conversation)
        self.obs("producer", {"Produced": {"msg": m, "kind": kind, "stream": stream,
                                           "origin": origin or stream, "conv": conversation}})
        return m

    def appended(self, conversation, msg):
        for m in carries(msg.content):
            self.appended_count[m] = self.appended_count.get(m, 0) + 1
            self.obs("host", {"Appended": {"msg": m, "conv": conversation}})

    def log_write(self, conversation):
        # The fault is the wake's persist (request_watch_wake writing the watch message), as the
        # model's PersistFailure is; other writes succeed.
        if self.persist_fault is not None:
            fails = sched._get_ident() in self.waking and self.persist_fault()
        else:
            fails = conversation in self.persist_fails and sched._get_ident() in self.waking
        if fails:
            self.persist_fails.discard(conversation)
            self.persist_failed.add(sched._get_ident())
            self.note("host", f"log write of {conversation} fails (OSError)")
            raise OSError(28, "No space left on device (a wakesim fault)")

    def store(self, conversation):
        st = self._stores.get(conversation)
        if st is None:
            st = self._stores[conversation] = []
        return st

    def load(self, conversation):
        """A fresh view of the persisted log (`LogManager.load`)."""
        return FakeManager(conversation, self.logs_dir / conversation, self.workspace,
                           self.store(conversation))

    def manager(self, conversation):
        """The conversation's long-lived manager (the chat loop's; the plan's)."""
        m = self._managers.get(conversation)
        if m is None:
            m = self._managers[conversation] = self.load(conversation)
        return m

    def config(self, logdir):
        name = _name(logdir)
        c = self._configs.get(name)
        if c is None:
            c = self._configs[name] = G.config.ChatConfig(
                name=name, model=MODEL, stream=False, workspace=self.workspace,
                tools=list(self.tools), interactive=False, tool_format="markdown")
        return c

    def model(self, messages, reply_kind=False):
        """A model request: report what it carries, take a drawn time, reply."""
        from gptme.hooks import current_conversation_id
        cid = current_conversation_id.get() or "?"
        seen = []
        for msg in messages:
            seen.extend(carries(msg.content))
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
        return TOOL_REPLY if kind == "tool" else TEXT_REPLY

    # ---- background jobs (CLI)

    def start_job(self, command, conversation=None):
        """Register a job with gptme's registry (under the calling context's conversation) and
        start its reader: it finishes after `job_ms`, unless killed or the process exited."""
        sb = G.shell_background
        proc = FakeProcess()
        job = sb.register_background_job(command, proc, kill_callback=proc.kill)
        self.jobs.append((job, proc))
        proc.job = job
        proc.work = self.work   # numbered from 0, as the model's
        self.work += 1
        self.obs("host", {"Work": {"work": proc.work, "shown": job.id, "conv": job.conversation_id,
                                   "op": "Started"}})
        ms = self.job_ms.pop(0) if isinstance(self.job_ms, list) else self.draw_ms(self.job_ms, "job")
        spawn(self._job_reader, job, proc, ms, name=f"reader-{job.conversation_id}-{job.id}")
        return job

    def _job_reader(self, job, proc, ms):
        SCHED.sleep(ms / 1000)
        if self.exited:
            return   # the process is gone, and its reader threads with it
        if proc.returncode is not None:
            # Killed: the reader drains what is left and reports the completion, as gptme's
            # does; `_notify_completion` drops it when the registry no longer holds the job.
            self.late_callbacks.append(job.id)
            G.shell_background.complete_background_job(job, "", "killed")
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
            G.shell_background.complete_background_job(job, "tests passed\n", "")
            return
        m = self.produce(f"job:{job.conversation_id}", job.conversation_id, kind="job",
                         origin=f"job #{job.id}")
        self.obs("host", {"Work": {"work": proc.work, "shown": job.id, "conv": job.conversation_id,
                                   "op": {"Finished": m}}})
        G.shell_background.complete_background_job(job, f"tests passed [wakesim m{m}]\n", "")

    def notify_completion(self, job, real_notify):
        """`_notify_completion(job)` of a job whose reader finished (`_job_reader`): under
        `_job_lock`, a registered job's completion message is made (`Produced`, `Work`
        finished, the marker in its output), then gptme's own `_notify_completion` queues it."""
        proc = self.finishing.pop(id(job), None)
        if proc is None:
            return real_notify(job)
        sb = G.shell_background
        with sb._job_lock:
            if sb._background_jobs.get(job.conversation_id, {}).get(job.id) is job:
                m = self.produce(f"job:{job.conversation_id}", job.conversation_id, kind="job",
                                 origin=f"job #{job.id}")
                self.obs("host", {"Work": {"work": proc.work, "shown": job.id,
                                           "conv": job.conversation_id, "op": {"Finished": m}}})
                # Its output is read only by a claim, which takes `_job_lock` too: no
                # `_buffer_lock` (a scheduling point of its own) needed.
                job._stdout_buffer_start += job._append_to_buffer_locked(
                    job.stdout_buffer, f"[wakesim m{m}]\n")
            else:
                self.late_callbacks.append(job.id)
            return real_notify(job)

    def end_session(self, cause, conversation="A"):
        """The chat loop ends (once): `SessionEnd`."""
        if self.session_end is None:
            self.session_end = cause
            self.obs("host", {"SessionEnd": {"cause": cause, "conv": conversation}})

    def waiting(self, conversation):
        """The wait hook blocks on `conversation`'s condition: its unfinished own and foreign
        jobs (registered, not expired, completion not queued yet or queued and unclaimed), as
        the model's `Waiting`."""
        sb = G.shell_background
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

    def job_killed(self, proc):
        self.obs("host", {"Work": {"work": proc.work, "shown": proc.job.id,
                                   "conv": proc.job.conversation_id, "op": "Killed"}})

    # ---- wake observation

    def observe_pass(self, fn, conversation, retry=True):
        self.passes += 1
        p = self.passes
        key = sched._get_ident()
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

    def busy_reason(self, conversation):
        SM = G.SessionManager
        sessions = [s for sid in SM._conversation_sessions.get(conversation, ())
                    for s in [SM._sessions.get(sid)] if s is not None]
        for s in sessions:
            if s.generating:
                n = self.wake_of_seq.get((s.id, s.step_seq))
                if n is None:
                    # A wake still in flight on another thread may have set it (its call has
                    # not returned yet, so it is not in wake_of_seq).
                    me = sched._get_ident()
                    others = [w for ident, w in self.in_flight.items() if ident != me]
                    if others:
                        n = max(others)
                return {"Wake": n} if n is not None else "Run"
        if conversation in SM._active_commands:
            return "Command"
        if any(s.pending_tools or s._executing_tools for s in sessions):
            return "Tools"
        return None

    def observe_wake(self, fn, conversation, message):
        self.wakes += 1
        n = self.wakes
        p = self.pass_stack.get(sched._get_ident(), 0)
        before = self.busy_reason(conversation)
        msgs = carries(getattr(message, "content", ""))
        me = sched._get_ident()
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
            SM = G.SessionManager
            for sid in SM._conversation_sessions.get(conversation, ()):
                s = SM._sessions.get(sid)
                if s is not None and s.generating:
                    self.wake_of_seq[(s.id, s.step_seq)] = n
            refused = None
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

    def retry_has_taken(self, me):
        """Another thread's retry pass (at its step's end) took deferred events and runs."""
        return any(n > 0 for t, n in self.retrying.items() if t != me)

    def in_step_end_gap(self, conversation, me):
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

    def deferred(self, logdir):
        """Watch events or subagent completions of `logdir` wait in gptme's deferred queues."""
        return (any(item[0] == logdir for item in G.watch._pending_deliveries)
                or any(item[0] == logdir for item in list(G.subagent_types._completion_queue.queue)))

    # ---- judgments the tests use (wakesim's checkers judge the same records in a lane)

    def lost(self):
        """Produced, not dropped by design, never reaching a model request."""
        dropped = {r[2]["Dropped"]["msg"] for r in self.records if "Dropped" in r[2]}
        return sorted(m for m in self.produced if m not in self.delivered and m not in dropped)

    def duplicated(self):
        return sorted(m for m, n in self.appended_count.items() if n > 1)

    def self_refusals(self):
        """Wakes refused as busy with a wake of the same pass."""
        out = []
        by_wake = {}
        for _, _, ev in self.records:
            w = ev.get("Wake")
            if w is None:
                continue
            by_wake[w["wake"]] = w
            r = w["refused"]
            if isinstance(r, dict) and w["pass"] and by_wake.get(r["Wake"], {}).get("pass") == w["pass"]:
                out.append((w["wake"], r["Wake"]))
        return out

    def delivery_order(self, stream=None):
        """Producer messages in the order they first reached a request."""
        order = sorted(self.delivered, key=lambda m: (self.delivered[m], self._append_pos(m)))
        return [m for m in order if stream is None or self.produced[m][0] == stream]

    def _append_pos(self, m):
        for i, (_, _, ev) in enumerate(self.records):
            if ev.get("Appended", {}).get("msg") == m:
                return i
        return 1 << 30


# ---- reset between runs

def reset(run):
    """Clear gptme's module and class globals (no re-import), and make `run` current."""
    global RUN
    g = load()
    RUN = run
    SM = g.SessionManager
    SM._sessions.clear()
    SM._conversation_sessions.clear()
    SM._conversation_locks.clear()
    SM._active_commands.clear()
    SM._server_default_model_full = MODEL
    w = g.watch
    w._watches.clear()
    w._watch_seq = 0
    w._pending_deliveries.clear()
    st = g.subagent_types
    st._completion_queue.queue.clear()
    st._progress_queue.queue.clear()
    st._subagents.clear()
    st._subagent_results.clear()
    sb = g.shell_background
    sb._background_jobs.clear()
    sb._next_job_ids.clear()
    sb._completion_queue.queue.clear()
    sb._job_conditions.clear()
    sb._control_wait_keys.clear()
    g.cost_tracker.CostTracker._sessions.clear()
    g.variant_retry = g.real_retry
    # What a variant patched in shell_background is put back.
    for name, value in g.shell_background_originals.items():
        setattr(sb, name, value)
    sb.__dict__.pop("min", None)
    for lock in (SM._lock, w._watches_lock, w._pending_lock, st._subagents_lock,
                 st._subagent_results_lock, sb._job_lock, sb._job_log_lock):
        if lock._owner is not None:
            raise sched.SchedulerError(f"{lock!r} still held at reset")
    os.environ.pop("GPTME_WATCH_IDLE_MAX", None)
    import shutil
    for entry in os.listdir(g.files_dir):
        shutil.rmtree(os.path.join(g.files_dir, entry), ignore_errors=True)


# ---- what a plan does (on managed threads)


def session(conversation):
    """A server session on `conversation` (gptme's `create_session`)."""
    return G.SessionManager.create_session(conversation)


def user_step(conversation, text="Do the task."):
    """What the /step route does for a user message: append it, then `_start_step_thread`."""
    from gptme.message import Message
    s = max(G.SessionManager.get_sessions_for_conversation(conversation),
            key=lambda x: x.last_activity)
    RUN.manager(conversation).append(Message("user", text))
    RUN.note("user", f"user step on {conversation}")
    return G.session_step._start_step_thread(conversation, s, MODEL, RUN.workspace, stream=False)


def confirm_tools(conversation):
    """The user confirms every pending tool call (the confirm route: `start_tool_execution`)."""
    for s in G.SessionManager.get_sessions_for_conversation(conversation):
        for tool_id in list(s.pending_tools):
            RUN.note("user", f"user confirms tool {tool_id[-4:]} on {conversation}")
            G.session_step.start_tool_execution(conversation, s, tool_id, None, MODEL,
                                                RUN.config(RUN.logs_dir / conversation))


def command(conversation, ms):
    """A slash command owning the conversation for `ms` (start_command ... finish_command)."""
    SM = G.SessionManager
    SM.start_command(conversation)
    RUN.note("user", f"command starts on {conversation}")
    SCHED.sleep(ms / 1000)
    RUN.note("user", f"command ends on {conversation}")
    SM.finish_command(conversation)


def arm_watch(conversation, kind="run"):
    """A watch of `conversation` (registered as gptme's `_register` does; its source is ours)."""
    w = G.watch
    watch = w.Watch(id=w._new_id(), kind=kind, description="wakesim source", created=0.0,
                    logdir=(RUN.logs_dir / conversation))
    w._register(watch)
    return watch


def fire(watch, once=False):
    """The watch's source fires: gptme's own `_fire` with a new producer message."""
    m = RUN.produce("watch:" + watch.logdir.name, watch.logdir.name, origin=watch.id)
    G.watch._fire(watch, f"line [wakesim m{m}]", once=once)
    return m


def subagent_done(conversation, agent_id):
    """A subagent of `conversation` finishes: gptme's `notify_completion`."""
    m = RUN.produce("subagent:" + conversation, conversation, kind="completion", origin=agent_id)
    G.subagent_hooks.notify_completion(agent_id, "success", f"result [wakesim m{m}]",
                                       parent_logdir=RUN.logs_dir / conversation,
                                       parent_branch="main")
    return m


def cli_session(conversation, prompts, *, idle_max_s=None, exit_=True):
    """`gptme -n` on `conversation`: gptme's own `_run_chat_loop`, noninteractive, with the
    tools' hooks; then the process exit (SESSION_END hooks on completion, atexit's
    `reset_background_jobs`). Runs on the calling managed thread."""
    from gptme.hooks import HookType, current_conversation_id, trigger_hook
    from gptme.llm.models import get_model, set_default_model
    from gptme.message import Message
    current_conversation_id.set(conversation)
    if idle_max_s is not None:
        os.environ["GPTME_WATCH_IDLE_MAX"] = str(idle_max_s)
    logdir = RUN.logs_dir / conversation
    os.makedirs(logdir, exist_ok=True)
    _prepare_execution_environment(RUN.workspace, None, RUN.config(logdir))
    set_default_model(get_model(MODEL))
    G.message.set_output_format("quiet")
    manager = RUN.manager(conversation)
    queue = [Message("user", p) for p in prompts]
    cause = "QueueEmpty"
    try:
        G.chat._run_chat_loop(manager, queue, False, tool_format="markdown", model=None,
                              interactive=False, no_confirm=True, logdir=logdir)
    except G.complete.SessionCompleteException:
        cause = "SessionComplete"
        RUN.end_session(cause, conversation)
        for msg in trigger_hook(HookType.SESSION_END, logdir=logdir, manager=manager):
            manager.append(msg)
    RUN.end_session(cause, conversation)
    # The process exits: atexit runs reset_background_jobs (it kills what still runs); nothing
    # of this process runs after it. (`exit_=False`: the process lives on, as a server or a
    # test holding other conversations does.)
    if exit_:
        G.shell_background.reset_background_jobs()
        RUN.exited = True


def queue_prompt(conversation, text, steer=False):
    """A steering writer (another process) appends to the conversation's prompt queue."""
    m = RUN.produce(("steer:" if steer else "prompt:") + conversation, conversation, kind="prompt")
    G.prompt_queue.queue_prompt(RUN.logs_dir / conversation, f"{text} [wakesim m{m}]", steer=steer)
    return m


def write_control(conversation, contents):
    """The parent writes the conversation's control.jsonl."""
    path = RUN.logs_dir / conversation / "control.jsonl"
    os.makedirs(path.parent, exist_ok=True)
    with open(path, "w") as f:
        f.write(contents)


def spawn(fn, *args, name=None):
    t = sched.SimThread(target=fn, args=args, name=name)
    t.start()
    return t


def at(ms, fn, *args, name=None):
    """Run fn(*args) on its own thread at virtual time `ms`."""
    def body():
        d = ms - RUN.now_ms()
        if d > 0:
            SCHED.sleep(d / 1000)
        fn(*args)
    return spawn(body, name=name)


def producer(events, name="producer"):
    """One producer thread for one FIFO stream: `events` are (ms, fn, args), run in time order,
    one after the other. Two messages of one stream due at the same instant are produced in
    order, as the model produces them; messages of different streams (other threads) race."""
    def body():
        for ms, fn, args in sorted(events, key=lambda e: e[0]):
            d = ms - RUN.now_ms()
            if d > 0:
                SCHED.sleep(d / 1000)
            fn(*args)
    return spawn(body, name=name)


def run_plan(plan, chooser, *, horizon_ms=3_600_000, steps_max=200_000, variant=None,
             **run_kwargs):
    """Run `plan()` (the root thread) in a fresh Run, with a variant's patches; returns
    (run, outcome)."""
    run = Run(chooser, **run_kwargs)
    reset(run)
    if variant is not None:
        from . import real_variants
        real_variants.apply(variant)
    ready()
    out = SCHED.run(plan, chooser, horizon_ms=horizon_ms, steps_max=steps_max)
    return run, out


if __name__ == "__main__":
    sys.exit("import this module; see tests/")
