"""G2: wake an idle host through prompt(), deciding idleness with ctx.is_idle() and no
reservation (gentle-shell lib/idle-wake.ts @949bd4ae, ported to Python). pi keeps is_idle() true
while a prompt prepares, so a second send in that window wakes again (P-4)."""
from wakesim_adapter.pi import StaleCtx


def create_idle_wake_sender(pi):
    latest = None

    def remember(_event, ctx):
        nonlocal latest
        latest = ctx

    for event in ("session_start", "agent_start", "turn_end", "agent_end"):
        pi.on(event, remember)

    def host_idle():
        # A missing or stale ctx reads as not idle: the host path, never nextTurn (P-8).
        try:
            return latest is not None and latest.is_idle()
        except StaleCtx:
            return False

    def send(message, options):
        if host_idle():
            pi.send_message(message, {"deliver_as": "nextTurn"})
            pi.send_user_message(" ")
            return
        pi.send_message(message, options)

    return send
