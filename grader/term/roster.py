"""The class roster, as Canvas and Moodle export it, and which student a submission is.

Canvas's gradebook export starts `Student,ID,SIS User ID,SIS Login ID,Section` (a second
row may begin `Points Possible`); Moodle's starts `First name,Last name,ID number,...,
Email address`. The header says which. A gradebook's student key (a Canvas user id, a
Moodle participant id, an email, a folder's name) is matched to a roster row by its ids,
case-insensitively, and only then by its names. An id is compared with the roster's id
columns only and a name with its names only: a name a student chose (on GitHub, on
Gradescope) is never taken for another student's id. Two students are never merged: a key
that fits two rows, or a row that two keys fit, is reported (`Ambiguity`) and given to none.
An optional `extension` (or `due`) column gives that student's own deadline.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from grader.errors import UsageError
from grader.gradebook.identities import Known
from grader.term import policy

CANVAS = ("Student", "ID", "SIS User ID", "SIS Login ID")
MOODLE = ("First name", "Last name")
EXTENSION_COLUMNS = ("extension", "due")


@dataclass(frozen=True)
class Student:
    """One row of the roster."""

    name: str
    """As the platform shows it (Canvas: "Last, First"; Moodle: "First Last")."""
    line: int
    """Its line in the roster file."""
    canvas_id: str = ""
    """Canvas's user ID."""
    sis_user_id: str = ""
    """Canvas's SIS User ID."""
    sis_login_id: str = ""
    """Canvas's SIS Login ID."""
    section: str = ""
    """Canvas's section."""
    id_number: str = ""
    """Moodle's ID number."""
    email: str = ""
    """Moodle's email address."""
    extension: datetime | None = None
    """This student's own deadline, from the roster's extension column."""

    @property
    def ids(self) -> tuple[str, ...]:
        """Every id it may be known by, lower case."""
        return tuple(value.lower() for value in (self.canvas_id, self.sis_user_id,
                                                 self.sis_login_id, self.id_number,
                                                 self.email) if value)

    @property
    def key(self) -> str:
        """The id that names it in a table of grades: the csv export, and a grade without a
        submission."""
        return (self.canvas_id or self.id_number or self.email or self.sis_user_id
                or self.sis_login_id or self.name)

    def names(self) -> set[str]:
        """Its name written as submissions may write it: first-last and last-first, with
        only letters and digits ("lastfirst", as in Canvas's file names)."""
        parts = [p.strip() for p in self.name.split(",", 1)] if "," in self.name \
            else [self.name]
        words = [_letters(part) for part in parts]
        found = {"".join(words), "".join(reversed(words))}
        spaced = self.name.replace(",", " ").split()
        if len(spaced) > 1:
            found |= {_letters(" ".join(spaced)), _letters(" ".join(spaced[1:] + spaced[:1]))}
        return {name for name in found if name}


@dataclass(frozen=True)
class Roster:
    """A roster file, read."""

    path: Path
    """Where it was read from."""
    platform: str
    """"canvas" or "moodle"."""
    students: tuple[Student, ...]
    """Every student, in the file's order."""

    def match(self, keys: Iterable[str], known: Mapping[str, Known] | None = None
              ) -> Matching:
        """Which row each key is. The keys are one assignment's (or one student's): a key is
        one student, and so is a row. `known` gives what else a key is known by (a download's
        ids and names, `identities.aliases`); a key with none, a folder's name, is tried as an
        id and as a name. A key's ids decide; its names count only when no id fits. A row
        that one key fits by id and others by name only is the first's (the others are
        strangers); a key that fits two rows, or a row that two keys fit alike, is ambiguous."""
        by_id: dict[str, Student] = {}
        by_name: dict[str, list[Student]] = {}
        for student in self.students:
            for value in student.ids:
                by_id.setdefault(value, student)
            for name in student.names():
                by_name.setdefault(name, []).append(student)
        keys = list(keys)
        fits: dict[str, tuple[Student, bool]] = {}  # key -> (its row, fitted by an id)
        ambiguous: list[Ambiguity] = []
        for key in keys:
            mine = (known or {}).get(key)
            ids = (key, *mine.ids) if mine else (key,)
            names = mine.names if mine else (key,)
            rows = _distinct(by_id[value] for value in (i.strip().lower() for i in ids)
                             if value in by_id)
            by_ids = bool(rows)
            if not rows:
                rows = _distinct(row for name in names
                                 for row in by_name.get(_letters(name), []))
            if len(rows) == 1:
                fits[key] = (rows[0], by_ids)
            elif rows:
                ambiguous.append(Ambiguity((key,), tuple(rows)))
        claims: dict[int, list[str]] = {}
        for key, (row, _) in fits.items():
            claims.setdefault(row.line, []).append(key)
        for row_keys in claims.values():
            strongest = [key for key in row_keys if fits[key][1]] or row_keys
            if len(strongest) > 1:
                ambiguous.append(Ambiguity(tuple(strongest), (fits[strongest[0]][0],)))
            for key in row_keys:
                if len(strongest) > 1 or key not in strongest:
                    del fits[key]
        in_doubt = {key for found in ambiguous for key in found.keys}
        return Matching({key: row for key, (row, _) in fits.items()},
                        tuple(key for key in keys if key not in fits and key not in in_doubt),
                        tuple(ambiguous))


