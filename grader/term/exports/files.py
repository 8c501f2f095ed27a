"""What an export writes: the grade table in a platform's dialect (`formats`), each graded
student's grade page beside their reports, and the export's memory, OUT/exports/<format>.json,
against which a dry run says what would change.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path

from grader import text
from grader.errors import UsageError
from grader.term import policy
from grader.term.exports.formats import DIALECTS, FORMATS
from grader.term.grades import AMBIGUOUS, Grade, Sheet


def render(sheet: Sheet, fmt: str, columns: dict[str, str] | None = None,
           comments: bool = False, hashes: dict[tuple[str, str], tuple[str, str]] | None = None
           ) -> str:
    """The sheet as CSV in `fmt`'s dialect; `columns` titles the assignments' columns,
    `comments` adds a column with each student's one-line summary, `hashes` gives (sha256,
    graded_at) of each (student, assignment) for plain CSV."""
    if fmt not in DIALECTS:
        raise UsageError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in DIALECTS[fmt].rows(sheet, columns or {}, comments, hashes or {}):
        # Student names and paths come from submissions: no spreadsheet may run one.
        writer.writerow([text.csv_cell(cell) for cell in row])
    return out.getvalue()


GRADE_PAGE = "{assignment}.grade.md"
"""Each student's final grade, beside their reports in OUT/results/<student>/."""


def grade_page(grade: Grade) -> str:
    """One student's final grade in Markdown: the raw score, the deadline that applied to
    them, how the penalty was computed, the overrides, and the final grade."""
    late = grade.lateness
    graded = grade.raw if grade.graded is None else grade.graded
    rows = [("Score as graded", text.points(graded)),
            *([("With the exercise overrides", text.points(grade.raw))] if grade.raw != graded
              else []),
            ("Late penalty", f"-{text.points(grade.penalty)} ({text.points(late.percent)}% of "
                             f"{text.points(grade.raw)})" if late.percent else "none"),
            ("Final grade", f"{text.points(grade.final)} / {text.points(grade.max_score)}")]
    title = f"{text.points(grade.final)} / {text.points(grade.max_score)}"
    lines = [f"# {grade.assignment}: {title}", "",
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
        if grade.status in ("missing", AMBIGUOUS) or folder.is_symlink() or not folder.is_dir():
            continue
        (folder / GRADE_PAGE.format(assignment=grade.assignment)).write_text(
            grade_page(grade), encoding="utf-8")
        written += 1
    return written


def grades_of(sheet: Sheet) -> dict[str, float]:
    """"student<TAB>assignment" -> final grade: what an export remembers."""
    return {f"{g.student}\t{g.assignment}": g.final for g in sheet.grades
            if g.status != AMBIGUOUS}


def remember(out: Path, fmt: str, sheet: Sheet) -> None:
    """Keep this export's grades (merged into the last ones) for the next dry run."""
    path = _memory(out, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    known = _last(out, fmt)[1]
    known.update(grades_of(sheet))
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
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
            lines.append(f"{student} {assignment}: new, {text.points(after or 0.0)}")
        elif after is None:
            lines.append(f"{student} {assignment}: not in this export (was {text.points(before)})")
        else:
            lines.append(f"{student} {assignment}: {text.points(before)} -> {text.points(after)}")
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
