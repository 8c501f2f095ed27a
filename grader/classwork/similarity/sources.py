"""Where the compared code comes from: the files a batch graded, and the released stubs.

The only module of the comparison that touches the file system. A student's files are those
the gradebook recorded for them (every file of theirs for the assignment: a helper module
counts), read from the submissions folder the batch graded (`--submissions DIR`) with the
batch's own rules (`grader.pipeline.submissions`: no link followed, a regular file, a size
cap) and loaded as grading loads them. A file that cannot be read, or whose hash is no longer
the one the gradebook recorded, leaves its student "not compared", with why.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from grader.classwork.gradebook import Row
from grader.classwork.similarity.score import NotCompared
from grader.classwork.similarity.tokens import Definition, TooMuch, definitions
from grader.errors import SubmissionError, UsageError
from grader.pipeline import loading, submissions
from grader.sandbox.limits import Limits
from grader.submission import Submission


def _load(path: Path, limits: Limits) -> Submission:
    why = submissions.problem(path)
    if why is not None:
        raise SubmissionError(f"{path.name}: {why}")
    return loading.load(path, limits)


def read_class(rows: Sequence[Row], folder: Path, limits: Limits | None = None
               ) -> tuple[list[tuple[str, tuple[Definition, ...]]], list[NotCompared]]:
    """Each student's definitions (all their files), and the students left out with why."""
    if not folder.is_dir() or folder.is_symlink():
        raise UsageError(f"{folder}: not a folder; pass --submissions with the folder that "
                         "`grade batch` graded")
    limits = limits or Limits()
    files: dict[str, list[Row]] = {}
    for row in rows:
        files.setdefault(row.student, []).append(row)
    read: list[tuple[str, tuple[Definition, ...]]] = []
    left: list[NotCompared] = []
    for student, own in sorted(files.items()):
        found: list[Definition] = []
        unparsed = []
        try:
            for row in own:
                loaded = _load(folder / row.submission, limits)
                if loaded.sha256 != row.sha256:
                    raise SubmissionError(f"{row.submission}: changed since it was graded "
                                          "(its hash is not the gradebook's)")
                found += definitions(loaded)
                unparsed += [f"{row.submission}, cell {cell.number}: {cell.syntax_error}"
                             for cell in loaded.cells if cell.syntax_error]
        except (SubmissionError, TooMuch) as exc:
            # Loading names the file as it was opened: the folder is the instructor's.
            left.append(NotCompared(student, str(exc).replace(f"{folder}/", "")))
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
