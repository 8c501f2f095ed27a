"""One command that measures the grader against the peers' engine on the same class.

It writes N seed-sized udl_attention notebooks: mostly correct, some wrong (the notebook's
own transposed multi-head answer, an untouched stub), a few faulty (a cell that never ends,
an exception, a crash). Then, in the same run, it grades them with:

- `grade batch --jobs J` (our engine);
- nbclient kernel execution, one kernel per notebook as nbgrader and otter-grader run them;
- nbgrader's `autograde` and `otter run`, when installed (`bench/peers.py`; `--peers-bin`
  names the folder of a venv that has them), otherwise it says they are not.

The peers grade a sample of K notebooks (`--peer-sample K`) that holds every kind of
notebook of the class, at least one of each; each kind's times are scaled to its share of the
class, and the line says it was extrapolated.

For each it prints wall and CPU time, submissions per second, the median and p95 time per
submission, the peak memory of the parent process and of one worker, and the ratios.
Timings are noisy on a shared machine: compare ratios from one run, never absolute figures
across runs.

It ends with the targets of issue #11, each measured in the same run: `--jobs 2` at least
50x nbclient's wall time, 1,000 submissions in under 60 s (from the measured rate when
--count is not 1,000), and one correct notebook through `grade run` in under 150 ms, the
command's own start-up included (median of 5). `--scaling 10,100,1000` also grades classes
of those sizes, to show that time grows linearly, the parent's memory stays flat, and its open
descriptors and unreaped children (zombies) do not grow.

Run: python3 bench/bench.py [--count 200] [--jobs 2] [--peer-sample 20] [--timeout 2]
                            [--scaling 10,100,1000]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import peers

ROOT = Path(__file__).resolve().parents[1]
CORRECT = ROOT / "tests" / "corpus" / "udl_attention" / "loops.ipynb"
WRONG = ROOT / "tests" / "corpus" / "udl_attention" / "seed002.ipynb"
STUBS = [ROOT / "exercises" / "udl_attention_12_1.ipynb",
         ROOT / "exercises" / "udl_attention_12_2.ipynb"]
FAULTS = {"timeout": "while True:\n    pass\n", "exception": "raise RuntimeError('oops')\n",
          "crash": "import os\nos._exit(3)\n"}


@dataclass(frozen=True)
class Measure:
    """One engine's figures on the class."""

    name: str
    count: int
    wall_s: float
    cpu_s: float
    per_submission_s: tuple[float, ...]
    parent_peak_mb: float
    worker_peak_mb: float
    note: str = ""
    parent_fds: int = 0
    """The most descriptors the parent held open at once."""
    parent_zombies: int = 0
    """The most exited, unreaped children the parent had at once."""

    def line(self) -> str:
        rate = self.count / self.wall_s if self.wall_s else 0.0
        median = statistics.median(self.per_submission_s) if self.per_submission_s else 0.0
        p95 = (statistics.quantiles(self.per_submission_s, n=20)[-1]
               if len(self.per_submission_s) >= 2 else median)
        return (f"{self.name:<28} {self.wall_s:8.1f} {self.cpu_s:8.1f} {rate:8.2f} "
                f"{median * 1000:9.0f} {p95 * 1000:9.0f} {self.parent_peak_mb:8.0f} "
                f"{self.worker_peak_mb:8.0f}  {self.note}")


