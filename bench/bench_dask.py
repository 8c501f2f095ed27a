"""How a batch's throughput scales with Dask worker processes, against threads, in one run.

It writes the class of `bench.py` (per 50 notebooks: 40 correct, 5 wrong, 2 untouched, one
each that never ends, raises or crashes) and grades it, in this process, with `grade batch
--jobs N` (threads) and `grade batch --dask local:N` (a LocalCluster of N worker processes of
one thread each) for each N asked for, in turn. For each it prints the wall time of the whole
batch (a cluster's start included), the rate while grading (from the first submission handed
out to the last result recorded), and that rate relative to the first row's.

Timings are noisy on a shared machine: compare the ratios of one run, never figures across
runs, and run nothing else heavy meanwhile.

Run: python3 bench/bench_dask.py [--count 200] [--workers 1,2] [--timeout 2]
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import make_class  # noqa: E402  (bench/bench.py, beside this file)
from grader.batch import batch  # noqa: E402
from grader.course import registry  # noqa: E402
from grader.pipeline import grading  # noqa: E402
from grader.sandbox.limits import Limits  # noqa: E402


class Clock(io.StringIO):
    """A progress stream that notes when the first and the last results were written."""

    def __init__(self) -> None:
        super().__init__()
        self.first = self.last = 0.0

    def write(self, text: str) -> int:
        self.last = time.monotonic()
        self.first = self.first or self.last
        return super().write(text)


def measure(folder: Path, out: Path, jobs: int, dask: str | None, timeout: float
            ) -> tuple[float, float, int]:
    """(wall seconds, submissions per second while grading, submissions graded)."""
    options = grading.Options(limits=Limits(cell_timeout=timeout, call_timeout=timeout))
    clock = Clock()
    started = time.monotonic()
    summary = batch.run(folder, registry.get("udl_attention"), out, jobs, options, force=True,
                        progress=clock, dask=dask)
    wall = time.monotonic() - started
    # The first result arrives one submission's time after grading starts: rate over the
    # other results, from the first to the last.
    rate = (summary.graded - 1) / max(clock.last - clock.first, 1e-9)
    return wall, rate, summary.graded


def main() -> None:
    """Parse the options, grade the class each way, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--workers", default="1,2", help="comma-separated N to measure")
    parser.add_argument("--timeout", type=float, default=2.0,
                        help="cell and call timeout (the never-ending cell costs this)")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as temporary:
        folder = Path(temporary) / "class"
        make_class(folder, args.count)
        rows = []
        for n in counts:
            for name, dask in ((f"--jobs {n}", None), (f"--dask local:{n}", f"local:{n}")):
                out = Path(temporary) / f"out-{len(rows)}"
                rows.append((name, *measure(folder, out, n, dask, args.timeout)))
                print(f"{name}: done", file=sys.stderr, flush=True)
    base = rows[0][2]
    print(f"{args.count} submissions, cell and call timeout {args.timeout:g} s")
    print(f"{'batch':<18} {'graded':>6} {'wall s':>8} {'graded/s':>9} {'vs first':>9}")
    for name, wall, rate, graded in rows:
        print(f"{name:<18} {graded:6d} {wall:8.1f} {rate:9.2f} {rate / base:8.2f}x")


if __name__ == "__main__":
    main()
