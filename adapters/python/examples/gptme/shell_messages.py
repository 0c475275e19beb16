"""The completion message of a background job, as gptme's shell_background._completion_message
writes it: the job's status and command, then the tail of its output."""
from wakesim_adapter.gptme import Message


def completion_message(job):
    stdout, stderr = job.get_output()
    details = []
    if stdout:
        details.append(f"```stdout\n{stdout[-8000:]}```")
    if stderr:
        details.append(f"```stderr\n{stderr[-2000:]}```")
    suffix = "\n\n" + "\n\n".join(details) if details else ""
    status = f"exit code {job.returncode}"
    return Message("system", f"Background shell job #{job.id} finished ({status}): `{job.command}`{suffix}")
