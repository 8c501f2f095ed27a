"""The peers' own grading commands on the bench's class: nbgrader's `autograde` and `otter run`.

Both get the same four checks, one per scored udl_attention exercise, each calling the
student's function on inputs the student never saw and comparing with the reference solution's
output (`np.allclose`), as an instructor would write them for either tool. The checks run in
the student's kernel after the student's cells: that is how both tools work.

- nbgrader: a course folder with the master (the correct notebook and the four test cells,
  marked as nbgrader's autograded tests), `nbgrader generate_assignment`, each student's
  notebook under `submitted/`, then one `nbgrader autograde` over all of them, which is how an
  instructor grades a class with it. Per-notebook times come from its log.
- otter: `otter generate` makes the autograder zip from four OK-format test files, then
  `otter run` grades one notebook per process, as its documentation says to run it without
  Docker. otter has no time limit of its own: a notebook that never ends is killed here after
  `cap` seconds and counted at that time.

Each tool is looked for beside this Python (`sys.executable`'s folder) and on PATH, so a peer
installed in a venv of its own is used with `--peers-bin VENV/bin`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class PeerRun:
    """What one peer tool did with the sample."""

    wall_s: float
    """Wall time of the whole run, start-up included."""
    times: tuple[float, ...]
    """Seconds per notebook, in the order of the sample."""
    note: str = ""


def find(tool: str, bin_dir: Path | None) -> str | None:
    """The tool's executable: in `bin_dir`, else on PATH."""
    if bin_dir is not None and (bin_dir / tool).exists():
        return str(bin_dir / tool)
    return shutil.which(tool)


def checks() -> list[tuple[str, int, str, str]]:
    """(exercise, points, a statement that makes its inputs, the condition that passes it)
    for each scored exercise."""
    spec = importlib.util.spec_from_file_location("udl_solution",
                                                  ROOT / "solutions" / "udl_attention.py")
    assert spec is not None and spec.loader is not None
    solution = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(solution)
    rng = np.random.default_rng(2024)

    def head(d: int, n: int, h: int) -> list[np.ndarray]:
        return [rng.normal(size=(h, d)) for _ in range(3)] + \
            [rng.normal(size=(h, 1)) for _ in range(3)]

    x = rng.normal(size=(6, 5))
    inputs = {
        "softmax": (1, [rng.normal(size=7)]),
        "self_attention": (2, [x] + head(6, 5, 6)),
        "scaled_dot_product_self_attention": (2, [x] + head(6, 5, 6)),
        "multihead_scaled_self_attention": (5, [x] + head(6, 5, 3) + head(6, 5, 3)
                                            + [rng.normal(size=(6, 6))]),
    }
    out = []
    for name, (points, args) in inputs.items():
        expected = getattr(solution, name)(*args)
        out.append((name, points,
                    f"_args = [np.array(a) for a in {[a.tolist() for a in args]!r}]",
                    f"np.allclose({name}(*_args), np.array({expected.tolist()!r}), "
                    "rtol=1e-6, atol=1e-8)"))
    return out


