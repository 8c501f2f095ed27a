"""The grade sheet written out: plain CSV, Canvas's gradebook import, or Moodle's.

`csv` keeps the parts of each grade apart (raw score, submission time, deadline, lateness,
penalty, final grade, notes); `canvas` and `moodle` carry the final grade under the roster's
ids (Canvas: ID, SIS User ID, SIS Login ID; Moodle: ID number and email). Without a roster,
the student's key goes where Canvas matches it last (SIS Login ID) and in Moodle's ID number.
Each export remembers its grades in OUT/exports/<format>.json, against which a dry run says
what would change.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from grader import text
from grader.errors import UsageError
from grader.gradebook.store import FORMATS
from grader.term import policy
from grader.term.grades import Grade, Sheet

CSV_COLUMNS = ("student", "assignment", "score", "max_score", "status", "submission",
               "sha256", "graded_at", "submitted_at", "deadline", "late_by_s",
               "penalty_percent", "penalty", "final", "on_roster", "explanation", "note")
"""`csv`: the first eight as before submission times; `score` is the score as graded (an
exercise's override shows in `final` and `note`)."""


def render(sheet: Sheet, fmt: str, columns: dict[str, str] | None = None,
           comments: bool = False, hashes: dict[tuple[str, str], tuple[str, str]] | None = None
           ) -> str:
    """The sheet as CSV in `fmt`; `columns` titles the assignments' columns, `comments` adds
    a column with each student's one-line summary, `hashes` gives (sha256, graded_at) of each
    (student, assignment) for `csv`."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")

    def write(cells: Sequence[str]) -> None:
        # Student names and paths come from submissions: no spreadsheet may run one.
        writer.writerow([text.csv_cell(cell) for cell in cells])

    strangers = {name for name in sheet.strangers}
    if fmt == "csv":
        write([*CSV_COLUMNS, *(["comment"] if comments else [])])
        for grade in sheet.grades:
            sha, graded_at = (hashes or {}).get((grade.student, grade.assignment), ("", ""))
            late = grade.lateness
            graded = grade.raw if grade.graded is None else grade.graded
            write([grade.student, grade.assignment, _num(graded), _num(grade.max_score),
                   grade.status, grade.submission, sha, graded_at,
                   grade.submitted_at.isoformat() if grade.submitted_at else "",
                   late.deadline.isoformat() if late.deadline else "",
                   f"{late.late_by.total_seconds():.15g}", _num(late.percent),
                   _num(grade.penalty), _num(grade.final),
                   "" if not sheet.platform else
                   ("no" if grade.student in strangers else "yes"),
                   late.explanation, "; ".join(grade.notes),
                   *([grade.summary] if comments else [])])
        return out.getvalue()
    assignments = sorted(sheet.maxima)
    titles = [(columns or {}).get(a, a) for a in assignments]
    people: dict[str, list[Grade]] = {}
    for grade in sheet.grades:
        people.setdefault(grade.student, []).append(grade)
    comment = ["Comments"] if comments else []
    if fmt == "canvas":
        write(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *titles, *comment])
        write(["Points Possible", "", "", "", "", *(_num(sheet.maxima[a]) for a in assignments),
               *([""] if comments else [])])
        for key, mine in people.items():
            who = mine[0].roster
            ids = [who.name, who.canvas_id, who.sis_user_id, who.sis_login_id, who.section] \
                if who else [key, "", "", key, ""]
            write([*ids, *_cells(mine, assignments, comments)])
        return out.getvalue()
    email = ["Email address"] if sheet.platform else []
    write(["ID number", *email, *titles, *comment])
    for key, mine in people.items():
        who = mine[0].roster
        ids = [who.id_number or (key if not who.email else ""), who.email] if who else \
            [key, *([""] if email else [])]
        write([*ids, *_cells(mine, assignments, comments)])
    return out.getvalue()


def _cells(mine: Sequence[Grade], assignments: Sequence[str], comments: bool) -> list[str]:
    by = {grade.assignment: grade for grade in mine}
    cells = [_num(by[a].final) if a in by else "" for a in assignments]
    if comments:
        cells.append(" | ".join(f"{g.assignment}: {g.summary}" if len(assignments) > 1
                                else g.summary for g in mine))
    return cells


GRADE_PAGE = "{assignment}.grade.md"
"""Each student's final grade, beside their reports in OUT/results/<student>/."""


def grade_page(grade: Grade) -> str:
    """One student's final grade in Markdown: the raw score, the deadline that applied to
    them, how the penalty was computed, the overrides, and the final grade."""
    late = grade.lateness
    graded = grade.raw if grade.graded is None else grade.graded
    rows = [("Score as graded", _num(graded)),
            *([("With the exercise overrides", _num(grade.raw))] if grade.raw != graded
              else []),
            ("Late penalty", f"-{_num(grade.penalty)} ({_num(late.percent)}% of "
                             f"{_num(grade.raw)})" if late.percent else "none"),
            ("Final grade", f"{_num(grade.final)} / {_num(grade.max_score)}")]
    lines = [f"# {grade.assignment}: {_num(grade.final)} / {_num(grade.max_score)}", "",
             "| | Points |", "|---|---|",
             *(f"| {name} | {value} |" for name, value in rows), "",
             f"- Deadline: {policy.when(late.deadline) if late.deadline else 'none set'}"
             f"{' (your extension)' if late.extended else ''}",
             "- Submitted: " + (policy.when(grade.submitted_at) if grade.submitted_at
                                else "no time given")]
    if late.explanation:
        lines.append(f"- How the penalty was computed: {late.explanation}")
    lines += [f"- Changed by hand: {note}" for note in grade.notes]
    return "\n".join(text.one_line(line) for line in lines) + "\n"


def write_pages(out: Path, sheet: Sheet) -> int:
    """Each graded student's `GRADE_PAGE` in OUT/results/<student>/ (the folder the batch
    made; a student without a submission has none); how many were written."""
    written = 0
    for grade in sheet.grades:
        folder = Path(out) / "results" / grade.student
        if grade.status == "missing" or folder.is_symlink() or not folder.is_dir():
            continue
        (folder / GRADE_PAGE.format(assignment=grade.assignment)).write_text(
            grade_page(grade), encoding="utf-8")
        written += 1
    return written


def grades_of(sheet: Sheet) -> dict[str, float]:
    """"student<TAB>assignment" -> final grade: what an export remembers."""
    return {f"{g.student}\t{g.assignment}": g.final for g in sheet.grades}


def remember(out: Path, fmt: str, sheet: Sheet) -> None:
    """Keep this export's grades (merged into the last ones) for the next dry run."""
    path = _memory(out, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    known = _last(out, fmt)[1]
    known.update(grades_of(sheet))
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    path.write_text(json.dumps({"at": stamp, "grades": known}, indent=1, sort_keys=True),
                    encoding="utf-8")


def dry_run(out: Path, fmt: str, sheet: Sheet) -> list[str]:
    """What exporting now would change against the last `fmt` export, one line each."""
    at, known = _last(out, fmt)
    if not at:
        return [f"no {fmt} export yet: all {len(sheet.grades)} grades would be new"]
    now = grades_of(sheet)
    lines = []
    for key in sorted(set(known) | set(now)):
        student, assignment = key.split("\t")
        before, after = known.get(key), now.get(key)
        if before == after:
            continue
        if before is None:
            lines.append(f"{student} {assignment}: new, {_num(after or 0.0)}")
        elif after is None:
            lines.append(f"{student} {assignment}: not in this export (was {_num(before)})")
        else:
            lines.append(f"{student} {assignment}: {_num(before)} -> {_num(after)}")
    changed = len(lines)
    head = f"{changed} grade{'s' if changed != 1 else ''} would change against the {fmt} " \
           f"export of {at}" if changed else f"nothing would change against the {fmt} " \
           f"export of {at}"
    return [head, *lines]


def _memory(out: Path, fmt: str) -> Path:
    return Path(out) / "exports" / f"{fmt}.json"


def _last(out: Path, fmt: str) -> tuple[str, dict[str, float]]:
    path = _memory(out, fmt)
    if not path.is_file():
        return "", {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return str(data["at"]), {str(k): float(v) for k, v in data["grades"].items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise UsageError(f"{path}: not the record of an export; delete it (the next export "
                         "writes it again)") from None


def _num(value: float) -> str:
    """Points as the result JSON has them (`scoring.shown` rounded them already): 12.333333,
    never 12.3333, and 2 for 2.0."""
    return f"{value:.15g}"
