"""One student's work as a batch grades it: the files (`Job`), grading them as one submission
(`grade_job`, the same in a batch's job process and on a Dask worker), the result with its
reports (`Graded`), and where jobs are graded (`Pool`). `batch` and `distributed` both build on
it, and neither imports the other's internals.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from grader.course import references
from grader.model import Assignment
from grader.pipeline import combine, grading
from grader.report import html, markdown
from grader.results import Result


@dataclass(frozen=True)
class Job:
    """One student's files, graded as one submission."""

    paths: tuple[Path, ...]
    """The files, in the order found."""
    names: tuple[str, ...]
    """Their names as the gradebook records them, with forward slashes: the paths under the
    submissions folder, or under the student's folder of a platform's download (the name the
    student gave the file, the same in every download)."""
    student: str
    """Whose they are: the platform's user id where it gives one, which stays the same from
    one download to the next."""
    hashes: tuple[str, ...]
    """The hash of each file's bytes now."""
    submitted_at: datetime | None = None
    """When the student handed it in (time zone aware), where the platform says so."""
    display_name: str = ""
    """The student's name as the platform shows it, where it gives one."""
    ids: tuple[tuple[str, str], ...] = ()
    """The platform's ids for it, as (name, id) pairs (`canvas_user_id`,
    `moodle_participant_id`, `git_commit`...): pairs, so that a job pickles to a Dask worker."""

    @property
    def relative(self) -> str:
        """The submission as the gradebook names it: its file, or its files joined."""
        return combine.name(self.names)

    @property
    def sha256(self) -> str:
        """The file's hash, or for several files one hash of theirs (a change to any of
        them is a new submission)."""
        return self.hashes[0] if len(self.hashes) == 1 else combine.digest(self.hashes)


@dataclass(frozen=True)
class Graded:
    """One submission graded: its result, and its reports rendered where it was graded."""

    result: Result
    """The result; from a Dask worker, read back whole from its instructor's JSON
    (`grader.result_json.from_dict`)."""
    html: str
    """The HTML report, rendered where the result was graded."""
    markdown: str
    """The Markdown report."""

    @classmethod
    def of(cls, result: Result) -> Graded:
        """A result with its reports."""
        return cls(result, html.render(result), markdown.render(result))


def grade_job(job: Job, assignment: Assignment, options: grading.Options,
              stored: references.References, copies: Sequence[Path] = ()) -> Graded:
    """Grade one student's files as one submission (`grading.grade_files`), recorded under
    the names and hashes the batch found; `copies` are where a Dask worker wrote them."""
    result = grading.grade_files(job.paths, assignment, options, stored,
                                 recorded=tuple(zip(job.names, job.hashes, strict=True)),
                                 copies=copies, keep_going=True)
    return Graded.of(result)


class Pool(Protocol):
    """Where a batch grades: job processes of this machine (`grader.batch.processes.Processes`)
    or a Dask cluster (`grader.batch.distributed.Cluster`). Entering it checks what grading
    needs, and stops the batch with one error naming the file and the fix when an
    instructor's file is wrong."""

    label: str
    """What the progress bar says it is doing."""

    def __enter__(self) -> Pool: ...

    def __exit__(self, *exc: object) -> None: ...

    def width(self) -> int:
        """How many submissions it grades at once now (at least 1)."""
        ...

    def submit(self, job: Job) -> Future[Graded]:
        """Start grading one submission."""
        ...

    def check(self) -> None:
        """Called while no result comes: a GraderError when the pool can grade nothing more
        (a cluster whose workers are all gone), so that the batch stops instead of waiting."""
        ...