def _env(exe: str) -> dict[str, str]:
    """The tool's own folder first on PATH: nbgrader runs `alembic`, both start `python`."""
    return {**os.environ, "PATH": f"{Path(exe).parent}{os.pathsep}{os.environ['PATH']}"}


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _notebook(cells: list[dict]) -> dict:
    return {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"}}}


def _nbgrader_tests() -> list[dict]:
    return [{"cell_type": "code", "execution_count": None, "outputs": [],
             "source": f"import numpy as np\n{setup}\nassert {condition}",
             "metadata": {"nbgrader": {"grade": True, "grade_id": f"test_{name}",
                                       "locked": True, "points": points, "solution": False,
                                       "task": False, "schema_version": 3}}}
            for name, points, setup, condition in checks()]


def nbgrader(exe: str, master: Path, sample: list[Path], scratch: Path,
             timeout: float) -> PeerRun:
    """`nbgrader autograde` of the sample in one run, after `generate_assignment`."""
    course = scratch / "nbgrader"
    tests = _nbgrader_tests()
    (course / "source" / "hw").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.course_id = 'bench'\n")
    (course / "source" / "hw" / "hw.ipynb").write_text(
        json.dumps(_notebook(_cells(master) + tests)))
    subprocess.run([exe, "generate_assignment", "hw", "--force"], cwd=course, check=True,
                   capture_output=True, env=_env(exe))
    students = []
    for i, path in enumerate(sample):
        student = f"s{i:04d}"
        folder = course / "submitted" / student / "hw"
        folder.mkdir(parents=True)
        (folder / "hw.ipynb").write_text(json.dumps(_notebook(_cells(path) + tests)))
        (folder / "timestamp.txt").write_text("2026-01-01 00:00:00.000000 UTC")
        students.append(student)
    started = time.perf_counter()
    done = subprocess.run([exe, "autograde", "hw", f"--Execute.timeout={max(1, round(timeout))}",
                           "--Application.log_format=%(asctime)s.%(msecs)03d %(message)s",
                           "--Application.log_datefmt=%Y-%m-%d %H:%M:%S"],
                          cwd=course, capture_output=True, text=True, check=False,
                          env=_env(exe))
    wall = time.perf_counter() - started
    # Each notebook's time is the span between its "Autograding" line and the next one's.
    marks = [(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f"), m.group(2))
             for m in re.finditer(r"^(\S+ \S+) .*?Autograding (\S+)$", done.stderr, re.M)]
    if len(marks) != len(sample):
        raise SystemExit(f"nbgrader autograde graded {len(marks)} of {len(sample)} "
                         f"notebooks:\n{done.stderr[-2000:]}")
    ends = [when for when, _ in marks[1:]] + [marks[-1][0] + _tail(done.stderr, marks[-1][0])]
    spans = {re.search(r"(s\d{4})", where).group(1): (end - start).total_seconds()  # type: ignore[union-attr]
             for (start, where), end in zip(marks, ends, strict=True)}
    return PeerRun(wall, tuple(spans[student] for student in students),
                   "one autograde over the sample")


def _tail(log: str, last_start: datetime):
    """How long after the last notebook's start the log's last line came."""
    stamps = re.findall(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) ", log, re.M)
    return datetime.strptime(stamps[-1], "%Y-%m-%d %H:%M:%S.%f") - last_start


def otter(exe: str, sample: list[Path], scratch: Path, cap: float) -> PeerRun:
    """`otter run` of each notebook of the sample, one process each, after `otter generate`."""
    folder = scratch / "otter"
    (folder / "tests").mkdir(parents=True)
    for name, points, setup, condition in checks():
        case = {"code": f">>> import numpy as np\n>>> {setup}\n>>> bool({condition})\nTrue",
                "hidden": True, "locked": False}
        test = {"name": name, "points": points, "suites": [
            {"cases": [case], "scored": True, "setup": "", "teardown": "", "type": "doctest"}]}
        (folder / "tests" / f"{name}.py").write_text(f"OK_FORMAT = True\n\ntest = {test!r}\n")
    subprocess.run([exe, "generate", "-t", "tests", "-o", "autograder.zip", "--no-config",
                    "--no-requirements", "--no-environment"], cwd=folder, check=True,
                   capture_output=True, env=_env(exe))
    times, killed = [], 0
    started = time.perf_counter()
    for i, path in enumerate(sample):
        out = folder / f"out{i:04d}"
        out.mkdir()
        one = time.perf_counter()
        process = subprocess.Popen([exe, "run", "-a", "autograder.zip", "-o", str(out),
                                    "--no-logo", str(path)], cwd=folder,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True, env=_env(exe))
        try:
            process.wait(timeout=cap)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            killed += 1
        times.append(time.perf_counter() - one)
    note = "one process per notebook"
    if killed:
        note += f"; {killed} never ended (no limit) and were killed after {cap:.0f} s"
    return PeerRun(time.perf_counter() - started, tuple(times), note)
