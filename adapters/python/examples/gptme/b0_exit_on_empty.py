"""B0: background jobs before PR #3843 (`docs/hosts/gptme.md`, G-6). Completions reached the model
only through a hook that ran at the end of the loop, after auto-reply and stuck detection, and
nothing waited for a job still running: with nothing queued the noninteractive loop breaks and the
exit cleanup kills the job (two model calls, the completion lost)."""
from shell_messages import completion_message
from wakesim_adapter.gptme import HookType, claim_completed_jobs, job_lock, register_hook


def completion_hook_at_turn_end(manager, interactive, prompt_queue, no_confirm=False):
    with job_lock:
        jobs = claim_completed_jobs(manager.chat_id)
    for job in jobs:
        yield completion_message(job)


# Below auto_reply_hook (999) and stuck_detect_hook (1000). The name is the one wakesim's
# built-in B0 shows in timelines.
register_hook("completion hook (turn end)", HookType.LOOP_CONTINUE, completion_hook_at_turn_end, 0)
