"""The host-independent core of the Python adapter: line IO, the message loop, calls, queries and
the virtual clock. A facade (`pi`, `gptme`) turns events into calls of the user's module.

Everything the module sees of time comes from the simulator: `now` is set from each event, the
`time` module's clocks are replaced by virtual ones at start-up, timers and microtasks are host
calls whose callbacks run when the simulator delivers their `timer` event, and `random` is
reseeded at every reset. stdout is the protocol, so `sys.stdout` is pointed at stderr: a `print`
in the module cannot corrupt it.
"""

from __future__ import annotations

import _frozen_importlib
import importlib.machinery
import importlib.util
import json
import os
import random
import sys
import sysconfig
import time
import traceback
from collections.abc import Callable, Mapping
from importlib.machinery import ModuleSpec
from types import CodeType, ModuleType
from typing import Any, NoReturn, Protocol

from . import NAME, PROTOCOL

# A message of the protocol, decoded (docs/protocol.md).
Msg = dict[str, Any]

# The import system's own module, whose private `_find_and_load` is replaced below.
_bootstrap: Any = _frozen_importlib

# time.time() is this epoch plus virtual time: realistic, and the same in every run.
EPOCH_S = 1767225600  # 2026-01-01T00:00:00Z


class Fatal(Exception):
    """The adapter itself cannot go on; reported as {"type":"error"}. `kind` "load": the module
    under test did not load (bad input: wakesim exits 2, saves nothing)."""

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind


# One encoder for every line (`json.dumps` with `separators` builds a new one per call).
_encode = json.JSONEncoder(separators=(",", ":")).encode
_decode = json.JSONDecoder().decode


def _parse(line: bytes) -> Any:
    """A line of the simulator's (UTF-8 bytes), without `json.loads`'s encoding detection."""
    return _decode(line.decode())


_DONE = '{"type":"done"}'


class Abandoned(Exception):
    """A query in an event sent ahead (`spec`): the simulator is not waiting for this handler and
    will run the seed again, waiting for it, once it sees the query (docs/protocol.md)."""


class Connection:
    """Lines on the real stdin and stdout, with calls buffered until the next query or `done`,
    and answers written when the loop is about to block on stdin: events sent ahead arrive
    several in one read, and their answers leave in one write."""

    def __init__(self) -> None:
        self._fd = sys.stdin.fileno()
        self._buf = b""
        self._out = os.fdopen(os.dup(1), "wb", buffering=0)
        sys.stdout = sys.stderr
        self._pending: list[str] = []
        self._ready: list[str] = []
        # The event being handled was sent ahead: a query cannot be answered.
        self.speculative = False

    def read(self) -> bytes:
        while True:
            i = self._buf.find(b"\n")
            if i >= 0:
                line = self._buf[: i + 1]
                self._buf = self._buf[i + 1 :]
                return line
            self.write_out()
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                if self._buf:
                    line, self._buf = self._buf, b""
                    return line
                sys.exit(0)
            self._buf += chunk

    def call(self, obj: Msg) -> None:
        self._pending.append(_encode(obj))

    def flush(self, last: Msg | str | None = None) -> None:
        if last is not None:
            self._pending.append(last if isinstance(last, str) else _encode(last))
        if self._pending:
            self._ready.append("\n".join(self._pending) + "\n")
            self._pending = []

    def write_out(self) -> None:
        if self._ready:
            data = "".join(self._ready).encode()
            self._ready = []
            view = memoryview(data)
            while view:
                n = self._out.write(view)
                view = view[n:]

    def query(self, obj: Msg) -> Msg:
        """A call whose answer the module waits for: the simulator answers at once."""
        if self.speculative:
            self.call(obj)
            raise Abandoned("wakesim: handler abandoned (a query in an event sent ahead)")
        self.flush(obj)
        answer = _parse(self.read())
        if not isinstance(answer, dict) or answer.get("type") != "result":
            raise Fatal(f"expected a result from the simulator, got {answer!r}")
        return answer


class Link(Protocol):
    """What a facade and the clock send through: `Connection`, or a test's fake."""

    def call(self, obj: Msg) -> None: ...

    def query(self, obj: Msg) -> Msg: ...


