"""A batch leaks nothing (issue #11): no file descriptor, no zombie process, and no growth of
memory beyond a small allowance, in either process that a batch's work happens in.

A batch grades in job processes (`grader.batch.processes`) and writes the results in its own.
So each half is counted where it happens: sixteen gradings as a job process makes them
(`jobs.grade_job` with zygotes of its own, here in this process, so that the descriptors and
children counted are the grader's own), and sixty results written and recorded by the batch's
process. A descriptor or a zombie left by each is counted exactly whatever the count, and a
megabyte kept by each is over the allowance (two thirds of a megabyte for each). The memory of
a class of a thousand is measured in bench/ (`bench.py --scaling 10,100,1000`), not here.

Speed is measured in bench/, never asserted here.
"""

from __future__ import annotations

import gc
import io
import json
import os
import shutil
from concurrent.futures import Future
from dataclasses import replace

import pytest

from grader.batch import batch, finding
from grader.batch.jobs import Graded, Job, grade_job
from grader.course import registry
from grader.gradebook import Gradebook
from grader.pipeline import grading
from grader.sandbox.limits import Limits
from grader.sandbox.zygote import Zygotes
from tests.conftest import ROOT, processes, stat_of
from tests.helpers.memory import reset_peak, resident_mb

pytestmark = pytest.mark.slow
COUNT = 60
"""Results that the batch's process writes and records (each costs little: it is replayed)."""
GRADINGS = 16
"""Gradings that one job process makes (each costs about 0.3 s of CPU): enough that 0.8 MB
kept by each is over the allowance (12.9 MB grown, where the gradings themselves grow the
process by less than 1 MB)."""
OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def children() -> dict[int, str]:
    """Each child of this process, by its state letter ("Z": exited and never waited for)."""
    return {pid: found[0] for pid in processes()
            if (found := stat_of(pid)) is not None and found[1] == os.getpid()}


def make_class(folder, count: int) -> None:
    sources = [ROOT / "tests" / "corpus" / "udl_attention" / name
               for name in ("loops.ipynb", "seed002.ipynb")]
    for i in range(count):
        notebook = json.loads(sources[i % 2].read_text())
        notebook["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [],
                                  "execution_count": None, "source": f"student = {i}"})
        path = folder / f"student_{i:04d}" / "hw.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(notebook))


def run(folder, out) -> batch.Summary:
    return batch.run(folder, registry.get("udl_attention"), out, 2, OPTIONS, force=True,
                     progress=io.StringIO())


def jobs_of(folder) -> list[Job]:
    return finding.read_folder(folder, None, None)[0]


def assert_no_growth(descriptors: int, memory: float, before: dict[int, str], count: int,
                     what: str) -> None:
    """No descriptor, no zombie, and less memory than two thirds of a megabyte for each of the
    `count` things done (60 MB at the peak) more than before `what`. A zombie counts when
    `what` started it: a child of this process that was not one `before` (an earlier test's,
    in the same pytest worker, may end and wait to be reaped)."""
    gc.collect()
    assert open_descriptors() == descriptors
    assert [pid for pid, state in children().items() if state == "Z" and pid not in before] == []
    growth = resident_mb() - memory
    # Results are written to disk, not kept: graded submissions may cost the allocator slack,
    # never memory in proportion to the class (each result holds arrays of its public checks,
    # tens of kilobytes).
    assert growth < count * 2 / 3, f"this process grew by {growth:.1f} MB over {what}"
    peak = resident_mb("VmHWM")
    print(f"{what}: descriptors {descriptors} -> {open_descriptors()}, "
          f"RSS {memory:.1f} -> {resident_mb():.1f} MB, peak {peak:.0f} MB")
    assert peak - memory < 60, f"this process peaked at {peak:.0f} MB, from {memory:.0f} MB"


@pytest.mark.timeout(600)  # sixteen gradings: a minute on a busy machine
def test_the_gradings_of_a_job_process_leak_nothing(tmp_path):
    make_class(tmp_path / "submissions", GRADINGS)
    assignment = registry.get("udl_attention")
    todo = jobs_of(tmp_path / "submissions")
    # A first grading of each notebook warms every import and cache, and the zygote of each
    # preload set (seed002.ipynb imports matplotlib), which this pytest worker's gradings
    # share: what follows is growth.
    with Zygotes() as zygotes:
        options = replace(OPTIONS, zygotes=zygotes)
        stored = grading.ready(assignment, options)
        for job in todo[:2]:
            grade_job(job, assignment, options, stored)
    gc.collect()
    descriptors, memory, before = open_descriptors(), resident_mb(), children()
    reset_peak()
    with Zygotes() as zygotes:  # as `processes._begin` makes a job process's
        options = replace(OPTIONS, zygotes=zygotes)
        stored = grading.ready(assignment, options)
        graded = [grade_job(job, assignment, options, stored) for job in todo]
        del stored
    scores = {job.student: (g.result.status.value, g.result.score)
              for job, g in zip(todo, graded, strict=True)}
    # loops.ipynb earns every point, seed002.ipynb (every other student) four.
    assert scores == {f"student_{i:04d}": ("graded", 4.0 if i % 2 else 10.0)
                      for i in range(GRADINGS)}
    del graded
    assert_no_growth(descriptors, memory, before, GRADINGS, f"{GRADINGS} gradings")


class Replayed:
    """A batch's pool that grades nothing: each job gets one real grading's result, under its
    own name, as a job process would send it back."""

    label = "grading"

    def __init__(self, graded: Graded) -> None:
        self.graded = graded

    def __enter__(self) -> Replayed:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def width(self) -> int:
        return 2

    def submit(self, job: Job) -> Future[Graded]:
        done: Future[Graded] = Future()
        result = replace(self.graded.result, submission=job.relative)
        done.set_result(Graded.of(result))
        return done

    def check(self) -> None:
        pass


@pytest.mark.timeout(600)
def test_the_batch_process_leaks_nothing_while_it_writes_and_records(tmp_path, monkeypatch):
    make_class(tmp_path / "submissions", COUNT)
    assignment = registry.get("udl_attention")
    first = jobs_of(tmp_path / "submissions")[0]
    with Zygotes() as zygotes:
        options = replace(OPTIONS, zygotes=zygotes)
        pool = Replayed(grade_job(first, assignment, options,
                                  grading.ready(assignment, options)))
    monkeypatch.setattr(batch, "Processes", lambda *args: pool)
    warm = tmp_path / "warm"  # a first, small batch warms the writing and the gradebook
    shutil.copytree(tmp_path / "submissions" / "student_0000", warm / "student_0000")
    run(warm, tmp_path / "warm-out")
    gc.collect()
    descriptors, memory, before = open_descriptors(), resident_mb(), children()
    reset_peak()
    summary = run(tmp_path / "submissions", tmp_path / "out")
    assert (summary.graded, summary.errors) == (COUNT, 0)
    rows = Gradebook(tmp_path / "out").rows()
    assert sorted(row.student for row in rows) == [f"student_{i:04d}" for i in range(COUNT)]
    assert {row.score for row in rows} == {10.0}
    assert len(list((tmp_path / "out" / "results").rglob("hw.html"))) == COUNT
    assert_no_growth(descriptors, memory, before, COUNT, f"{COUNT} results written and recorded")
