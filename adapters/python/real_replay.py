#!/usr/bin/env python3
"""Print one run of a scripted real-gptme scenario:

    python3 adapters/python/real_replay.py NAME [--seed N] [--variant V]
    python3 adapters/python/real_replay.py --list

NAME is a scenario of wakesim_adapter/real_scenarios.py; V a variant of real_variants.py (default:
gptme 0.35.1's own code). The same NAME, seed and variant print the same lines, byte for byte.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main(argv: list[str]) -> int:
    from wakesim_adapter import venv
    if os.path.realpath(sys.prefix) != os.path.realpath(venv.VENV) or \
            os.environ.get("PYTHONHASHSEED") != "0":
        python = venv.ensure()
        os.execve(python, [python, os.path.abspath(__file__), *argv],
                  {**os.environ, "PYTHONHASHSEED": "0"})
    from wakesim_adapter import real_gptme as R
    from wakesim_adapter import real_scenarios as S
    from wakesim_adapter import real_variants
    name, seed, variant = None, 0, None
    it = iter(argv)
    for a in it:
        if a == "--seed":
            seed = int(next(it, "0"), 0)
        elif a == "--variant":
            variant = next(it, None)
        elif a == "--list":
            for n, (_, _, what) in S.SCENARIOS.items():
                print(f"{n:<34} {what}")
            print("variants: " + ", ".join(real_variants.NAMES))
            return 0
        elif name is None:
            name = a
        else:
            print(f"unexpected argument {a!r}", file=sys.stderr)
            return 2
    if name not in S.SCENARIOS:
        print(f"unknown scenario {name!r} (--list lists them)", file=sys.stderr)
        return 2
    if variant is not None and variant not in real_variants.NAMES:
        print(f"unknown variant {variant!r}: {', '.join(real_variants.NAMES)}", file=sys.stderr)
        return 2
    R.load()
    print(S.timeline(name, seed, variant))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
