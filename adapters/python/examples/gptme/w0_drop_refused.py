"""W0 (`docs/hosts/gptme.md`, G-2, inferred from test_requeue_preserves_remaining_events and the
seed: the old code "requeued only the events after the first"): W1's per-event drain, requeueing
batch[i+1:] when wake i is refused. take_queued_watch_events already removed event i, so an event
refused because the conversation is genuinely busy is lost."""
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
            for wid, txt in reversed(batch[i + 1:]):
                requeue_watch_event(logdir, wid, txt)
            break
