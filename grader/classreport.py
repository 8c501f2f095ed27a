"""What a class got wrong, computed from the gradebook alone. Pure: rows in, statistics out.

Each student counts once, with the submission the gradebook counts (`gradebook.best`, as the
exports do). Scores include the submissions that could not be graded, at the 0 the gradebook
gives them; everything about exercises, cases, diagnoses and cells is over the graded ones.
A function the notebook provides (worth no points) is left out: every student has the
notebook's own code for it. "unattempted" is not a misconception: it is counted per exercise.
"""

from __future__ import annotations

import enum
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from grader import gradebook, hints
from grader.assignments.variants import CATALOGUE
from grader.diagnose import UNATTEMPTED

BINS = 10
"""Bars of the score histogram."""
NEARLY = 0.9
"""A scored case passed by at least this share of the students who wrote its function, or
failed by it, is flagged."""
MIN_FLAGGED = 5
"""Fewer attempts than this say nothing about a case: no flag."""
MIN_SIMILAR_NODES = 60
"""Identical code smaller than this many syntax nodes (a two-line softmax has about 35) is
what anyone would write: it makes no group of similar submissions."""
MAX_MESSAGE = 200


class Flag(str, enum.Enum):
    """Why a case deserves the instructor's look."""

    NEARLY_ALL_FAIL = "nearly-all-fail"
    NEARLY_ALL_PASS = "nearly-all-pass"


@dataclass(frozen=True)
class StudentScore:
    """One student's counted submission."""

    student: str
    """The student's name, as the gradebook has it."""
    score: float
    """The points the gradebook counts."""
    max_score: float
    """Points available."""
    status: str
    """"graded", or "error" when it could not be graded (then `score` is 0)."""
    submission: str
    """The file, or files, it was graded from."""
    error: str
    """Why it could not be graded; empty when it was."""


@dataclass(frozen=True)
class Bin:
    """One bar of the score histogram."""

    low: float
    """Lowest score it holds."""
    high: float
    """Its upper edge: it holds scores below it, the last bar the maximum too."""
    count: int
    """How many students' scores fall in it."""


@dataclass(frozen=True)
class ExerciseStats:
    """How the class did on one exercise."""

    name: str
    """The exercise's name."""
    max_score: float
    """Its points."""
    graded: int
    """Graded submissions, the denominator of `pass_rate`."""
    attempted: int
    """Submissions in which the function is written (not missing, not the stub)."""
    passed: int
    """Submissions in which every scored check of it passes."""
    mean_score: float
    """Mean points earned, over the graded submissions."""
    distribution: tuple[tuple[float, int], ...]
    """(points, how many students earned exactly that), by points."""

    @property
    def pass_rate(self) -> float:
        """The share of graded submissions that pass it."""
        return self.passed / self.graded if self.graded else 0.0

    @property
    def unattempted(self) -> int:
        """Graded submissions in which it is missing or still the stub."""
        return self.graded - self.attempted


@dataclass(frozen=True)
class CaseStats:
    """How the class did on one case, among the students who wrote its function."""

    exercise: str
    """The exercise's name."""
    case: str
    """The case's name (hidden cases' names too: the report is the instructor's)."""
    visibility: str
    """"public" or "hidden"."""
    scored: bool
    """False for advice, a case worth no points."""
    attempted: int
    """Submissions in which the function is written: the denominator of `pass_rate`."""
    passed: int
    """Of those, how many pass it."""
    flag: Flag | None
    """Set when nearly all of them fail it, or nearly all pass it (scored cases only)."""

    @property
    def pass_rate(self) -> float | None:
        """The share that passes it; None when nobody wrote the function."""
        return self.passed / self.attempted if self.attempted else None


@dataclass(frozen=True)
class MisconceptionStats:
    """One diagnosis on one exercise, across the class."""

    id: str
    """The catalogue id, for example "transposed-weights"."""
    exercise: str
    """The exercise it was found in."""
    names: tuple[str, ...]
    """The students who got it on at least one check, sorted."""
    explanation: str
    """What it means: the message the students were given."""
    share: float
    """`students` over the graded submissions."""

    @property
    def students(self) -> int:
        """How many students got it."""
        return len(self.names)


@dataclass(frozen=True)
class ErrorPlace:
    """Where in the notebook a group of cell errors happened."""

    where: str
    """The cell as a student counts them, "code cell 3", or "the module"."""
    line: int | None
    """The line in that cell, when the message says it."""
    students: int
    """How many students hit the error there."""


