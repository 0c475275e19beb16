"""Wake-logic variants that are not gptme 0.35.1's own code, as patches applied to the real
modules for one run (`apply(name)` after `real_gptme.reset`; the next reset undoes them).

- `w2` and `b1` are gptme 0.35.1 unchanged: `SessionManager.retry_deferred_watch_wakes` (the
  batched watch drain plus the subagent completions one per wake, W2 and W2-subagent) and
  `background_job_wait_hook` (B1 with the control fingerprint, the recheck under `_job_lock` and
  the 1 s cap).
- `w1` and `w0` replace the retry with the per-event drain the seed describes (W1 requeues the
  refused event and those after it; W0 only those after it), calling gptme's own
  `take_queued_watch_events`, `requeue_watch_event` and `request_watch_wake`.
- `b0` is gptme before #3843: the shell tool's `background_wait` LOOP_CONTINUE hook is left out
  of the registry, and its completion hook runs at the loop's end (LOOP_CONTINUE, priority 0,
  below auto-reply) instead of at STEP_PRE: completions reach the model only when a turn ends,
  and nothing waits for a job still running (the model's `gptme.b0-exit-on-empty`).
- `b1-pre` forgets every control fingerprint (`_control_wait_keys` never holds one): the wait
  yields whenever control.jsonl is non-empty, as before the fingerprint.
- `b1-no-recheck` blinds the recheck under the lock (the completion claim and the pending jobs
  right after `_background_wait_input` see what the drain saw) and lifts the 1 s cap on each wait
  (the version before the recheck had neither); `b1-no-recheck-capped` keeps the cap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from . import real_gptme as R

NAMES = ("w0", "w1", "w2", "b0", "b1", "b1-pre", "b1-no-recheck", "b1-no-recheck-capped")


def _per_event_drain(requeue_refused: bool) -> Callable[[Any, str], None]:
    def retry(cls: Any, conversation_id: str) -> None:
        from gptme.message import Message
        from gptme.tools.watch import requeue_watch_event, take_queued_watch_events
        logdir = (R.current().logs_dir / conversation_id).resolve()
        batch = take_queued_watch_events(logdir)
        for i, (watch_id, text) in enumerate(batch):
            if not cls.request_watch_wake(conversation_id,
                                          Message("system", f"Watch {watch_id} fired: {text}")):
                rest = batch[i:] if requeue_refused else batch[i + 1:]
                for watch_id2, text2 in reversed(rest):
                    requeue_watch_event(logdir, watch_id2, text2)
                break
    return retry


class _Forgetful(set[Any]):
    """A fingerprint set that never holds one."""

    def add(self, item: Any) -> None:
        pass


def _blind_recheck(sb: Any, originals: dict[str, Any]) -> None:
    state: dict[str, Any] = {"blind": None, "pending": []}
    real_input = originals["_background_wait_input"]
    real_claim = originals["background_job_completion_hook"]
    real_pending = originals["_pending_wait_jobs"]

    def wait_input(manager: Any) -> Any:
        r = real_input(manager)
        if not r:
            state["blind"] = "claim"   # the next claim and pending are the recheck's
        return r

    def claim(manager: Any, *a: Any, **k: Any) -> Iterator[Any]:
        if state["blind"] == "claim":
            state["blind"] = "pending"
            return iter(())
        got: Iterator[Any] = real_claim(manager, *a, **k)
        return got

    def pending(conversation_id: str) -> Any:
        if state["blind"] == "pending":
            state["blind"] = None
            return state["pending"]
        state["pending"] = real_pending(conversation_id)
        return state["pending"]

    sb._background_wait_input = wait_input
    sb.background_job_completion_hook = claim
    sb._pending_wait_jobs = pending


def apply(name: str) -> None:
    """Patch the loaded gptme for one run with the variant `name` (after `real_gptme.reset`)."""
    g = R.P.G
    run = R.current()
    if name not in NAMES:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(NAMES)}")
    if name == "w1":
        g.variant_retry = _per_event_drain(requeue_refused=True)
    elif name == "w0":
        g.variant_retry = _per_event_drain(requeue_refused=False)
    elif name == "b0":
        run.hooks_left_out = ("shell.background_wait", "shell.background_completion")
        run.hooks_added = (("wakesim.b0_turn_end", "LOOP_CONTINUE",
                            g.shell_background_originals["background_job_completion_hook"], 0),)
    elif name == "b1-pre":
        g.shell_background._control_wait_keys = _Forgetful()
    elif name in ("b1-no-recheck", "b1-no-recheck-capped"):
        _blind_recheck(g.shell_background, g.shell_background_originals)
        if name == "b1-no-recheck":
            g.shell_background.min = lambda remaining, cap: remaining