def notebook(source: Path, extra: str | None, i: int) -> dict:
    data = json.loads(source.read_text())
    cells: list[dict[str, object]] = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": text} for text in ([extra] if extra else []) + [f"student = {i}"]]
    data["cells"] = data["cells"] + cells
    data["metadata"]["grader"] = {"assignment": "udl_attention"}
    data["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                      "language": "python"}
    return data


def kind_of(i: int) -> str:
    """What notebook `i` of a class is: per 50, 40 correct, 5 wrong, 2 untouched and one of
    each fault."""
    slot = i % 50
    if slot < 40:
        return "correct"
    if slot < 45:
        return "wrong"
    if slot < 47:
        return "untouched"
    return list(FAULTS)[slot - 47]


def make_class(folder: Path, count: int) -> list[Path]:
    """`count` notebooks, student_NNNN/hw.ipynb, of the kinds `kind_of` gives; each one
    distinct (its own hash)."""
    paths = []
    sources = {"correct": CORRECT, "wrong": WRONG, "untouched": STUBS[0]}
    for i in range(count):
        kind = kind_of(i)
        data = notebook(sources.get(kind, CORRECT), FAULTS.get(kind), i)
        path = folder / f"student_{i:04d}" / "hw.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(data))
        paths.append(path)
    return paths


@dataclass(frozen=True)
class Sample:
    """The notebooks a peer grades, and what each one stands for in the whole class."""

    paths: tuple[Path, ...]
    weights: tuple[float, ...]
    """How many notebooks of the class each one stands for (its kind's count / sampled)."""

    @staticmethod
    def of(paths: list[Path], size: int) -> Sample:
        """At least one of every kind, the rest in the class's proportions (0: all)."""
        kinds = collections.defaultdict(list)
        for i, path in enumerate(paths):
            kinds[kind_of(i)].append(path)
        if not size or size >= len(paths):
            return Sample(tuple(paths), (1.0,) * len(paths))
        chosen, weights = [], []
        for members in kinds.values():
            take = min(len(members), max(1, round(size * len(members) / len(paths))))
            step = len(members) / take
            chosen += [members[int(k * step)] for k in range(take)]
            weights += [len(members) / take] * take
        return Sample(tuple(chosen), tuple(weights))

    @property
    def note(self) -> str:
        return "" if all(w == 1.0 for w in self.weights) else \
            f"extrapolated from {len(self.paths)} notebooks, every kind included"

    def measure(self, name: str, run: peers.PeerRun, cpu_s: float, parent_mb: float,
                worker_mb: float, count: int, note: str = "") -> Measure:
        """The class-wide figures: each notebook's time counts for its weight; the time
        outside the notebooks (start-up) once; CPU in proportion to wall time."""
        inside = sum(run.times)
        wall = run.wall_s - inside + sum(t * w for t, w in zip(run.times, self.weights,
                                                                strict=True))
        notes = ", ".join(n for n in (self.note, run.note, note) if n)
        # The median and p95 are the class's: each time counts as often as its weight says
        # (faults are over-represented in the sample, which would raise the peers' p95).
        times = tuple(t for t, w in zip(run.times, self.weights, strict=True)
                      for _ in range(max(1, round(w))))
        return Measure(name, count, wall, cpu_s * wall / run.wall_s, times, parent_mb,
                       worker_mb, notes)


class PeakWatcher:
    """Polls /proc for the largest resident set of processes whose command line holds a
    marker (a sandbox worker, a Jupyter kernel), and the most descriptors one of them held
    open and unreaped children (zombies) one of them had at once."""

    def __init__(self, marker: bytes, skip: bytes = b"") -> None:
        """`skip`: a process whose command line holds it is left out unless its parent's does
        too (the zygote is left out, the workers it forks are not)."""
        self.marker, self.skip, self.peak_kb = marker, skip, 0
        self.peak_fds = self.peak_zombies = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            matched: set[str] = set()
            zombies: collections.Counter[str] = collections.Counter()
            for pid in (p for p in os.listdir("/proc") if p.isdigit()):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as stream:
                        command = stream.read()
                    with open(f"/proc/{pid}/status") as stream:
                        status = dict(row.split(":", 1) for row in stream if ":" in row)
                    if status.get("State", "").strip().startswith("Z"):
                        zombies[status["PPid"].strip()] += 1
                    if self.marker not in command:
                        continue
                    if self.skip and self.skip in command:
                        with open(f"/proc/{status['PPid'].strip()}/cmdline", "rb") as stream:
                            if self.skip not in stream.read():
                                continue
                    if "VmRSS" in status:  # a zombie has none
                        self.peak_kb = max(self.peak_kb, int(status["VmRSS"].split()[0]))
                        self.peak_fds = max(self.peak_fds, len(os.listdir(f"/proc/{pid}/fd")))
                        matched.add(pid)
                except OSError:
                    continue
            self.peak_zombies = max([self.peak_zombies, *(zombies[pid] for pid in matched)])


def children_usage() -> tuple[float, float]:
    """(CPU seconds, peak RSS in MB) of every waited-for child so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def grade_batch(folder: Path, out: Path, jobs: int, timeout: float, count: int) -> Measure:
    cpu_before, _ = children_usage()
    started = time.perf_counter()
    with PeakWatcher(b"grader.sandbox.inside.startup", skip=b"zygote_process") as workers, \
            PeakWatcher(b"grader\0batch") as parent:
        done = subprocess.run([sys.executable, "-m", "grader", "batch", str(folder),
                               "--assignment", "udl_attention", "--out", str(out), "--jobs",
                               str(jobs), "--timeout", str(timeout)],
                              capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    cpu_after, _ = children_usage()
    if "graded" not in done.stdout:
        raise SystemExit(f"grade batch failed:\n{done.stderr[-2000:]}")
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        results = [json.loads(text) for (text,) in db.execute("SELECT result FROM results")]
    workers_used = sorted({result.get("worker") or "none" for result in results})
    return Measure(f"grade batch --jobs {jobs}", count, wall, cpu_after - cpu_before,
                   tuple(result["duration_s"] for result in results), parent.peak_kb / 1024,
                   workers.peak_kb / 1024, f"workers: {', '.join(workers_used)}; worker MB "
                   "counts the pages it shares with the zygote", parent.peak_fds,
                   parent.peak_zombies)


def grade_run(path: Path, repeat: int, env: dict[str, str] | None = None) -> float:
    """Median wall seconds of the whole `grade run` command on one notebook (in `env`, else
    this process's environment)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "grader", "run", str(path)], check=False,
                       capture_output=True, env=env)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def scaling(scratch: Path, sizes: list[int], jobs: int, timeout: float) -> None:
    """Grade classes of each size; print time per submission and the parent's peak."""
    print(f"\nscaling, grade batch --jobs {jobs}:")
    print(f"{'submissions':>12} {'wall s':>8} {'ms each':>8} {'parent MB':>10} "
          f"{'worker MB':>10} {'parent fds':>10} {'zombies':>8}")
    for size in sizes:
        folder = scratch / f"scaling-{size}"
        make_class(folder, size)
        measure = grade_batch(folder, scratch / f"scaling-{size}-out", jobs, timeout, size)
        print(f"{size:>12} {measure.wall_s:8.1f} {measure.wall_s / size * 1000:8.0f} "
              f"{measure.parent_peak_mb:10.0f} {measure.worker_peak_mb:10.0f} "
              f"{measure.parent_fds:10} {measure.parent_zombies:8}")
        shutil.rmtree(folder)


PEER = """
import json, sys, time, resource
import nbformat
from nbclient import NotebookClient
times = []
for path in sys.argv[2:]:
    nb = nbformat.read(path, as_version=4)
    started = time.perf_counter()
    try:
        NotebookClient(nb, timeout=float(sys.argv[1]), kernel_name="python3",
                       allow_errors=True).execute()
    except Exception:
        pass  # a timeout or a dead kernel: the peers record an error and go on
    times.append(time.perf_counter() - started)
print(json.dumps({"times": times,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def nbclient_run(sample: Sample, timeout: float, count: int) -> Measure:
    cpu_before, _ = children_usage()
    started = time.perf_counter()
    with PeakWatcher(b"ipykernel_launcher") as kernels:
        done = subprocess.run([sys.executable, "-c", PEER, str(timeout),
                               *map(str, sample.paths)],
                              capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    cpu_after, _ = children_usage()
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return sample.measure("nbclient, one kernel each",
                          peers.PeerRun(wall, tuple(data["times"])), cpu_after - cpu_before,
                          data["peak_mb"], kernels.peak_kb / 1024, count)


def peer_tools(sample: Sample, scratch: Path, timeout: float, count: int,
               bin_dir: Path | None) -> list[Measure]:
    """nbgrader's autograde and otter run on the sample, each where it is installed."""
    out = []
    for tool, package in (("nbgrader", "nbgrader"), ("otter", "otter-grader")):
        exe = peers.find(tool, bin_dir)
        if exe is None:
            print(f"{tool}: not installed here (pip install {package}, or --peers-bin "
                  "VENV/bin, to include it)")
            continue
        cpu_before, _ = children_usage()
        with PeakWatcher(b"ipykernel_launcher") as kernels, \
                PeakWatcher(tool.encode()) as parent:
            if tool == "nbgrader":
                run = peers.nbgrader(exe, CORRECT, list(sample.paths), scratch, timeout)
                name = "nbgrader autograde"
            else:
                run = peers.otter(exe, list(sample.paths), scratch, cap=30.0)
                name = "otter run"
        cpu_after, _ = children_usage()
        out.append(sample.measure(name, run, cpu_after - cpu_before, parent.peak_kb / 1024,
                                  kernels.peak_kb / 1024, count))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="submissions (default 200)")
    parser.add_argument("--jobs", type=int, default=2, help="grade batch --jobs (default 2)")
    parser.add_argument("--peer-sample", type=int, default=20, metavar="K",
                        help="notebooks run through nbclient, extrapolated to --count "
                        "(default 20; 0 runs all)")
    parser.add_argument("--timeout", type=float, default=2.0,
                        help="seconds per statement (ours) and per cell (nbclient)")
    parser.add_argument("--scaling", default="", metavar="N,N,...",
                        help="also grade classes of these sizes (e.g. 10,100,1000)")
    parser.add_argument("--peers-bin", type=Path, default=None, metavar="DIR",
                        help="a folder holding the nbgrader and otter commands (a venv's bin)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "submissions"
        paths = make_class(folder, args.count)
        ours = grade_batch(folder, Path(scratch) / "out", args.jobs, args.timeout, args.count)
        sample = Sample.of(paths, args.peer_sample)
        peer = nbclient_run(sample, args.timeout, args.count)
        tools = peer_tools(sample, Path(scratch), args.timeout, args.count, args.peers_bin)
        single = grade_run(CORRECT, 5)
        print(f"{args.count} seed-sized udl_attention notebooks (per 50: 40 correct, 5 wrong, "
              "2 untouched, 1 timeout, 1 exception, 1 crash)")
        print(f"{'engine':<28} {'wall s':>8} {'cpu s':>8} {'subs/s':>8} {'median ms':>9} "
              f"{'p95 ms':>9} {'parent MB':>8} {'worker MB':>8}")
        for measure in (ours, peer, *tools):
            print(measure.line())
        for measure in (peer, *tools):
            print(f"ratio, {measure.name} / grade batch: wall {measure.wall_s / ours.wall_s:.1f}x"
                  f", CPU {measure.cpu_s / max(ours.cpu_s, 1e-9):.1f}x")
        wall_ratio = peer.wall_s / ours.wall_s
        thousand = ours.wall_s / args.count * 1000
        said = "" if args.count == 1000 else f" (from the rate of {args.count})"
        print("\ntargets (#11):")
        for name, value, goal, met in (
                (f"--jobs {args.jobs} vs nbclient, wall", f"{wall_ratio:.1f}x", ">= 50x",
                 wall_ratio >= 50),
                (f"1,000 submissions{said}", f"{thousand:.0f} s", "< 60 s", thousand < 60),
                ("one notebook through grade run", f"{single * 1000:.0f} ms", "< 150 ms",
                 single < 0.150)):
            print(f"  {name:<44} {value:>10}  target {goal:<9} {'met' if met else 'NOT met'}")
        if args.scaling:
            scaling(Path(scratch), [int(n) for n in args.scaling.split(",")], args.jobs,
                    args.timeout)


if __name__ == "__main__":
    main()