@dataclass(frozen=True)
class CellErrorGroup:
    """One error that several students' cells raised: the same exception and message, once
    numbers are set aside."""

    error: str
    """The exception's type ("TypeError"), or "Timeout" or "Crash"."""
    message: str
    """The message with numbers replaced by #, as grouped."""
    example: str
    """One student's message in full, line included."""
    names: tuple[str, ...]
    """The students who hit it, sorted."""
    places: tuple[ErrorPlace, ...]
    """Where, the most common place first."""
    hint: str
    """The known outside cause and its fix (NumPy 2's float() of an array), or empty."""

    @property
    def students(self) -> int:
        """How many students hit it."""
        return len(self.names)


@dataclass(frozen=True)
class SimilarGroup:
    """Submissions whose written functions are all the same code, up to names, comments and
    layout: a prompt to look, not a verdict."""

    names: tuple[str, ...]
    """The students, sorted."""
    exercises: tuple[str, ...]
    """The functions they share (every function each of them wrote)."""
    nodes: int
    """The size of the shared code, in syntax nodes."""


@dataclass(frozen=True)
class ClassReport:
    """Everything the class report shows, for one assignment."""

    assignment: str
    """The assignment's name; empty when the gradebook has no result."""
    scores: tuple[StudentScore, ...]
    """One per student, by name."""
    max_score: float
    """Points available."""
    histogram: tuple[Bin, ...]
    """The score distribution, `BINS` bars from 0 to `max_score`; empty with no student."""
    exercises: tuple[ExerciseStats, ...]
    """Scored exercises, in the assignment's order."""
    cases: tuple[CaseStats, ...]
    """Their cases, in order."""
    misconceptions: tuple[MisconceptionStats, ...]
    """Most frequent first."""
    cell_errors: tuple[CellErrorGroup, ...]
    """Most frequent first."""
    similar: tuple[SimilarGroup, ...]
    """Largest first."""
    fingerprinted: int
    """Graded submissions whose results carry fingerprints (results written before the grader
    recorded them have none, and cannot be compared)."""
    provided: tuple[str, ...]
    """Functions the notebook provides, left out."""

    @property
    def submissions(self) -> int:
        """Students with a counted submission."""
        return len(self.scores)

    @property
    def graded(self) -> int:
        """Those that could be graded."""
        return sum(score.status != "error" for score in self.scores)

    @property
    def errors(self) -> tuple[StudentScore, ...]:
        """Those that could not be graded."""
        return tuple(score for score in self.scores if score.status == "error")

    @property
    def mean(self) -> float | None:
        """Mean counted score; None with no student."""
        return statistics.fmean(s.score for s in self.scores) if self.scores else None

    @property
    def median(self) -> float | None:
        """Median counted score; None with no student."""
        return statistics.median(s.score for s in self.scores) if self.scores else None

    @property
    def common_errors(self) -> tuple[CellErrorGroup, ...]:
        """The cell errors that several students hit (every student, in a class of one)."""
        least = min(2, self.submissions)
        return tuple(group for group in self.cell_errors if group.students >= least)


Result = Mapping[str, Any]
"""A stored JSON result (schema grader.result/1)."""


def build(assignment: str, recorded: Sequence[tuple[gradebook.Row, Result]]) -> ClassReport:
    """The class statistics of one assignment from the gradebook's rows and stored results."""
    mine = [(row, result) for row, result in recorded if row.assignment == assignment]
    stored = {(row.student, row.submission): result for row, result in mine}
    chosen = sorted(gradebook.best([row for row, _ in mine]).values(),
                    key=lambda row: row.student)
    scores = tuple(StudentScore(row.student, row.score, row.max_score, row.status,
                                row.submission, str(stored[row.student, row.submission]
                                                    .get("error") or ""))
                   for row in chosen)
    graded = {row.student: stored[row.student, row.submission] for row in chosen
              if row.status != "error"}
    max_score = max((row.max_score for row in chosen), default=0.0)
    order = _exercise_order(graded.values())
    provided = tuple(name for name in order if _provided(name, graded.values()))
    scored = [name for name in order if name not in provided]
    return ClassReport(
        assignment=assignment, scores=scores, max_score=max_score,
        histogram=_histogram([s.score for s in scores], max_score),
        exercises=tuple(_exercise(name, graded) for name in scored),
        cases=tuple(case for name in scored for case in _cases(name, graded)),
        misconceptions=_misconceptions(scored, graded),
        cell_errors=_cell_errors(graded),
        similar=_similar(scored, graded),
        fingerprinted=sum(all("fingerprint" in e for e in r.get("exercises", []))
                          for r in graded.values()),
        provided=provided)


# --------------------------------------------------------------------------- exercises


def _exercise_order(results: Any) -> list[str]:
    order: dict[str, None] = {}
    for result in results:
        for exercise in result.get("exercises", []):
            order.setdefault(exercise["name"], None)
    return list(order)