class Clock:
    """Virtual time and the timers of one run. Timer ids are the adapter's, unique per run."""

    def __init__(self, conn: Link) -> None:
        self._conn = conn
        self.now_ms = 0
        self._timers: dict[int, tuple[Callable[..., object], tuple[Any, ...]]] = {}
        self._next = 1

    def reset(self) -> None:
        self.now_ms = 0
        self._timers = {}
        self._next = 1

    def set_timeout(self, fn: Callable[..., object], ms: float, *args: Any) -> int:
        ms = max(0, int(ms))
        tid = self._next
        self._next += 1
        self._timers[tid] = (fn, args)
        self._conn.call({"type": "set_timeout", "timer": tid, "ms": ms})
        return tid

    def clear_timeout(self, tid: int) -> None:
        if self._timers.pop(tid, None) is not None:
            self._conn.call({"type": "clear_timeout", "timer": tid})

    def queue_microtask(self, fn: Callable[..., object], *args: Any) -> int:
        tid = self._next
        self._next += 1
        self._timers[tid] = (fn, args)
        self._conn.call({"type": "queue_microtask", "timer": tid})
        return tid

    def fire(self, tid: int) -> None:
        entry = self._timers.pop(tid, None)
        if entry is not None:
            fn, args = entry
            drive(fn(*args))


def drive(result: Any) -> Any:
    """Run a coroutine a handler returned to completion; it may not await real I/O."""
    if hasattr(result, "send") and hasattr(result, "throw"):
        for _ in range(100_000):
            try:
                result.send(None)
            except StopIteration as stop:
                return stop.value
        raise RuntimeError("a coroutine handler kept awaiting: only awaits that finish at once work")
    return result


def install_clock(clock: Clock) -> None:
    """Replace the `time` module's clocks with virtual ones (before the module loads): they
    read `clock`, the one the protocol loop keeps for the whole process."""

    def virtual_s() -> float:
        return EPOCH_S + clock.now_ms / 1000.0

    time.time = virtual_s
    time.time_ns = lambda: int(virtual_s() * 1e9)
    time.monotonic = lambda: clock.now_ms / 1000.0
    time.monotonic_ns = lambda: clock.now_ms * 1_000_000
    time.perf_counter = time.monotonic
    time.perf_counter_ns = time.monotonic_ns


_code_cache: dict[str, CodeType] = {}
_get_code = importlib.machinery.SourceFileLoader.get_code


def _cached_get_code(self: importlib.machinery.SourceFileLoader, fullname: str) -> CodeType:
    # Modules are executed afresh at every reset, but compiled once per process.
    path = self.get_filename(fullname)
    code = _code_cache.get(path)
    if code is None:
        got = _get_code(self, fullname)
        if got is None:
            raise ImportError(f"no code for {fullname} ({path})")
        code = _code_cache[path] = got
    return code


importlib.machinery.SourceFileLoader.get_code = _cached_get_code  # type: ignore[method-assign,assignment]


