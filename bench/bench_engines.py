"""The kernel engine against the fast one, per notebook: is it within 2x the fast engine's time
plus the kernel's own start-up (issue #22)?

Notebooks: a corpus notebook, one whose exercises print (inside the called functions, as
students debug), and one whose softmax overflows in exp() on the large cases (NumPy warns).
Before #22 each printing or warning call of the kernel engine waited out the call limit.

Run: python3 bench/bench_engines.py [--repeat N]
Prints medians measured in the same run, and their ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_single import worker_start  # noqa: E402  (bench/ is on the path)

PRINTING = '''
def softmax(items_in):
    print("softmax of", np.shape(items_in), flush=True)
    return _softmax(items_in)
'''
OVERFLOWING = '''
def softmax(items_in):
    e = np.exp(np.asarray(items_in, dtype=float))  # no maximum subtracted: overflows
    return e / e.sum()
'''


def notebooks(folder: Path) -> dict[str, Path]:
    """The notebooks to time, written into `folder` (the solution with one change each)."""
    solution = (ROOT / "solutions" / "udl_attention.py").read_text()
    variants = {
        "corpus (loops.ipynb)": None,
        "prints in every call": solution.replace("def softmax(", "def _softmax(") + PRINTING,
        "softmax overflows": solution + OVERFLOWING,
    }
    paths = {}
    for name, source in variants.items():
        if source is None:
            paths[name] = ROOT / "tests" / "corpus" / "udl_attention" / "loops.ipynb"
            continue
        path = folder / f"{len(paths)}_udl_attention.ipynb"
        path.write_text(json.dumps({
            "nbformat": 4, "nbformat_minor": 5, "metadata": {},
            "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "outputs": [],
                       "execution_count": None, "source": source}]}))
        paths[name] = path
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from grader.course import registry
    from grader.pipeline import grading
    from grader.sandbox.zygote import Zygotes

    assignment = registry.get("udl_attention")
    startup = worker_start("kernel", assignment.requires, args.repeat)
    print(f"kernel start-up, median of {args.repeat}: {startup:.3f} s")
    print(f"{'notebook':24} {'fast s':>8} {'kernel s':>9} {'kernel - start-up':>18} "
          f"{'ratio':>6}  {'within 2x + start-up':>20}  scores (fast / kernel)")
    with tempfile.TemporaryDirectory() as folder:
        for name, path in notebooks(Path(folder)).items():
            seconds, scores = {}, {}
            for engine in ("fast", "kernel"):
                with Zygotes() as zygotes:
                    options = grading.Options(engine=engine, zygotes=zygotes)
                    times = []
                    for _ in range(args.repeat):
                        started = time.perf_counter()
                        scores[engine] = grading.grade(path, assignment, options).score
                        times.append(time.perf_counter() - started)
                    seconds[engine] = statistics.median(times)
            net = seconds["kernel"] - startup
            within = seconds["kernel"] <= 2 * seconds["fast"] + startup
            print(f"{name:24} {seconds['fast']:8.3f} {seconds['kernel']:9.3f} {net:18.3f} "
                  f"{seconds['kernel'] / seconds['fast']:6.1f}  {str(within):>20}  "
                  f"{scores['fast']:g} / {scores['kernel']:g}")


if __name__ == "__main__":
    main()
