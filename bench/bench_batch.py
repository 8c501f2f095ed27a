"""A class of seed-sized notebooks: `grade batch --jobs N` vs `jupyter nbconvert --execute`
one by one (the engine nbgrader and otter-grader use), measured in the same run.

Run: python3 bench/bench_batch.py [--count 200] [--jobs 2] [--nbconvert-sample K]
With --nbconvert-sample K, nbconvert runs on K notebooks and its total is extrapolated; the
report says so. Without it, every notebook goes through nbconvert too.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "tests" / "corpus" / "udl_attention" / "loops.ipynb",
           ROOT / "tests" / "corpus" / "udl_attention" / "seed002.ipynb",
           ROOT / "exercises" / "udl_attention_12_1.ipynb"]


def make_class(folder: Path, count: int) -> list[Path]:
    """`count` notebooks, student_NNN/hw.ipynb, each a little different (distinct hashes)."""
    paths = []
    for i in range(count):
        notebook = json.loads(SOURCES[i % len(SOURCES)].read_text())
        notebook["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [],
                                  "execution_count": None, "source": f"student = {i}"})
        notebook["metadata"]["grader"] = {"assignment": "udl_attention"}
        path = folder / f"student_{i:03d}" / "hw.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(notebook))
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--nbconvert-sample", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "submissions"
        paths = make_class(folder, args.count)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "grader", "batch", str(folder), "--assignment",
                        "udl_attention", "--out", str(Path(scratch) / "out"), "--jobs",
                        str(args.jobs)], check=False, capture_output=True)
        grade_seconds = time.perf_counter() - started

        sample = paths[:args.nbconvert_sample] if args.nbconvert_sample else paths
        started = time.perf_counter()
        for path in sample:
            subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook",
                            "--execute", "--allow-errors", "--stdout", str(path)],
                           check=False, capture_output=True)
        nbconvert_seconds = (time.perf_counter() - started) * len(paths) / len(sample)
    scope = "measured" if len(sample) == len(paths) else \
        f"extrapolated from {len(sample)} notebooks"
    print(f"{args.count} notebooks, grade batch --jobs {args.jobs}: {grade_seconds:.1f} s "
          f"({args.count / grade_seconds:.1f} notebooks/s)")
    print(f"{args.count} notebooks, jupyter nbconvert --execute one by one ({scope}): "
          f"{nbconvert_seconds:.1f} s")
    print(f"ratio nbconvert / grade batch: {nbconvert_seconds / grade_seconds:.1f}x")


if __name__ == "__main__":
    main()
