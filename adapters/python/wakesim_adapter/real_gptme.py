"""The real gptme (0.35.1; 0.33.0 and 0.34.0 for the CLI) under the deterministic thread scheduler.

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

The module is in four: `real_gptme_patch` (loading gptme and patching its boundaries, the loaded
modules `G` and the current run `RUN`), `real_gptme_jobs` (the background jobs in the shapes a
release has, and what a release lacks), `real_gptme_run` (one run's world, `Run`) and this one
(the reset between runs and what a plan does). `real_gptme_replay` replays a recorded run
without wakesim (the exported reproducer).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

from . import real_gptme_patch as P
from . import sched
from .real_gptme_patch import MODEL, carries, current, load, ready
from .real_gptme_run import Run, at, confirm_tools, spawn
from .sched import SCHED

__all__ = ["MODEL", "P", "Run", "arm_watch", "at", "carries", "cli_session", "command",
           "confirm_tools", "current", "fire", "load", "producer", "queue_prompt", "ready",
           "reset", "run_plan", "session", "spawn", "subagent_done", "user_step",
           "write_control"]


# ---- reset between runs

def reset(run: Run) -> None:
    """Clear gptme's module and class globals (no re-import), and make `run` current."""
    g = load()
    P.set_run(run)
    SM = g.SessionManager
    SM._sessions.clear()
    SM._conversation_sessions.clear()
    SM._conversation_locks.clear()
    SM._active_commands.clear()
    SM._server_default_model_full = MODEL
    # What a release has of these is cleared (0.33.0 and 0.34.0 have no watch tool; 0.33.0 no
    # completion queue, wait conditions or per-conversation job ids).
    w = g.watch
    if w is not None:
        w._watches.clear()
        w._watch_seq = 0
        w._pending_deliveries.clear()
    st = g.subagent_types
    for name in ("_completion_queue", "_progress_queue"):
        if hasattr(st, name):
            getattr(st, name).queue.clear()
    for name in ("_subagents", "_subagent_results"):
        if hasattr(st, name):
            getattr(st, name).clear()
    sb = g.shell_background
    sb._background_jobs.clear()
    if hasattr(sb, "_next_job_ids"):
        sb._next_job_ids.clear()
    else:
        sb._next_job_id = 1
    if hasattr(sb, "_completion_queue"):
        sb._completion_queue.queue.clear()
    for name in ("_job_conditions", "_control_wait_keys"):
        if hasattr(sb, name):
            getattr(sb, name).clear()
    if hasattr(g.cost_tracker.CostTracker, "_sessions"):   # 0.33.0 keeps it in a ContextVar
        g.cost_tracker.CostTracker._sessions.clear()
    g.variant_retry = getattr(g, "real_retry", None)   # none without the server's watch wakes
    # What a variant patched in shell_background is put back.
    for name, value in g.shell_background_originals.items():
        setattr(sb, name, value)
    sb.__dict__.pop("min", None)
    locks = [SM._lock, sb._job_lock]
    locks += [getattr(m, n) for m, n in ((w, "_watches_lock"), (w, "_pending_lock"),
                                        (st, "_subagents_lock"), (st, "_subagent_results_lock"),
                                        (sb, "_job_log_lock")) if m is not None and hasattr(m, n)]
    for lock in locks:
        if getattr(lock, "_owner", None) is not None:
            raise sched.SchedulerError(f"{lock!r} still held at reset")
    os.environ.pop("GPTME_WATCH_IDLE_MAX", None)
    import shutil
    for entry in os.listdir(g.files_dir):
        shutil.rmtree(os.path.join(g.files_dir, entry), ignore_errors=True)


# ---- what a plan does (on managed threads)


def session(conversation: str) -> Any:
    """A server session on `conversation` (gptme's `create_session`)."""
    return P.G.SessionManager.create_session(conversation)


def user_step(conversation: str, text: str = "Do the task.") -> Any:
    """What the /step route does for a user message: append it, then `_start_step_thread`."""
    run = current()
    from gptme.message import Message
    s = max(P.G.SessionManager.get_sessions_for_conversation(conversation),
            key=lambda x: x.last_activity)
    run.manager(conversation).append(Message("user", text))
    run.note("user", f"user step on {conversation}")
    return P.G.session_step._start_step_thread(conversation, s, MODEL, run.workspace, stream=False)


def command(conversation: str, ms: int) -> None:
    """A slash command owning the conversation for `ms` (start_command ... finish_command)."""
    run = current()
    SM = P.G.SessionManager
    SM.start_command(conversation)
    run.note("user", f"command starts on {conversation}")
    SCHED.sleep(ms / 1000)
    run.note("user", f"command ends on {conversation}")
    SM.finish_command(conversation)


def arm_watch(conversation: str, kind: str = "run") -> Any:
    """A watch of `conversation` (registered as gptme's `_register` does; its source is ours)."""
    run = current()
    w = P.G.watch
    watch = w.Watch(id=w._new_id(), kind=kind, description="wakesim source", created=0.0,
                    logdir=(run.logs_dir / conversation))
    w._register(watch)
    return watch


def fire(watch: Any, once: bool = False) -> int:
    """The watch's source fires: gptme's own `_fire` with a new producer message."""
    m = current().produce("watch:" + watch.logdir.name, watch.logdir.name, origin=watch.id)
    P.G.watch._fire(watch, f"line [wakesim m{m}]", once=once)
    return m


