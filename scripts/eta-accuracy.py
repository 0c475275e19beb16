#!/usr/bin/env python3
"""How far the progress line's ETA was from the time that really remained, over one run.

    WAKESIM_ETA_LOG=/tmp/eta.tsv cargo run --release -- run
    scripts/eta-accuracy.py /tmp/eta.tsv [--after 0.1] [--floor 10] [--max 3]

The log (`WAKESIM_ETA_LOG=FILE`, written by `wakesim run`; its records are described in
src/report/progress.rs) has a `tick` record a second: the seconds since the progress line
appeared, the seeds done and the total, the ETA in seconds (`-` for none) and the number of
scenarios still to run whose cost was not yet known (the ETA is then a lower bound), and an
`end` record when the run's last scenario is done. The time that really remained at a tick is
the `end` time minus the tick's time.

Every tick after the first `--after` share of the seeds (10 %) is judged: its error is the ratio
of the larger of ETA and remaining time to the smaller, each taken as at least `--floor` seconds
(so a 2 s ETA with 1 s left is not "off by 2x"). A tick with no ETA at all (`ETA ?`) counts as
infinitely off. The script prints the worst ratio, where it was, how many judged ticks showed
a lower bound and where the scenarios' priors came from (each `scenario` record's last field:
`remembered` from the cost file a previous run wrote, or `derived` from the scenario file); with
`--max R` it exits 1 when the worst ratio is over R. A log read from a replay of another
estimator over the same run (`cargo test --lib -- --ignored replay_an_eta_log`, see
docs/performance.md) is judged the same way.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Tick:
    t: float
    done: int
    total: int
    eta: float | None
    untimed: int
    shown: str


@dataclass(frozen=True)
class Verdict:
    worst: float
    at: Tick | None
    remaining: float
    judged: int
    lower_bounds: int
    end: float
    total: int


def parse(text: str, source: str) -> tuple[list[Tick], float, int, dict[str, int]]:
    """The ticks of a log, its end time, its seeds in all and its scenarios' priors by source."""
    ticks: list[Tick] = []
    end: tuple[float, int] | None = None
    priors: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split("\t")
        try:
            if fields[0] == "scenario":
                # An older build's records end at the path: no prior recorded.
                from_ = fields[7] if len(fields) > 7 else "not recorded"
                priors[from_] = priors.get(from_, 0) + 1
            elif fields[0] == "tick":
                eta = None if fields[4] == "-" else float(fields[4])
                ticks.append(
                    Tick(
                        t=float(fields[1]),
                        done=int(fields[2]),
                        total=int(fields[3]),
                        eta=eta,
                        untimed=int(fields[5]),
                        shown=fields[8] if len(fields) > 8 else "",
                    )
                )
            elif fields[0] == "end":
                end = (float(fields[1]), int(fields[3]))
        except (IndexError, ValueError) as e:
            raise SystemExit(f"{source}:{n}: not an ETA log record ({e}): {line!r}") from e
    if end is None:
        raise SystemExit(f"{source}: no `end` record: the run did not finish (or the log is cut short)")
    return ticks, end[0], end[1], priors


def judge(ticks: list[Tick], end: float, total: int, after: float, floor: float) -> Verdict:
    """The worst ratio between ETA and the time that remained, over the ticks past `after`."""
    worst, at, remaining_at = 1.0, None, 0.0
    judged = lower = 0
    for tick in ticks:
        if total == 0 or tick.done < after * total or tick.t >= end:
            continue
        judged += 1
        remaining = end - tick.t
        if tick.untimed > 0:
            lower += 1
        if tick.eta is None:
            ratio = math.inf
        else:
            a, b = max(tick.eta, floor), max(remaining, floor)
            ratio = max(a, b) / min(a, b)
        if ratio > worst:
            worst, at, remaining_at = ratio, tick, remaining
    return Verdict(worst, at, remaining_at, judged, lower, end, total)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", help="the file WAKESIM_ETA_LOG named")
    ap.add_argument("--after", type=float, default=0.1, help="judge ticks after this share of seeds")
    ap.add_argument("--floor", type=float, default=10.0, help="seconds below which times count as equal")
    ap.add_argument("--max", type=float, default=None, help="exit 1 if the worst ratio is over this")
    args = ap.parse_args(argv)
    with open(args.log, encoding="utf-8") as f:
        ticks, end, total, priors = parse(f.read(), args.log)
    v = judge(ticks, end, total, args.after, args.floor)
    print(f"run: {v.total} seeds in {v.end:.1f} s; {v.judged} ticks after {args.after:.0%} of the seeds")
    if v.at is None:
        print("worst ratio: 1.00 (every judged ETA within the floor of the time that remained)")
    else:
        tick = v.at
        print(
            f"worst ratio: {v.worst:.2f} at {tick.t:.1f} s ({tick.done} of {tick.total} seeds): "
            f"ETA shown {tick.shown!r}, {v.remaining:.1f} s really remained"
        )
    print(f"lower bounds (scenarios of a kind not yet timed): {v.lower_bounds} of {v.judged} ticks")
    print("priors: " + (", ".join(f"{k} {n}" for k, n in sorted(priors.items())) or "none"))
    if args.max is not None and v.worst > args.max:
        print(f"over {args.max}x", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
