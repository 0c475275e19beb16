"""The scripted real-gptme scenarios: the reference's minimal interleavings G-1..G-12 and the
README's gptme findings, as plans on gptme 0.35.1's own code. The tests judge them
(`tests/test_real_gptme.py`); `real_replay.py NAME --seed N` prints one run's timeline.

A scenario is a plan (the root thread: sessions, user steps, confirmations, commands, producers
firing at planned instants) with the run's settings (tools loaded, reply script, timings, faults,
the wake variant). Timings are fixed so each race sits at one virtual instant; the seed decides
the interleaving of the threads at that instant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from . import real_gptme as R
from .sched import Outcome, SeededChooser, Verdict

PlanFn = Callable[[], None]


def watch_plan(fires: Iterable[int], *, step: bool = True, confirm_at: int | None = None,
               subagents: Iterable[tuple[str, int]] = (),
               command: tuple[int, int] | None = None) -> PlanFn:
    """Conversation A with a server session; a user step at 0 (unless `step` is False); the
    watch fires at each instant of `fires`; subagents finish at their instants; the user confirms
    pending tool calls at `confirm_at`; a command (start, ms) owns the conversation."""
    fires = list(fires)
    subagents = list(subagents)

    def plan() -> None:
        R.session("A")
        w = R.arm_watch("A")
        if step:
            R.user_step("A")
        if fires:
            R.producer([(t, R.fire, (w,)) for t in fires], name="watch:A")
        if subagents:
            R.producer([(t, R.subagent_done, ("A", agent)) for agent, t in subagents],
                       name="subagent:A")
        if confirm_at is not None:
            R.at(confirm_at, R.confirm_tools, "A")
        if command is not None:
            R.at(command[0], R.command, "A", command[1])
    return plan


def cli_plan(prompts: Iterable[str] = ("Run the tests in the background.",), *,
             at: Iterable[tuple[int, Callable[..., object], tuple[Any, ...]]] = (),
             exit_: bool = True) -> PlanFn:
    """`gptme -n` on conversation A, with outside actions at planned instants."""
    at = list(at)

    def plan() -> None:
        for t, fn, args in at:
            R.at(t, fn, *args)
        R.cli_session("A", list(prompts), exit_=exit_)
    return plan


# ---- outside actions


def stale_control() -> None:
    R.write_control("A", '{"op":"status"}\n')


def rewrite_control() -> None:
    R.write_control("A", '{"op":"statu2"}\n')   # same size, other contents


def concurrent_drain() -> None:
    """Another drain of A's completions (a STEP_PRE elsewhere), appending what it claims."""
    m = R.current().manager("A")
    for msg in R.P.G.shell_background.background_job_completion_hook(m):
        m.append(msg)


def foreign_job() -> None:
    """Conversation B of the same process starts a job."""
    from gptme.hooks import current_conversation_id
    current_conversation_id.set("B")
    R.current().start_job("sleep 3")


def reset_a() -> None:
    R.P.G.shell_background.reset_background_jobs("A", all_conversations=False)


def malformed_record() -> None:
    path = R.current().logs_dir / "A" / "prompt-queue.jsonl"
    with open(path, "a") as f:
        f.write("{not json\n")


def flood() -> None:
    for i in range(101):
        R.queue_prompt("A", f"p{i}")


def two_prompts() -> None:
    R.queue_prompt("A", "p1")
    R.queue_prompt("A", "p2")


def two_steers() -> None:
    R.queue_prompt("A", "s1", True)
    R.queue_prompt("A", "s2", True)


def steer(text: str) -> PlanFn:
    def act() -> None:
        R.queue_prompt("A", text, True)
    return act


def prompt(text: str, is_steer: bool = False) -> PlanFn:
    def act() -> None:
        R.queue_prompt("A", text, is_steer)
    return act


SHELL = ("shell",)
TOOL = {"A": ["tool"]}
BG3 = {"A": ["bg", "text", "text"]}

