#!/usr/bin/env bash
# The long run of issue 15: every fixed wake variant passes 1,000,000 seeds of each of its passing
# scenarios. Too long for CI (tens of CPU-minutes); a documented command with its last figures in
# the README ("Long runs").
#
#   scripts/long-run.sh [SEEDS] [PATH..]   # default: 1000000 seeds, scenarios/pi scenarios/gptme
#
# The scenarios are chosen from `wakesim list --format json`, not from a hand-kept list: every
# scenario that expects a pass and names one of the fixed variants below (G3, upstream G4 and the
# fixed G4, W2, B1). Each runs seeds 0..SEEDS with every core (`--threads` default); a seed is a
# pure function of the scenario and the seed, so the verdict does not depend on the machine.
# Prints one line per scenario and a total; a failure adds its seed, its replay line and the
# regression file `run` shrinks and saves beside the scenario (commit it, or pass over it: a file
# is never overwritten). Exits 1 if any scenario's expectation is not met, 2 on bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

SEEDS=${1:-1000000}
shift || true
[[ "$SEEDS" =~ ^[1-9][0-9]*$ ]] || { echo "long-run: SEEDS must be a positive integer, got '$SEEDS'" >&2; exit 2; }
PATHS=("$@")
[[ ${#PATHS[@]} -gt 0 ]] || PATHS=(scenarios/pi scenarios/gptme)

# The fixed variants of issue 15 (src/family/claims.rs holds what each claims to survive).
FIXED="pi.reservation pi.gentle pi.gentle-fixed gptme.w2-one-wake-per-burst gptme.b1-idle-wait gptme.b1-ordered"

cargo build --release --quiet --bin wakesim
BIN=target/release/wakesim

mapfile -t FILES < <("$BIN" list "${PATHS[@]}" --format json | FIXED="$FIXED" python3 -c '
import json, os, sys
fixed = set(os.environ["FIXED"].split())
for line in sys.stdin:
    d = json.loads(line)
    if d["type"] == "scenario" and d["expect"] == "pass" and d["wake"] in fixed:
        print(d["file"])
')
[[ ${#FILES[@]} -gt 0 ]] || { echo "long-run: no passing scenario of a fixed variant under ${PATHS[*]}" >&2; exit 2; }

echo "long run: ${#FILES[@]} scenarios x $SEEDS seeds"
failed=0
start=$SECONDS
for f in "${FILES[@]}"; do
  t0=$SECONDS
  if out=$("$BIN" run "$f" --seeds "0..$SEEDS" --color never 2>&1); then
    verdict=ok
  else
    verdict=FAILED
    failed=1
  fi
  line=$(grep '^summary:' <<<"$out" || true)
  printf '%-6s %-62s %4ds  %s\n' "$verdict" "$f" $((SECONDS - t0)) "${line#summary: }"
  [[ $verdict == ok ]] || grep -E '^(✗|  seed |  reproduce:|  the .* failure is| *kept |  saved)' <<<"$out" | head -8 || true
done
echo "long run: ${#FILES[@]} scenarios, $SEEDS seeds each, $((SECONDS - start)) s wall, $([[ $failed == 0 ]] && echo 'every expectation met' || echo 'FAILURES above')"
exit $failed