def _find(result: Result, name: str) -> Mapping[str, Any] | None:
    return next((e for e in result.get("exercises", []) if e["name"] == name), None)


def _provided(name: str, results: Any) -> bool:
    found = [e for r in results if (e := _find(r, name)) is not None]
    return bool(found) and all(e["max_score"] == 0 for e in found)


def attempted(exercise: Mapping[str, Any] | None) -> bool:
    """Whether a stored exercise result is the student's own code: defined, and never
    diagnosed as the untouched stub."""
    if exercise is None or exercise["status"] == "missing":
        return False
    return not any((c.get("diagnosis") or {}).get("id") == UNATTEMPTED
                   for c in exercise["checks"])


def _exercise(name: str, graded: Mapping[str, Result]) -> ExerciseStats:
    found = [_find(result, name) for result in graded.values()]
    points = [float(e["score"]) if e else 0.0 for e in found]
    distribution = Counter(round(p, 6) for p in points)
    return ExerciseStats(
        name=name, max_score=max((float(e["max_score"]) for e in found if e), default=0.0),
        graded=len(found), attempted=sum(attempted(e) for e in found),
        passed=sum(e is not None and e["status"] == "passed" for e in found),
        mean_score=statistics.fmean(points) if points else 0.0,
        distribution=tuple(sorted(distribution.items())))


def _cases(name: str, graded: Mapping[str, Result]) -> list[CaseStats]:
    order: dict[str, Mapping[str, Any]] = {}
    tried: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    for result in graded.values():
        exercise = _find(result, name)
        for check in exercise["checks"] if exercise else ():
            order.setdefault(check["name"], check)
            if attempted(exercise):
                tried[check["name"]] += 1
                passed[check["name"]] += bool(check["passed"])
    cases = []
    for case, first in order.items():
        scored = bool(first.get("scored", first["max_score"] > 0))
        cases.append(CaseStats(name, case, first["visibility"], scored, tried[case],
                               passed[case], _flag(scored, tried[case], passed[case])))
    return cases


def _flag(scored: bool, tried: int, passed: int) -> Flag | None:
    if not scored or tried < MIN_FLAGGED:
        return None
    if passed / tried >= NEARLY:
        return Flag.NEARLY_ALL_PASS
    if (tried - passed) / tried >= NEARLY:
        return Flag.NEARLY_ALL_FAIL
    return None


def _histogram(scores: list[float], top: float) -> tuple[Bin, ...]:
    if not scores:
        return ()
    if top <= 0:
        return (Bin(0.0, 0.0, len(scores)),)
    width = top / BINS
    counts = Counter(min(max(int(score / width), 0), BINS - 1) for score in scores)
    return tuple(Bin(i * width, (i + 1) * width, counts[i]) for i in range(BINS))


# --------------------------------------------------------------------------- diagnoses


def _misconceptions(scored: list[str], graded: Mapping[str, Result]
                    ) -> tuple[MisconceptionStats, ...]:
    students: dict[tuple[str, str], set[str]] = defaultdict(set)
    messages: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for student, result in graded.items():
        for name in scored:
            exercise = _find(result, name)
            for check in exercise["checks"] if exercise else ():
                diagnosis = check.get("diagnosis")
                if diagnosis and diagnosis["id"] != UNATTEMPTED:
                    key = (name, diagnosis["id"])
                    students[key].add(student)
                    messages[key][diagnosis["message"]] += 1
    found = [MisconceptionStats(id=id, exercise=name, names=tuple(sorted(who)),
                                explanation=_explanation(id, messages[name, id]),
                                share=len(who) / len(graded))
             for (name, id), who in students.items()]
    found.sort(key=lambda m: (-m.students, scored.index(m.exercise), m.id))
    return tuple(found)


def _explanation(id: str, messages: Counter[str]) -> str:
    """The message the students got; when it varies (it names a global's value, say), the
    catalogue's sentence, else the most common one as an example."""
    if len(messages) == 1:
        return next(iter(messages))
    if id in CATALOGUE:
        return CATALOGUE[id]
    return "For example: " + messages.most_common(1)[0][0]


# --------------------------------------------------------------------------- cell errors

_NOTE = re.compile(r"; (?=line \d+: )")
_LINE = re.compile(r"line (\d+): (.*)", re.S)
_EXCEPTION = re.compile(r"([A-Z][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration))"
                        r": ?(.*)", re.S)
_GRADER_NOTES = re.compile(r"; (the grader ran the rest|the \d+ statement\(s\) after it|"
                           r"the cell did not run|only this statement was lost"
                           r"|execution went on).*$", re.S)
