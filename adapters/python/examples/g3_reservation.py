"""G3 inside gentle-agents' outbox, in Python."""
from gentle.idle_wake_d62bc901 import create_idle_wake_sender
from gentle.outbox import install_outbox


def wake(pi, options):
    return install_outbox(pi, create_idle_wake_sender(pi), options)