# name -> (plan, settings, what it shows)
SCENARIOS: dict[str, tuple[PlanFn, dict[str, Any], str]] = {
    # G-1: a burst while generating, drained at step end.
    "g1-burst": (watch_plan([100, 200]), dict(model_ms=1000),
                 "two watch events while a step generates; the retry at step end"),
    # G-2: the retry's wake refused while a tool call awaits confirmation.
    "g2-refused-while-tools-pending": (watch_plan([100], confirm_at=5000),
                                       dict(model_ms=1000, replies=TOOL),
                                       "an event deferred; its retry refused (a tool awaits confirmation)"),
    # G-3: three events across refusals, delivered after the confirmation.
    "g3-order-across-requeues": (watch_plan([100, 200, 3000], confirm_at=5000),
                                 dict(model_ms=1000, replies=TOOL),
                                 "three events deferred and retried while busy"),
    # G-4: two completions while busy; the first's wake refused.
    "g4-completions-reordered": (watch_plan([], subagents=[("a", 100), ("b", 200)], confirm_at=5000),
                                 dict(model_ms=1000, replies=TOOL),
                                 "two subagent completions; the retry's first wake refused"),
    # G-5: persisted, then the step thread fails to start.
    "g5-dispatch-failure": (watch_plan([100], step=False), dict(model_ms=1000, dispatch_fails=1),
                            "an idle conversation's wake persists, then cannot start its step"),
    "finish-command-retries": (watch_plan([500], step=False, command=(100, 2000)), dict(model_ms=1000),
                               "an event while a slash command owns the conversation"),
    # Found on the real code: an event at the instant a step completes wakes in the gap
    # between the step's `generating = False` and its retry; the deferred one comes after it.
    "step-end-gap": (watch_plan([500, 1000]), dict(model_ms=1000),
                     "e1 deferred while a step generates; e2 fires the instant the step ends"),
    # Finding: w2-persist-failure-overtaken.
    "persist-failure-overtaken": (watch_plan([100, 3000], step=False),
                                  dict(model_ms=1000, persist_fails={"A"}),
                                  "the first event's persist fails on an idle conversation; "
                                  "a second event later"),
    # Finding: w2-subagent-mixed-drain-refuses-itself.
    "mixed-drain": (watch_plan([100], subagents=[("a", 200)]), dict(model_ms=1000),
                    "a watch event and a completion deferred; one retry drains both"),
    # G-6: PR #3843's chat-loop replay.
    "g6-pr3843": (cli_plan(), dict(tools=SHELL, replies=BG3, job_ms=[5000], model_ms=1000),
                  "reply 1 starts a background job, reply 2 says it runs; noninteractive"),
    # G-7: a stale control.jsonl while waiting.
    "g7-stale-control": (cli_plan(at=[(0, stale_control, ())]),
                         dict(tools=SHELL, replies={"A": ["bg", "text"]}, job_ms=[60_000],
                              model_ms=1000, horizon_ms=200_000),
                         "a non-empty control.jsonl nobody consumes, a 60 s job"),
    "g7-same-size-rewrite": (cli_plan(at=[(0, stale_control, ()), (10_000, rewrite_control, ())]),
                             dict(tools=SHELL, replies={"A": ["bg", "text"]}, job_ms=[60_000],
                                  model_ms=1000),
                             "control.jsonl rewritten with other contents of the same size"),
    # G-8: the job finishes the instant the wait drains.
    "g8-notify-at-the-drain": (cli_plan(), dict(tools=SHELL, replies=BG3, job_ms=[1000], model_ms=1000),
                               "the job ends at 2000 ms, when reply 2 ends and the wait drains"),
    # G-9: a concurrent drain claims J1 while the wait waits for J1 and J2.
    "g9-concurrent-drain": (cli_plan(at=[(4000, concurrent_drain, ())]),
                            dict(tools=SHELL, replies={"A": ["bg", "bg", "text", "text"]},
                                 job_ms=[2000, 6000], model_ms=1000),
                            "J1 ends at 4000 and is claimed by another drain; J2 ends at 9000"),
    # G-10: a foreign conversation's job.
    "g10-foreign-job": (cli_plan(("Say hi.",), at=[(0, foreign_job, ())], exit_=False),
                        dict(tools=SHELL, replies={"A": ["text"]}, job_ms=[500], model_ms=1000),
                        "conversation B's job runs in the same process"),
    # G-11: reset while the waiter waits.
    "g11-reset-while-waiting": (cli_plan(at=[(5000, reset_a, ())], exit_=False),
                                dict(tools=SHELL, replies={"A": ["bg", "text"]}, job_ms=[100_000],
                                     model_ms=1000),
                                "reset_background_jobs(A) at 5000 while the wait waits"),
    # G-12: input during the wait.
    "g12-prompt-ends-wait": (cli_plan(at=[(5000, prompt("steer-now"), ())]),
                             dict(tools=SHELL, replies={"A": ["bg", "text", "text", "text"]},
                                  job_ms=[20_000], model_ms=1000),
                             "a prompt record written at 5000 while the wait waits"),
    "g12-steer-ends-wait": (cli_plan(at=[(5000, prompt("steer-now", True), ())]),
                            dict(tools=SHELL, replies={"A": ["bg", "text", "text", "text"]},
                                 job_ms=[20_000], model_ms=1000),
                            "a steer record written at 5000 while the wait waits"),
    "g12-malformed-record": (cli_plan(at=[(5000, malformed_record, ())]),
                             dict(tools=SHELL, replies=BG3, job_ms=[20_000], model_ms=1000),
                             "a malformed line appended to prompt-queue.jsonl while waiting"),
    "g12-flood": (cli_plan(at=[(5000, flood, ())]),
                  dict(tools=SHELL, replies={"A": ["bg", "text"]}, job_ms=[200_000], model_ms=10),
                  "101 prompt records at once while waiting"),
    # Finding: b1-step-pre-overtakes-queued-completion.
    "step-pre-overtakes-completion": (cli_plan(at=[(3000, two_prompts, ())]),
                                      dict(tools=SHELL, replies={"A": ["bg", "bg"] + ["text"] * 4},
                                           job_ms=[2500, 2000], model_ms=1000),
                                      "two prompts end the wait; J1 ends during p1's turn, J2 as it ends"),
    # Finding: b1-steer-overtakes-queued-steer.
    "steer-overtakes-steer": (cli_plan(at=[(5000, two_steers, ()), (6500, steer("s3"), ())]),
                              dict(tools=("shell", "subagent"),
                                   replies={"A": ["bg", "text", "tool", "text"]}, job_ms=[30_000],
                                   model_ms=1000),
                              "s1, s2 end the wait; s3 written during s1's turn; the subagent tool loaded"),
}