# Modules from these directories (the standard library, site-packages) are imported once per
# process; re-importing them at every reset would cost more than the run (hashlib: 0.35 ms).
_SHARED_DIRS = tuple(sorted({
    os.path.realpath(p) + os.sep
    for p in (sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib"))
    if p
}))


_own_files: dict[str, bool] = {}


def _own(module: ModuleType) -> bool:
    """A module of the user's (imported from outside the shared directories): reloaded every run."""
    f = getattr(module, "__file__", None)
    if not f:
        return False
    own = _own_files.get(f)
    if own is None:
        own = _own_files[f] = not os.path.realpath(f).startswith(_SHARED_DIRS)
    return own


class _KnownModules:
    """A meta path finder for the user's modules already found once: a reset imports them afresh
    (new module objects, their code run again) without searching `sys.path` and stat-ing files
    for each one again. Names resolve to the same files in every run, as the code compiled once
    per process (`_cached_get_code`) already assumes."""

    def __init__(self) -> None:
        self.specs: dict[str, ModuleSpec] = {}

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        # The spec found the first time serves every later run (imports are sequential; a
        # spec's `cached` is computed once).
        return self.specs.get(name)

    def remember(self, name: str, module: ModuleType) -> None:
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.origin and name not in self.specs:
            self.specs[name] = spec


_known = _KnownModules()
sys.meta_path.insert(0, _known)

# The import system's `_find_and_load` (the C `__import__` looks it up on `_frozen_importlib` at
# every import of a module not in `sys.modules`), with a lean path for the user's modules already
# found once: what `_find_and_load_unlocked` and `_load_unlocked` do for them (the parent first,
# the module's attributes as `_init_module_attrs` sets them, `sys.modules` before the code runs and
# cleared if it raises, the module set on its parent), without the module locks, the meta path,
# `module_from_spec`'s generic path or `exec_module`'s look-ups: the same modules, a fifth of the
# cost (each reset imports the user's modules afresh). Anything else takes the import system's
# own path.
_slow_find_and_load: Callable[[str, Callable[[str], object]], ModuleType] = \
    _bootstrap._find_and_load
_SourceFileLoader = importlib.machinery.SourceFileLoader


def _lean_load(spec: ModuleSpec, code: CodeType) -> ModuleType:
    """`_load_unlocked` for a source module whose code is compiled already."""
    module = type(sys)(spec.name)
    module.__loader__ = spec.loader
    module.__package__ = spec.parent
    module.__spec__ = spec
    if spec.submodule_search_locations is not None:
        module.__path__ = spec.submodule_search_locations
    module.__file__ = spec.origin
    cached = spec.cached
    if cached is not None:
        module.__cached__ = cached  # type: ignore[attr-defined]
    spec._initializing = True  # type: ignore[attr-defined]
    try:
        sys.modules[spec.name] = module
        try:
            exec(code, module.__dict__)
        except BaseException:
            sys.modules.pop(spec.name, None)
            raise
        module = sys.modules.pop(spec.name)
        sys.modules[spec.name] = module
    finally:
        spec._initializing = False  # type: ignore[attr-defined]
    return module


def _find_and_load(name: str, import_: Callable[[str], object]) -> ModuleType:
    spec = _known.specs.get(name)
    if spec is None or name in sys.modules or spec.loader.__class__ is not _SourceFileLoader \
            or spec.origin is None:
        return _slow_find_and_load(name, import_)
    code = _code_cache.get(spec.origin)
    if code is None:
        return _slow_find_and_load(name, import_)
    parent, _, child = name.rpartition(".")
    parent_spec = None
    if parent:
        if parent not in sys.modules:
            import_(parent)
        if name in sys.modules:
            return sys.modules[name]
        parent_module = sys.modules[parent]
        if not hasattr(parent_module, "__path__"):
            return _slow_find_and_load(name, import_)  # raises: not a package
        parent_spec = getattr(parent_module, "__spec__", None)
    pending = getattr(parent_spec, "_uninitialized_submodules", None)
    if pending is not None:
        pending.append(child)
    try:
        module = _lean_load(spec, code)
    finally:
        if pending is not None:
            pending.pop()
    if parent:
        try:
            setattr(sys.modules[parent], child, module)
        except AttributeError:
            pass
    return module


_bootstrap._find_and_load = _find_and_load


class ModuleLoader:
    """Loads the user's module afresh at every reset, and the user's modules it imported (the
    standard library and site-packages stay imported)."""

    def __init__(self, path: str, export: str) -> None:
        self.path = os.path.abspath(path)
        self.export = export
        if not os.path.isfile(self.path):
            raise Fatal(f"module {path} not found (from {os.getcwd()})", kind="load")
        self._baseline: set[str] | None = None
        self._spec: ModuleSpec | None = None
        self._directory = os.path.dirname(self.path)

    def load_factory(self) -> Callable[..., Any]:
        """The module's factory (`--export`, default `wake`): pi modules."""
        module = self.load()
        factory = getattr(module, self.export, None)
        if not callable(factory):
            raise Fatal(f"{self.path}: `{self.export}` is not a function (a factory taking pi)")
        return factory  # type: ignore[no-any-return]

    def load(self) -> ModuleType:
        if self._baseline is None:
            self._baseline = set(sys.modules)
        else:
            # The modules imported since the baseline (a set difference, not a walk of
            # `sys.modules` in Python), in a fixed order.
            for name in sorted(sys.modules.keys() - self._baseline):
                module = sys.modules[name]
                if _own(module):
                    _known.remember(name, module)
                    del sys.modules[name]
        directory = self._directory
        if directory not in sys.path:
            sys.path.insert(0, directory)
        if self._spec is None:
            name = "wakesim_user_" + os.path.splitext(os.path.basename(self.path))[0]
            self._spec = importlib.util.spec_from_file_location(name, self.path)
        spec = self._spec
        if spec is None or spec.loader is None or spec.origin is None:
            raise Fatal(f"{self.path}: not a Python module", kind="load")
        code = _code_cache.get(spec.origin)
        if code is not None:
            return _lean_load(spec, code)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module


class Loader(Protocol):
    """What a facade loads the user's module with at each reset (`ModuleLoader`)."""

    def load(self) -> ModuleType: ...

    def load_factory(self) -> Callable[..., Any]: ...


class Facade(Protocol):
    """A host family's face of the adapter (`pi.PiFacade`, `gptme.ServerFacade`, ...)."""

    def reset(self, loader: Loader) -> Msg: ...

    def dispatch(self, ev: Msg) -> Msg | None: ...


# How `serve` makes a facade: from the connection, the clock and the scenario's options.
FacadeMaker = Callable[[Link, Clock, Msg], Facade]


def describe(exc: BaseException) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "wakesim_adapter" not in f.filename]
    where = "".join(f"    at {os.path.relpath(f.filename)}:{f.lineno} in {f.name}\n" for f in frames[-3:])
    return ("".join(lines) + where).rstrip()


