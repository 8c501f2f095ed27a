"""Grading a whole class: find the submissions, name the students, grade in parallel.

The submissions are a folder or a zip (unpacked safely under `OUT/submissions/`, see
`grader.classwork.ingest.archives`). A platform's download (Canvas, Moodle, Gradescope, a
folder of Git repositories) is recognised, or named with `platform`, and read by
`grader.classwork.ingest`: the student is the platform's user id and the time the platform's.
In a plain folder, student names come from the path of each file relative to the submissions folder:
- a file inside a folder belongs to that folder's student: `alice/notebook.ipynb` -> alice;
- a file directly in the submissions folder belongs to the part of its name before the first
  underscore or dot: `bob_attention.ipynb` -> bob (the layout of most LMS downloads);
- `--student-pattern REGEX` replaces both: a regular expression with a group named `student`,
  searched in the relative path (for example `^(?P<student>[a-z]+\\d+)-`).

Every result is recorded in the gradebook as soon as it is ready; a file already graded with
the same hash is skipped unless `force` is set. A submission graded again is compared with
what was recorded before it is overwritten (`grader.classwork.regrade`): the changes are in
the summary and in OUT/regrade-<timestamp>.json.

Where the submissions are graded is a `Pool`: threads of this process (`Threads`), or a Dask
cluster (`grader.classwork.distributed`). Finding, recording, resuming and reporting are the same.
"""

from __future__ import annotations

import hashlib
import re
import sys
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO, cast

from grader import result_json, text
from grader.classwork import identities, origins, regrade
from grader.classwork.gradebook import Gradebook
from grader.classwork.ingest import archives, recognise
from grader.classwork.ingest.handed import Handed
from grader.classwork.jobs import Graded, Job, Pool, grade_job
from grader.errors import UsageError
from grader.model import Assignment
from grader.pipeline import grading, submissions
from grader.report.files import report_path
from grader.results import Result, ResultStatus
from grader.sandbox import isolation
from grader.sandbox.limits import Limits
from grader.sandbox.zygote import Zygotes

CHECK_EVERY_S = 5.0
"""While no result comes, the pool is asked this often whether it can still grade."""

@dataclass(frozen=True)
class Summary:
    """What a batch did."""

    graded: int
    """Students' submissions graded in this run (a student's files are one submission)."""
    skipped: int
    """Submissions already in the gradebook with the same hashes."""
    errors: int
    """Submissions that could not be graded (status "error")."""
    ignored: tuple[str, ...]
    """Files passed over, each as "path: why" (a link, no or a bad student name)."""
    seconds: float
    """Wall time of the run."""
    platform: str = "folder"
    """Whose layout the submissions were read in (`grader.classwork.ingest.recognise`)."""
    regraded: tuple[str, ...] = ()
    """What grading again changed, as `regrade.summary` lines; empty when nothing recorded
    was graded again."""


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


def write_outputs(out: Path, job: Job, graded: Graded, feedback: Limits | None = None) -> None:
    """The JSON result and the HTML and Markdown reports of one submission; with `feedback`
    (the limits it was graded under), each notebook's feedback page beside them,
    `<notebook>.feedback.html` (a module has none: its feedback is the HTML report)."""
    folder = out / "results" / job.student
    folder.mkdir(parents=True, exist_ok=True)
    for suffix, content in ((".json", result_json.render(graded.result)),
                            (".html", graded.html), (".md", graded.markdown)):
        report_path(folder, graded.result, suffix).write_text(content, encoding="utf-8")
    if feedback is None:
        return
    from grader.classwork import feedback_files  # nbconvert: only when asked for

    combined = bool(graded.result.files)
    for path, name in zip(job.paths, job.names, strict=True):
        target = folder / f"{Path(name).stem}{feedback_files.SUFFIX}"
        page, _ = feedback_files.content(graded.result, path, name if combined else "",
                                         target, feedback)
        if page is not None:
            target.write_text(page, encoding="utf-8")


class Threads:
    """`jobs` threads of this process, sharing the command's zygotes (or their own)."""

    label = "grading"

    def __init__(self, jobs: int, assignment: Assignment, options: grading.Options) -> None:
        self.jobs, self.assignment, self.options = max(1, jobs), assignment, options
        self._stack = ExitStack()

    def __enter__(self) -> Threads:
        self._stored = grading.ready(self.assignment, self.options)
        with ExitStack() as stack:
            if self.options.zygotes is None:
                zygotes = stack.enter_context(Zygotes())
                self.options = replace(self.options, zygotes=zygotes)
            self._pool = stack.enter_context(ThreadPoolExecutor(max_workers=self.jobs))
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def width(self) -> int:
        """The number of threads."""
        return self.jobs

    def submit(self, job: Job) -> Future[Graded]:
        """Grade it in a thread."""
        return self._pool.submit(grade_job, job, self.assignment, self.options, self._stored)

    def check(self) -> None:
        """Threads of this process always grade on."""


