"""A local batch's pool: one process per job, so that the grader's own Python of two jobs
(loading, running the sandbox's requests, comparing, reports) runs on two cores, never in one
interpreter's lock.

Design
------
- The batch's process checks what grading needs (`grading.ready`: the references, every
  case's inputs) and then forks its job processes at once, before it opens the gradebook or
  starts a thread of its own, so that each starts as a copy of a process that held no lock
  and ran no student code: the references are read once, and shared copy-on-write.
- Each job process grades one submission at a time (`jobs.grade_job`, as a Dask worker does)
  with zygotes of its own (`zygote.Zygotes`, booted on its first submission and stopped when
  it exits), and sends back the result with its reports (`jobs.Graded`, pickled). The
  batch's process alone writes the reports and the gradebook, as each result comes.
- A job process ignores Ctrl-C: the batch's process stops handing out submissions and waits
  for those begun, then stops them all. It dies with the batch's process
  (PR_SET_PDEATHSIG), and its zygote and workers with it, so that a batch killed in any way
  leaves no grader behind; the next run resumes from the gradebook.
- A job process that dies stops the batch with one error that says so: the gradebook keeps
  what was graded.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.util
import os
import signal
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace

from grader.batch.jobs import Graded, Job, grade_job
from grader.course import references
from grader.errors import GraderError
from grader.model import Assignment
from grader.pipeline import grading
from grader.sandbox.zygote import Zygotes

PR_SET_PDEATHSIG = 1

_GRADING: tuple[Assignment, grading.Options, references.References] | None = None
"""In a job process: what it grades with (set by `_begin`)."""


def _begin(assignment: Assignment, options: grading.Options, stored: references.References,
           parent: int) -> None:
    """In a new job process, before its first submission: die with the batch's process,
    leave Ctrl-C to it, and make the zygotes this process forks its workers from."""
    global _GRADING
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # the batch's process died before the line above
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    zygotes = Zygotes()
    multiprocessing.util.Finalize(zygotes, zygotes.close, exitpriority=10)
    _GRADING = (assignment, replace(options, zygotes=zygotes), stored)


def _grade(job: Job) -> Graded:
    """In a job process: grade one submission."""
    if _GRADING is None:
        raise GraderError("a job process was started without what it grades with")
    assignment, options, stored = _GRADING
    return grade_job(job, assignment, options, stored)


class Processes:
    """`jobs` processes forked from the batch's process, each grading one submission at a
    time with its own zygotes."""

    label = "grading"

    def __init__(self, jobs: int, assignment: Assignment, options: grading.Options) -> None:
        self.jobs, self.assignment = max(1, jobs), assignment
        # The batch's zygotes, if it was given any, stay in the batch's process: each job
        # process makes its own.
        self.options = replace(options, zygotes=None)
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Processes:
        stored = grading.ready(self.assignment, self.options)
        self._pool = ProcessPoolExecutor(
            max_workers=self.jobs, mp_context=multiprocessing.get_context("fork"),
            initializer=_begin, initargs=(self.assignment, self.options, stored, os.getpid()))
        try:
            # With fork, the first submission forks every job process, from this thread,
            # now: before the batch opens its gradebook or starts a progress bar's thread.
            self._pool.submit(os.getpid).result()
        except BrokenProcessPool:
            self.__exit__()
            raise GraderError("the batch's job processes could not be started; run the "
                              "same command again") from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def width(self) -> int:
        """The number of job processes."""
        return self.jobs

    def submit(self, job: Job) -> Future[Graded]:
        """Grade it in a job process; a job process that died is a GraderError."""
        if self._pool is None:
            raise GraderError("the batch's job processes are stopped")
        done: Future[Graded] = Future()

        def finished(remote: Future[Graded]) -> None:
            if not done.set_running_or_notify_cancel():
                return
            try:
                done.set_result(remote.result())
            except BrokenProcessPool:
                done.set_exception(GraderError(
                    f"a process of the batch died while grading {job.relative} (the "
                    "grader's process, not the sandbox); the gradebook keeps what was "
                    "graded: run the same command again, and grade that submission alone "
                    "with `grade run` if it happens again"))
            except BaseException as exc:
                done.set_exception(exc)

        self._pool.submit(_grade, job).add_done_callback(finished)
        return done

    def check(self) -> None:
        """Job processes that die say so through their submissions' results."""