def run(name: str, seed: int = 0, *, variant: str | None = None,
        **overrides: Any) -> tuple[R.Run, Outcome]:
    """Run scenario `name` at `seed` (with a variant, and settings overridden); returns
    (run, outcome). A run that errs or deadlocks is an AssertionError: every scenario ends."""
    plan, settings, _ = SCENARIOS[name]
    kwargs = {**settings, **overrides}
    run_, out = R.run_plan(plan, SeededChooser(seed), variant=variant, **kwargs)
    if out.verdict not in (Verdict.QUIET, Verdict.HORIZON) or out.errors:
        raise AssertionError(f"{name} seed {seed}: {out} {out.errors}")
    return run_, out


def timeline(name: str, seed: int, variant: str | None = None, **overrides: Any) -> str:
    """The run's records as text lines, for `real_replay.py`."""
    run_, out = run(name, seed, variant=variant, **overrides)
    _, settings, what = SCENARIOS[name]
    lines = [f"real gptme 0.35.1 · {name} · variant {variant or 'gptme own'} · seed {seed} · {what}"]
    for t, actor, ev in run_.records:
        (kind, body), = ev.items()
        lines.append(f"{t:>8}  {actor:<9} {kind} {body}")
    lines.append(f"end: {out.verdict} at {out.now_ms} ms after {out.points} scheduling points")
    lines.append(f"requests: {[(t, carried) for t, _, carried, _ in run_.requests]}")
    lines.append(f"lost: {run_.lost()}  duplicated: {run_.duplicated()}  "
                 f"self-refusals: {run_.self_refusals()}  delivery order: {run_.delivery_order()}")
    return "\n".join(lines)