def run(folder: Path, assignment: Assignment, out: Path, jobs: int,
        options: grading.Options, force: bool = False, pattern: re.Pattern[str] | None = None,
        progress: TextIO | None = None, dask: str | None = None,
        feedback: bool = False, platform: str | None = None,
        roster: Mapping[str, str] | None = None) -> Summary:
    """Grade every submission in `folder` (a folder or a zip, read as `platform`'s layout or
    as the one recognised) that the gradebook in `out` does not have yet, `jobs` at a time
    here, or on the Dask cluster at `dask` (an address, or local:N); with `feedback`, each
    notebook's feedback page too (`write_outputs`). `roster` maps a Git repository's name to
    its student."""
    started = time.monotonic()
    options = replace(options, closed=(
        *options.closed,
        isolation.Closed(str(folder.resolve()), "the folder of the submissions"),
        isolation.Closed(str(out.resolve()), "the batch's output folder, with the gradebook "
                         "and every student's reports")))
    pool: Pool
    if dask is None:
        pool = Threads(jobs, assignment, options)
    else:
        import grader.classwork.distributed  # Dask is an optional extra

        pool = grader.classwork.distributed.Cluster(dask, assignment, options)
    with pool:  # an instructor's mistake stops it here
        if not out.exists() and not isolation.offered().namespaces:
            out.mkdir(mode=0o700, parents=True)  # the students' reports: root's eyes only
        where, ignored = source_folder(folder, out)
        found, more, platform = read_folder(where, pattern, platform, roster)
        book = Gradebook(out)
        origins.remember(book, assignment.name, origins.Origin(
            where.resolve(), platform, pattern.pattern if pattern else None, dict(roster or {})))
        identities.identify(book, assignment.name, [(job.student, job.display_name,
                                                    dict(job.ids)) for job in found if job.ids])
        known = {} if force else book.known_hashes(assignment.name)
        todo = [job for job in found if known.get((job.student, job.relative)) != job.sha256]
        report = _progress(progress or sys.stderr, len(todo), pool.label)
        wanted = {(job.student, job.relative) for job in todo}
        before = {(row.student, row.submission): stored
                  for row, stored in book.recorded(assignment.name)
                  if (row.student, row.submission) in wanted}
        changes: list[regrade.Change] = []
        errors = _grade_all(pool, todo, out, book, report,
                            options.limits if feedback else None, before, changes)
    changes.sort(key=lambda change: (change.student, change.submission))
    saved = regrade.save(out, assignment.name, changes, len(before)) if before else None
    return Summary(len(todo), len(found) - len(todo), errors, (*ignored, *more),
                   time.monotonic() - started, platform,
                   tuple(regrade.summary(changes, len(before), saved)))


def _grade_all(pool: Pool, todo: Sequence[Job], out: Path, book: Gradebook,
               report: Callable[[Job, Result], None], feedback: Limits | None = None,
               before: dict[tuple[str, str], dict[str, Any]] | None = None,
               changes: list[regrade.Change] | None = None) -> int:
    """Grade `todo` in `pool`, writing and recording each result as it comes; the number of
    errors. Each result that replaces one in `before` is compared with it first, and what
    changed goes in `changes`. No more are handed to the pool than it grades at once, so
    that a Dask worker that dies takes with it only the submissions it was grading."""
    waiting = iter(todo)
    pending: dict[Future[Graded], Job] = {}

    def hand_out() -> None:
        while len(pending) < pool.width() and (job := next(waiting, None)):
            pending[pool.submit(job)] = job

    errors = 0
    with book.recorder() as record:
        try:
            hand_out()
            while pending:
                done, _ = wait(pending, timeout=CHECK_EVERY_S, return_when=FIRST_COMPLETED)
                if not done:
                    pool.check()
                    continue
                finished = [(pending.pop(future), future.result()) for future in done]
                hand_out()  # before writing, so that the pool is never idle meanwhile
                # Reports first: a result in the gradebook always has its reports.
                for job, graded in finished:
                    write_outputs(out, job, graded, feedback)
                    old = (before or {}).get((job.student, job.relative))
                    change = None if old is None else regrade.compare(
                        job.student, job.relative, old,
                        result_json.to_dict(graded.result, instructor=True))
                    if change is not None and changes is not None:
                        changes.append(change)
                record([(job.student, job.relative, graded.result, job.submitted_at)
                        for job, graded in finished])
                for job, graded in finished:
                    errors += graded.result.status is ResultStatus.ERROR
                    report(job, graded.result)
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return errors


def _progress(stream: TextIO, total: int, label: str = "grading"
              ) -> Callable[[Job, Result], None]:
    """A progress report: a rich bar on a terminal, one plain line per submission otherwise."""
    started, done = time.monotonic(), [0]
    if hasattr(stream, "isatty") and stream.isatty():
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        bar = Progress(TextColumn(text.one_line(label)), BarColumn(), MofNCompleteColumn(),
                       TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                       console=Console(file=stream), transient=False)
        task = bar.add_task(label, total=total, rate="")
        bar.start()

        def update(job: Job, result: Result) -> None:
            done[0] += 1
            rate = done[0] / max(time.monotonic() - started, 1e-9)
            bar.update(task, advance=1, rate=f"{rate:.1f}/s")
            if done[0] == total:
                bar.stop()

        return update

    def line(job: Job, result: Result) -> None:
        done[0] += 1
        elapsed = max(time.monotonic() - started, 1e-9)
        rate = done[0] / elapsed
        left = (total - done[0]) / rate
        outcome = (f"{result.score:g}/{result.max_score:g}" if result.status is ResultStatus.GRADED
                   else "could not be graded")
        # The name and path come from the submissions folder: one clean line each.
        stream.write(f"[{done[0]}/{total}] {text.one_line(job.student)} "
                     f"({text.one_line(job.relative)}): {outcome}; "
                     f"{rate:.2f}/s, about {left:.0f} s left\n")
        stream.flush()

    return line
