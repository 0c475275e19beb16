"""B1: PR #3843's background-job hooks (gptme/tools/shell_background.py, `docs/hosts/gptme.md`):
the completion hook drains at STEP_PRE (900), and background_job_wait_hook (LOOP_CONTINUE, 1500)
keeps an otherwise idle noninteractive session alive while one of its jobs runs.

    msgs = completion_hook(); if msgs: yield msgs + StopPropagation
    if interactive or prompt_queue: return
    deadline = now + GPTME_WATCH_IDLE_MAX
    loop:
      with _job_lock: msgs = completion_hook(); pending = own jobs not notified, not expired
                      if msgs or not pending: break
      incoming = wait_input()                     # outside the lock: file reads
      if incoming: list -> msgs = incoming; "hook" -> no messages; break
      with _job_lock: recheck (no lost wakeup); deadline -> expire, timeout notice once; break
                      cond(cid).wait(min(remaining, 1 s))
    if msgs: yield msgs + StopPropagation

Two earlier states of the same code are options of this module: `control_fingerprint = false`
(B1-pre: a non-empty control.jsonl interrupts every wait, G-7) and `recheck_under_lock = false`
(no recheck under the notifier's lock, nor the 1 s cap: a completion between the drain and the
wait is missed until the deadline, G-8).

Deadlines are kept in monotonic_ns: virtual time is whole milliseconds and integer arithmetic
compares them exactly at the instant a wait times out (float seconds can be one ulp off there).
"""
import hashlib
import math
import os
import time

from shell_messages import completion_message
from wakesim_adapter.gptme import (
    HookType,
    Message,
    StopPropagation,
    background_jobs,
    claim_completed_jobs,
    job_condition,
    job_lock,
    options,
    read_control,
    register_hook,
    subagent_pending,
    take_prompt_queue,
)

MAX_PROMPT_QUEUE_SIZE = 100  # gptme/constants.py
WAIT_CAP_NS = 1_000_000_000
IDLE_MAX_DEFAULT_S = 1800.0
INPUT_NOTICE = "Background wait yielded to pending session input."

_opts = options()
CONTROL_FINGERPRINT = _opts.get("control_fingerprint", True)
RECHECK_UNDER_LOCK = _opts.get("recheck_under_lock", True)

# (resolved control path, sha256(contents)) of the control files that interrupted a wait already.
_control_wait_keys = set()


def background_job_completion_hook(manager, interactive=False, prompt_queue=None, no_confirm=False):
    """Deliver this conversation's completed jobs, each exactly once."""
    with job_lock:
        jobs = claim_completed_jobs(manager.chat_id)
    for job in jobs:
        yield completion_message(job)


def _idle_max_ns():
    try:
        limit = float(os.environ.get("GPTME_WATCH_IDLE_MAX") or IDLE_MAX_DEFAULT_S)
    except ValueError:
        limit = IDLE_MAX_DEFAULT_S
    if not math.isfinite(limit) or limit < 0:
        limit = IDLE_MAX_DEFAULT_S
    return round(limit * 1e9)


def _pending_jobs(conversation_id):
    """Own jobs whose completion is not queued yet and that no wait gave up on."""
    return [
        job
        for job in background_jobs()
        if job.conversation_id == conversation_id
        and not job._completion_notified
        and not job._wait_expired
    ]


def _wait_input(manager):
    """What ends the wait besides a completion: subagent reports (yield to their hook), queued
    prompts, or a control file this wait has not yielded to yet."""
    if subagent_pending(manager.logdir):
        return "hook"
    records = take_prompt_queue(manager.logdir, MAX_PROMPT_QUEUE_SIZE)
    if records:
        return [Message("user", r["content"]) for r in records]
    contents = read_control(manager.logdir)
    if not contents:
        return None
    if CONTROL_FINGERPRINT:
        path = str(manager.logdir / "control.jsonl")
        key = (path, hashlib.sha256(contents.encode()).hexdigest())
        if key in _control_wait_keys:
            return None
        _control_wait_keys.add(key)
    return [Message("system", INPUT_NOTICE, notice="input")]


def _time_out(pending, limit_ns):
    """Stop waiting for these jobs and say so, once; their completions stay queued."""
    for job in pending:
        job._wait_expired = True
    ids = ", ".join(f"#{job.id}" for job in pending)
    return [
        Message(
            "system",
            f"Background job(s) {ids} still running after {limit_ns / 1e9:g}s "
            "(GPTME_WATCH_IDLE_MAX); no longer waiting for them.",
            notice="timeout",
        )
    ]


def background_job_wait_hook(manager, interactive, prompt_queue, no_confirm=False):
    msgs = list(background_job_completion_hook(manager))
    if msgs:
        yield from msgs
        yield StopPropagation()
        return
    if interactive or prompt_queue:
        return
    cid = manager.chat_id
    limit_ns = _idle_max_ns()
    deadline = time.monotonic_ns() + limit_ns
    while True:
        with job_lock:
            msgs = list(background_job_completion_hook(manager))
            pending = _pending_jobs(cid)
            if msgs or not pending:
                break
        incoming = _wait_input(manager)
        if incoming == "hook":
            msgs = []
            break
        if incoming:
            msgs = incoming
            break
        if RECHECK_UNDER_LOCK:
            with job_lock:
                # Under the lock the reader's _notify_completion takes: nothing slips in between
                # this check and the wait.
                msgs = list(background_job_completion_hook(manager))
                pending = _pending_jobs(cid)
                if msgs or not pending:
                    break
                now = time.monotonic_ns()
                if now >= deadline:
                    msgs = _time_out(pending, limit_ns)
                    break
                job_condition(cid).wait(min(deadline - now, WAIT_CAP_NS) / 1e9)
        else:
            now = time.monotonic_ns()
            if now >= deadline:
                msgs = _time_out(_pending_jobs(cid), limit_ns)
                break
            with job_lock:
                job_condition(cid).wait((deadline - now) / 1e9)
    if msgs:
        yield from msgs
        yield StopPropagation()


register_hook("background_job_completion_hook", HookType.STEP_PRE, background_job_completion_hook, 900)
register_hook("background_job_wait_hook", HookType.LOOP_CONTINUE, background_job_wait_hook, 1500)
