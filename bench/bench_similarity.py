"""How long `grade gradebook similar` takes on a generated class of 100, 1,000 and 10,000.

Run: python3 bench/bench_similarity.py [--sizes 100 1000 10000] [--keep DIR]
For each size, writes a generated class (tests/helpers/similar_class.py: honest students and
four planted copies), records it in a gradebook as a batch would, and prints the wall seconds
of reading the files (loading and normalising them), of comparing them (template subtraction,
winnowing, the index, the scores), the candidate pairs the index proposed against all pairs,
and where each planted copy ranked.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader import similarity  # noqa: E402
from grader.course import registry  # noqa: E402
from grader.gradebook import Gradebook  # noqa: E402
from grader.gradebook.origins import Origin  # noqa: E402
from grader.similarity import sources  # noqa: E402
from tests.helpers import similar_class  # noqa: E402


def measure(size: int, folder: Path) -> None:
    """Print one size's line."""
    planted = similar_class.write_class(folder / "subs", size - 4)
    similar_class.record(folder / "subs", folder / "out")
    rows = Gradebook(folder / "out").rows()
    started = time.perf_counter()
    students, left = sources.read_class(rows, Origin(folder / "subs", "folder"))
    given = sources.stubs("udl_attention", ROOT / "exercises")
    read = time.perf_counter() - started
    started = time.perf_counter()
    names = [e.name for e in registry.get("udl_attention").exercises]
    ranking = similarity.compare("udl_attention", students, given, names, left)
    compared = time.perf_counter() - started
    every = ranking.compared * (ranking.compared - 1) // 2
    order = {frozenset((p.a, p.b)): n for n, p in enumerate(ranking.pairs, start=1)}
    ranks = ", ".join(f"{p.how} #{order.get(frozenset((p.copier, p.source)), '-')}"
                      for p in planted)
    print(f"{size:>6} students: read {read:6.2f} s, compared {compared:6.2f} s; "
          f"{ranking.pairs_scored:,} candidate pairs of {every:,}; "
          f"{len(ranking.flagged)} flagged; copies ranked {ranks}", flush=True)


def main() -> None:
    """Measure each size in a fresh folder."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    options.add_argument("--keep", type=Path, help="write the classes here, and keep them")
    args = options.parse_args()
    for size in args.sizes:
        if args.keep:
            measure(size, args.keep / str(size))
        else:
            with tempfile.TemporaryDirectory() as folder:
                measure(size, Path(folder))


if __name__ == "__main__":
    main()
