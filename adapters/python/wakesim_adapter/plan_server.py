"""The real gptme server's per-seed plan, drawn as the Rust model draws it (conformance).

`ServerHost::plan` (src/family/gptme_server/host.rs) draws, in this order and with these labels
and bounds: the faults switched on (`Faults::plan`: `fault on`, then `fault rate` for a rate that
is neither 0 nor 1, in `ServerFault::ALL` order, which is the order the Rust side sends them in),
the producer kinds (`producer kinds`, when both watch events and completions are configured),
the watch events (`events`, `first event`, then `spacing` and `watch` per event, stopping at the
active phase's end), the completions (`completions`, `completion time` each) and the timed
faults' occurrences (`occurrences`, `fault time` each). `wakesim conform` checks the two lanes'
plans by these labels (`real::PLAN_LABELS`) before it compares anything else.

During the run the opportunity faults are drawn where the model draws them, with its labels:
`tool_confirmation` then `tool_calls` when a model reply arrives, `persist_failure` when a wake
persists its message, `dispatch_failure` when its step thread starts; the durations with the
model's labels (`model`, `tools`, `confirmation`, `command`). The model's `thread start` delay
has no counterpart here: a real step thread starts at once (0 ms, the model's value 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from . import real_gptme as R
from .sched import SCHED, _get_ident

Msg = dict[str, Any]
# What a plan function returns: the root thread's body, `Run` keyword arguments, and the setup
# of the run before it starts.
Plan = tuple[Callable[[], None], dict[str, Any], Callable[[R.Run], None]]


class PlanChooser(Protocol):
    """The draws a plan makes (`real_driver.RemoteChooser`, `LocalChooser`)."""

    def choose(self, bound: int, label: str) -> int: ...

    def chance(self, num: int, den: int, label: str) -> bool: ...

    def instant(self, lo: int, hi: int, label: str) -> int: ...

    def delay(self, lo: int, hi: int, label: str) -> int: ...

WATCH_STREAM, COMPLETION_STREAM = 0, 1
STREAMS = {"watch": ("the watch events of logdir A", WATCH_STREAM),
           "completion": ("the subagent completions of logdir A", COMPLETION_STREAM)}
RATE_LEVELS = 3


def now_ms() -> int:
    return SCHED.now_ns // 1_000_000


def _span(s: Any) -> tuple[int, int]:
    return (s["min"], s["max"]) if isinstance(s, dict) else (s, s)


def draw_faults(ch: PlanChooser, faults: list[Msg]) -> dict[str, Opportunity]:
    """`Faults::plan` with `swarm::draw_fault`: each fault on in its share of the seeds, its rate
    scaled by a drawn level. Returns name -> Opportunity (on or off)."""
    out = {}
    for f in faults:
        num, den = f["share"]
        rate = tuple(f.get("rate", (1, 1)))
        on = ch.chance(num, den, "fault on")
        if on and not (rate[0] == 0 or rate[0] >= rate[1]):
            level = ch.choose(RATE_LEVELS, "fault rate")
            rate = (rate[0], rate[1] * (1 << (RATE_LEVELS - 1 - level)))
        out[f["name"]] = Opportunity(ch, f["name"], on, rate, f.get("max", 1), f.get("timed", False))
    return out


class Opportunity:
    """One fault in one seed: `Faults::fires` (draws only while on, under its maximum, and in the
    active phase)."""

    def __init__(self, ch: PlanChooser, name: str, on: bool, rate: tuple[int, ...], max_: int,
                 timed: bool) -> None:
        self.ch, self.name, self.on, self.rate, self.max, self.timed = ch, name, on, rate, max_, timed
        self.fired = 0
        self.active_ms = 0

    def fires(self) -> bool:
        if not self.on or self.fired >= self.max or now_ms() >= self.active_ms:
            return False
        if self.ch.chance(self.rate[0], self.rate[1], self.name):
            self.fired += 1
            return True
        return False


def draw_subset(ch: PlanChooser, n: int) -> int:
    return 1 if n <= 1 else ch.choose((1 << n) - 1, "producer kinds") + 1


def server_plan(ch: PlanChooser, sc: Msg, limits: Msg) -> Plan:
    """Draw a server run as the model does; returns (plan, Run kwargs, setup(run))."""
    active = limits["active_ms"]
    retry_ms = sc.get("timed_retry_ms", 500)
    attempts_max = sc.get("timed_attempts_max", 40)
    faults = draw_faults(ch, sc["faults"])
    for name in ("tool_confirmation", "tool_calls", "persist_failure", "dispatch_failure"):
        faults.setdefault(name, Opportunity(ch, name, False, (0, 1), 0, False))
    for f in faults.values():
        f.active_ms = active
    on = {n: f.on for n, f in faults.items()}
    p, t = sc["producers"], sc["timing"]
    kinds = [k for k, configured in (("watch", _span(p["events"])[1] > 0),
                                     ("completion", _span(p["completions"])[1] > 0)) if configured]
    mask = draw_subset(ch, len(kinds)) if kinds else 0
    kinds_on = [k for i, k in enumerate(kinds) if mask & (1 << i)]
    wire = getattr(ch, "wire", None)
    if wire is not None:
        wire.send({"type": "mix", "producers": kinds_on,
                   "faults": [[n, f.rate[0], f.rate[1]] for n, f in faults.items() if f.on]})
    watches = max(1, int(p.get("watches", 1)))
    fires: list[tuple[int, int]] = []
    if "watch" in kinds_on:
        lo, hi = _span(p["events"])
        n = lo + ch.choose(hi - lo + 1, "events")
        at = ch.instant(*_span(p["start_ms"]), "first event")
        for i in range(n):
            if i > 0:
                at += ch.instant(*_span(p["spacing_ms"]), "spacing")
            if at >= active:
                break
            fires.append((at, ch.choose(watches, "watch")))
    comps: list[tuple[int, int]] = []
    if "completion" in kinds_on:
        lo, hi = _span(p["completions"])
        n = min(lo + ch.choose(hi - lo + 1, "completions"), 26)
        for agent in range(n):
            at = ch.instant(*_span(p["completion_ms"]), "completion time")
            if at < active:
                comps.append((at, agent))
    timed: list[tuple[int, str]] = []
    for f in faults.values():
        if f.timed and f.on and f.max > 0:
            count = 1 + ch.choose(f.max, "occurrences")
            for _ in range(count):
                timed.append((ch.instant(1, max(active - 1, 1), "fault time"), f.name))
    model_ms, tool_ms = _span(t["model_ms"]), _span(t["tool_ms"])
    confirm_ms, command_ms = _span(t["confirm_ms"]), _span(t["command_ms"])
    # A conversation with subagents has the subagent tool loaded: its STEP_PRE hook takes the
    # completions at every step, as the model's does.
    tools = (("watch",) if on.get("watch_tool") else ()) + ("shell",) + \
        (("subagent",) if "completion" in kinds_on else ())
    kwargs: dict[str, Any] = dict(tools=tools, replies={}, model_ms=model_ms, tool_ms=tool_ms)

    def user_step() -> bool:
        # What the /step route does (`api_v2_sessions.py`): under the conversation lock and
        # the session's step_lock, 409 when any session generates or a command owns the
        # conversation; else reserve (generating, a new step_seq) and start the step thread.
        SM = R.P.G.SessionManager
        s = max(SM.get_sessions_for_conversation("A"), key=lambda x: x.last_activity)
        with SM.conversation_lock("A"), s.step_lock:
            if SM.conversation_generating("A") or SM.command_is_active("A"):
                return False
            s.generating = True
            s.step_seq += 1
            seq = s.step_seq
        from gptme.message import Message
        R.current().manager("A").append(Message("user", "Do the task."))
        R.current().note("user", "user step on A")
        if R.current().in_step_end_gap("A", _get_ident()):
            # The user's step took the conversation between another step's end and its retry's
            # wake for the deferred events (which it now refuses): the model runs that end and
            # retry as one event, so no model run puts the user step between them.
            R.current().note("host", "step-end gap: a user step takes the conversation between a step's "
                               "end and its retry's wake")
            R.current().obs("host", {"Mark": {"window": "step-end-gap"}})
        R.P.G.session_step._start_step_thread("A", s, R.MODEL, R.current().workspace, stream=False,
                                            reserved=True, step_seq=seq)
        return True

    def occurrence(at: int, name: str) -> Callable[[], None]:
        # A timed fault's occurrence (`ServerHost::timed_fault`): retried every `retry_ms` while
        # the host cannot take it, `attempts_max` attempts at most; none in the quiescent phase.
        def body() -> None:
            attempts = 0
            d = at - now_ms()
            if d > 0:
                SCHED.sleep(d / 1000)
            while now_ms() < active:
                SM = R.P.G.SessionManager
                if name == "user_steps":
                    if user_step():
                        return
                elif "A" not in SM._active_commands:
                    SM.start_command("A")
                    R.current().note("user", "command starts on A")
                    SCHED.sleep(R.current().draw_ms(command_ms, "command") / 1000)
                    R.current().note("user", "command ends on A")
                    SM.finish_command("A")
                    return
                attempts += 1
                if attempts >= attempts_max:
                    return
                SCHED.sleep(retry_ms / 1000)
        return body

    def setup(run: R.Run) -> None:
        run.deliver_passes = True
        run.produce_names = STREAMS

        def reply(cid: str) -> str:
            # `step_reply`: a tool call awaiting confirmation, tool calls that execute, or text.
            if faults["tool_confirmation"].fires():
                d = run.draw_ms(confirm_ms, "confirmation")
                R.at(now_ms() + d, R.confirm_tools, cid, name="user-confirms")
                run.free_tool_runs += 1   # the confirmed call executes at once, as the model's
                return "tool"
            if faults["tool_calls"].fires():
                for s in R.P.G.SessionManager.get_sessions_for_conversation(cid):
                    s.auto_confirm_count = 1
                return "tool"
            return "text"
        run.reply_after = reply
        run.persist_fault = faults["persist_failure"].fires
        run.dispatch_fault = faults["dispatch_failure"].fires

    def plan() -> None:
        R.session("A")
        ws = [R.arm_watch("A") for _ in range(watches)]
        R.current().origin_index.update({w.id: i for i, w in enumerate(ws)})
        R.current().origin_index.update({f"agent{i + 1}": i for i in range(26)})
        for at, name in timed:
            R.spawn(occurrence(at, name), name=f"fault-{name}")
        # One producer thread per FIFO stream (the logdir's watch events; its completions).
        if fires:
            R.producer([(t_, R.fire, (ws[w],)) for t_, w in fires], "watch:A")
        if comps:
            # `notify_completion` wakes the parent itself (`_notify_server`): a pass of its
            # own, as the model's.
            def done(agent: str) -> None:
                R.current().observe_pass(lambda: R.subagent_done("A", agent), "A", retry=False)
            R.producer([(t_, done, (f"agent{a + 1}",)) for t_, a in comps], "subagent:A")
    return plan, kwargs, setup
