#!/usr/bin/env bash
# The rare-bug suite's benchmark (docs/guide/search.md): for each bug of the suite, the median and
# p90 seeds to the first failure (`run --findability`: over every starting seed of the range,
# wrapping around) under uniform swarm and under each guided search, in one run. A figure, not a
# test: it prints a table and exits 0 unless a run fails to start.
#
#   scripts/rare_bench.sh [SEEDS] [SEARCH...]     default: 40000 seeds, swarm boost:2 boost:6
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-40000}
shift || true
searches=("$@")
[ ${#searches[@]} -eq 0 ] && searches=(swarm boost:2 boost:6)
bin=target/release/wakesim
cargo build --release --quiet --bin wakesim
suite=(mutants/rare/long-chain.toml mutants/rare/after-timeout.toml
       scenarios/gptme/b1-report-queued-ahead-of-a-completion.toml)
printf '%-62s %-9s %9s %9s %9s\n' bug search failing median p90
for f in "${suite[@]}"; do
  for s in "${searches[@]}"; do
    line=$("$bin" run "$f" --seeds "0..$seeds" --threads 1 --no-save --findability --search "$s" \
      | grep 'findability:' || true)
    failing=$(sed -n 's/.*findability: \([0-9]*\) of.*/\1/p' <<<"$line")
    median=$(sed -n 's/.*first failure \([0-9]*\) (p90.*/\1/p' <<<"$line")
    p90=$(sed -n 's/.*(p90 \([0-9]*\)).*/\1/p' <<<"$line")
    printf '%-62s %-9s %9s %9s %9s\n' "$f" "$s" "${failing:-0}" "${median:--}" "${p90:--}"
  done
done
