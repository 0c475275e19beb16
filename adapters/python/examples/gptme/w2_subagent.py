"""W2-subagent (`docs/hosts/gptme.md`, G-4): W2 plus the subagent completions the same retry
delivers, one per wake. The first completion is woken for; the rest go back at the tail of the
global queue for the woken step's STEP_PRE hook; a refused first completion goes back too, now
behind the rest: the next drain delivers them out of order."""
from w2_one_wake_per_burst import retry_watch_events
from wakesim_adapter.gptme import (
    Message,
    SessionManager,
    completion_queue,
    get_logs_dir,
    take_queued_completions,
)


def completion_message(completion):
    agent, status, summary, _branch = completion
    return Message("system", f"Subagent {agent} {status}: {summary}")


def retry_deferred_watch_wakes(conversation_id):
    retry_watch_events(conversation_id)
    queued = take_queued_completions(get_logs_dir() / conversation_id)
    if not queued:
        return
    first, *rest = queued
    for c in rest:
        completion_queue.put(c)
    if not SessionManager.request_watch_wake(
        conversation_id, completion_message(first), branch=first[3]
    ):
        completion_queue.put(first)
