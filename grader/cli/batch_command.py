"""`grade batch`: a folder or a platform's download graded into a gradebook."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from grader import text
from grader.batch import times
from grader.cli import gradebook_commands
from grader.cli.grade_commands import options
from grader.course import registry
from grader.term import policy


def read_times(args: argparse.Namespace) -> times.Times | None:
    """The --times file, read, or None."""
    if not getattr(args, "times", None):
        return None
    return times.read(Path(args.times), policy.parse_zone(getattr(args, "timezone", None)))


def cmd_batch(args: argparse.Namespace, out: TextIO) -> int:
    """`grade batch`: a folder or zip of submissions into a gradebook; exit 1 when one could not be
    graded."""
    from grader import gradebook  # sqlite: a batch only
    from grader.batch import batch, finding
    from grader.gradebook import identities

    assignment = registry.get(args.assignment)
    found = gradebook_commands.read_roster(args)  # a bad roster stops it before any grading
    given = read_times(args)  # and so do bad times
    summary = batch.run(Path(args.folder), assignment, Path(args.out), args.jobs,
                        options(args, public_only=False), force=args.force,
                        pattern=finding.compile_pattern(args.student_pattern), dask=args.dask,
                        feedback=args.feedback, platform=args.platform, given=given)
    if summary.platform != "folder":
        out.write(f"read {args.folder} as a {summary.platform} download\n")
    for line in summary.ignored:
        out.write(f"ignored {text.visible(line)}\n")
    for line in (*summary.timed, *summary.regraded):
        out.write(f"{text.visible(line)}\n")
    out.write(f"graded {summary.graded}, skipped {summary.skipped} already in the gradebook, "
              f"{summary.errors} could not be graded, in {summary.seconds:.1f} s; "
              f"gradebook: {Path(args.out) / gradebook.FILENAME}\n")
    if found is not None:
        book = gradebook.Gradebook(Path(args.out))
        keys = sorted({row.student for row in book.rows(assignment.name)})
        matched = found.match(keys, identities.aliases(book, assignment.name))
        for name in matched.strangers:
            args.err.write(f"grade: not on the roster {args.roster}: {text.visible(name)}\n")
        for doubt in matched.ambiguous:
            args.err.write(f"grade: ambiguous: {text.visible(doubt.line(found.path))}\n")
        handed = len({student.key for student in matched.students.values()})
        doubtful = len({s.key for doubt in matched.ambiguous for s in doubt.students})
        out.write(f"roster: {handed} of {len(found.students)} students handed in, "
                  f"{len(found.students) - handed - doubtful} missing, "
                  f"{len(matched.strangers)} not on the roster"
                  + (f", {doubtful} ambiguous" if doubtful else "") + "\n")
    return 1 if summary.errors else 0
