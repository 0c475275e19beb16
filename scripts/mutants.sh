#!/usr/bin/env bash
# Mutation testing of the fixed wake logics (issue 15): how many plausible bugs planted in them
# the scenario gate refuses to let through.
#
#   scripts/mutants.sh [--auto-only|--manual-only] [--skip-equivalent] [FAMILY..]
#                                      # default: every family, both kinds, every mutant
#   scripts/mutants.sh --summary       # the summary of the last run
#
# --skip-equivalent leaves out the mutants mutants/equivalent.md lists (a survivor costs the
# family's whole gate, up to minutes on a loaded machine, and can only survive again); the
# summary reports them as listed, not run. For a run split over several scratch copies:
# WAKESIM_MUTANTS_OUT=DIR (its own copy and target dir), WAKESIM_MUTANTS_SHARD=K/N (cargo-mutants'
# --shard), WAKESIM_MUTANTS_PART=NAME (results in DIR/FAMILY-NAME, which the summary reads with
# DIR/FAMILY) and WAKESIM_MUTANTS_EXCLUDE=FILE (one cargo-mutants name regex a line, e.g. the
# mutants an interrupted part already judged); WAKESIM_MUTANTS_ONLY=FILE likewise names the only
# mutants to run (a rerun after a scenario changed; its results override the earlier parts'),
# and WAKESIM_MUTANTS_BASELINE=skip skips cargo-mutants' unmutated baseline.
#
# Families and the files mutated (tests/mutants.rs judges each against every scenario naming one
# of its wake logics: verdict over the seed budget, race windows, exploration of the scope):
#   g3      src/family/pi/wakes/reservation.rs   G3's reservation
#   outbox  src/family/pi/wakes/outbox.rs        gentle-agents' outbox around G0-G3 (G3's flush)
#   g4      src/family/pi/wakes/gentle.rs        G4 upstream, its T2/T3 switches and the fixed G4
#   w2      src/family/gptme_server/wakes/w2.rs  W2's batched drain (W2-subagent's watch part too)
#   b1      src/family/gptme_cli/wakes/b1.rs     B1 and its two earlier states
#
# Two kinds of mutants:
# - cargo-mutants (crates.io, pinned below: `cargo install cargo-mutants --locked --version
#   27.1.0`) with its own operators, one job at a time (the machine is shared); the test command
#   is `cargo test --release --test mutants -- --include-ignored --exact FAMILY` (a plain
#   `cargo test` ignores these tests).
# - hand-written ones, `mutants/manual/FAMILY-*.patch`: what its operators cannot write (a dropped
#   branch, two statements swapped, a flag cleared one event early or late, a queue flushed in the
#   wrong order). Each is applied to a scratch copy and judged by the same test.
#
# A mutant is killed when the test fails. Survivors are either listed in mutants/equivalent.md
# with the reason no run can tell them apart, or are gaps of wakesim (mutants/teeth-plan.md).
# Results go to target/mutants/ (git-ignored); nothing in the repository is modified.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${WAKESIM_MUTANTS_OUT:-$ROOT/target/mutants}
CARGO_MUTANTS_VERSION=27.1.0

declare -A FILES=(
  [g3]=src/family/pi/wakes/reservation.rs
  [outbox]=src/family/pi/wakes/outbox.rs
  [g4]=src/family/pi/wakes/gentle.rs
  [w2]=src/family/gptme_server/wakes/w2.rs
  [b1]=src/family/gptme_cli/wakes/b1.rs
)
ORDER=(g3 outbox w2 b1 g4)

