"""W2, the fix (SessionManager.retry_deferred_watch_wakes, gptme/server/session_models.py
@0b19447c): the whole burst in one system message and one wake; a refused batch goes back with
appendleft in reverse, ahead of newer events, in order."""
from wakesim_adapter.gptme import (
    Message,
    SessionManager,
    get_logs_dir,
    requeue_watch_event,
    take_queued_watch_events,
)


def retry_watch_events(conversation_id):
    logdir = get_logs_dir() / conversation_id
    batch = take_queued_watch_events(logdir)
    if not batch:
        return
    body = "\n".join(f"Watch {watch_id} fired: {text}" for watch_id, text in batch)
    if not SessionManager.request_watch_wake(conversation_id, Message("system", body)):
        for watch_id, text in reversed(batch):
            requeue_watch_event(logdir, watch_id, text)


def retry_deferred_watch_wakes(conversation_id):
    retry_watch_events(conversation_id)
