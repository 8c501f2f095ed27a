"""Final grades: the recorded raw scores, with the roster, the time policy and the overrides
applied on top. Computed afresh at every export and report; nothing here is stored.

final = raw (with exercise overrides) - the late penalty, or an assignment's override. A
student on the roster with no submission gets a grade of 0, status "missing"; a submission
whose student is not on the roster keeps its grade and is listed in `Sheet.strangers`. The
roster is matched assignment by assignment (`Roster.match`): where two submissions fit one
roster row, or one fits two, neither is that row's and the row's grade is "ambiguous", which
no export gives a number; one student's grade is never another's, nor the higher of two.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from grader import text
from grader.gradebook import Recorded, Row, best, best_of
from grader.gradebook.identities import Known
from grader.results import Result
from grader.term import policy
from grader.term.overrides import Entry, in_force
from grader.term.roster import Ambiguity, Roster, Student

CANVAS_LATE = ("Canvas marked it late; no submission time was given, so no penalty was "
               "computed: pass --times")
"""The explanation of a submission Canvas's download marked `_LATE`, with no time known."""


AMBIGUOUS = "ambiguous"
"""The status of a roster row that submissions fit but cannot be paired with."""


@dataclass(frozen=True)
class Grade:
    """One student's grade on one assignment, and how it came about."""

    student: str
    """The gradebook's key for the student, or the roster's id when there is no submission."""
    assignment: str
    """The assignment."""
    status: str
    """"graded", "error" (could not be graded), "missing" (on the roster, no submission) or
    "ambiguous" (on the roster; submissions fit it, or another row too, and none is taken)."""
    raw: float
    """Points earned, with exercise overrides applied: what the penalty is taken from."""
    max_score: float
    """Points available."""
    penalty: float
    """Points taken off for lateness."""
    final: float
    """The grade that is exported."""
    lateness: policy.Lateness
    """The deadline that applied, how late, and the explanation."""
    submitted_at: datetime | None = None
    """When it was handed in (UTC), if known."""
    roster: Student | None = None
    """The roster's row for the student, when there is a roster and it has them."""
    submission: str = ""
    """The recorded submission."""
    notes: tuple[str, ...] = ()
    """The overrides applied, one line each."""
    graded: float | None = None
    """The score as graded, before any override (None: same as `raw`)."""

    @property
    def summary(self) -> str:
        """The one-line summary that goes in a comment column."""
        parts = [f"{self.status}: {text.points(self.final)}/{text.points(self.max_score)}"]
        if self.raw != self.final:
            parts.append(f"raw {text.points(self.raw)}")
        parts += [part for part in (self.lateness.explanation, *self.notes) if part]
        return "; ".join(parts)


@dataclass(frozen=True)
class Sheet:
    """Every grade, and the students the roster does not know."""

    grades: tuple[Grade, ...]
    """Ordered by student, then assignment; roster students in the roster's order."""
    strangers: tuple[str, ...] = ()
    """Gradebook students that match no roster row."""
    ambiguous: tuple[Ambiguity, ...] = ()
    """What the roster could not pair, over every assignment; those keys keep their grades
    as strangers do, and the rows they fit are "ambiguous"."""
    platform: str = ""
    """The roster's platform, or "" without a roster."""
    maxima: dict[str, float] = field(default_factory=dict)
    """Points available per assignment."""
    shown: dict[str, str] = field(default_factory=dict)
    """The name a platform's download shows for each gradebook key that has one."""

    def key(self, grade: Grade) -> str:
        """Who a grade is, for a table of grades: the roster's own key for a student on the
        roster, else the gradebook's key of the submission."""
        return grade.roster.key if grade.roster else grade.student

    def name(self, grade: Grade) -> str:
        """The student's name: the roster's, else the one the download showed, else ""."""
        return grade.roster.name if grade.roster else self.shown.get(grade.student, "")


