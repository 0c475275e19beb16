#!/usr/bin/env python3
"""wakesim's Python reference adapter: `python3 adapters/python/run.py MODULE.py [--export NAME]`.

Loads MODULE.py afresh at every reset. On pi hosts it calls the module's `wake` function (or NAME)
with a pi-shaped facade and the scenario's options; it returns send(message, options). On the
gptme hosts the module is written as gptme's code is, against `wakesim_adapter.gptme`: the server
calls its `retry_deferred_watch_wakes(conversation_id)`, the CLI runs the hooks it registers.
See wakesim_adapter/.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from wakesim_adapter.gptme import CliFacade, ServerFacade  # noqa: E402
from wakesim_adapter.pi import PiFacade  # noqa: E402
from wakesim_adapter.protocol import serve  # noqa: E402


def main(argv: list[str]) -> None:
    module: str | None = None
    export = "wake"
    it = iter(argv)
    for a in it:
        if a == "--export":
            given = next(it, None)
            if given is None:
                sys.exit("--export needs a NAME; usage: run.py MODULE.py [--export NAME]")
            export = given
        elif module is None:
            module = a
        else:
            sys.exit(f"unexpected argument {a!r}; usage: run.py MODULE.py [--export NAME]")
    if module is None:
        sys.exit("usage: run.py MODULE.py [--export NAME]")
    serve({"pi": PiFacade, "gptme-server": ServerFacade, "gptme-cli": CliFacade}, (module, export))


if __name__ == "__main__":
    main(sys.argv[1:])
