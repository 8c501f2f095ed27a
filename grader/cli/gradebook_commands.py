"""The `grade gradebook` commands, on what a batch recorded: `export` (the grades, with the
roster, the time policy and the overrides applied), `override` and `log` (grades given by
hand), `report` (what the class got wrong) and `similar` (pairs of students ranked by the
code they share)."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import getpass
import math
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from grader import gradebook, text
from grader.cli.output import write
from grader.errors import UsageError
from grader.gradebook import identities, origins
from grader.term import grades, overrides, policy, roster
from grader.term.exports import files as exports

if TYPE_CHECKING:
    from grader import similarity


def read_roster(args: argparse.Namespace) -> roster.Roster | None:
    """The --roster, read, or None."""
    if not getattr(args, "roster", None):
        return None
    return roster.read(Path(args.roster), policy.parse_zone(getattr(args, "timezone", None)))


def sheet(args: argparse.Namespace, book: gradebook.Gradebook,
          assignment: str | None) -> grades.Sheet:
    """The grade sheet with the command's roster, time policy and the gradebook's overrides;
    the submissions of students not on the roster are named on stderr."""
    zone = policy.parse_zone(args.timezone)
    due = policy.parse_time(args.due, zone, "--due") if args.due else None
    hard = policy.parse_time(args.hard_deadline, zone, "--hard-deadline") \
        if args.hard_deadline else None
    late = policy.parse_late(args.late) if args.late else None
    if (late or hard) and due is None:
        raise UsageError("--late and --hard-deadline need --due, the deadline they count from")
    extra = roster.extensions(Path(args.extensions), zone) if args.extensions else None
    found = grades.compute(book.recorded(assignment), read_roster(args),
                           policy.Policy(due, late, hard), extra, overrides.log(book),
                           assignment, identities.aliases(book, assignment),
                           identities.marked_late(book, assignment))
    for name in found.strangers:
        args.err.write(f"grade: not on the roster {args.roster}: {text.visible(name)} "
                       "(listed under the name of their submission)\n")
    for doubt in found.ambiguous:
        args.err.write(f"grade: ambiguous: {text.visible(doubt.line(Path(args.roster)))}\n")
    return found


def cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    """`grade gradebook export`: the grade table, as CSV for a spreadsheet or an LMS."""
    book = gradebook.existing(Path(args.out))
    columns = {}
    for item in args.column:
        name, _, title = item.partition("=")
        if not title:
            raise UsageError(f"--column {item!r}: write ASSIGNMENT=TITLE, for example "
                             "'udl_attention=Self-attention (1234)'")
        columns[name] = title
    found = sheet(args, book, args.assignment)
    if args.dry_run:
        for line in exports.dry_run(Path(args.out), args.format, found):
            out.write(text.one_line(line) + "\n")
        return 0
    hashes = {(row.student, row.assignment): (row.sha256, row.graded_at)
              for row in gradebook.best(book.rows(args.assignment)).values()}
    table = exports.render(found, args.format, columns, args.comments, hashes)
    pages = exports.write_pages(Path(args.out), found)
    if args.output:
        write(args.output, table)
        out.write(f"wrote {args.output}: {len(found.grades)} grades; each graded student's "
                  f"in {Path(args.out) / 'results'}/<student>/"
                  f"{exports.GRADE_PAGE.format(assignment='<assignment>')} ({pages})\n")
    else:
        out.write(table)
    exports.remember(Path(args.out), args.format, found)
    return 0


def cmd_override(args: argparse.Namespace, out: TextIO) -> int:
    """`grade gradebook override`: record a grade given by hand, or clear one."""
    if not (args.reason or "").strip():
        raise UsageError("--reason is required: say why, for the log (for example "
                         "--reason 'regrade request: case 3 accepted')")
    book = gradebook.existing(Path(args.out))
    recorded = book.recorded()
    assignment = _assignment(args, {row.assignment for row, _ in recorded}, book)
    mine = [(row, stored) for row, stored in recorded if row.assignment == assignment]
    wanted = 2 if args.clear else 3
    if not wanted - 1 <= len(args.target) <= wanted:
        raise UsageError("write STUDENT [EXERCISE] POINTS" if not args.clear else
                         "with --clear, write STUDENT [EXERCISE]")
    points: float | None = None
    if not args.clear:
        try:
            points = float(args.target[-1])
        except ValueError:
            points = math.nan
        if not math.isfinite(points) or points < 0:
            raise UsageError(f"points {args.target[-1]!r}: give a number of points, 0 or more")
    student = _student(args.target[0], mine, read_roster(args), book)
    exercise = args.target[1] if len(args.target) == wanted else ""
    chosen = gradebook.best_of(row for row, _ in mine if row.student == student)
    row_stored = next(((r, s) for r, s in mine if r is chosen), None)
    maximum, raw = _points(exercise, row_stored, mine, assignment)
    if points is not None and points > maximum:
        raise UsageError(f"{text.points(points)} points is more than the {text.points(maximum)} "
                         f"{'exercise ' + exercise if exercise else assignment} is worth; "
                         f"give at most {text.points(maximum)}")
    key = (student.lower(), assignment, exercise)
    current = overrides.in_force(overrides.log(book)).get(key)
    if args.clear and current is None:
        raise UsageError(f"{student} has no override of "
                         f"{exercise or assignment} to clear (see grade gradebook log)")
    old = f"{text.points(current.points)} (override)" if current and current.points is not None \
        else ("missing" if raw is None else f"{text.points(raw)}")
    entry = overrides.Entry(overrides.now(), args.by or getpass.getuser(), student,
                            assignment, exercise, points, old, text.one_line(args.reason))
    overrides.add(book, entry)
    out.write(f"recorded: {text.one_line(entry.line())}\n")
    return 0


def cmd_log(args: argparse.Namespace, out: TextIO) -> int:
    """`grade gradebook log`: every override and clear, in order."""
    book = gradebook.existing(Path(args.out))
    entries = overrides.log(book)
    for entry in entries:
        out.write(text.one_line(entry.line()) + "\n")
    if not entries:
        out.write(f"no overrides in {book.path}\n")
    return 0


def _assignment(args: argparse.Namespace, names: set[str], book: gradebook.Gradebook) -> str:
    if args.assignment:
        if args.assignment not in names:
            raise UsageError(f"{book.path} has no results of {args.assignment!r}; it holds "
                             f"{', '.join(sorted(names)) or 'none'}")
        return str(args.assignment)
    if len(names) != 1:
        raise UsageError(f"{book.path} holds {', '.join(sorted(names)) or 'no results'}: "
                         "pass --assignment NAME")
    return next(iter(names))


def _student(name: str, mine: list[gradebook.Recorded],
             found: roster.Roster | None, book: gradebook.Gradebook) -> str:
    """The student as the gradebook (or, with no submission, the roster) names them."""
    keys = sorted({row.student for row, _ in mine})
    lower = {key.lower(): key for key in keys}
    if name.lower() in lower:
        return lower[name.lower()]
    if found is not None:
        wanted = found.match([name]).students.get(name)
        if wanted is not None:
            for key, row in found.match(keys, identities.aliases(book)).students.items():
                if row == wanted:
                    return key
            return wanted.key
    known = keys + ([s.key for s in found.students] if found else [])
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
    raise UsageError(f"{book.path}: no student {name!r}" + (
        f"; did you mean {', '.join(close)}?" if close else
        "; `grade gradebook export` lists them") + ("" if found else
                                                      " (pass --roster for roster ids)"))


def _points(exercise: str, chosen: gradebook.Recorded | None,
            mine: list[gradebook.Recorded],
            assignment: str) -> tuple[float, float | None]:
    """What the exercise (or assignment) is worth, and what the student has now."""
    if not exercise:
        maximum = max((row.max_score for row, _ in mine), default=0.0)
        return maximum, chosen[0].score if chosen else None
    exercises = {ex.name: ex for _, stored in mine for ex in stored.exercises}
    if exercise not in exercises:
        close = difflib.get_close_matches(exercise, list(exercises), n=5, cutoff=0.4)
        raise UsageError(f"{assignment} has no exercise {exercise!r}; its exercises: "
                         f"{', '.join(sorted(exercises))}" +
                         (f" (did you mean {', '.join(close)}?)" if close else ""))
    own = {ex.name: ex for ex in (chosen[1].exercises if chosen else ())}
    return exercises[exercise].max_score, own[exercise].score if exercise in own else None


def grades_markdown(found: grades.Sheet) -> str:
    """The grade sheet as a Markdown section for `grade gradebook report`."""
    lines = ["", "## Grades", "", "| Student | Assignment | Status | Raw | Penalty | Final | "
             "How |", "|---|---|---|---|---|---|---|"]
    for grade in found.grades:
        how = "; ".join(part for part in (grade.lateness.explanation, *grade.notes) if part)
        final = f"{text.points(grade.final)}/{text.points(grade.max_score)}"
        cells = [grade.student, grade.assignment, grade.status, text.points(grade.raw),
                 text.points(grade.penalty), final, how]
        lines.append("| " + " | ".join(text.one_line(c).replace("|", "\\|") for c in cells)
                     + " |")
    if found.strangers:
        lines += ["", "Not on the roster: " + ", ".join(text.one_line(s)
                                                       for s in found.strangers)]
    for doubt in found.ambiguous:
        rows = ", ".join(f"line {s.line} ({s.name})" for s in doubt.students)
        lines += ["", text.one_line(f"Ambiguous, given to no one: {', '.join(doubt.keys)} "
                                    f"and {rows}")]
    return "\n".join(lines) + "\n"


def cmd_class_report(args: argparse.Namespace, out: TextIO) -> int:
    """`grade gradebook report`: what the class got wrong, for the instructor."""
    from grader.classreport import page, stats

    recorded = gradebook.existing(Path(args.out)).recorded(args.assignment)
    names = sorted({row.assignment for row, _ in recorded})
    if len(names) > 1:
        raise UsageError(f"{Path(args.out) / gradebook.FILENAME} holds {', '.join(names)}: "
                         "pass --assignment NAME for one of them")
    report = stats.build(args.assignment or (names[0] if names else ""), recorded)
    if args.submissions:
        report = dataclasses.replace(report, similarity=_similarity(args))
    elif names:
        try:  # where the batch read them; a report without it is still a report
            report = dataclasses.replace(report, similarity=_similarity(args))
        except UsageError as exc:
            args.err.write(f"grade: the report has no side-by-side comparison of similar "
                           f"submissions: {text.visible(str(exc))}\n")
    targets = ((args.html, page.html), (args.md, page.markdown),
               (args.json, page.render_json))
    for target, render in targets:
        if target:
            write(target, render(report))
    if not any(target for target, _ in targets):
        out.write(page.markdown(report))
    if any(getattr(args, flag) for flag in ("roster", "due", "late", "extensions")):
        found = sheet(args, gradebook.existing(Path(args.out)), args.assignment)
        table = grades_markdown(found)
        if args.md:
            with open(args.md, "a", encoding="utf-8") as stream:
                stream.write(table)
        if not any(target for target, _ in targets):
            out.write(table)
    return 0


def cmd_similar(args: argparse.Namespace, out: TextIO) -> int:
    """`grade gradebook similar`: pairs of students ranked by the rare code they share."""
    import json

    from grader.similarity import shown

    ranking = _similarity(args)
    if args.json:
        write(args.json, json.dumps(shown.to_dict(ranking), indent=2))
    out.write(shown.terminal(ranking, args.top))
    return 0


def _similarity(args: argparse.Namespace) -> similarity.Ranking:
    """The ranking that `--submissions` (or where the batch recorded it read them),
    `--stubs` and `--threshold` ask for."""
    from grader import similarity
    from grader.course.layout import Layout

    if not 0 < args.threshold <= 1:
        raise UsageError(f"--threshold {args.threshold:g}: give a score between 0 and 1, "
                         f"for example {similarity.THRESHOLD:g}")
    book = gradebook.existing(Path(args.out))
    rows = book.rows(args.assignment)
    names = sorted({row.assignment for row in rows})
    if len(names) > 1:
        raise UsageError(f"{book.path} holds {', '.join(names)}: pass --assignment NAME for "
                         "one of them")
    if not names:
        raise UsageError(f"{book.path}: no result to compare; run `grade batch` first")
    stubs = Path(args.stubs) if args.stubs else Layout.current().exercises
    return similarity.of_batch(names[0], rows, _origin(args, book, names[0]), stubs,
                               args.threshold)


def _origin(args: argparse.Namespace, book: gradebook.Gradebook, assignment: str
            ) -> origins.Origin:
    """Where to find the students' files: `--submissions` (a folder, or a zip unpacked as
    the batch unpacks it), read in the layout the batch recorded; else the folder the batch
    recorded."""
    from grader.batch import finding

    recorded = origins.recalled(book, assignment)
    if args.submissions:
        folder, _ = finding.source_folder(Path(args.submissions), Path(args.out))
        if recorded is None:
            return origins.Origin(folder, None)
        return dataclasses.replace(recorded, folder=folder)
    if recorded is None:
        raise UsageError(f"{book.path}: no batch recorded where the submissions of "
                         f"{assignment} are (it was graded before grade batch kept that); "
                         "pass --submissions with the folder that grade batch graded")
    return recorded
