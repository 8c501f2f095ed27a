"""The arguments of the class's commands that several of them share: the roster, the time
policy, the submission times, the similarity options, and `grade gradebook override` and
`log` (`parser` builds the commands)."""

from __future__ import annotations

import argparse
from typing import Any

SIMILAR_THRESHOLD = 0.5
"""`grade gradebook similar --threshold`'s default: `similarity.THRESHOLD` (a test keeps them
equal), named here so that parsing imports no comparison."""


def add_similarity(command: argparse.ArgumentParser) -> None:
    """The options that compare the code of a batch's students (`grade gradebook similar`,
    and `report` for its similar-submissions section)."""
    command.add_argument("--submissions", metavar="SUBMISSIONS_DIR",
                         help="the folder (or zip) that grade batch graded (default: the one "
                         "it recorded in the gradebook)")
    command.add_argument("--stubs", metavar="DIR", help="the folder of what students received, "
                         "subtracted first (default: the course's exercises/)")
    command.add_argument("--threshold", type=float, default=SIMILAR_THRESHOLD, metavar="X",
                         help="the score, 0 to 1, that flags a pair "
                         f"(default: {SIMILAR_THRESHOLD:g})")


def add_roster(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--roster", metavar="CSV",
                        help="the class roster as Canvas or Moodle exports it: students "
                        "without a submission are listed as missing, submissions of "
                        "students not on it are named")


def add_term(parser: argparse.ArgumentParser) -> None:
    """The roster and the time policy, applied at every export and report."""
    add_roster(parser)
    parser.add_argument("--due", metavar="WHEN", help="the deadline, ISO 8601 with its "
                        "offset (2026-03-01T23:59:00-05:00), or local to --timezone")
    parser.add_argument("--timezone", metavar="ZONE", help="IANA time zone of dates written "
                        "without an offset (America/New_York)")
    parser.add_argument("--late", metavar="POLICY", help="late penalty, a percentage of the "
                        "points earned per hour or day started: '10%%/day,cap=50%%,grace=15m'")
    parser.add_argument("--hard-deadline", metavar="WHEN", help="no credit after this")
    parser.add_argument("--extensions", metavar="CSV", help="per-student deadlines, lines "
                        "of student,due (a roster's extension column does the same)")


def add_override_commands(book_commands: Any) -> None:
    """`grade gradebook override` and `grade gradebook log`."""
    override = book_commands.add_parser("override", help="set a student's grade (or one "
                                        "exercise's points) by hand, with a reason")
    override.add_argument("target", nargs="+", metavar="STUDENT [EXERCISE] POINTS",
                          help="with --clear, STUDENT [EXERCISE]")
    override.add_argument("--reason", help="why (required; kept in the log)")
    override.add_argument("--clear", action="store_true", help="remove the override")
    override.add_argument("--by", help="who (default: the user running grade)")
    add_gradebook(override)
    add_roster(override)
    override.set_defaults(handler="gradebook_commands:cmd_override")
    log = book_commands.add_parser("log", help="every override and clear, in order")
    add_gradebook(log, assignment=False)
    log.set_defaults(handler="gradebook_commands:cmd_log")


def add_times(parser: argparse.ArgumentParser) -> None:
    """`grade batch --times`: submission times for downloads that carry none."""
    parser.add_argument("--times", metavar="CSV", help="submission times, for Canvas and "
                        "Moodle downloads that carry none: Moodle's grading worksheet "
                        "(needs --timezone), or lines of student,submitted_at (ISO 8601); "
                        "they replace the download's times")
    parser.add_argument("--timezone", metavar="ZONE", help="IANA time zone of the times "
                        "and roster dates written without an offset (America/New_York)")


def add_gradebook(parser: argparse.ArgumentParser, assignment: bool = True) -> None:
    """`--out`, the folder of the batch's gradebook, and `--assignment`, which of its
    assignments: the `grade gradebook` commands' own."""
    parser.add_argument("--out", default=".", metavar="OUT_DIR",
                        help="the folder given to grade batch --out (default: here)")
    if assignment:
        parser.add_argument("--assignment",
                            help="the assignment, when the gradebook holds several")
