"""What the picture of the state after each call costs (`state.digest`), part by part.

A call process shares itself between calls only while the picture it takes after each call
equals the one it took before the first (SECURITY.md, "How calls share a process"). This
runs a notebook's code cells in a namespace as the worker does (with `builtins`, numpy's
random module imported, the garbage collector frozen as the zygote leaves it), then forks as
the worker forks a call process, and in each fork times the picture's four parts: the
notebook's globals, the interpreter and process, the modules, and the files. The first
picture in a fork ("cold") writes the reference count of every object it reads, so the
kernel copies each page they lie on; the later ones ("warm") are what each call pays.

The working folder, $HOME and $TMPDIR are an empty scratch folder and `settings.FOLDERS` is
emptied, as a sandbox's small /tmp would be: outside one, /tmp holds too many files to list.

Run: python3 bench/bench_picture.py [NOTEBOOK] [--forks 10] [--warm 20]
"""

from __future__ import annotations

import argparse
import builtins
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "tests" / "corpus" / "udl_attention" / "loops.ipynb"
PARTS = ("globals", "interpreter", "modules", "files")


def namespace_of(notebook: Path) -> dict[str, Any]:
    """The globals after running the notebook's code cells (a cell that raises stops there, as
    in Jupyter)."""
    namespace: dict[str, Any] = {"__builtins__": builtins, "__name__": "__main__"}
    cells = json.loads(notebook.read_text())["cells"]
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        try:
            exec(compile(source, f"<cell {index}>", "exec"), namespace)
        except Exception:  # the student's error: the next cell runs
            pass
    return namespace


def timed_parts(namespace: dict[str, Any]) -> list[float]:
    """Seconds of each part of one picture, in `PARTS` order."""
    from grader.sandbox.inside import settings, state

    started = time.perf_counter()
    walker = state._Walker()
    walker.visit_globals(namespace, frozenset())
    globals_done = time.perf_counter()
    settings.interpreter()
    interpreter_done = time.perf_counter()
    state._modules(walker.modules)
    modules_done = time.perf_counter()
    settings.files()
    files_done = time.perf_counter()
    return [globals_done - started, interpreter_done - globals_done,
            modules_done - interpreter_done, files_done - modules_done]


def in_forks(measure: Callable[[], dict[str, Any]], forks: int) -> list[dict[str, Any]]:
    """`measure()`'s result in each of `forks` forks of this process, one after another."""
    found = []
    for _ in range(forks):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the fork: measure, send, leave without running this process's exit
            os.close(read)
            try:
                os.write(write, json.dumps(measure()).encode())
            finally:
                os._exit(0)
        os.close(write)
        data = b""
        while chunk := os.read(read, 1 << 16):
            data += chunk
        os.close(read)
        os.waitpid(pid, 0)
        found.append(json.loads(data))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--forks", type=int, default=10)
    parser.add_argument("--warm", type=int, default=20, help="pictures after the first, per fork")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import numpy.random  # noqa: F401  (a zygote has it; its first import is not a picture's)

    from grader.sandbox.inside import settings

    namespace = namespace_of(args.notebook)
    gc.collect()
    gc.freeze()

    def measure() -> dict[str, Any]:
        cold = timed_parts(namespace)
        return {"cold": cold, "warm": [timed_parts(namespace) for _ in range(args.warm)]}

    with tempfile.TemporaryDirectory(prefix="bench-picture-") as scratch:
        os.chdir(scratch)
        os.environ["HOME"] = os.environ["TMPDIR"] = scratch
        settings.FOLDERS = ()
        runs = in_forks(measure, args.forks)
        os.chdir(ROOT)
    print(f"{args.notebook.name}: the picture's parts in ms, medians of {args.forks} forks "
          f"(warm: {args.warm} pictures after the first in each)")
    print(f"{'':<6}" + "".join(f"{part:>13}" for part in PARTS) + f"{'all':>9}")
    for label, rows in (("cold", [run["cold"] for run in runs]),
                        ("warm", [row for run in runs for row in run["warm"]])):
        medians = [statistics.median(column) * 1000 for column in zip(*rows, strict=True)]
        print(f"{label:<6}" + "".join(f"{ms:13.3f}" for ms in medians) + f"{sum(medians):9.3f}")


if __name__ == "__main__":
    main()
