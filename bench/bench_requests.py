"""Where one grading's time goes, request by request: `grading.grade` on one notebook in
process (warm zygote, references loaded once), timing each request the grader makes of the
worker by its operation (hello, exec, snapshot, call; a group of calls as it is sent, and
each of its replies), the worker's start and close; the rest is the grader's own work.
Unlike `bench_floor.py`'s profile, it times only the grading thread (spare workers are
started, and used ones put away, in threads of their own).

Run: python3 bench/bench_requests.py [NOTEBOOK] [--repeat N]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "tests" / "corpus" / "udl_attention" / "loops.ipynb"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from grader.course import registry
    from grader.pipeline import grading
    from grader.sandbox import session, transport
    from grader.sandbox.zygote import Zygotes

    spent: dict[str, list[float]] = collections.defaultdict(list)
    grading_thread: list[Any] = []

    def timed(name: Callable[..., str], original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*call_args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*call_args, **kwargs)
            finally:
                if threading.current_thread() in grading_thread:
                    spent[name(*call_args)].append(time.perf_counter() - started)
        return wrapper

    session.Session._request = timed(  # type: ignore[method-assign]
        lambda self, header, *rest: f"request: {header['op']}", session.Session._request)
    transport.PipeTransport.send = timed(  # type: ignore[method-assign]
        lambda self, header, *rest: f"request: {header['op']} (sent)", transport.PipeTransport.send)
    transport.PipeTransport.receive = timed(  # type: ignore[method-assign]
        lambda self, *rest: "request: calls (one reply)", transport.PipeTransport.receive)
    session.Session._start_worker = timed(  # type: ignore[method-assign]
        lambda self: "start the worker (grader side, with hello)", session.Session._start_worker)
    session.Session.close = timed(  # type: ignore[method-assign]
        lambda self: "close", session.Session.close)
    grading_thread.append(threading.current_thread())

    assignment = registry.get(grading.infer_assignment(args.notebook) or "udl_attention")
    with Zygotes() as zygotes:
        options = grading.Options(zygotes=zygotes)
        stored = grading.ready(assignment, options)
        for _ in range(3):  # warm: the zygote, spare workers, the caches
            grading.grade(args.notebook, assignment, options, stored)
        spent.clear()
        totals = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            result = grading.grade(args.notebook, assignment, options, stored)
            totals.append(time.perf_counter() - started)
    runs = args.repeat
    total = statistics.mean(totals) * 1000
    print(f"{args.notebook.name}: {result.score:g}/{result.max_score:g}, one grading "
          f"{total:.1f} ms mean, {statistics.median(totals) * 1000:.1f} ms median, of {runs}")
    print(f"{'what':<44} {'ms':>7} {'per run':>8} {'median ms':>10}")
    accounted = 0.0
    for name, times in sorted(spent.items(), key=lambda item: -sum(item[1])):
        ms = sum(times) / runs * 1000
        accounted += 0.0 if name == "request: hello" else ms  # within the worker's start
        print(f"{name:<44} {ms:7.1f} {len(times) / runs:8.1f} "
              f"{statistics.median(times) * 1000:10.2f}")
    print(f"{'the rest: the grader, between requests':<44} {total - accounted:7.1f}")


if __name__ == "__main__":
    main()
