"""The real gptme CLI's per-seed plan, drawn as the Rust model draws it (conformance).

`CliHost::plan` (src/family/gptme_cli/host.rs) draws, in this order and with these labels and
bounds: the faults switched on (`Faults::plan`: `fault on`, then `fault rate` for a rate that is
neither 0 nor 1, in `CliFault::ALL` order, the order the Rust side sends them in), the jobs the
drawn replies may start (`jobs`), and the timed faults' occurrences (`occurrences`, `fault
time` each). `wakesim conform` checks the two lanes' plans by these labels
(`gptme_cli::real::PLAN_LABELS`) before it compares anything else.

During the run the draws are the model's, at its sites, with its labels: `model` when a request
is made; at the reply, the script's next entry or, past it, `reply starts a job` (while fewer
jobs started than planned) and the `tool_calls` opportunity; `job` when a job starts, then
`tool` (the tool call that started it, or a foreground tool); `reader drain` when a job's
process exits; at a prompt write `records`; at a control write `same-size rewrite`. The model's
`file io` and `thread wake` have no counterpart here: the fake files and a notified thread take
no virtual time (the model's value 0).

A timed fault is played at its instant unless the session has ended or the active phase is over
(`CliHost::timed_fault`; the CLI's are never retried).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from . import real_gptme as R
from .plan_server import Msg, Opportunity, Plan, PlanChooser, draw_faults, now_ms
from .sched import SCHED

# FIFO streams and their numbering (`gptme_cli/mod.rs`): job completions of A and B, prompt
# records, steer records.
JOB_STREAMS = {"A": 0, "B": 1}
PROMPT_STREAM, STEER_STREAM = 2, 3
JOB_STREAM_NAMES = {"A": "the job completions of conversation A",
                    "B": "the job completions of conversation B"}
# `ControlFile::fingerprint`: one control path per logdir, told apart by the contents' version.
CONTROL_PATH = 0x636F6E74


def _span(s: Any) -> tuple[int, int]:
    return (s["min"], s["max"]) if isinstance(s, dict) else (s, s)


def produce_names(stream: str, conversation: str, kind: str,
                  origin: str | None) -> tuple[str | None, int, int]:
    """The model's stream name, FIFO source and origin of a CLI producer message."""
    if kind == "job":
        # origin: "job #N" -> N - 1, the model's `(id - 1)`.
        n = int(str(origin).rsplit("#", 1)[-1])
        return JOB_STREAM_NAMES[conversation], JOB_STREAMS[conversation], n - 1
    steer = stream.startswith("steer:")
    return None, STEER_STREAM if steer else PROMPT_STREAM, int(steer)


class Control:
    """`control.jsonl` as the model counts it: a version per write, a size per record; the
    fingerprint the wait reports is the model's (`CONTROL_PATH << 32 | version`) for the
    contents that version wrote."""

    def __init__(self) -> None:
        self.version = 0
        self.records = 0
        self.by_contents: dict[bytes, int] = {}

    def write(self, same_size: bool) -> None:
        self.version += 1
        if not (same_size and self.records):
            self.records += 1
        # One record a line, all of one size; a same-size rewrite differs in the version.
        body = "".join(f'{{"op":"status","v":"{self.version:08d}","r":"{i:04d}"}}\n'
                       for i in range(self.records))
        R.write_control("A", body)
        self.by_contents[body.encode()] = CONTROL_PATH << 32 | self.version

    def fingerprint(self, data: bytes) -> int:
        return self.by_contents.get(data, CONTROL_PATH << 32)


