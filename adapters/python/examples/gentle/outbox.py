"""gentle-agents' queue-and-flush delivery around a send function (`docs/hosts/gentle-agents.md`), in Python:
completions and notifications are queued and flushed at once when no agent run is counted active,
else at turn_end, agent_end and agent_settled, as steer; orchestrator messages go at once, as
followUp; session_start drops what the old session queued."""


def install_outbox(pi, send, options=None):
    options = options or {}
    state = {"active_runs": 0, "queue": []}
    item_options = {"deliver_as": options.get("completions_as", "steer"), "trigger_turn": True}

    def flush(*_):
        while state["queue"]:
            send(state["queue"].pop(0), item_options)

    def on_session_start(_event, _ctx):
        state["queue"] = []

    def on_agent_start(_event, _ctx):
        state["active_runs"] += 1

    def on_agent_end(_event, _ctx):
        state["active_runs"] = max(0, state["active_runs"] - 1)
        flush()

    pi.on("session_start", on_session_start)
    pi.on("agent_start", on_agent_start)
    pi.on("turn_end", flush)
    pi.on("agent_end", on_agent_end)
    pi.on("agent_settled", flush)

    def deliver(message, delivery_options):
        if message["details"]["kind"] == "orchestrator":
            send(message, delivery_options)
            return
        state["queue"].append(message)
        if state["active_runs"] == 0:
            flush()

    return deliver
