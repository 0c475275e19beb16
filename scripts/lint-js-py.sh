#!/usr/bin/env bash
# The JavaScript and Python half's checks, as CI runs them (.ci/run):
#
#   scripts/lint-js-py.sh
#
# mypy --strict and ruff over adapters/python (settings: adapters/python/pyproject.toml); tsc over
# the adapter and the hosts (tools/js/tsconfig.json, strict, and tools/js/tsconfig.hosts.json);
# eslint (tools/js/eslint.config.mjs); the JavaScript unit tests (node --test tests/js/) and the
# Python adapter's suites (adapters/python/tests/run.py, which installs the pinned gptme on first
# use).
#
# The tools are installed on first use, into ignored directories: mypy and ruff from
# tools/py/requirements.txt (pinned with hashes) into tools/py/.venv, typescript, eslint and
# @types/node from tools/js/package-lock.json into tools/js/node_modules. A changed pin file is
# installed afresh. Every check runs even when one fails; the exit status is 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."

failed=()
step() {
  local name=$1
  shift
  echo "== $name"
  if ! "$@"; then
    failed+=("$name")
  fi
}

# ---- install on first use (a marker holds the pin file's digest)

digest() { sha256sum "$1" | cut -d' ' -f1; }

install_py_tools() {
  local venv=tools/py/.venv marker=tools/py/.venv/.wakesim-installed want
  want=$(digest tools/py/requirements.txt)
  if [[ -f $marker && $(cat "$marker") == "$want" ]]; then return 0; fi
  echo "lint-js-py: installing mypy and ruff (tools/py/requirements.txt) into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv" &&
    "$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --no-deps \
      -r tools/py/requirements.txt &&
    echo "$want" >"$marker"
}

install_js_tools() {
  local marker=tools/js/node_modules/.wakesim-installed want
  want=$(digest tools/js/package-lock.json)
  if [[ -f $marker && $(cat "$marker") == "$want" ]]; then return 0; fi
  echo "lint-js-py: installing typescript, eslint, @types/node (tools/js/package-lock.json)"
  npm ci --prefix tools/js --no-audit --no-fund --loglevel=error && echo "$want" >"$marker"
}

if ! install_py_tools; then
  echo "lint-js-py: could not install the Python tools" >&2
  exit 1
fi
if ! install_js_tools; then
  echo "lint-js-py: could not install the JavaScript tools" >&2
  exit 1
fi

py=$PWD/tools/py/.venv/bin
js=$PWD/tools/js/node_modules/.bin

# ---- the checks

step "mypy --strict (adapters/python)" bash -c "cd adapters/python && '$py/mypy'"
step "ruff (adapters/python)" bash -c "cd adapters/python && '$py/ruff' check --output-format concise ."
step "tsc (tools/js/tsconfig.json, strict)" "$js/tsc" -p tools/js
step "tsc (tools/js/tsconfig.hosts.json)" "$js/tsc" -p tools/js/tsconfig.hosts.json
step "eslint" "$js/eslint" -c tools/js/eslint.config.mjs adapters/node hosts tests/js
step "JavaScript unit tests (node --test tests/js/)" node --test tests/js/
step "Python adapter tests (adapters/python/tests/run.py)" python3 adapters/python/tests/run.py

if ((${#failed[@]})); then
  echo "lint-js-py: FAILED: ${failed[*]}"
  exit 1
fi
echo "lint-js-py: all clean"