def compute(recorded: Sequence[Recorded], roster: Roster | None = None,
            rules: policy.Policy | None = None,
            extensions: Mapping[str, datetime] | None = None,
            entries: Sequence[Entry] = (), assignment: str | None = None,
            aliases: Mapping[str, Known] | None = None,
            marked_late: Collection[tuple[str, str]] = ()) -> Sheet:
    """The grade sheet of a gradebook's results. `aliases` are what else each student is
    known by (`identities.aliases`), for the roster; `marked_late` the (student, assignment)s
    a platform marked late without giving a time (Canvas's `_LATE`)."""
    rules = rules or policy.Policy()
    results = {(row.student, row.assignment, row.submission): result
               for row, result in recorded}
    chosen: dict[tuple[str, str], Recorded] = {
        pair: (row, results[row.student, row.assignment, row.submission])
        for pair, row in best([row for row, _ in recorded]).items()}
    assignments = sorted({a for _, a in chosen} | ({assignment} if assignment else set()))
    maxima = {a: max((r.max_score for r, _ in recorded if r.assignment == a), default=0.0)
                 for a in assignments}
    keys: list[str] = sorted({student for student, _ in chosen})
    matched = {name: roster.match([k for k in keys if (k, name) in chosen], aliases)
               for name in assignments} if roster else {}
    forced = in_force(entries)
    extensions = extensions or {}
    grades: list[Grade] = []
    where = roster.path if roster else Path()
    for person in roster.students if roster else ():
        for name in assignments:
            mine = [k for k, row in matched[name].students.items() if row == person]
            doubt = [a for a in matched[name].ambiguous if person in a.students]
            row = best_of(chosen[k, name][0] for k in mine if (k, name) in chosen)
            if row is not None:
                grades.append(_grade(row, chosen[row.student, name][1], person, rules,
                                     extensions, forced, marked_late))
            elif doubt:
                grades.append(_ambiguous(person, name, maxima[name], doubt, where))
            else:
                grades.append(_missing(person, name, maxima[name], rules, extensions,
                                       forced))
    for key in keys:
        for name in assignments:
            if (key, name) in chosen and key not in (matched[name].students if roster else ()):
                grades.append(_grade(*chosen[key, name], None, rules, extensions, forced,
                                     marked_late))
    strangers = [key for key in keys if any(key in m.strangers for m in matched.values())]
    ambiguous = tuple(dict.fromkeys(a for m in matched.values() for a in m.ambiguous))
    shown = {key: known.names[0] for key, known in (aliases or {}).items() if known.names}
    return Sheet(tuple(grades), tuple(strangers), ambiguous=ambiguous,
                 platform=roster.platform if roster else "", maxima=maxima, shown=shown)


def _ambiguous(student: Student, assignment: str, maximum: float,
               doubt: Sequence[Ambiguity], where: Path) -> Grade:
    why = "; ".join(a.line(where) for a in doubt)
    return Grade(student.key, assignment, AMBIGUOUS, 0.0, maximum, 0.0, 0.0,
                 policy.Lateness(None, False, timedelta(0), 0.0, why), roster=student)


def _identities(key: str, student: Student | None) -> list[str]:
    found = [key.lower()]
    if student is not None:
        found += [student.key.lower(), *student.ids]
    return found


def _extension(names: Sequence[str], student: Student | None,
               extensions: Mapping[str, datetime]) -> datetime | None:
    for name in names:
        if name in extensions:
            return extensions[name]
    return student.extension if student else None


def _override(names: Sequence[str], assignment: str, exercise: str,
              forced: Mapping[tuple[str, str, str], Entry]) -> Entry | None:
    for name in names:
        if (name, assignment, exercise) in forced:
            return forced[name, assignment, exercise]
    return None


def _grade(row: Row, stored: Result, student: Student | None, rules: policy.Policy,
           extensions: Mapping[str, datetime],
           forced: Mapping[tuple[str, str, str], Entry],
           marked_late: Collection[tuple[str, str]] = ()) -> Grade:
    names = _identities(row.student, student)
    raw, notes = row.score, []
    for exercise in stored.exercises:
        entry = _override(names, row.assignment, exercise.name, forced)
        if entry is not None and entry.points is not None:
            raw += entry.points - exercise.score
            notes.append(_note(entry, exercise.score))
    lateness = policy.assess(rules, row.submitted_at, _extension(names, student, extensions))
    if row.submitted_at is None and (row.student, row.assignment) in marked_late:
        lateness = replace(lateness, explanation=CANVAS_LATE + (
            f" (the deadline of {policy.when(lateness.deadline)})" if lateness.deadline
            else ""))
    penalty = round(raw * lateness.percent / 100, 6)
    final = round(raw - penalty, 6)
    whole = _override(names, row.assignment, "", forced)
    if whole is not None and whole.points is not None:
        notes.append(_note(whole, final))
        final = whole.points
    return Grade(row.student, row.assignment, row.status, round(raw, 6), row.max_score,
                 penalty, final, lateness, row.submitted_at, student, row.submission, tuple(notes),
                 row.score)


def _missing(student: Student, assignment: str, maximum: float, rules: policy.Policy,
             extensions: Mapping[str, datetime],
             forced: Mapping[tuple[str, str, str], Entry]) -> Grade:
    names = _identities(student.key, student)
    deadline = _extension(names, student, extensions) or rules.due
    lateness = policy.Lateness(deadline, False, timedelta(0), 0.0, "no submission" + (
        f" by the deadline of {policy.when(deadline)}" if deadline else ""))
    final, notes = 0.0, []
    whole = _override(names, assignment, "", forced)
    if whole is not None and whole.points is not None:
        notes.append(_note(whole, 0.0))
        final = whole.points
    return Grade(student.key, assignment, "missing", 0.0, maximum, 0.0, final, lateness,
                 roster=student, notes=tuple(notes))


def _note(entry: Entry, before: float) -> str:
    what = f"{entry.exercise} " if entry.exercise else ""
    return (f"override {what}{text.points(before)} -> {text.points(entry.points or 0.0)} by "
            f"{entry.by} on {entry.at[:10]}: {entry.reason}")
