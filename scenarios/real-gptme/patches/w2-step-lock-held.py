"""A tempting fix for W2's step-end gap that deadlocks gptme 0.35.1.

The gap (README, "What real gptme 0.35.1 shows"): a watch event that fires at the instant a step
completes wakes between `generating = False` and the step's retry, and overtakes the deferred
events. The "fix" closes the gap by holding the session's `step_lock` across the whole retry, so
no watch delivery can reserve a step in between. But `request_watch_wake` takes `step_lock`
itself, and it is a `threading.Lock`, not re-entrant: the first retry that has a deferred event
to wake for blocks forever on a lock its own thread holds, and every delivery after it queues
behind. wakesim's thread scheduler sees no thread that can ever run again: NO-DEADLOCK.

Loaded by the real-gptme driver (`wake = { patch = "patches/w2-step-lock-held.py" }`):
`apply(G, RUN)` runs after each run's reset, which undoes it.
"""


def apply(G, RUN):
    real = G.real_retry

    def retry(cls, conversation_id):
        sessions = cls.get_sessions_for_conversation(conversation_id)
        if not sessions:
            return real(cls, conversation_id)
        session = max(sessions, key=lambda s: s.last_activity)
        with session.step_lock:
            return real(cls, conversation_id)

    G.variant_retry = retry
