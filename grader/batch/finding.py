"""Which submissions a batch grades, and whose: a folder or a platform's download read into
one job per student.

The submissions are a folder or a zip (unpacked safely under `OUT/submissions/`, see
`grader.ingest.archives`). A platform's download (Canvas, Moodle, Gradescope, a
folder of Git repositories) is recognised, or named with `platform`, and read by
`grader.ingest`: the student is the platform's user id and the time the platform's.
In a plain folder, student names come from the path of each file relative to the submissions
folder:
- a file inside a folder belongs to that folder's student: `alice/notebook.ipynb` -> alice;
- a file directly in the submissions folder belongs to the part of its name before the first
  underscore or dot: `bob_attention.ipynb` -> bob (the layout of most LMS downloads);
- `--student-pattern REGEX` replaces both: a regular expression with a group named `student`,
  searched in the relative path (for example `^(?P<student>[a-z]+\\d+)-`).

`batch` grades what this finds; `similarity.sources` finds the same files the same way.
"""

from __future__ import annotations

import hashlib
import re
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import cast

from grader import text
from grader.batch.jobs import Job
from grader.errors import UsageError
from grader.ingest import archives, recognise
from grader.ingest.handed import Handed
from grader.pipeline import submissions


def student_of(relative: str, pattern: re.Pattern[str] | None) -> str | None:
    """The student a submission belongs to, or None when the path does not say."""
    if pattern is not None:
        found = pattern.search(relative)
        return found.group("student") if found and found.group("student") else None
    if "/" in relative:
        return relative.split("/", 1)[0]
    name = re.split(r"[_.]", relative, maxsplit=1)[0]
    return name or None


def bad_name(student: str) -> str | None:
    """Why a student name cannot name a folder of results, or None when it can."""
    if text.one_line(student) != student or "\t" in student:
        return "has control characters or line breaks"
    if "/" in student or "\\" in student or student in (".", ".."):
        return "is a path, not a name"
    if len(student) > 200:
        return "is longer than 200 characters"
    return None


def compile_pattern(text: str | None) -> re.Pattern[str] | None:
    """Check a --student-pattern; a UsageError names what is wrong with it."""
    if text is None:
        return None
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise UsageError(f"--student-pattern {text!r} is not a regular expression ({exc})") \
            from None
    if "student" not in pattern.groupindex:
        raise UsageError(f"--student-pattern {text!r} needs a group named student, "
                         "as in (?P<student>...)")
    return pattern


def find(folder: Path, pattern: re.Pattern[str] | None) -> tuple[list[Job], list[str]]:
    """The submissions in a folder, one per student with all their files, and the files
    passed over, each with the reason."""
    found = submissions.in_folder(folder)
    files: dict[str, list[tuple[Path, str, str]]] = {}
    ignored = [f"{path.relative_to(folder).as_posix()}: {why}" for path, why in found.refused]
    for path in found.files:
        relative = path.relative_to(folder).as_posix()
        student = student_of(relative, pattern)
        why = "no student name in its path (see --student-pattern)" if student is None \
            else bad_name(student)
        if why is not None:
            ignored.append(f"{relative}: the student name {why}" if student else
                           f"{relative}: {why}")
            continue
        try:
            data = submissions.read_bytes(path)
        except OSError as exc:
            ignored.append(f"{relative}: cannot be read ({exc.strerror or exc})")
            continue
        files.setdefault(str(student), []).append(
            (path, relative, hashlib.sha256(data).hexdigest()))
    jobs = [Job(tuple(p for p, _, _ in own), tuple(r for _, r, _ in own), student,
                tuple(h for _, _, h in own)) for student, own in files.items()]
    return jobs, ignored


def jobs_of(handed: Sequence[Handed], root: Path) -> tuple[list[Job], list[str]]:
    """A platform's students' work as jobs, each file hashed now; a student whose key cannot
    name a folder of results, or a file that cannot be read, is passed over with why."""
    jobs, ignored = [], []
    for one in handed:
        why = bad_name(one.student)
        if why is not None:
            ignored.append(f"{text.one_line(one.student)}: the student name {why}")
            continue
        hashes = []
        for path in one.files:
            try:
                hashes.append(hashlib.sha256(submissions.read_bytes(path)).hexdigest())
            except OSError as exc:
                ignored.append(f"{path.relative_to(root).as_posix()}: cannot be read "
                               f"({exc.strerror or exc})")
                break
        else:
            jobs.append(Job(one.files, one.names, one.student, tuple(hashes), one.submitted_at,
                            one.display_name, tuple(sorted(one.ids.items()))))
    return jobs, ignored


def source_folder(source: Path, out: Path) -> tuple[Path, list[str]]:
    """The folder to grade: `source` itself, or the zip `source` unpacked under
    `out/submissions/`, with the members passed over."""
    if source.is_symlink() or not source.is_file():
        return source, []
    if not zipfile.is_zipfile(source):
        raise UsageError(f"{source}: neither a folder nor a zip archive; name the folder of "
                         "submissions, or the .zip the platform's download gave you")
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", source.stem).lstrip(".") or "download"
    unpacked = archives.unpack(source, out / "submissions" / stem)
    return unpacked.folder, list(unpacked.passed_over)


def gather(source: Path, out: Path, pattern: re.Pattern[str] | None,
           platform: str | None, roster: Mapping[str, str] | None = None
           ) -> tuple[list[Job], list[str], str]:
    """Every student's job in a folder or zip, what was passed over, and the layout read."""
    folder, ignored = source_folder(source, out)
    jobs, more, platform = read_folder(folder, pattern, platform, roster)
    return jobs, ignored + more, platform


def read_folder(folder: Path, pattern: re.Pattern[str] | None, platform: str | None,
                roster: Mapping[str, str] | None = None) -> tuple[list[Job], list[str], str]:
    """Every student's job in a folder (unpacked already), what was passed over, and the
    layout read: the one way a class's files are found (the comparison of similar
    submissions finds them again with it)."""
    if pattern is not None and platform not in (None, "folder"):
        raise UsageError(f"--student-pattern reads a plain folder; it cannot be used with "
                         f"--from {platform}, which names the students itself")
    if not folder.is_dir() or folder.is_symlink():
        submissions.in_folder(folder)  # the one error for a folder that is not there
    if platform is None:
        platform = "folder" if pattern is not None else recognise.recognise(folder)[0]
    if platform == "folder":
        jobs, ignored = find(folder, pattern)
        return jobs, ignored, platform
    read = recognise.read(folder, cast(recognise.Platform, platform), roster)
    jobs, more = jobs_of(read.handed, folder)
    return jobs, [*read.passed_over, *more], platform