_SYNTAX_LINE = re.compile(r"\(line (\d+)\)")
# A number, but not one that is part of a word ("0-dimensional", "length-1", "float64").
_NUMBER = re.compile(r"\b0x[0-9a-fA-F]+\b|(?<![\w.-])\d+(?:\.\d+)?(?![\w-])")


def notes(message: str) -> list[tuple[int | None, str, str]]:
    """The errors in a cell's message, each as (line, exception type, message): a cell that
    went on after an error lists each failing statement, as "line 3: TypeError: ...; line 9:
    ...". Timeouts are "Timeout", lost interpreters "Crash"; skipped magics are no error."""
    found: list[tuple[int | None, str, str]] = []
    for part in _NOTE.split(message):
        matched = _LINE.match(part)
        line = int(matched.group(1)) if matched else None
        body = matched.group(2) if matched else part
        full = body
        body = _GRADER_NOTES.sub("", body)
        exception = _EXCEPTION.match(body)
        if exception:
            kind, text = exception.group(1), exception.group(2)
            syntax = _SYNTAX_LINE.search(text) if line is None else None
            line = int(syntax.group(1)) if syntax else line
        elif "stopped after" in full or "time limit" in full:
            kind, text = "Timeout", body
        elif "only this statement was lost" in full:
            kind, text = "Crash", body
        else:
            continue  # a skipped shell escape or magic, or a note of the grader's
        found.append((line, kind, text.strip()))
    return found


def _where(cell: Mapping[str, Any]) -> str:
    number, index = cell.get("number") or 0, cell.get("index") or 0
    where = f"code cell {number}" if number else "the module" if index else "the file"
    file = cell.get("file") or ""
    return f"{PurePath(file).name}, {where}" if file else where


def _cell_errors(graded: Mapping[str, Result]) -> tuple[CellErrorGroup, ...]:
    students: dict[tuple[str, str], set[str]] = defaultdict(set)
    places: dict[tuple[str, str], Counter[tuple[str, int | None]]] = defaultdict(Counter)
    shown: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    examples: dict[tuple[str, str], str] = {}
    found_hint: dict[tuple[str, str], str] = {}
    for student, result in graded.items():
        for cell in result.get("cells", []):
            if cell.get("status") not in ("error", "timeout", "crashed"):
                continue
            seen = set()
            for line, kind, text in notes(str(cell.get("message", ""))):
                hint = hints.NUMPY2_SCALAR if hints.NUMPY2_SCALAR in text else ""
                text = text.replace(f" ({hints.NUMPY2_SCALAR})", "")
                normal = _NUMBER.sub("#", text)[:MAX_MESSAGE]
                # NumPy's two wordings of the same float() failure are one group.
                key = (kind, hint or normal)
                if (key, line) in seen:
                    continue
                seen.add((key, line))
                if student not in students[key]:
                    places[key][(_where(cell), line)] += 1
                students[key].add(student)
                shown[key][normal] += 1
                found_hint[key] = hint
                at = f"line {line}: " if line is not None else ""
                examples.setdefault(key, f"{_where(cell)}, {at}{kind}: {text}"[:2 * MAX_MESSAGE])
    groups = [CellErrorGroup(
        error=key[0], message=shown[key].most_common(1)[0][0], example=examples[key],
        names=tuple(sorted(who)),
        places=tuple(ErrorPlace(where, line, count)
                     for (where, line), count in places[key].most_common()),
        hint=found_hint[key]) for key, who in students.items()]
    groups.sort(key=lambda g: (-g.students, g.error, g.message))
    return tuple(groups)


# --------------------------------------------------------------------------- similarity


def _similar(scored: list[str], graded: Mapping[str, Result]) -> tuple[SimilarGroup, ...]:
    """Groups of students whose every written function has the same fingerprint."""
    by_code: dict[tuple[tuple[str, str], ...], list[str]] = defaultdict(list)
    sizes: dict[tuple[tuple[str, str], ...], int] = {}
    for student, result in graded.items():
        shared, nodes = [], 0
        for name in scored:
            exercise = _find(result, name)
            print_ = exercise.get("fingerprint") if exercise and attempted(exercise) else None
            if print_:
                shared.append((name, str(print_["digest"])))
                nodes += int(print_["nodes"])
        if shared and nodes >= MIN_SIMILAR_NODES:
            by_code[tuple(shared)].append(student)
            sizes[tuple(shared)] = nodes
    groups = [SimilarGroup(tuple(sorted(who)), tuple(name for name, _ in code), sizes[code])
              for code, who in by_code.items() if len(who) > 1]
    groups.sort(key=lambda g: (-len(g.names), -g.nodes, g.names))
    return tuple(groups)
