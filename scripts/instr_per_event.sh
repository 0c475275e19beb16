#!/usr/bin/env bash
# Instructions per kernel event (issue 14): the figure of kernel speed that a shared, noisy
# machine repeats exactly, where wall-clock and CPU time do not. Runs `wakesim run DIR --threads 1`
# under callgrind and divides by the events the run reports.
#
#   scripts/instr_per_event.sh [BINARY] [DIR [RUN-ARGS..]]
#   scripts/instr_per_event.sh                                  # target/release/wakesim, both dirs
#   scripts/instr_per_event.sh target/release/wakesim scenarios/pi --seeds 0..300
#
# Prints, per directory: the events, the whole process's instructions per event (loading the
# scenario files included) and the runs' (`Runs::run`, inclusive: the seeds alone). Needs
# valgrind; takes about 50x the run's CPU time (a minute or two per directory on a quiet core).
# A figure, never a test: nothing in CI runs this.
set -euo pipefail

bin=${1:-target/release/wakesim}
shift || true
if [[ $# -gt 0 ]]; then
    runs=("$*")
else
    runs=("scenarios/pi" "scenarios/gptme")
fi
command -v valgrind >/dev/null || { echo "instr_per_event: valgrind is not installed" >&2; exit 2; }
[[ -x $bin ]] || { echo "instr_per_event: no binary at $bin (cargo build --release)" >&2; exit 2; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for run in "${runs[@]}"; do
    # shellcheck disable=SC2086 # the directory and its arguments, split on purpose
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$bin" run $run --threads 1 \
        >"$out/stdout" 2>"$out/stderr" || true
    events=$(grep -o '[0-9]* events in' "$out/stdout" | tail -1 | cut -d' ' -f1)
    total=$(grep -o 'Collected : [0-9]*' "$out/stderr" | tail -1 | cut -d' ' -f3)
    # The runner's `run` is listed once per source file inlined into it; its own line (the
    # largest count) is the whole call.
    runs_ir=$(callgrind_annotate --inclusive=yes "$out/cg" 2>/dev/null |
        grep -E '^ *[0-9,]+ .*as wakesim::family::Runs>::run( |$)' |
        awk '{gsub(/,/, "", $1); if ($1 + 0 > max) max = $1 + 0} END {if (max) printf "%.0f\n", max}')
    if [[ -z $events || -z $total || $events -eq 0 ]]; then
        echo "instr_per_event: $run did not report its events (see $out/stdout)" >&2
        cat "$out/stdout" "$out/stderr" >&2
        exit 1
    fi
    printf '%s: %s events; %s instructions/event (process), %s (runs)\n' "$run" "$events" \
        "$((total / events))" "$(( ${runs_ir:-0} / events ))"
done
