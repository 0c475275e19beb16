"""The real gptme's background jobs, in the two shapes a release has (`G.shape`, read from its
package by `real_gptme_patch.load`): 0.35.1 registers a job the driver runs
(`register_background_job`, `complete_background_job`: the "registry" shape); 0.33.0 and 0.34.0
start a job's process themselves (`start_background_job`, `subprocess.Popen`, a reader thread:
the "popen" shape, where the process (`FakeProcess`), its signals and its reader are the
boundary, `_popen_boundary`). And what a release lacks to be driven (`missing`), read from its
package, never from its version number.

gptme is not type-checked here (its package is the pinned venv's): what it hands back is `Any`.
"""

from __future__ import annotations

import os
from typing import Any


def _patch() -> Any:
    """`real_gptme_patch` (which imports this module: its state is read at each call)."""
    from . import real_gptme_patch
    return real_gptme_patch


# ---- what a release has


def registered(job: Any) -> bool:
    """gptme's job registry still holds `job` (by conversation from 0.34.0; by id in 0.33.0)."""
    jobs = _patch().G.shell_background._background_jobs
    cid = getattr(job, "conversation_id", _NO_CONVERSATIONS)
    if cid is _NO_CONVERSATIONS:
        return jobs.get(job.id) is job
    return jobs.get(cid, {}).get(job.id) is job


_NO_CONVERSATIONS = object()


def missing(family: str, variant: str, faults: list[str]) -> list[str]:
    """What the loaded release lacks to be driven as `family` with `variant` and `faults`
    (empty: it can be). Read from the package, never from its version number."""
    g = _patch().load()
    sb = g.shell_background
    need: list[tuple[str, bool]] = [
        ("gptme.chat._run_chat_loop", hasattr(g.chat, "_run_chat_loop")),
        ("gptme.hooks.registry.HookRegistry.unregister",
         hasattr(getattr(g.hooks_registry, "HookRegistry", None), "unregister")),
    ]
    if g.shape == "registry":
        need.append(("shell_background.complete_background_job",
                     hasattr(sb, "complete_background_job")))
    else:
        need += [("shell_background.start_background_job", hasattr(sb, "start_background_job")),
                 ("shell_background.BackgroundJob.start_reader",
                  hasattr(getattr(sb, "BackgroundJob", None), "start_reader"))]
    if family == "gptme-server":
        need += [("gptme.tools.watch", g.watch is not None),
                 ("SessionManager.request_watch_wake",
                  hasattr(g.SessionManager, "request_watch_wake")),
                 ("shell_background.register_background_job",
                  hasattr(sb, "register_background_job"))]
    hooks = getattr(g.shell.tool, "hooks", None) or {}
    wait = ("shell_background._background_wait_input", hasattr(sb, "_background_wait_input"))
    if variant == "b0":
        need += [("the shell tool's background_wait hook", "background_wait" in hooks),
                 ("the shell tool's background_completion hook", "background_completion" in hooks)]
    elif variant == "b1-pre":
        need.append(("shell_background._control_wait_keys", hasattr(sb, "_control_wait_keys")))
    elif variant in ("b1-no-recheck", "b1-no-recheck-capped"):
        need += [wait, ("shell_background._pending_wait_jobs", hasattr(sb, "_pending_wait_jobs"))]
    for f in faults:
        if f in ("control_writes", "stale_control"):
            need.append(wait)
        elif f == "teardown_reset":
            import inspect
            params = inspect.signature(g.reset_background_jobs_real).parameters
            need.append(("reset_background_jobs(conversation_id, all_conversations=)",
                         "all_conversations" in params))
        elif f in ("prompt_writes", "steer_writes"):
            need.append(("gptme.prompt_queue.queue_prompt", hasattr(g.prompt_queue, "queue_prompt")))
    out: list[str] = []
    for name, ok in need:
        if not ok and name not in out:
            out.append(name)
    return out


def complete_job(job: Any, stdout: str, stderr: str) -> None:
    """A job's reader has read its process's last output: what the release does then. 0.35.1's
    `complete_background_job`; in the popen shape the reader's own end: the output into the
    job's buffers, then `_notify_completion` where the release has it (0.34.0). Where it has no
    completion to publish (0.33.0, whose results are only pulled with `output N`), the
    completion message is made here, when its output is in the buffer."""
    sb = _patch().G.shell_background
    if _patch().G.shape == "registry":
        sb.complete_background_job(job, stdout, stderr)
        return
    for data, fd in ((stdout, 1), (stderr, 2)):
        if not data:
            continue
        if hasattr(job, "_append_output"):
            job._append_output(fd, 1, data.encode())
        else:
            with job._buffer_lock:
                job._append_to_buffer(job.stdout_buffer if fd == 1 else job.stderr_buffer, data)
    if hasattr(sb, "_notify_completion"):
        sb._notify_completion(job)
    else:
        _patch().current().notify_completion(job, lambda job: None)


def append_output_locked(job: Any, data: str) -> None:
    """Add `data` to a job's stdout under `_job_lock` (the completion's marker), as the
    release's own buffer append does: the dropped characters counted where it counts them."""
    if hasattr(job, "_append_to_buffer_locked"):
        job._stdout_buffer_start += job._append_to_buffer_locked(job.stdout_buffer, data)
    else:
        removed = job._append_to_buffer(job.stdout_buffer, data)
        if hasattr(job, "_stdout_buffer_start") and isinstance(removed, int):
            job._stdout_buffer_start += removed


class _Delegate:
    """A module's stand-in: the names given, else the module's own."""

    def __init__(self, module: Any, **names: Any) -> None:
        self.__dict__.update(names)
        self._module = module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


_FAKE_PID_BASE = 1 << 30   # far above any pid the system hands out; never signalled for real
_FAKE_PROCESSES: dict[int, FakeProcess] = {}


def _popen_boundary(sb: Any) -> None:
    """The popen shape's boundary: `subprocess.Popen` in shell_background hands out the run's
    next fake process (`Run.start_job` makes it), `os.killpg` of its process group kills that
    fake process (and never a real one), and a job's reader thread is the driver's
    (`Run._job_reader`: the pipes it reads are outside the process under test)."""
    import subprocess

    def popen(*args: Any, **kwargs: Any) -> FakeProcess:
        proc: FakeProcess | None = _patch().current().next_process
        if proc is None:
            raise RuntimeError("gptme started a process the driver did not plan")
        _patch().current().next_process = None
        proc.pid = _FAKE_PID_BASE + len(_FAKE_PROCESSES)
        _FAKE_PROCESSES[proc.pid] = proc
        return proc

    def killpg(pgid: int, sig: int) -> None:
        proc = _FAKE_PROCESSES.get(pgid)
        if proc is None:
            raise ProcessLookupError(pgid)
        proc.kill()

    sb.subprocess = _Delegate(subprocess, Popen=popen)
    sb.os = _Delegate(os, killpg=killpg)
    sb.BackgroundJob.start_reader = lambda self: None


class FakeProcess:
    """A background job's process: it exits when the plan says (or when killed)."""

    def __init__(self) -> None:
        self.returncode: int | None = None
        self.pid = 0
        self.stdout = None   # no pipes: the driver's reader stands for the one reading them
        self.stderr = None
        self.conv = "A"      # the conversation whose job it is (`Run.start_job`)
        self.job: Any = None   # gptme's BackgroundJob (`Run.start_job`)
        self.work = 0          # the model's number of the job

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            self.returncode = -9
            _patch().current().job_killed(self)

    terminate = kill