# One mutant rebuilds the wakesim crate: incremental, without debug info and without LTO it
# costs seconds, not a minute. With the release profile's default thin local LTO a one-line
# change re-optimises most codegen units: 53-72 s a mutant at load 6-7, against 10.7 s (4.4 s of
# CPU) with `lto = off` (measured 1 December 2026 on reservation.rs's `observe`). The tests run
# about twice as long without LTO (the g4 gate on the unmutated tree: 22 s of CPU against 12 s),
# but most mutants are killed in under a second. None of these settings changes what the
# program computes: runs are deterministic across profiles (tests/golden.rs), so the verdicts do
# not depend on them. The first run builds every dependency once with these settings (7 min).
export CARGO_PROFILE_RELEASE_INCREMENTAL=true
export CARGO_PROFILE_RELEASE_DEBUG=false
export CARGO_PROFILE_RELEASE_LTO=off
export CARGO_TERM_COLOR=never

summary() {
  python3 "$ROOT/scripts/mutants_summary.py" "$OUT" "$ROOT/mutants"
}

if [[ "${1:-}" == "--summary" ]]; then
  summary
  exit 0
fi

auto=1
manual=1
skip_equivalent=0
families=()
for arg in "$@"; do
  case "$arg" in
    --auto-only) manual=0 ;;
    --manual-only) auto=0 ;;
    --skip-equivalent) skip_equivalent=1 ;;
    *) families+=("$arg") ;;
  esac
