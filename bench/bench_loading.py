"""How loading time grows with the size of a pathological cell (review #9: 60 KB cost 46 s).

Run: python3 bench/bench_loading.py [--kb 60] [--before]
For each cell, prints the CPU seconds of `loading.prepare_cell` at KB and at twice KB, and
their ratio: about 2 when loading is linear, 4 when it is quadratic. `--before` also times
what loading did before (a `\\s*` automagic pattern, then IPython's own transform loop) on
cells ten times smaller, since at full size it takes minutes.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CELLS = {  # name -> a cell of about n characters that does not parse as Python
    "blank lines": lambda n: "\n" * (n - 1) + "(",
    "indented blank lines": lambda n: " \n" * (n // 2 - 1) + "(\n",
    "help syntax": lambda n: "a" * (n - 2) + ")?",
    "magic assignments": lambda n: "x = %ls\n" * (n // 8),
    "shell escapes, open brackets": lambda n: "!(\n" * (n // 3),
    "no IPython syntax": lambda n: "x = (1,\n" * (n // 8),
}
OLD_AUTOMAGIC = re.compile(r"^(\s*)((?:pip|conda|mamba)\s+install\b)", re.MULTILINE)


def before(source: str) -> None:
    """What `ipython_syntax.to_python` did before review #9."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        TransformerManager().transform_cell(OLD_AUTOMAGIC.sub(r"\1%\2", source))
    except Exception:  # RuntimeError after 500 rounds, IndentationError
        pass


def cpu_seconds(action, source: str) -> float:
    started = time.process_time()
    action(source)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=60)
    parser.add_argument("--before", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import IPython.core.inputtransformer2  # noqa: F401  (not timed)

    from grader.pipeline import loading

    rows = [("now", lambda s: loading.prepare_cell(1, s), args.kb * 1000)]
    if args.before:
        rows.append(("before", before, args.kb * 100))
    for label, action, size in rows:
        print(f"{label}: CPU seconds at {size // 1000} KB and {2 * size // 1000} KB")
        for name, make in CELLS.items():
            small, large = (cpu_seconds(action, make(n)) for n in (size, 2 * size))
            print(f"  {name:30} {small:8.3f} {large:8.3f}   x{large / max(small, 1e-6):.1f}")


if __name__ == "__main__":
    main()
