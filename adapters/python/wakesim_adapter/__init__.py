"""wakesim's Python reference adapter (protocol 1, docs/protocol.md).

    python3 adapters/python/run.py MODULE.py [--export NAME]

`protocol` is the host-independent core: line IO on stdin/stdout, the handshake, resets, events,
buffered calls and synchronous queries, and the virtual clock (time.time/monotonic/perf_counter,
timers and microtasks follow the simulation; `random` is reseeded every run). `pi` is the
pi-shaped facade; `gptme` the gptme-shaped ones (server and CLI), on the same core.
"""

PROTOCOL = 1
NAME = "wakesim-python/0.1.0"
