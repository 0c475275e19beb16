#!/usr/bin/env python3
"""Run the Python adapter's test suites with the pinned real gptme.

    python3 adapters/python/tests/run.py [unittest names...]

Installs the pinned venv first if needed (`wakesim_adapter.venv`, under its lock), then runs the
suites with the venv's python and PYTHONHASHSEED=0 (set and hashes are part of what a run may
iterate). The facades' suites (standard library only) run in a process of their own: the
scheduler's suites install the simulated threading process-wide, which an adapter process never
has. Nothing is skipped: a venv that cannot be installed is a failure naming the package.
Prints `N passed, N failed` last and exits 0 only when every test passed.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # adapters/python
# Each group runs in a process of its own.
GROUPS = [["tests.test_protocol", "tests.test_pi", "tests.test_gptme"],
          ["tests.test_sched", "tests.test_real_gptme", "tests.test_driver"]]

INNER = r"""
import sys, unittest
names = sys.argv[1:]
loader = unittest.TestLoader()
suite = loader.loadTestsFromNames(names)
result = unittest.TextTestRunner(verbosity=1).run(suite)
n = result.testsRun
bad = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
skipped = len(result.skipped)
print(f"{n - bad - skipped} passed, {bad} failed" + (f", {skipped} skipped" if skipped else ""))
print(f"@@ {n - bad - skipped} {bad + skipped}")
sys.exit(0 if bad == 0 and skipped == 0 else 1)
"""


def main(argv):
    sys.path.insert(0, ROOT)
    from wakesim_adapter import venv
    try:
        python = venv.ensure()
    except venv.InstallError as e:
        print(f"wakesim-python: {e}", file=sys.stderr)
        print("0 passed, 1 failed")
        return 2
    groups = [argv] if argv else GROUPS
    # The real gptme's sandbox moves XDG_CACHE_HOME inside a suite: the cache directory is pinned
    # here, so a child a suite starts (real_replay.py) finds the installed venv, not a fresh one.
    env = {**os.environ, "PYTHONHASHSEED": "0", "WAKESIM_CACHE_DIR": venv.cache_dir()}
    passed = failed = 0
    for names in groups:
        p = subprocess.run([python, "-c", INNER, *names], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           text=True)
        tally = [line for line in p.stdout.splitlines() if line.startswith("@@ ")]
        sys.stdout.write("".join(line + "\n" for line in p.stdout.splitlines()
                                 if not line.startswith("@@ ")))
        if not tally:
            failed += 1   # the suite's process died before its tally
            continue
        a, b = tally[-1].split()[1:]
        passed, failed = passed + int(a), failed + int(b)
    print(f"{passed} passed, {failed} failed")   # the summary tests/real_gptme.rs reads
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
