"""A local batch's job processes: each grades in a process of its own with its own zygote, the
batch's process alone writes the gradebook, and none outlives the batch's process."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from grader.batch import batch, processes
from grader.course import registry
from grader.errors import GraderError
from grader.gradebook import Gradebook
from grader.pipeline import grading
from grader.sandbox.limits import Limits
from tests.helpers.classes import make_class, normalised, small_class

OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))
UDL = registry.get("udl_attention")


@pytest.mark.own_zygotes
def test_each_job_is_graded_in_a_process_of_its_own_with_its_own_zygote(tmp_path,
                                                                       monkeypatch):
    seen = tmp_path / "seen"
    seen.mkdir()
    real = processes.grade_job

    def noted(job, assignment, options, stored):
        graded = real(job, assignment, options, stored)
        zygotes = [client.zygote_pid for client in options.zygotes.running().values()]
        (seen / job.student).write_text(json.dumps([os.getpid(), zygotes]))
        return graded

    monkeypatch.setattr(processes, "grade_job", noted)
    folder = make_class(tmp_path / "submissions")
    summary = batch.run(folder, UDL, tmp_path / "out", 2, OPTIONS, progress=io.StringIO())
    assert (summary.graded, summary.errors) == (8, 1)
    where = {path.name: json.loads(path.read_text()) for path in seen.iterdir()}
    assert len(where) == 8
    pids = {pid for pid, _ in where.values()}
    assert len(pids) == 2 and os.getpid() not in pids
    zygotes = {pid: tuple(z) for pid, z in where.values() if z}
    assert len(set(zygotes.values())) == 2  # one zygote per job process, none shared
    assert len(Gradebook(tmp_path / "out").rows()) == 8  # written by the batch's process


def test_a_job_process_that_dies_stops_the_batch_with_an_error(tmp_path, monkeypatch):
    real = processes.grade_job

    def dies_on_bob(job, *args):
        if job.student == "bob":
            os._exit(3)
        return real(job, *args)

    monkeypatch.setattr(processes, "grade_job", dies_on_bob)
    folder, out = small_class(tmp_path), tmp_path / "out"
    with pytest.raises(GraderError, match=r"a process of the batch died while grading "
                                          r"bob_udl_attention\.py .*run the same command again"):
        batch.run(folder, UDL, out, 1, OPTIONS, progress=io.StringIO())
    assert [row.student for row in Gradebook(out).rows()] in ([], ["alice"])


def test_a_batch_process_killed_alone_takes_its_job_processes_with_it(tmp_path,
                                                                      own_processes):
    folder = make_class(tmp_path / "submissions", slow=True)
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "grader", "batch", str(folder),
                                "--assignment", "udl_attention", "--out", str(out),
                                "--jobs", "2"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(own_processes.started()) < 5:
        time.sleep(0.05)  # the batch, two job processes, a zygote and a worker at least
    assert len(own_processes.started()) >= 5
    os.kill(process.pid, signal.SIGKILL)  # the batch's process only, not its group
    process.wait()
    assert own_processes.survivors() == []
    try:
        recorded = len(normalised(out))
    except sqlite3.Error:
        recorded = 0
    assert recorded < 8
