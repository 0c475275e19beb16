"""A LOOP_CONTINUE hook that yields a message carrying no producer message and no notice: the
facade refuses it (the host could not tell what it delivers)."""
from wakesim_adapter.gptme import HookType, Message, register_hook


def hook(manager, interactive, prompt_queue):
    yield Message("system", "still thinking")


register_hook("plain", HookType.LOOP_CONTINUE, hook, 1500)
