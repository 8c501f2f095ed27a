"""Grading a whole class: the submissions that `finding` finds, graded in parallel.

Every result is recorded in the gradebook as soon as it is ready; a file already graded with
the same hash is skipped unless `force` is set. A submission graded again is compared with
what was recorded before it is overwritten (`grader.batch.regrade`): the changes are in
the summary and in OUT/regrade-<timestamp>.json.

Where the submissions are graded is a `Pool`: processes forked from this one, one per job
(`grader.batch.processes`), or a Dask cluster (`grader.batch.distributed`). Finding, recording,
resuming and reporting are the same, here, in the batch's process.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from grader import result_json, text
from grader.batch import finding, regrade, times
from grader.batch.jobs import Graded, Job, Pool
from grader.batch.processes import Processes
from grader.gradebook import Gradebook, identities, origins
from grader.model import Assignment
from grader.pipeline import grading
from grader.report.files import report_path
from grader.results import Result, ResultStatus
from grader.sandbox import isolation
from grader.sandbox.limits import Limits

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
    """Whose layout the submissions were read in (`grader.ingest.recognise`)."""
    regraded: tuple[str, ...] = ()
    """What grading again changed, as `regrade.summary` lines; empty when nothing recorded
    was graded again."""
    timed: tuple[str, ...] = ()
    """What a times file gave: how many students got a time, and whom it names that the
    download does not have; empty without one."""


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
    from grader.batch import feedback_files  # nbconvert: only when asked for

    combined = bool(graded.result.files)
    for path, name in zip(job.paths, job.names, strict=True):
        target = folder / f"{Path(name).stem}{feedback_files.SUFFIX}"
        page, _ = feedback_files.content(graded.result, path, name if combined else "",
                                         target, feedback)
        if page is not None:
            target.write_text(page, encoding="utf-8")


def run(folder: Path, assignment: Assignment, out: Path, jobs: int,
        options: grading.Options, force: bool = False, pattern: re.Pattern[str] | None = None,
        progress: TextIO | None = None, dask: str | None = None,
        feedback: bool = False, platform: str | None = None,
        roster: Mapping[str, str] | None = None,
        given: times.Times | None = None) -> Summary:
    """Grade every submission in `folder` (a folder or a zip, read as `platform`'s layout or
    as the one recognised) that the gradebook in `out` does not have yet, `jobs` at a time
    in processes of this machine, or on the Dask cluster at `dask` (an address, or local:N);
    with `feedback`, each notebook's feedback page too (`write_outputs`). `roster` maps a Git
    repository's name to its student. `given` times replace the download's (and are set on
    recorded submissions without grading them again)."""
    started = time.monotonic()
    options = replace(options, closed=(
        *options.closed,
        isolation.Closed(str(folder.resolve()), "the folder of the submissions"),
        isolation.Closed(str(out.resolve()), "the batch's output folder, with the gradebook "
                         "and every student's reports")))
    pool: Pool
    if dask is None:
        pool = Processes(jobs, assignment, options)
    else:
        import grader.batch.distributed  # Dask is an optional extra

        pool = grader.batch.distributed.Cluster(dask, assignment, options)
    with pool:  # an instructor's mistake stops it here
        if not out.exists() and not isolation.offered().namespaces:
            out.mkdir(mode=0o700, parents=True)  # the students' reports: root's eyes only
        where, ignored = finding.source_folder(folder, out)
        found, more, platform = finding.read_folder(where, pattern, platform, roster)
        book = Gradebook(out)
        found, timed = times.given(found, given) if given else (found, [])
        if given:
            book.retime(assignment.name, [(job.student, job.relative, job.submitted_at)
                                          for job in found if job.submitted_at])
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
                   tuple(regrade.summary(changes, len(before), saved)), tuple(timed))


def _grade_all(pool: Pool, todo: Sequence[Job], out: Path, book: Gradebook,
               report: Callable[[Job, Result], None], feedback: Limits | None = None,
               before: dict[tuple[str, str], Result] | None = None,
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
                        job.student, job.relative, old, graded.result)
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
        stream.write(f"[{done[0]}/{total}] {text.visible(job.student)} "
                     f"({text.visible(job.relative)}): {outcome}; "
                     f"{rate:.2f}/s, about {left:.0f} s left\n")
        stream.flush()

    return line