def serve(facades: Mapping[str, FacadeMaker], loader_args: tuple[str, str]) -> NoReturn:
    """The protocol loop. `facades` maps a host family to a facade class.

    A facade has `reset(loader)`, which loads the module afresh and returns the `ready` fields
    (`events`, and what else its family reads), and `dispatch(event)`, which runs the module's
    handler and returns what ends it: None (a plain `done`), fields to add to `done` (`action`,
    `items`), or a whole terminator with its own `type` (a gptme CLI hook that suspends). A
    handler's exception becomes `done` with `error`."""
    conn = Connection()
    clock = Clock(conn)
    install_clock(clock)
    facade: Facade | None = None
    loader: ModuleLoader | None = None
    try:
        while True:
            line = conn.read()
            try:
                msg = _parse(line)
            except ValueError:
                raise Fatal(f"the simulator sent a line that is not JSON: {line[:200]!r}") from None
            kind = msg.get("type")
            if kind == "hello":
                if msg.get("protocol") != PROTOCOL:
                    raise Fatal(f"{NAME} speaks protocol {PROTOCOL}, not {msg.get('protocol')}")
                host = msg.get("host")
                if host not in facades:
                    raise Fatal(f"{NAME} has facades for {', '.join(facades)}, not {host}")
                loader = ModuleLoader(*loader_args)
                facade = facades[host](conn, clock, msg.get("options") or {})
                # `speculate`: events marked `spec` are answered without blocking (`query`).
                conn.flush({"type": "hello", "protocol": PROTOCOL, "adapter": NAME,
                            "speculate": True})
            elif facade is None or loader is None:
                raise Fatal("the simulator did not say hello first")
            elif kind == "reset":
                clock.reset()
                random.seed(0x5EED)
                try:
                    ready = facade.reset(loader)
                except Fatal:
                    raise
                except Exception as e:  # the module failed to load
                    raise Fatal(f"the module failed to load: {describe(e)}", kind="load") from e
                conn.flush({"type": "ready", **ready})
            elif kind == "event":
                clock.now_ms = msg["now"]
                conn.speculative = msg.get("spec") is True
                end: Msg | str = _DONE
                try:
                    result = facade.dispatch(msg)
                    if result is not None and "type" in result:
                        end = result
                    elif result is not None:
                        end = {"type": "done", **result}
                except Fatal:
                    raise
                except Exception as e:
                    end = {"type": "done", "error": describe(e)}
                conn.flush(end)
            else:
                raise Fatal(f"unexpected message from the simulator: {line[:200]!r}")
    except Fatal as f:
        conn.flush({"type": "error", "message": str(f), **({"kind": f.kind} if f.kind else {})})
        conn.write_out()
        sys.exit(1)
