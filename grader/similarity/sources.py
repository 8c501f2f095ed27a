"""Where the compared code comes from: the files a batch graded, and the released stubs.

The only module of the comparison that touches the file system. A student's files are found
again in the folder the batch graded (its `origins.Origin`: recorded by the batch, or named
with `--submissions`) by the batch's own finding function (`finding.read_folder`, in the
layout it read: a plain folder, or a platform's download keyed by the platform's ids), and
loaded as grading loads them (`grader.pipeline.submissions`: no link followed, a regular
file, a size cap). A student is compared on the files whose hash is still the one the
gradebook recorded; a student whose files changed, went, or cannot be read is "not
compared", with why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from grader.batch import finding
from grader.batch.jobs import Job
from grader.errors import SubmissionError, UsageError
from grader.gradebook import Row
from grader.gradebook.origins import Origin
from grader.pipeline import loading, submissions
from grader.sandbox.limits import Limits
from grader.similarity.score import NotCompared
from grader.similarity.tokens import Definition, TooMuch, definitions
from grader.submission import Submission


def _load(path: Path, limits: Limits) -> Submission:
    why = submissions.problem(path)
    if why is not None:
        raise SubmissionError(f"{path.name}: {why}")
    return loading.load(path, limits)


def found_jobs(origin: Origin) -> dict[tuple[str, str], Job]:
    """(student, submission) -> the job the batch would make of it now, found in the folder
    of `origin` the way the batch found it."""
    folder = origin.folder
    if not folder.is_dir() or folder.is_symlink():
        raise UsageError(f"{folder}: not a folder; pass --submissions with the folder that "
                         "`grade batch` graded (for a zip, the folder it was unpacked into "
                         "under OUT/submissions/)")
    jobs, _, _ = finding.read_folder(folder, re.compile(origin.pattern) if origin.pattern
                                   else None, origin.platform, origin.roster)
    return {(job.student, job.relative): job for job in jobs}


def read_class(rows: Sequence[Row], origin: Origin, limits: Limits | None = None
               ) -> tuple[list[tuple[str, tuple[Definition, ...]]], list[NotCompared]]:
    """Each student's definitions (every file of the submissions of theirs that the gradebook
    holds and the folder still has unchanged), and the students left out with why."""
    jobs = found_jobs(origin)
    limits = limits or Limits()
    graded: dict[str, list[Row]] = {}
    for row in rows:
        graded.setdefault(row.student, []).append(row)
    read: list[tuple[str, tuple[Definition, ...]]] = []
    left: list[NotCompared] = []
    for student, own in sorted(graded.items()):
        here = [(row, jobs[(student, row.submission)]) for row in own
                if (student, row.submission) in jobs]
        same = [job for row, job in here if job.sha256 == row.sha256]
        if not same:
            left.append(NotCompared(student, f"{here[0][0].submission}: changed since it was "
                                    "graded (its hash is not the gradebook's)" if here else
                                    f"{own[0].submission}: not in {origin.folder} any more"))
            continue
        found: list[Definition] = []
        unparsed = []
        try:
            for job in same:
                for path, name in zip(job.paths, job.names, strict=True):
                    loaded = _load(path, limits)
                    found += definitions(loaded)
                    unparsed += [f"{name}, cell {cell.number}: {cell.syntax_error}"
                                 for cell in loaded.cells if cell.syntax_error]
        except (SubmissionError, TooMuch) as exc:
            # Loading names the file as it was opened: the folder is the instructor's.
            left.append(NotCompared(student, str(exc).replace(f"{origin.folder}/", "")))
            continue
        except (RecursionError, MemoryError):
            left.append(NotCompared(student, "too large or too deep to read"))
            continue
        if not found:
            left.append(NotCompared(student, "defines no function" + (
                f" that parses ({unparsed[0]})" if unparsed else "")))
            continue
        read.append((student, tuple(found)))
    return read, left


def stubs(assignment: str, folder: Path) -> list[Definition]:
    """The definitions of every stub of an assignment (`<assignment>*.py`, `.ipynb`) in the
    folder of what students received; a UsageError when there is none."""
    paths = sorted(p for p in folder.glob(f"{assignment}*")
                   if p.suffix in submissions.SUFFIXES and p.is_file()) \
        if folder.is_dir() else []
    if not paths:
        raise UsageError(f"{folder}: no stub of {assignment} ({assignment}*.py or .ipynb) "
                         "here; pass --stubs with the folder of what students received, so "
                         "that it is subtracted")
    found: list[Definition] = []
    for path in paths:
        try:
            found += definitions(loading.load(path))
        except (SubmissionError, TooMuch) as exc:
            raise UsageError(f"{path}: the stub cannot be read ({exc})") from None
    return found
