"""How long one seed-sized notebook takes: grade (in process and whole command) vs nbconvert.

Run: python3 bench/bench_single.py [NOTEBOOK] [--repeat N]
Prints medians measured in the same run, and their ratios; machines are noisy, ratios less so.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "tests" / "corpus" / "udl_attention" / "loops.ipynb"


def median_seconds(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from grader import grading, registry

    assignment = registry.get(grading.infer_assignment(args.notebook) or "udl_attention")
    result = grading.grade(args.notebook, assignment)
    print(f"{args.notebook.name}: {result.score:g}/{result.max_score:g}")

    in_process = median_seconds(lambda: grading.grade(args.notebook, assignment), args.repeat)
    command = median_seconds(lambda: subprocess.run(
        [sys.executable, "-m", "grader", "run", str(args.notebook)], check=False,
        capture_output=True, cwd=ROOT), args.repeat)
    nbconvert = median_seconds(lambda: subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
         "--stdout", str(args.notebook)], check=True, capture_output=True), args.repeat)
    print(f"grade, in process (median of {args.repeat}):   {in_process:.3f} s")
    print(f"grade run, whole command:             {command:.3f} s")
    print(f"jupyter nbconvert --execute:          {nbconvert:.3f} s")
    print(f"ratio nbconvert / grade run command:  {nbconvert / command:.1f}x")


if __name__ == "__main__":
    main()
