"""A LOOP_CONTINUE hook that waits on the condition, then raises when it wakes: the exception
travels from the hook's thread to the run's outcome (panic), with the module's own line."""
from wakesim_adapter.gptme import HookType, job_condition, job_lock, register_hook


def hook(manager, interactive, prompt_queue):
    with job_lock:
        job_condition(manager.chat_id).wait(0.25)
    raise RuntimeError("woke up on the wrong side")
    yield


register_hook("grumpy", HookType.LOOP_CONTINUE, hook, 1500)