def subagent_done(conversation: str, agent_id: str) -> int:
    """A subagent of `conversation` finishes: gptme's `notify_completion`."""
    run = current()
    m = run.produce("subagent:" + conversation, conversation, kind="completion", origin=agent_id)
    P.G.subagent_hooks.notify_completion(agent_id, "success", f"result [wakesim m{m}]",
                                         parent_logdir=run.logs_dir / conversation,
                                         parent_branch="main")
    return m


def cli_session(conversation: str, prompts: Iterable[str], *, idle_max_s: float | None = None,
                exit_: bool = True) -> None:
    """`gptme -n` on `conversation`: gptme's own `_run_chat_loop`, noninteractive, with the
    tools' hooks; then the process exit (SESSION_END hooks on completion, atexit's
    `reset_background_jobs`). Runs on the calling managed thread."""
    from gptme.hooks import HookType, current_conversation_id, trigger_hook
    from gptme.llm.models import get_model, set_default_model
    from gptme.message import Message
    run = current()
    current_conversation_id.set(conversation)
    if idle_max_s is not None:
        os.environ["GPTME_WATCH_IDLE_MAX"] = str(idle_max_s)
    logdir = run.logs_dir / conversation
    os.makedirs(logdir, exist_ok=True)
    P.prepare_execution_environment(run.workspace, None, run.config(logdir))
    set_default_model(get_model(MODEL))
    P.G.message.set_output_format("quiet")
    manager = run.manager(conversation)
    queue = [Message("user", p) for p in prompts]
    cause = "QueueEmpty"
    try:
        P.G.chat._run_chat_loop(manager, queue, False, tool_format="markdown", model=None,
                                interactive=False, no_confirm=True, logdir=logdir)
    except P.G.complete.SessionCompleteException:
        cause = "SessionComplete"
        run.end_session(cause, conversation)
        for msg in trigger_hook(HookType.SESSION_END, logdir=logdir, manager=manager):
            manager.append(msg)
    run.end_session(cause, conversation)
    # The process exits: atexit runs reset_background_jobs (it kills what still runs); nothing
    # of this process runs after it. (`exit_=False`: the process lives on, as a server or a
    # test holding other conversations does.)
    if exit_:
        P.G.shell_background.reset_background_jobs()
        run.exited = True


def queue_prompt(conversation: str, text: str, steer: bool = False) -> int:
    """A steering writer (another process) appends to the conversation's prompt queue.

    A record's place in the queue is set when it is written, under the queue's lock, so that is
    where it is produced: two writers racing for the lock (two of a plan's writes due at one
    instant) then produce in the order the file holds, as two processes would. Numbered before
    the lock, a writer preempted at the lock would hold an earlier number than the record written
    ahead of it, a break of FIFO that is the writers' and not the queue's. gptme's own lock and
    record shape (`_prompt_queue_lock`, `queue_prompt`'s fields); a release without the lock
    helper is written through its `queue_prompt`, numbered first."""
    run = current()
    pq = P.G.prompt_queue
    stream = ("steer:" if steer else "prompt:") + conversation
    logdir = run.logs_dir / conversation
    lock = getattr(pq, "_prompt_queue_lock", None)
    if lock is None:
        m = run.produce(stream, conversation, kind="prompt")
        pq.queue_prompt(logdir, f"{text} [wakesim m{m}]", steer=steer)
        return m
    # The clock read (a scheduling point) comes before the lock, as in `queue_prompt`: the
    # same points in the same order, so a run whose writers do not race is the same run.
    queued_at = pq.datetime.now(pq.timezone.utc).isoformat()
    with lock(logdir):
        m = run.produce(stream, conversation, kind="prompt")
        record: dict[str, Any] = {"content": f"{text} [wakesim m{m}]", "queued_at": queued_at}
        if steer:
            record["steer"] = True
        with pq.get_prompt_queue_path(logdir).open("a", encoding="utf-8") as f:
            f.write(pq.json.dumps(record) + "\n")
    return m


def write_control(conversation: str, contents: str) -> None:
    """The parent writes the conversation's control.jsonl."""
    path = current().logs_dir / conversation / "control.jsonl"
    os.makedirs(path.parent, exist_ok=True)
    with open(path, "w") as f:
        f.write(contents)


def producer(events: Iterable[tuple[int, Callable[..., object], tuple[Any, ...]]],
             name: str = "producer") -> Any:
    """One producer thread for one FIFO stream: `events` are (ms, fn, args), run in time order,
    one after the other. Two messages of one stream due at the same instant are produced in
    order, as the model produces them; messages of different streams (other threads) race."""
    def body() -> None:
        run = current()
        for ms, fn, args in sorted(events, key=lambda e: e[0]):
            d = ms - run.now_ms()
            if d > 0:
                SCHED.sleep(d / 1000)
            fn(*args)
    return spawn(body, name=name)


def run_plan(plan: Callable[[], object], chooser: sched.Chooser, *, horizon_ms: int = 3_600_000,
             steps_max: int = 200_000, variant: str | None = None,
             **run_kwargs: Any) -> tuple[Run, sched.Outcome]:
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

