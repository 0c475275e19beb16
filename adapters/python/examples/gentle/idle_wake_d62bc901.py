"""G3: G2 plus a wake reservation with lazy expiry (gentle-shell lib/idle-wake.ts @d62bc901,
ported to Python). A wake prompt that fails without a run holds the reservation, and what was
queued meanwhile waits (P-5)."""
import time

from wakesim_adapter.pi import StaleCtx

WAKE_RESERVATION_MS = 60_000


def create_idle_wake_sender(pi, now=lambda: time.time() * 1000):
    state = {"latest": None, "reserved_at": None}

    def release(_event, ctx):
        state["latest"] = ctx
        state["reserved_at"] = None

    def remember(_event, ctx):
        state["latest"] = ctx

    pi.on("session_start", release)
    pi.on("agent_start", release)
    pi.on("turn_end", remember)
    pi.on("agent_end", remember)

    def host_idle():
        try:
            return state["latest"] is not None and state["latest"].is_idle()
        except StaleCtx:
            return False

    def send(message, options):
        if not host_idle():
            pi.send_message(message, options)
            return
        pi.send_message(message, {"deliver_as": "nextTurn"})
        at = state["reserved_at"]
        if at is not None and now() - at < WAKE_RESERVATION_MS:
            return
        state["reserved_at"] = now()
        pi.send_user_message(" ")

    return send
