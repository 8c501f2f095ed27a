"""The grader against the bare floor: the same notebooks, measured in the same run.

It writes a class of N seed-sized udl_attention notebooks (each the correct `loops.ipynb`
with a cell `student = i` of its own; `--mixed`: the class of `bench.py`, per 50: 40
correct, 5 wrong, 2 untouched, one never-ending, one raising, one crashing) and measures:

1. the bare floor: each notebook's code cells (as the grader loads them) executed in one
   plain process, with no sandbox, no fork and no measuring, then every case of every
   exercise called once on its inputs (`calling.invoke`, as the worker calls). The inputs are
   made once, before, and the notebooks read before the clock starts. The class runs one
   notebook after another in this process, each in a fresh namespace. An exception ends its
   cell or its call, as in Jupyter; with `--mixed`, the never-ending and the crashing cells,
   which no single process survives, are left out of the floor (said on its line);
2. `grading.grade` in process, with one warm `Zygotes` and the references loaded once
   (`stored=grading.ready(...)`, as a batch does); per notebook also without `stored`,
   which is what one `grade` call costs; the class one notebook after another;
3. `grade batch --jobs J` on the class (`bench.grade_batch`);
4. nbclient kernel execution on a sample of the class (`bench.nbclient_run`);
5. the whole `grade run` command on one notebook (median of 5), and beside it
   `python3 -c "import numpy"` (median of 5), the floor of any command that compares arrays;
   where the environment sets PYTHONDONTWRITEBYTECODE, both again without it
   (`bytecode_written`: an editable install's modules are otherwise compiled on every run).

Per-notebook figures are medians of `--repeat` runs on `loops.ipynb`. It prints each
figure, their ratios to the floor and to each other, a breakdown by stage of one grading
(`stages.py`: grade, reports rendered, result recorded; mean of `--profile-runs`), and the
targets as PASS or MISS, each a ratio of two figures of the same run. The machine is shared
and noisy: compare the ratios of one run, never absolute figures across runs.

Run: python3 bench/bench_floor.py [--count 100] [--jobs 2] [--peer-sample 4] [--mixed]
                                  [--repeat 15] [--profile-runs 20] [--timeout 2]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import stages
from bench_single import median_seconds

import bench

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
UNSURVIVABLE = {bench.FAULTS["timeout"].strip(), bench.FAULTS["crash"].strip()}
"""Fault cells that no single process survives: left out of the bare floor."""


@dataclass(frozen=True)
class Figure:
    """One way of running the notebooks: the class's wall time and one notebook's."""

    name: str
    short: str
    """The column heading of the ratio tables."""
    class_s: float | None
    """Wall seconds for the whole class (None: not measured)."""
    one_s: float | None
    """Median seconds for one correct notebook (None: not measured)."""
    note: str = ""


def correct_class(folder: Path, count: int) -> list[Path]:
    """`count` correct notebooks, student_NNNN/hw.ipynb, each distinct (`student = i`)."""
    paths = []
    for i in range(count):
        path = folder / f"student_{i:04d}" / "hw.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(bench.notebook(bench.CORRECT, None, i)))
        paths.append(path)
    return paths


def evenly(paths: Sequence[Path], size: int) -> bench.Sample:
    """`size` notebooks spread over a class of correct ones, each standing for as many."""
    if not size or size >= len(paths):
        return bench.Sample(tuple(paths), (1.0,) * len(paths))
    step = len(paths) / size
    return bench.Sample(tuple(paths[int(k * step)] for k in range(size)),
                        (len(paths) / size,) * size)


# ------------------------------------------------------------------ the bare floor

Calls = list[tuple[Any, list[tuple[Any, tuple[Any, ...]]]]]
"""(exercise, [(case, its inputs)]) for every exercise of the assignment."""


def calls_of(assignment: Any) -> Calls:
    """Every case of every exercise with its inputs, made now (once)."""
    return [(exercise, [(case, case.inputs()) for case in exercise.cases])
            for exercise in assignment.exercises]


def sources(path: Path, assignment: Any) -> tuple[list[str], int]:
    """The code cells the grader would run, and how many were left out (`UNSURVIVABLE`)."""
    from grader.pipeline import loading

    cells = [cell.source for cell in loading.load(path, assignment=assignment.name).cells
             if not cell.syntax_error]
    kept = [source for source in cells if source.strip() not in UNSURVIVABLE]
    return kept, len(cells) - len(kept)


def bare(cells: Sequence[str], calls: Calls) -> None:
    """Run the cells in a fresh namespace, then call every case once: nothing else."""
    from grader.sandbox.inside.calling import invoke

    namespace: dict[str, Any] = {"__name__": "__main__"}
    for index, source in enumerate(cells):
        try:
            exec(compile(source, f"<cell {index}>", "exec"), namespace)
        except Exception:
            pass  # the cell ends, as in Jupyter; the next one runs
    for exercise, cases in calls:
        target = namespace.get(exercise.name)
        for case, inputs in cases:
            try:
                invoke(target, exercise.kind, inputs, case.init_kwargs, exercise.tensors)
            except Exception:
                pass  # a wrong or missing function: its call fails, the next one runs


def floor(paths: Sequence[Path], assignment: Any, repeat: int) -> Figure:
    """The bare floor: one notebook (median of `repeat`) and the class, in this process."""
    calls = calls_of(assignment)
    one, _ = sources(bench.CORRECT, assignment)
    loaded = [sources(path, assignment) for path in paths]
    left_out = sum(1 for _, dropped in loaded if dropped)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        bare(one, calls)  # numpy's first calls, as the zygote has them warm
        one_s = median_seconds(lambda: bare(one, calls), repeat)
        started = time.perf_counter()
        for cells, _ in loaded:
            bare(cells, calls)
        class_s = time.perf_counter() - started
    note = "cells + calls, one process"
    if left_out:
        note += f"; {left_out} fault cells that end any process left out"
    return Figure("bare floor", "floor", class_s, one_s, note)


# ------------------------------------------------------------------ grading in process

def in_process(paths: Sequence[Path], assignment: Any, repeat: int
               ) -> tuple[Figure, Figure, float]:
    """`grade` with `stored` (the class and one notebook), without it (one notebook); and
    the score of the correct notebook, to show it graded."""
    from grader.pipeline import grading
    from grader.sandbox.zygote import Zygotes

    with Zygotes() as zygotes:
        options = grading.Options(zygotes=zygotes)
        stored = grading.ready(assignment, options)
        result = grading.grade(bench.CORRECT, assignment, options, stored)  # zygote warm
        with_stored = median_seconds(
            lambda: grading.grade(bench.CORRECT, assignment, options, stored), repeat)
        without = median_seconds(
            lambda: grading.grade(bench.CORRECT, assignment, options), repeat)
        started = time.perf_counter()
        for path in paths:
            grading.grade(path, assignment, options, stored)
        class_s = time.perf_counter() - started
    return (Figure("grade in process, stored", "in process", class_s, with_stored,
                   "one warm zygote, references loaded once, one after another"),
            Figure("grade in process, no stored", "no stored", None, without,
                   "references loaded and inputs checked by each call"),
            result.score / result.max_score)


def breakdown(assignment: Any, runs: int, scratch: Path) -> str:
    """The stage table of `runs` profiled gradings of the correct notebook."""
    from grader.gradebook import Gradebook
    from grader.pipeline import grading
    from grader.sandbox.zygote import Zygotes

    profiler = stages.Profiler()
    with Zygotes() as zygotes, Gradebook(scratch / "profile").recorder() as record:
        options = grading.Options(zygotes=zygotes)
        stored = grading.ready(assignment, options)
        grading.grade(bench.CORRECT, assignment, options, stored)  # zygote warm
        for _ in range(runs):
            stages.profile_one(bench.CORRECT, assignment, options, stored, record, profiler)
        confinement = stages.confinement_by_difference(assignment, zygotes, max(5, runs // 2))
    return stages.table(profiler, runs, confinement)


def import_numpy(repeat: int, env: dict[str, str] | None = None) -> float:
    """Median wall seconds of `python3 -c "import numpy"`: the floor of `grade run`."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import numpy"], check=True, env=env)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bytecode_written(repeat: int = 5) -> tuple[float, float] | None:
    """Where this environment sets PYTHONDONTWRITEBYTECODE (this machine, and CI, do), the
    grader's own modules (an editable install has no bytecode) are compiled from source by
    every `grade run`: about 0.1 s. Python's default writes their bytecode on the first run,
    so the command and `import numpy` are measured again without it, after one run of each;
    None where it is not set."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return None
    env = {name: value for name, value in os.environ.items()
           if name != "PYTHONDONTWRITEBYTECODE"}
    bench.grade_run(bench.CORRECT, 1, env)
    import_numpy(1, env)
    return bench.grade_run(bench.CORRECT, repeat, env), import_numpy(repeat, env)


# ------------------------------------------------------------------ printing

def ratio(a: float | None, b: float | None) -> str:
    """a / b, as "12.3x" (or "1/12.3" when a is the smaller)."""
    if not a or not b:
        return "-"
    return f"{a / b:.1f}x" if a >= b else f"1/{b / a:.1f}"


def print_figures(figures: Sequence[Figure], count: int) -> None:
    base = figures[0]
    print(f"\n{'':<30} {'class s':>9} {'x floor':>9} {'one ms':>9} {'x floor':>9}  note")
    for figure in figures:
        class_s = f"{figure.class_s:9.3f}" if figure.class_s is not None else f"{'-':>9}"
        one = f"{figure.one_s * 1000:9.2f}" if figure.one_s is not None else f"{'-':>9}"
        print(f"{figure.name:<30} {class_s} {ratio(figure.class_s, base.class_s):>9} {one} "
              f"{ratio(figure.one_s, base.one_s):>9}  {figure.note}")
    whole = [f for f in figures if f.class_s is not None]
    print(f"\nclass of {count}, wall time ratios (row / column):")
    print(f"{'':<30}" + "".join(f" {f.short:>11}" for f in whole))
    for row in whole:
        print(f"{row.name:<30}" + "".join(f" {ratio(row.class_s, col.class_s):>11}"
                                          for col in whole))
    single = [f for f in figures if f.one_s is not None]
    print("\none notebook, ratios (row / column):")
    print(f"{'':<30}" + "".join(f" {f.short:>11}" for f in single))
    for row in single:
        print(f"{row.name:<30}" + "".join(f" {ratio(row.one_s, col.one_s):>11}"
                                          for col in single))


def target(name: str, value: str, goal: str, met: bool) -> None:
    print(f"  {'PASS' if met else 'MISS'}  {name:<54} {value:>10}  target {goal}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100, help="notebooks (default 100)")
    parser.add_argument("--jobs", type=int, default=2, help="grade batch --jobs (default 2)")
    parser.add_argument("--peer-sample", type=int, default=4, metavar="K",
                        help="notebooks run through nbclient, extrapolated (default 4)")
    parser.add_argument("--mixed", action="store_true",
                        help="bench.py's mixed class instead of correct notebooks only")
    parser.add_argument("--repeat", type=int, default=15,
                        help="runs per one-notebook median (default 15)")
    parser.add_argument("--profile-runs", type=int, default=20,
                        help="profiled gradings for the breakdown (default 20)")
    parser.add_argument("--timeout", type=float, default=2.0,
                        help="seconds per statement (batch) and per cell (nbclient)")
    args = parser.parse_args()
    from grader.course import registry

    assignment = registry.get("udl_attention")
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as name:
        scratch = Path(name)
        folder = scratch / "submissions"
        folder.mkdir()
        paths = (bench.make_class(folder, args.count) if args.mixed
                 else correct_class(folder, args.count))
        bare_floor = floor(paths, assignment, args.repeat)
        stored, unstored, score = in_process(paths, assignment, args.repeat)
        batch = bench.grade_batch(folder, scratch / "out", args.jobs, args.timeout, args.count)
        sample = (bench.Sample.of(paths, args.peer_sample) if args.mixed
                  else evenly(paths, args.peer_sample))
        peer = bench.nbclient_run(sample, args.timeout, args.count)
        command = bench.grade_run(bench.CORRECT, 5)
        numpy_s = import_numpy(5)
        written = bytecode_written()
        stage_table = breakdown(assignment, args.profile_runs, scratch)
    kind = "mixed (per 50: 40 correct, 5 wrong, 2 untouched, 3 faults)" if args.mixed \
        else "correct"
    print(f"{args.count} seed-sized udl_attention notebooks, {kind}; one notebook: "
          f"{bench.CORRECT.name} (graded {score:.0%}), median of {args.repeat}; load average "
          f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, on "
          f"{os.cpu_count()} CPUs")
    figures = [bare_floor, stored, unstored,
               Figure(batch.name, f"batch -j{args.jobs}", batch.wall_s,
                      statistics.median(batch.per_submission_s),
                      "one notebook: median duration_s inside the batch"),
               Figure(peer.name, "nbclient", peer.wall_s,
                      statistics.median(peer.per_submission_s),
                      peer.note if args.mixed else
                      peer.note.replace(", every kind included", ", all correct")),
               Figure("grade run (whole command)", "grade run", None, command, "median of 5"),
               Figure('python3 -c "import numpy"', "numpy", None, numpy_s, "median of 5")]
    if written is not None:
        figures += [Figure("grade run, bytecode written", "run, .pyc", None, written[0],
                           "PYTHONDONTWRITEBYTECODE unset; after one run"),
                    Figure("import numpy, bytecode written", "numpy, .pyc", None, written[1],
                           "the same")]
    print_figures(figures, args.count)
    print(f"\nbreakdown of one grading of {bench.CORRECT.name} as a batch handles it, mean "
          f"of {args.profile_runs} (grade + reports + gradebook; exclusive times):")
    print(stage_table)
    thousand = batch.wall_s / args.count * 1000
    said = "" if args.count == 1000 else f", extrapolated from {args.count}"
    if args.mixed:
        said += ", mixed class"
    print("\ntargets, ratios of this run:")
    floor_ratio = (stored.one_s or 0.0) / (bare_floor.one_s or 1.0)
    target(f"{stored.name}, correct notebook / bare floor", f"{floor_ratio:.1f}x",
           "<= 10x", floor_ratio <= 10)
    target(f"nbclient / grade batch --jobs {args.jobs}, class wall",
           ratio(peer.wall_s, batch.wall_s), ">= 30x", peer.wall_s / batch.wall_s >= 30)
    target("grade run, whole command / import numpy", f"{command / numpy_s:.1f}x",
           "<= 3x", command / numpy_s <= 3)
    if written is not None:
        target("the same, bytecode written (Python's default)",
               f"{written[0] / written[1]:.1f}x", "<= 3x", written[0] / written[1] <= 3)
    print(f"  (1,000 notebooks with --jobs {args.jobs}{said}: {thousand:.1f} s)")


if __name__ == "__main__":
    main()
