"""The pinned real gptme, installed on first use into a virtual environment in wakesim's cache.

`ensure()` returns the environment's python. The environment lives in the cache directory
(`$WAKESIM_CACHE_DIR`, else `$XDG_CACHE_HOME/wakesim`, else `~/.cache/wakesim`) under
`venv/gptme-<version>-<hash>`, the hash of the committed lock file, so every checkout and
wakesim binary with the same pins shares it (0.35.1 unless `select` names another pinned version). The first caller that finds no complete environment creates
it (`python3 -m venv`, then `pip install --require-hashes --no-deps` of the lock file
`adapters/python/real/gptme-<version>.txt`), holding the lock directory `<venv>.lock`, so that
processes starting side by side (a runner thread each, tests in parallel) install once; the others
wait for the lock, then use what it installed. The holder refreshes the lock every two seconds: a
lock is taken over when its holder is gone, when its pid names another process now (another start
time), or when it has not been refreshed for LOCK_STALE_S (a holder stopped or hung). The
environment counts as complete only once a marker holding the lock file's sha256 is written after
pip succeeded: a changed lock file, or an install killed half-way, is installed afresh.

Started by wakesim (a driver's stdout is the protocol), the install writes an `installing` line
there every few seconds, so that wakesim bounds it apart from the driver's start, and says
`wakesim: installing ...` and `wakesim: installed ... in N s` on stderr. pip gets a parent-death
signal: it does not outlive the driver that started it.

A registry that cannot be reached is an error naming the package, after pip's own short timeout
and one retry, never a hang.
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # adapters/python
# The version the tools and tests use; a driver started for another pinned version (its `hello`
# names it) selects that one first (`select`).
DEFAULT_VERSION = "0.35.1"
VERSION = DEFAULT_VERSION
PACKAGE = f"gptme[server]=={VERSION}"
LOCK_FILE = os.path.join(HERE, "real", f"gptme-{VERSION}.txt")
MARKER = ".wakesim-installed"
WAIT_S = 900
STALE_S = 10
LOCK_STALE_S = 30
LOCK_BEAT_S = 2
PROTOCOL_BEAT_S = 5
PIP_TIMEOUT_S = 20


def cache_dir():
    """wakesim's cache directory, as the Rust side and hosts/launch.mjs find it."""
    for var, sub in (("WAKESIM_CACHE_DIR", ""), ("XDG_CACHE_HOME", "wakesim")):
        if os.environ.get(var):
            return os.path.join(os.path.abspath(os.environ[var]), sub) if sub else \
                os.path.abspath(os.environ[var])
    return os.path.join(os.path.expanduser("~"), ".cache", "wakesim")


