#!/usr/bin/env python3
"""Summary of a scripts/mutants.sh run: the mutation score, every survivor with its
classification, and seeds to first kill.

    scripts/mutants_summary.py OUT_DIR MUTANTS_DIR [--json]
    scripts/mutants_summary.py --exclude-re FILE MUTANTS_DIR   # for scripts/mutants.sh --skip-equivalent

OUT_DIR holds cargo-mutants' `FAMILY/mutants.out/` (and `FAMILY-PART/mutants.out/` of a run split
into parts) and the hand-written mutants'
`manual-FAMILY/NAME.{outcome,log}`. MUTANTS_DIR holds the checked-in lists:

- `equivalent.md`: survivors no run can tell apart from the original, one per line as
  ``- `NAME`: why``;
- `gaps.md`: survivors that are gaps of wakesim, ``- `NAME`: class N: what would kill it``.

NAME is cargo-mutants' name (`src/family/gptme_cli/wakes/b1.rs:131:9: replace ...`) or `manual:NAME` for a
patch. A listed name without `:line:column` matches every mutant of that text, so a list stays
valid when unrelated lines move; with them it matches one. A survivor in neither list is reported
as UNCLASSIFIED, a listed name whose mutant was judged and killed is reported as stale, and one
that was not run at all (`scripts/mutants.sh --skip-equivalent`) as listed, not run.

Seeds to first kill: the `mutant-kill:` lines tests/mutants.rs prints name the seeds the gate ran
until a scenario told the mutant apart (the first seed whose outcome its expectation does not
allow, plus one). A kill that needed the whole budget (an expected failure or race window gone)
counts as that budget; a kill only the exploration of a scope makes counts as the runs it took and
is reported apart.
"""

import json
import re
import statistics
import sys
from pathlib import Path

FAMILIES = ["g3", "outbox", "w2", "b1", "g4"]
LINECOL = re.compile(r"^([^:]+):\d+:\d+: ")


def normal(name):
    return LINECOL.sub(r"\1: ", name)