done
if [[ ${#families[@]} -eq 0 ]]; then
  families=("${ORDER[@]}")
fi
for fam in "${families[@]}"; do
  [[ -n "${FILES[$fam]:-}" ]] || { echo "unknown family: $fam (one of ${ORDER[*]})" >&2; exit 2; }
done

# Only cargo-mutants' own mutants need cargo-mutants; the hand-written ones are plain patches.
have=$(cargo mutants --version 2>/dev/null | awk '{print $2}' || true)
if [[ $auto == 1 && "$have" != "$CARGO_MUTANTS_VERSION" ]]; then
  echo "cargo-mutants $CARGO_MUTANTS_VERSION is needed (found: ${have:-none}):" >&2
  echo "  cargo install cargo-mutants --locked --version $CARGO_MUTANTS_VERSION" >&2
  exit 2
fi
mkdir -p "$OUT"

# Every mutant, of both kinds and all families, is built in one scratch copy of the sources
# (what git tracks or would track) with one target dir: cargo-mutants mutates that copy in place
# and restores each file, each patch is applied, judged and reversed. So the crate is built in
# full once, and a mutant rebuilds (incrementally) only what one file touches: seconds. The
# working tree is never modified.
#
# A later run reuses the copy and its target dir: only files whose content differs from the
# working tree are copied (with a new mtime), and files gone from it are removed. Copying all
# of them with their own (older) mtimes would let cargo take the last mutant's build as fresh;
# touching all of them would rebuild the crate in full (13 minutes on the shared machine).
tree="$OUT/tree"
export CARGO_TARGET_DIR="$OUT/target"
stage="$OUT/stage"
rm -rf "$stage"
mkdir -p "$stage" "$tree"
git ls-files -co --exclude-standard -z | tar -cf - --null -T - | tar -xf - -C "$stage"
(cd "$stage" && find . -type f -print0) | while IFS= read -r -d '' f; do
  if ! cmp -s "$stage/$f" "$tree/$f"; then
    mkdir -p "$(dirname "$tree/$f")"
    cp "$stage/$f" "$tree/$f"
  fi
done
(cd "$tree" && find . -type f -print0) | while IFS= read -r -d '' f; do
  [[ -e "$stage/$f" ]] || rm -f "$tree/$f"
done
rm -rf "$stage"

for fam in "${families[@]}"; do
  file=${FILES[$fam]}
  if [[ $auto == 1 ]]; then
    echo "== $fam: cargo-mutants on $file"
    res="$OUT/$fam${WAKESIM_MUTANTS_PART:+-$WAKESIM_MUTANTS_PART}"
    rm -rf "$res"
    extra=()
    if [[ $skip_equivalent == 1 ]]; then
      # An entry whose line moved would no longer be skipped and would cost a whole gate as a
      # survivor: stop and name it instead.
      listed=$(cargo mutants --list --dir "$tree" --file "$file" 2>/dev/null)
      # (A file with no entries is no error: grep finds nothing.)
      stale=$({ grep -o "\`$file:[0-9]*:[0-9]*: [^\`]*" "$ROOT/mutants/equivalent.md" || true; } |
        cut -c2- | while IFS= read -r m; do grep -qxF "$m" <<<"$listed" || echo "  $m"; done)
      if [[ -n "$stale" ]]; then
        echo "mutants/equivalent.md names mutants of $file that cargo-mutants no longer lists" \
          "(their lines moved?); update them to \`cargo mutants --list --file $file\`:" >&2
        echo "$stale" >&2
        exit 2
      fi
      while IFS= read -r re; do extra+=(--exclude-re "$re"); done \
        < <(python3 "$ROOT/scripts/mutants_summary.py" --exclude-re "$file" "$ROOT/mutants")
    fi
    if [[ -n "${WAKESIM_MUTANTS_EXCLUDE:-}" ]]; then
      while IFS= read -r re; do [[ -z "$re" ]] || extra+=(--exclude-re "$re"); done \
        < "$WAKESIM_MUTANTS_EXCLUDE"
    fi
    if [[ -n "${WAKESIM_MUTANTS_ONLY:-}" ]]; then
      while IFS= read -r re; do [[ -z "$re" ]] || extra+=(--re "$re"); done < "$WAKESIM_MUTANTS_ONLY"
    fi
    [[ -z "${WAKESIM_MUTANTS_SHARD:-}" ]] || extra+=(--shard "$WAKESIM_MUTANTS_SHARD")
    # A rerun in a copy that already passed its baseline may skip it (the family's whole gate).
    [[ "${WAKESIM_MUTANTS_BASELINE:-}" != skip ]] || extra+=(--baseline=skip)
    # In place (in the scratch copy) means one mutant at a time. --cargo-arg reaches both the
    # build and the test phase, so a mutant is built once, in release, and only the mutants test
    # target is linked. Exit code 2 means "some mutants survived": the summary says which.
    cargo mutants --in-place --dir "$tree" --no-shuffle --file "$file" --output "$res" \
      --timeout 600 --build-timeout 900 --cargo-arg=--release --cargo-arg=--test=mutants "${extra[@]}" \
      -- -- --include-ignored --exact "$fam" || true
  fi

  [[ $manual == 1 ]] || continue
  echo "== $fam: hand-written mutants"
  mres="$OUT/manual-$fam${WAKESIM_MUTANTS_PART:+-$WAKESIM_MUTANTS_PART}"
  rm -rf "$mres"
  mkdir -p "$mres"
  shopt -s nullglob
  # WAKESIM_MUTANTS_PATCH=GLOB picks hand-written mutants by name (a rerun).
  for patch in "$ROOT"/mutants/manual/"$fam"-${WAKESIM_MUTANTS_PATCH:-*}.patch; do
    name=$(basename "$patch" .patch)
    if [[ $skip_equivalent == 1 ]] && grep -q "^- \`manual:$name\`:" "$ROOT/mutants/equivalent.md"; then
      echo "$name: listed equivalent, not run"
      continue
    fi
    if ! (cd "$tree" && patch -p1 --quiet --forward < "$patch"); then
      echo "$name: does not apply" | tee "$mres/$name.outcome"
      continue
    fi
    log="$mres/$name.log"
    # --package as cargo-mutants passes it: the same features (the workspace's other members
    # turn on more of syn's), so switching between the two kinds rebuilds nothing but the mutant.
    if (cd "$tree" && cargo test --package wakesim --release --test mutants -- --include-ignored --exact "$fam") >"$log" 2>&1; then
      echo "$name: MISSED" | tee "$mres/$name.outcome"
    elif grep -q "mutant-kill:" "$log"; then
      echo "$name: caught" | tee "$mres/$name.outcome"
    else
      echo "$name: unviable (does not build)" | tee "$mres/$name.outcome"
    fi
    (cd "$tree" && patch -p1 --quiet --reverse < "$patch")
  done
  shopt -u nullglob
done

summary