@dataclass(frozen=True)
class Ambiguity:
    """Keys and rows that could not be paired: one key that fits several rows, or several
    keys that fit one row. None of them is given the row."""

    keys: tuple[str, ...]
    """The gradebook's keys."""
    students: tuple[Student, ...]
    """The roster's rows."""

    def line(self, roster: Path) -> str:
        """What to tell the instructor, on one line."""
        rows = " or ".join(f"line {s.line} ({s.name})" for s in self.students)
        who = " and ".join(self.keys)
        fits = "fits" if len(self.keys) == 1 else "all fit"
        return (f"{who} {fits} {rows} of the roster {roster}; no grade is given to the row "
                "from them: fix the roster or grade them apart")


@dataclass(frozen=True)
class Matching:
    """Which roster row each gradebook key is (`Roster.match`)."""

    students: dict[str, Student] = field(default_factory=dict)
    """Each key that is one row, and that row."""
    strangers: tuple[str, ...] = ()
    """The keys that are no row, in the order given."""
    ambiguous: tuple[Ambiguity, ...] = ()
    """What could not be paired, and is given to no one."""


def _distinct(rows: Iterable[Student]) -> list[Student]:
    return list({row.line: row for row in rows}.values())


def read(path: Path, zone: ZoneInfo | None = None) -> Roster:
    """Read a Canvas or Moodle roster; a UsageError names the file, the line and the fix."""
    rows = csv_rows(path)
    header = [cell.strip() for cell in rows[0]] if rows else []
    lower = [cell.lower() for cell in header]
    if all(name.lower() in lower for name in CANVAS):
        platform = "canvas"
    elif all(name.lower() in lower for name in MOODLE) and (
            "id number" in lower or "email address" in lower):
        platform = "moodle"
    else:
        raise UsageError(f"{path}: line 1: the header is neither Canvas's "
                         f"({','.join(CANVAS)},Section) nor Moodle's (First name,Last name,"
                         "ID number,Email address); export the roster from the gradebook "
                         "(Canvas: Export Entire Gradebook; Moodle: Export to CSV with ID "
                         "number and email)")
    column = {name: index for index, name in reversed(list(enumerate(lower)))}
    extension = next((column[name] for name in EXTENSION_COLUMNS if name in column), None)
    students: list[Student] = []
    seen: dict[str, int] = {}
    for line, cells in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in cells):
            continue
        first = cells[0].strip()
        if platform == "canvas" and (first.startswith("Points Possible") or first ==
                                     "Student, Test"):
            continue
        if len(cells) != len(header):
            raise UsageError(f"{path}: line {line}: {len(cells)} cells where the header has "
                             f"{len(header)}; quote cells that hold commas, or export the "
                             "roster again")

        def cell(name: str, cells: Sequence[str] = cells) -> str:
            return cells[column[name.lower()]].strip() if name.lower() in column else ""

        if platform == "canvas":
            student = Student(cell("Student"), line, cell("ID"), cell("SIS User ID"),
                              cell("SIS Login ID"), cell("Section"))
        else:
            student = Student(f"{cell('First name')} {cell('Last name')}".strip(), line,
                              id_number=cell("ID number"), email=cell("Email address"))
        if not student.ids:
            raise UsageError(f"{path}: line {line}: {student.name or 'this student'} has no "
                             "id at all (ID, SIS User ID, SIS Login ID, ID number or email); "
                             "fill one in or delete the line")
        for value in student.ids:
            if value in seen:
                raise UsageError(f"{path}: line {line}: the id {value!r} is also on line "
                                 f"{seen[value]}; each student must appear once")
            seen[value] = line
        if extension is not None and cells[extension].strip():
            student = _with_extension(student, cells[extension], zone,
                                      f"{path}: line {line}: {header[extension]}")
        students.append(student)
    if not students:
        raise UsageError(f"{path}: no students under the header; export the roster again")
    return Roster(Path(path), platform, tuple(students))


def extensions(path: Path, zone: ZoneInfo | None = None) -> dict[str, datetime]:
    """`--extensions FILE`: a CSV of `student,due` (a header line is allowed); each student
    written as the gradebook or the roster names them."""
    rows = csv_rows(path, "a CSV of student,due")
    return policy.student_times(path, rows, zone, "due", EXTENSION_COLUMNS,
                                "alice,2026-03-03T23:59:00-05:00", "an extension")


def _with_extension(student: Student, value: str, zone: ZoneInfo | None,
                    where: str) -> Student:
    return replace(student, extension=policy.parse_time(value, zone, where))


def csv_rows(path: Path, expected: str = "the roster exported from Canvas or Moodle"
             ) -> list[list[str]]:
    """The rows of a CSV file the instructor gives (a roster, extensions, times); an error
    names the file, the line and the fix, and `expected`, what the file should be."""
    try:
        content = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file; give {expected}") from None
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        raise UsageError(f"{path}: line {line}: not UTF-8 text; save the file as CSV UTF-8") \
            from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return list(csv.reader(content.splitlines()))
    except csv.Error as exc:
        raise UsageError(f"{path}: not CSV ({exc}); export it again as CSV") from None


def _letters(name: str) -> str:
    return re.sub(r"[\W_]+", "", name.lower())
