"""The pinned real gptme, installed on first use into a project-local virtual environment.

`ensure()` returns the environment's python. The first caller that finds no complete environment
creates it (`python3 -m venv`, then `pip install --require-hashes --no-deps` of the committed lock
file `adapters/python/real/gptme-0.35.1.txt`), holding the lock directory `.install-gptme.lock`,
so that processes starting side by side (a runner thread each, tests in parallel) install once; the
others wait for the lock, then use what it installed. A lock whose holder died is taken over (as
the Node adapter does for its pinned sucrase). The environment counts as complete only once a
marker holding the lock file's sha256 is written after pip succeeded: a changed lock file, or an
install killed half-way, is installed afresh.

A registry that cannot be reached is an error naming the package, after pip's own short timeout
and one retry, never a hang.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import time

PACKAGE = "gptme[server]==0.35.1"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # adapters/python
LOCK_FILE = os.path.join(HERE, "real", "gptme-0.35.1.txt")
VENV = os.path.join(HERE, ".venv-gptme-0.35.1")
INSTALL_LOCK = os.path.join(HERE, ".install-gptme.lock")
MARKER = ".wakesim-installed"
WAIT_S = 900
STALE_S = 10
PIP_TIMEOUT_S = 20


class InstallError(Exception):
    """The pinned package could not be installed; the message names it and says why."""


def python_path(venv=VENV):
    return os.path.join(venv, "bin", "python")


def _lock_digest():
    with open(LOCK_FILE, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def installed(venv=VENV):
    try:
        with open(os.path.join(venv, MARKER)) as f:
            return f.read().strip() == _lock_digest() and os.path.exists(python_path(venv))
    except OSError:
        return False


def _holder_gone(lock):
    try:
        with open(os.path.join(lock, "pid")) as f:
            pid = int(f.read().strip() or "0")
    except (OSError, ValueError):
        # Created but no pid yet: the holder is between two syscalls, or died there.
        try:
            return time.time() - os.stat(lock).st_mtime > STALE_S
        except OSError:
            return False  # the lock just went away: try again
    try:
        os.kill(pid, 0)
        return False
    except ProcessLookupError:
        return True
    except PermissionError:
        return False


def _take_lock(lock, wait_s):
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.mkdir(lock)
            break
        except FileExistsError:
            if _holder_gone(lock):
                shutil.rmtree(lock, ignore_errors=True)
            elif time.monotonic() > deadline:
                raise InstallError(f"another process held {lock} for {wait_s} s while installing "
                                   f"{PACKAGE}")
            else:
                time.sleep(0.05)
        except OSError as e:
            raise InstallError(f"cannot take the install lock {lock}: {e}")
    with open(os.path.join(lock, "pid"), "w") as f:
        f.write(str(os.getpid()))


def _pip(venv, log):
    cmd = [python_path(venv), "-m", "pip", "install", "--require-hashes", "--no-deps",
           "--only-binary", ":all:", "--disable-pip-version-check", "--no-input",
           "--timeout", str(PIP_TIMEOUT_S), "--retries", "1", "-q", "-r", LOCK_FILE]
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        raise InstallError(f"installing {PACKAGE} took over {WAIT_S} s (is the package registry "
                           "reachable?)")
    out = done.stdout.decode(errors="replace")
    log.write(out)
    if done.returncode != 0:
        tail = "\n".join(out.strip().splitlines()[-6:])
        raise InstallError(f"cannot install {PACKAGE} from the package registry (pip exit status "
                           f"{done.returncode}; lock file {os.path.relpath(LOCK_FILE)}):\n{tail}")


def ensure(venv=VENV, log=sys.stderr, wait_s=WAIT_S):
    """The venv's python, installing the pinned gptme first if needed."""
    if installed(venv):
        return python_path(venv)
    lock = INSTALL_LOCK if venv == VENV else venv + ".lock"
    _take_lock(lock, wait_s)
    try:
        if installed(venv):  # the previous holder installed it
            return python_path(venv)
        log.write(f"wakesim-python: installing the pinned {PACKAGE} into {os.path.relpath(venv)}\n")
        log.flush()
        shutil.rmtree(venv, ignore_errors=True)
        made = subprocess.run([sys.executable, "-m", "venv", venv], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if made.returncode != 0:
            raise InstallError(f"cannot create the virtual environment {venv} for {PACKAGE}: "
                               f"{made.stdout.decode(errors='replace').strip()}")
        _pip(venv, log)
        with open(os.path.join(venv, MARKER), "w") as f:
            f.write(_lock_digest() + "\n")
        return python_path(venv)
    finally:
        shutil.rmtree(lock, ignore_errors=True)


def main():
    """`python3 -m wakesim_adapter.venv`: install if needed, print the venv's python."""
    try:
        print(ensure())
    except InstallError as e:
        print(f"wakesim-python: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