def _lock_hash():
    with open(LOCK_FILE, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


VENV = os.path.join(cache_dir(), "venv", f"gptme-{VERSION}-{_lock_hash()}")
INSTALL_LOCK = VENV + ".lock"


class InstallError(Exception):
    """The pinned package could not be installed; the message names it and says why."""


def select(version):
    """Make `version` (X.Y.Z, pinned by `real/gptme-X.Y.Z.txt`) the one `ensure` installs and
    `python_path` names: each pinned version has its own environment."""
    global VERSION, PACKAGE, LOCK_FILE, VENV, INSTALL_LOCK
    parts = str(version).split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise InstallError(f"gptme {version!r} is not a version X.Y.Z")
    lock_file = os.path.join(HERE, "real", f"gptme-{version}.txt")
    if not os.path.isfile(lock_file):
        raise InstallError(f"gptme {version} is not pinned: {os.path.relpath(lock_file)} is missing")
    VERSION, PACKAGE, LOCK_FILE = version, f"gptme[server]=={version}", lock_file
    VENV = os.path.join(cache_dir(), "venv", f"gptme-{version}-{_lock_hash()}")
    INSTALL_LOCK = VENV + ".lock"


def python_path(venv=None):
    return os.path.join(venv or VENV, "bin", "python")


def _lock_digest():
    with open(LOCK_FILE, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def installed(venv=None):
    venv = venv or VENV
    try:
        with open(os.path.join(venv, MARKER)) as f:
            return f.read().strip() == _lock_digest() and os.path.exists(python_path(venv))
    except OSError:
        return False


def _start_time(pid):
    """A process's start time (clock ticks since boot), which tells it apart from a later one."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2:].split()[19]
    except (OSError, ValueError, IndexError):
        return None


def _holder_gone(lock):
    try:
        age = time.time() - os.stat(lock).st_mtime
    except OSError:
        return False  # the lock just went away: try again
    try:
        with open(os.path.join(lock, "pid")) as f:
            pid_line, _, start = f.read().strip().partition(" ")
            pid = int(pid_line or "0")
    except (OSError, ValueError):
        # Created but no pid yet: the holder is between two syscalls, or died there.
        return age > STALE_S
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    now_start = _start_time(pid)
    if start and now_start is not None and now_start != start:
        return True  # the pid names another process now
    # A holder refreshes its lock every LOCK_BEAT_S; one not refreshed is stopped or hung (an
    # older wakesim's lock, with no start time, is never refreshed: it is taken over the same way).
    return age > LOCK_STALE_S


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
        f.write(f"{os.getpid()} {_start_time(os.getpid()) or ''}")


class _Beats:
    """While installing: refresh the lock, and (under wakesim) write `installing` lines."""

    def __init__(self, lock, protocol):
        self.stop = threading.Event()
        self.lock = lock
        self.protocol = protocol
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        last = 0.0
        while not self.stop.wait(LOCK_BEAT_S if not self.protocol else 1):
            try:
                # Only a lock this process holds (waiting on another's must not keep it fresh).
                with open(os.path.join(self.lock, "pid")) as f:
                    if f.read().split(" ")[0] == str(os.getpid()):
                        os.utime(self.lock)
            except OSError:
                pass
            if self.protocol and time.monotonic() - last >= PROTOCOL_BEAT_S:
                last = time.monotonic()
                sys.stdout.write(json.dumps({"type": "installing", "what": PACKAGE}) + "\n")
                sys.stdout.flush()

    def __enter__(self):
        if self.protocol:
            sys.stdout.write(json.dumps({"type": "installing", "what": PACKAGE}) + "\n")
            sys.stdout.flush()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def _die_with_parent():
    """pip gets SIGKILL when the driver that started it dies (Linux's PR_SET_PDEATHSIG)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _pip(venv, log):
    cmd = [python_path(venv), "-m", "pip", "install", "--require-hashes", "--no-deps",
           "--only-binary", ":all:", "--disable-pip-version-check", "--no-input",
           "--timeout", str(PIP_TIMEOUT_S), "--retries", "1", "-q", "-r", LOCK_FILE]
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=WAIT_S,
                              preexec_fn=_die_with_parent)
    except subprocess.TimeoutExpired:
        raise InstallError(f"installing {PACKAGE} took over {WAIT_S} s (is the package registry "
                           "reachable?)")
    out = done.stdout.decode(errors="replace")
    log.write(out)
    if done.returncode != 0:
        tail = "\n".join(out.strip().splitlines()[-6:])
        raise InstallError(f"cannot install {PACKAGE} from the package registry (pip exit status "
                           f"{done.returncode}; lock file {os.path.relpath(LOCK_FILE)}):\n{tail}")


def ensure(venv=None, log=sys.stderr, wait_s=WAIT_S, protocol=None):
    """The venv's python, installing the pinned gptme first if needed. `protocol`: write
    `installing` lines on stdout meanwhile (default: when wakesim started this process)."""
    venv = venv or VENV
    if installed(venv):
        return python_path(venv)
    if protocol is None:
        protocol = bool(os.environ.get("WAKESIM_ADAPTER_OF"))
    lock = venv + ".lock"
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    with _Beats(lock, protocol):
        return _install(venv, log, wait_s, lock)


def _install(venv, log, wait_s, lock):
    _take_lock(lock, wait_s)
    try:
        if installed(venv):  # the previous holder installed it
            return python_path(venv)
        started = time.monotonic()
        log.write(f"wakesim: installing {PACKAGE} (pinned, {os.path.relpath(LOCK_FILE)}) into "
                  f"{venv} ...\n")
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
        log.write(f"wakesim: installed {PACKAGE} in {time.monotonic() - started:.1f} s\n")
        log.flush()
        return python_path(venv)
    finally:
        shutil.rmtree(lock, ignore_errors=True)


def main():
    """`python3 -m wakesim_adapter.venv [VERSION]`: install if needed, print the venv's python."""
    try:
        if len(sys.argv) > 1:
            select(sys.argv[1])
        print(ensure(protocol=False))
    except InstallError as e:
        print(f"wakesim-python: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
