"""W1, the bug of seed 000 (`docs/hosts/gptme.md`, G-1), written as gptme's retry was before the
fix: one wake per deferred event. request_watch_wake sets `generating` before it returns, so the
second wake of the same drain is refused by the first; the refused event and the rest go back
to the head of the queue, to wait for the next retry: one event per idle turn."""
from wakesim_adapter.gptme import (
    Message,
    SessionManager,
    get_logs_dir,
    requeue_watch_event,
    take_queued_watch_events,
)


def retry_deferred_watch_wakes(conversation_id):
    logdir = get_logs_dir() / conversation_id
    batch = take_queued_watch_events(logdir)
    for i, (watch_id, text) in enumerate(batch):
        msg = Message("system", f"Watch {watch_id} fired: {text}")
        if not SessionManager.request_watch_wake(conversation_id, msg):
            # Requeue in reverse with appendleft, so the batch keeps its order at the head.
            for wid, txt in reversed(batch[i:]):
                requeue_watch_event(logdir, wid, txt)
            break
