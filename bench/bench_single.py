"""How long one seed-sized notebook takes: a worker's start, grading in process with each
engine, the whole `grade run` command, and nbconvert (the peers' engine).

Run: python3 bench/bench_single.py [NOTEBOOK] [--repeat N]
Prints medians measured in the same run, and their ratios; machines are noisy, ratios less so.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "tests" / "corpus" / "udl_attention" / "loops.ipynb"


def median_seconds(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def worker_start(engine: str, preload: tuple[str, ...], repeat: int) -> float:
    """Median seconds from asking for a worker to its answer to `hello` (confined, numpy
    imported): what each submission pays before its first cell runs."""
    from grader.sandbox.config import SandboxConfig
    from grader.sandbox.session import Session
    from grader.sandbox.zygote import Zygotes

    with Zygotes() as zygotes, Session(SandboxConfig(preload=preload, engine=engine,
                                                     zygotes=zygotes)) as session:
        session._start_worker()  # the zygote (and the machine's caches) warm
        session.transport.stop()
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            session._start_worker()
            times.append(time.perf_counter() - started)
            session.transport.stop()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from grader.course import registry
    from grader.pipeline import grading
    from grader.sandbox.zygote import Zygotes

    assignment = registry.get(grading.infer_assignment(args.notebook) or "udl_attention")
    start = {engine: worker_start(engine, assignment.requires, args.repeat * 4)
             for engine in ("fast", "fresh")}
    print(f"worker start, median of {args.repeat * 4}: zygote fork {start['fast'] * 1000:.0f} ms,"
          f" fresh interpreter {start['fresh'] * 1000:.0f} ms "
          f"({start['fresh'] / start['fast']:.1f}x)")

    in_process = {}
    for engine in ("fast", "fresh", "kernel"):
        with Zygotes() as zygotes:  # one zygote for the run, as a batch keeps it
            options = grading.Options(engine=engine, zygotes=zygotes)
            result = grading.grade(args.notebook, assignment, options)
            in_process[engine] = median_seconds(
                functools.partial(grading.grade, args.notebook, assignment, options),
                args.repeat)
        print(f"grade, in process, --engine {engine:6} (median of {args.repeat}): "
              f"{in_process[engine]:.3f} s  [{result.score:g}/{result.max_score:g}, "
              f"worker {result.worker}]")
    command = median_seconds(lambda: subprocess.run(
        [sys.executable, "-m", "grader", "run", str(args.notebook)], check=False,
        capture_output=True, cwd=ROOT), args.repeat)
    nbconvert = median_seconds(lambda: subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
         "--stdout", str(args.notebook)], check=True, capture_output=True), args.repeat)
    print(f"grade run, whole command:             {command:.3f} s")
    print(f"jupyter nbconvert --execute:          {nbconvert:.3f} s")
    print(f"ratio fresh / fast, in process:       {in_process['fresh'] / in_process['fast']:.1f}x")
    print(f"ratio kernel / fast, in process:      {in_process['kernel'] / in_process['fast']:.1f}x")
    print(f"ratio nbconvert / grade run command:  {nbconvert / command:.1f}x")


if __name__ == "__main__":
    main()
