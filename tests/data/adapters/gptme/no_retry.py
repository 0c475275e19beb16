"""A gptme-server module without retry_deferred_watch_wakes: it cannot start."""


def something_else(conversation_id):
    return None
