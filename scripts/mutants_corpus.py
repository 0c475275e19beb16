#!/usr/bin/env python3
"""Search the mutation gate's coverage corpus (issue 15, class 5) and say what is missing.

    scripts/mutants_corpus.py [--seeds N] [--record] [SCENARIO..]

For every passing scenario of a fixed family (the wake logics tests/mutants.rs judges; default:
all of them under scenarios/pi and scenarios/gptme), the race windows its first 100 seeds miss
(the gate's stage 1) are looked up in seeds 100..N (default 20,000) and the first seed reaching
each is found (chunks of 500, then bisection: `wakesim run --seeds A..B --format json`, whose
scenario line counts the seeds reaching each window). A window is covered when a saved passing
run of the scenario (`regressions/NAME-seed-S.toml`) reaches it: checked by replaying the file
(`wakesim run FILE --format json` judges it; `replay --format json` names its windows).

With --record, a missing window's first seed is recorded as a saved run (`wakesim replay SCN
--seed S --record`, which writes `regressions/NAME-seed-S.toml`) with the corpus comment, so stage 0 of the gate replays it first.
A saved run that is a corpus file (its comment says so) but reaches none of the windows it was
kept for is reported as stale: its scenario changed under it; delete it and record again.

The binary is $WAKESIM or target/release/wakesim; it must be built from this tree.
"""

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = os.environ.get("WAKESIM", str(ROOT / "target/release/wakesim"))
FIRST = 100  # tests/mutants.rs FIRST_SEEDS
CHUNK = 500
FIXED_WAKES = {  # tests/mutants.rs, every family
    "pi.reservation", "pi.raw-trigger-turn", "pi.raw-follow-up", "pi.counter", "pi.is-idle",
    "pi.gentle", "pi.gentle-fixed", "pi.gentle-pre-t3", "pi.gentle-pre-t2",
    "gptme.w2-one-wake-per-burst", "gptme.w2-subagent",
    "gptme.b1-idle-wait", "gptme.b1-ordered", "gptme.b1-pre-control-any", "gptme.b1-no-recheck",
}
CORPUS = re.compile(r"^# Coverage corpus: the first seed of the scenario reaching the race window ([\w-]+)")


def wakesim(*args):
    out = subprocess.run([BIN, *args], cwd=ROOT, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"wakesim {' '.join(args)} exited {out.returncode}: {out.stderr[-2000:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def windows(scn, a, b):
    """Seeds a..b of a scenario: {window: seeds reaching it}."""
    for line in wakesim("run", str(scn), "--seeds", f"{a}..{b}", "--format", "json", "--no-save",
                        "--threads", "1"):
        if line.get("type") == "scenario":
            return line.get("windows", {})
    return {}


def first_seed(scn, window, a, b):
    """The first seed in a..b (which reaches `window`) reaching it."""
    while b - a > 1:
        mid = (a + b) // 2
        if windows(scn, a, mid).get(window):
            b = mid
        else:
            a = mid
    return a


def saved_windows(reg):
    """The windows a saved run reaches (its replayed timeline's race-window lines)."""
    for line in wakesim("replay", str(reg), "--format", "json"):
        if line.get("type") == "run":
            return {w["window"] for w in line.get("windows", []) if w.get("count")}
    return set()


def passing(paths):
    for p in paths:
        data = tomllib.loads(p.read_text())
        if "format" in data:
            continue  # a regression file
        if data.get("wake") in FIXED_WAKES and data.get("expect", {}).get("verdict") == "pass":
            yield p, data


def main():
    args = sys.argv[1:]
    seeds, record = 20_000, False
    if "--seeds" in args:
        i = args.index("--seeds")
        seeds = int(args[i + 1])
        del args[i:i + 2]
    if "--record" in args:
        record = True
        args.remove("--record")
    paths = [Path(a).resolve() for a in args] or sorted(
        p for d in ("scenarios/pi", "scenarios/gptme") for p in (ROOT / d).glob("*.toml"))
    for scn, data in passing(paths):
        rel = scn.relative_to(ROOT)
        seen = set(windows(scn, 0, FIRST))
        late = {}
        for a in range(FIRST, seeds, CHUNK):
            b = min(a + CHUNK, seeds)
            for w, n in windows(scn, a, b).items():
                if n and w not in seen and w not in late:
                    late[w] = first_seed(scn, w, a, b)
        regdir = scn.parent / "regressions"
        saved = {}
        for reg in sorted(regdir.glob(f"{scn.stem}-seed-*.toml")):
            kept = [m.group(1) for m in map(CORPUS.match, reg.read_text().splitlines()) if m]
            saved[reg] = (kept, saved_windows(reg))
        print(f"{rel}: first {FIRST} seeds reach {sorted(seen) or 'no window'}")
        for reg, (kept, reached) in saved.items():
            gone = [w for w in kept if w not in reached]
            if gone:
                print(f"  STALE {reg.relative_to(ROOT)}: kept for {', '.join(gone)}, no longer reaches it")
            elif not reached - seen:
                print(f"  saved {reg.name} reaches no window the first {FIRST} seeds miss")
        for w, s in sorted(late.items(), key=lambda kv: kv[1]):
            have = [r for r, (_, reached) in saved.items() if w in reached]
            if have:
                print(f"  {w}: first at seed {s}; covered by {have[0].name}")
                continue
            print(f"  {w}: first at seed {s}; MISSING")
            if record:
                out = regdir / f"{scn.stem}-seed-{s}.toml"
                if not out.exists():
                    wakesim("replay", str(rel), "--seed", str(s), "--record")
                text = out.read_text().splitlines(keepends=True)
                note = (f"# Coverage corpus: the first seed of the scenario reaching the race window {w} (random\n"
                        f"# seeds 0..{seeds} searched once); replayed before any seed, so a wrong logic in that window is\n"
                        f"# told at this run instead of after {s} seeds.\n")
                out.write_text(text[0] + note + "".join(text[1:]))
                saved[out] = ([w], saved_windows(out))
                print(f"    recorded {out.relative_to(ROOT)}")
        for w in sorted(set(data.get("coverage", {}).get("must_reach", [])) - seen - set(late)):
            print(f"  {w}: must_reach, but no seed of 0..{seeds} reaches it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