def cli_plan(ch: PlanChooser, sc: Msg, limits: Msg) -> Plan:
    """Draw a CLI run as the model does; returns (plan, Run kwargs, setup(run))."""
    active = limits["active_ms"]
    faults = draw_faults(ch, sc.get("faults", []))
    faults.setdefault("tool_calls", Opportunity(ch, "tool_calls", False, (0, 1), 0, False))
    for f in faults.values():
        f.active_ms = active
    on = {n: f.on for n, f in faults.items()}
    p, t = sc["producers"], sc["timing"]
    lo, hi = _span(p.get("jobs", {"min": 1, "max": 2}))
    jobs_planned = lo + ch.choose(hi - lo + 1, "jobs") if hi > lo else lo
    timed: list[tuple[int, str]] = []
    for f in faults.values():
        if f.timed and f.on and f.max > 0:
            count = 1 + ch.choose(f.max, "occurrences") if f.max > 1 else 1
            for _ in range(count):
                timed.append((ch.instant(1, max(active - 1, 1), "fault time"), f.name))
    wire = getattr(ch, "wire", None)
    if wire is not None:
        wire.send({"type": "mix", "producers": [],
                   "faults": [[n, f.rate[0], f.rate[1]] for n, f in faults.items() if f.on]})
    script = ["bg" if k == "job" else k for k in p.get("script", [])]
    records = _span(p.get("prompt_records", {"min": 1, "max": 3}))
    drain_ms = _span(t.get("drain_ms", {"min": 0, "max": 1000}))
    idle_max_s = t.get("idle_max_ms", 1_800_000) / 1000
    tools: tuple[str, ...] = ("shell", "complete") if on.get("auto_reply") else ("shell",)
    # Steer records are read mid-turn by the subagent tool's STEP_PRE hook
    # (`tools/subagent/hooks.py`, drain_steer_prompts): the model drains them at every STEP_PRE,
    # so a run with an outside steer writer loads that tool, as a steered subagent has it.
    if on.get("steer_writes"):
        tools += ("subagent",)
    control = Control()
    state = {"replies": 0, "jobs": 0}

    def reply(cid: str) -> str:
        # `CliHost::reply`: the script, then a job (while fewer started than planned), a tool
        # call, or text.
        i = state["replies"]
        state["replies"] += 1
        if i < len(script):
            kind = script[i]
        elif state["jobs"] < jobs_planned and ch.chance(1, 2, "reply starts a job"):
            kind = "bg"
        elif faults["tool_calls"].fires():
            kind = "tool"
        else:
            kind = "text"
        if kind == "bg":
            state["jobs"] += 1
        return kind

    def closed() -> bool:
        return os.path.exists(R.current().logs_dir / "A" / "prompt-queue-closed")

    def write_prompts(steer: bool) -> None:
        # An outside writer (a parent's steering, as `subagent/api.py` writes it): refused once
        # the loop has touched its closed sentinel.
        if closed():
            R.current().note("fault", "outside writer: prompt-queue-closed is there, nothing written")
            return
        n = records[0] + ch.choose(records[1] - records[0] + 1, "records") \
            if records[1] > records[0] else records[0]
        for _ in range(n):
            R.queue_prompt("A", "Also check the logs.", steer)

    def occurrence(at: int, name: str) -> Callable[[], None]:
        def body() -> None:
            d = at - now_ms()
            if d > 0:
                SCHED.sleep(d / 1000)
            if now_ms() >= active or R.current().session_end is not None:
                return
            if name == "prompt_writes":
                write_prompts(False)
            elif name == "steer_writes":
                write_prompts(True)
            elif name == "control_writes":
                same = control.records > 0 and ch.chance(1, 2, "same-size rewrite")
                control.write(same)
                R.current().note("fault", f"control.jsonl written ({'same size' if same else 'grows'})")
            elif name == "teardown_reset":
                R.current().note("fault", "reset_background_jobs(A)")
                R.P.G.shell_background.reset_background_jobs("A", all_conversations=False)
            else:
                raise RuntimeError(f"the CLI plan does not play the fault {name!r}")
        return body

    def setup(run: R.Run) -> None:
        run.reply_after = reply
        run.produce_names = produce_names
        run.drain_ms = drain_ms
        run.tool_ms = _span(t.get("tool_ms", {"min": 10, "max": 2000}))
        run.control_fingerprint = control.fingerprint
        run.cli_bg_tool = True
        run.emit_waiting = True

    def plan() -> None:
        if on.get("stale_control"):
            control.write(False)
        for at, name in timed:
            R.spawn(occurrence(at, name), name=f"fault-{name}")
        R.cli_session("A", ["Do the task."], idle_max_s=idle_max_s)

    kwargs: dict[str, Any] = dict(tools=tools, replies={}, model_ms=_span(t["model_ms"]),
                                  job_ms=_span(t["job_ms"]))
    return plan, kwargs, setup