def load_list(path):
    """`- `NAME`: text` lines -> [(name, text)]."""
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        m = re.match(r"^- `([^`]+)`: (.*)$", line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def matches(entry, name):
    return entry == name or (not LINECOL.match(entry) and entry == normal(name))


def kill_seeds(log_text):
    """(seeds, explore_runs) from the mutant-kill lines of a log: the smallest of each."""
    seeds, runs = None, None
    for line in log_text.splitlines():
        if not line.startswith("mutant-kill: "):
            continue
        m = re.search(r" · seeds (\d+) · ", line)
        if m:
            n = int(m.group(1))
            seeds = n if seeds is None else min(seeds, n)
        m = re.search(r" · explore (\d+) runs · ", line)
        if m:
            n = int(m.group(1))
            runs = n if runs is None else min(runs, n)
    return seeds, runs


def escape(text):
    """A regex (Rust's regex crate, as cargo-mutants reads it) matching `text` literally."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", text)


def exclude_res(file, lists):
    """The cargo-mutants name regexes of the equivalent mutants listed for `file`."""
    for entry, _ in load_list(lists / "equivalent.md"):
        if entry.startswith("manual:") or not entry.startswith(file + ":"):
            continue
        if LINECOL.match(entry):
            yield "^" + escape(entry) + "$"
        else:
            yield "^" + escape(file) + r":\d+:\d+: " + escape(entry[len(file) + 2:]) + "$"


def collect(out):
    mutants = []  # dicts: family, name, outcome (caught|missed|timeout|unviable), seeds, runs
    for fam in FAMILIES:
        # A later part (a rerun) overrides an earlier one's outcome for the same mutant.
        parts = [out / fam] + sorted(out.glob(f"{fam}-*"), key=lambda p: p.stat().st_mtime)
        for part in parts:
            outcomes = part / "mutants.out" / "outcomes.json"
            if not outcomes.exists():
                continue
            data = json.loads(outcomes.read_text())
            for o in data["outcomes"]:
                scenario = o["scenario"]
                if not isinstance(scenario, dict) or "Mutant" not in scenario:
                    continue
                outcome = {
                    "CaughtMutant": "caught",
                    "MissedMutant": "missed",
                    "Timeout": "timeout",
                    "Unviable": "unviable",
                }.get(o["summary"])
                if outcome is None:
                    # Not judged (an interrupted build or test): rerun it.
                    print(f"not judged ({o['summary']}): {scenario['Mutant']['name']}", file=sys.stderr)
                    continue
                log = part / "mutants.out" / o["log_path"]
                seeds, runs = kill_seeds(log.read_text(errors="replace")) if log.exists() else (None, None)
                name = scenario["Mutant"]["name"]
                mutants[:] = [m for m in mutants if m["name"] != name]
                mutants.append(dict(family=fam, name=name, kind="cargo-mutants",
                                    outcome=outcome, seeds=seeds, runs=runs))
        manuals = [out / f"manual-{fam}"] + sorted(out.glob(f"manual-{fam}-*"), key=lambda p: p.stat().st_mtime)
        for manual in manuals:
            if not manual.exists():
                continue
            for f in sorted(manual.glob("*.outcome")):
                text = f.read_text()
                outcome = ("missed" if "MISSED" in text else "caught" if "caught" in text
                           else "unviable")
                log = f.with_suffix(".log")
                seeds, runs = kill_seeds(log.read_text(errors="replace")) if log.exists() else (None, None)
                mutants[:] = [m for m in mutants if m["name"] != f"manual:{f.stem}"]
                mutants.append(dict(family=fam, name=f"manual:{f.stem}", kind="manual",
                                    outcome=outcome, seeds=seeds, runs=runs))
    return mutants


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    k = max(0, min(len(values) - 1, int(round(p / 100 * len(values) + 0.5)) - 1))
    return values[k]


def main():
    if sys.argv[1] == "--exclude-re":
        for r in exclude_res(sys.argv[2], Path(sys.argv[3])):
            print(r)
        return 0
    out, lists = Path(sys.argv[1]), Path(sys.argv[2])
    as_json = "--json" in sys.argv[3:]
    equivalent = load_list(lists / "equivalent.md")
    gaps = load_list(lists / "gaps.md")
    mutants = collect(out)
    if not mutants:
        print(f"no results under {out}: run scripts/mutants.sh first")
        return 1
    used = set()
    for m in mutants:
        m["class"] = None
        if m["outcome"] in ("missed",):
            for entry, why in equivalent:
                if matches(entry, m["name"]):
                    m["class"] = ("equivalent", why)
                    used.add(("e", entry))
                    break
            else:
                for entry, why in gaps:
                    if matches(entry, m["name"]):
                        m["class"] = ("gap", why)
                        used.add(("g", entry))
                        break

    lines = []
    total = dict(viable=0, caught=0, missed=0, timeout=0, unviable=0, equivalent=0)
    lines.append("family  kind           viable caught missed(equiv) timeout unviable")
    for fam in FAMILIES:
        for kind in ("cargo-mutants", "manual"):
            ms = [m for m in mutants if m["family"] == fam and m["kind"] == kind]
            if not ms:
                continue
            c = {k: sum(1 for m in ms if m["outcome"] == k) for k in ("caught", "missed", "timeout", "unviable")}
            eq = sum(1 for m in ms if m["class"] and m["class"][0] == "equivalent")
            viable = len(ms) - c["unviable"]
            lines.append(f"{fam:7} {kind:14} {viable:6} {c['caught']:6} {c['missed']:6}({eq}) {c['timeout']:7} {c['unviable']:8}")
            total["viable"] += viable
            total["equivalent"] += eq
            for k in c:
                total[k] += c[k]
    # A timeout is a kill: the mutant made the gate hang (a bounded run never hangs the original).
    killed = total["caught"] + total["timeout"]
    scored = total["viable"] - total["equivalent"]
    score = killed / scored if scored else 0.0
    lines.append("")
    lines.append(f"mutation score: {killed} killed of {scored} non-equivalent viable mutants = {score:.1%} "
                 f"({total['viable']} viable, {total['equivalent']} equivalent, {total['unviable']} unviable)")

    seeds = [m["seeds"] for m in mutants if m["outcome"] == "caught" and m["seeds"] is not None]
    explore_only = [m for m in mutants if m["outcome"] == "caught" and m["seeds"] is None and m["runs"] is not None]
    if seeds:
        lines.append(f"seeds to first kill over {len(seeds)} mutants killed by a seed: median "
                     f"{statistics.median(seeds):g}, p90 {percentile(seeds, 90)}, max {max(seeds)}")
    if explore_only:
        runs = [m["runs"] for m in explore_only]
        lines.append(f"{len(explore_only)} killed only by exploring a scope: runs median "
                     f"{statistics.median(runs):g}, max {max(runs)}")

    survivors = [m for m in mutants if m["outcome"] == "missed"]
    lines.append("")
    lines.append(f"survivors ({len(survivors)}):")
    for m in survivors:
        cls = m["class"]
        tag = "UNCLASSIFIED" if cls is None else f"{cls[0]}: {cls[1]}"
        lines.append(f"  {m['name']}\n      {tag}")
    judged = [m["name"] for m in mutants]
    ran = {m["family"] for m in mutants}

    def was_run(entry):
        return any(matches(entry, n) for n in judged)

    def in_run_family(entry):
        # The entry's file belongs to a family this run judged (manual ones by their prefix).
        if entry.startswith("manual:"):
            return any(entry.startswith(f"manual:{f}-") for f in ran)
        return any(m["name"].startswith(entry.split(":")[0] + ":") for m in mutants)

    listed = [("e", e) for e, _ in equivalent] + [("g", g) for g, _ in gaps]
    stale = [e for k, e in listed if (k, e) not in used and was_run(e)]
    not_run = [e for k, e in listed if not was_run(e) and in_run_family(e)]
    if stale:
        lines.append("")
        lines.append("listed but no longer surviving (update mutants/*.md):")
        for e in stale:
            lines.append(f"  {e}")
    if not_run:
        lines.append("")
        lines.append(f"listed but not run ({len(not_run)}; --skip-equivalent, or the name no longer exists):")
        for e in not_run:
            lines.append(f"  {e}")
    if as_json:
        print(json.dumps(dict(mutants=mutants, score=score, killed=killed, scored=scored), indent=1))
    else:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
