"""W2 with the watch tool's `_deliver` written out in the module, as gptme's is: wake for the
event, else append it to `_pending_deliveries`. The runs must be those of gptme's own `_deliver`,
which the simulator runs for modules that do not define one."""
from wakesim_adapter.gptme import (
    Message,
    SessionManager,
    get_logs_dir,
    queue_watch_event,
    requeue_watch_event,
    take_queued_watch_events,
)


def deliver(conversation_id, logdir, watch_id, text):
    if SessionManager.request_watch_wake(conversation_id, Message("system", f"Watch {watch_id} fired: {text}")):
        return
    queue_watch_event(logdir, watch_id, text)


def retry_deferred_watch_wakes(conversation_id):
    logdir = get_logs_dir() / conversation_id
    batch = take_queued_watch_events(logdir)
    if not batch:
        return
    body = "\n".join(f"Watch {watch_id} fired: {text}" for watch_id, text in batch)
    if not SessionManager.request_watch_wake(conversation_id, Message("system", body)):
        for watch_id, text in reversed(batch):
            requeue_watch_event(logdir, watch_id, text)
