"""What a class got wrong, computed from the gradebook alone. Pure: rows in, statistics out.

Each student counts once, with the submission the gradebook counts (`gradebook.best`, as the
exports do). Scores include the submissions that could not be graded, at the 0 the gradebook
gives them; everything about exercises, cases, diagnoses and cells is over the graded ones.
A function the notebook provides (worth no points) is left out: every student has the
notebook's own code for it. "unattempted" is not a misconception: it is counted per exercise.
The class's mistakes are counted from scored checks of the students' own code only
(`grader.classreport.mistakes`); the rest is advice, apart.
"""

from __future__ import annotations

import enum
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from grader import gradebook
from grader.classreport import cellerrors
from grader.classreport.mistakes import Advice, MisconceptionStats, tally
from grader.model import Visibility
from grader.pipeline import scoring
from grader.pipeline.diagnose import UNATTEMPTED
from grader.results import CheckResult, CheckStatus, ExerciseResult, Result, ResultStatus
from grader.similarity import Ranking

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


class Flag(enum.StrEnum):
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
    status: ResultStatus
    """GRADED, or ERROR when it could not be graded (then `score` is 0)."""
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
    late: int = 0
    """Submissions in which some check of it passed only right after the cell that defines it,
    not at the end of the notebook (a later cell changes what it uses): points earned by the
    second ask, for the instructor to look at."""

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
    visibility: Visibility
    """Public or hidden."""
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
    """The class's own mistakes (scored checks, code the students wrote), most frequent
    first."""
    advice: tuple[Advice, ...]
    """Diagnoses from the notebook's given code or from unscored checks, counted for no one,
    most frequent first."""
    cell_errors: tuple[cellerrors.CellErrorGroup, ...]
    """Most frequent first."""
    similar: tuple[SimilarGroup, ...]
    """Largest first."""
    fingerprinted: int
    """Graded submissions whose results carry fingerprints (results written before the grader
    recorded them have none, and cannot be compared)."""
    provided: tuple[str, ...]
    """Functions the notebook provides, left out."""
    similarity: Ranking | None = None
    """Pairs ranked by the rare code they share, with the flagged ones' code side by side
    (`grader.similarity`); None when the report was not given the submissions."""

    @property
    def submissions(self) -> int:
        """Students with a counted submission."""
        return len(self.scores)

    @property
    def graded(self) -> int:
        """Those that could be graded."""
        return sum(score.status is not ResultStatus.ERROR for score in self.scores)

    @property
    def errors(self) -> tuple[StudentScore, ...]:
        """Those that could not be graded."""
        return tuple(score for score in self.scores if score.status is ResultStatus.ERROR)

    @property
    def mean(self) -> float | None:
        """Mean counted score; None with no student."""
        if not self.scores:
            return None
        return round(statistics.fmean(s.score for s in self.scores), scoring.DECIMALS)

    @property
    def median(self) -> float | None:
        """Median counted score; None with no student."""
        return (round(statistics.median(s.score for s in self.scores), scoring.DECIMALS)
                if self.scores else None)

    @property
    def common_errors(self) -> tuple[cellerrors.CellErrorGroup, ...]:
        """The cell errors that several students hit (every student, in a class of one)."""
        least = min(2, self.submissions)
        return tuple(group for group in self.cell_errors if group.students >= least)


def build(assignment: str, recorded: Sequence[gradebook.Recorded]) -> ClassReport:
    """The class statistics of one assignment from the gradebook's rows and results."""
    mine = [(row, result) for row, result in recorded if row.assignment == assignment]
    stored = {(row.student, row.submission): result for row, result in mine}
    chosen = sorted(gradebook.best([row for row, _ in mine]).values(),
                    key=lambda row: row.student)
    scores = tuple(StudentScore(row.student, row.score, row.max_score, ResultStatus(row.status),
                                row.submission, stored[row.student, row.submission].error or "")
                   for row in chosen)
    graded = {row.student: stored[row.student, row.submission] for row in chosen
              if row.status != "error"}
    max_score = max((row.max_score for row in chosen), default=0.0)
    order = _exercise_order(graded.values())
    provided = tuple(name for name in order if _provided(name, graded.values()))
    scored = [name for name in order if name not in provided]
    misconceptions, advice = tally(order, provided, graded)
    return ClassReport(
        assignment=assignment, scores=scores, max_score=max_score,
        histogram=_histogram([s.score for s in scores], max_score),
        exercises=tuple(_exercise(name, graded) for name in scored),
        cases=tuple(case for name in scored for case in _cases(name, graded)),
        misconceptions=misconceptions, advice=advice,
        cell_errors=cellerrors.groups(graded),
        similar=_similar(scored, graded),
        fingerprinted=sum(any(e.fingerprint is not None for e in r.exercises)
                          for r in graded.values()),
        provided=provided)


# --------------------------------------------------------------------------- exercises


def _exercise_order(results: Iterable[Result]) -> list[str]:
    order: dict[str, None] = {}
    for result in results:
        for exercise in result.exercises:
            order.setdefault(exercise.name, None)
    return list(order)


def _find(result: Result, name: str) -> ExerciseResult | None:
    return next((e for e in result.exercises if e.name == name), None)


def _provided(name: str, results: Iterable[Result]) -> bool:
    found = [e for r in results if (e := _find(r, name)) is not None]
    return bool(found) and all(e.max_score == 0 for e in found)


def attempted(exercise: ExerciseResult | None) -> bool:
    """Whether a stored exercise result is the student's own code: defined, and either
    earning points or failing some check otherwise than the untouched stub does. A lookup
    table that answers one case and returns the stub's zeros elsewhere is written."""
    if exercise is None or exercise.status is CheckStatus.MISSING:
        return False
    if exercise.score > 0:
        return True
    failed = [c for c in exercise.checks if not c.passed]
    return not failed or any((c.diagnosis.id if c.diagnosis else None) != UNATTEMPTED
                             for c in failed)


def _exercise(name: str, graded: Mapping[str, Result]) -> ExerciseStats:
    found = [_find(result, name) for result in graded.values()]
    points = [e.score if e else 0.0 for e in found]
    distribution = Counter(round(p, 6) for p in points)
    return ExerciseStats(
        name=name, max_score=max((e.max_score for e in found if e), default=0.0),
        graded=len(found), attempted=sum(attempted(e) for e in found),
        passed=sum(e is not None and e.status is CheckStatus.PASSED for e in found),
        mean_score=round(statistics.fmean(points), scoring.DECIMALS) if points else 0.0,
        distribution=tuple(sorted(distribution.items())),
        late=sum(e is not None and any(c.passed and c.caution for c in e.checks)
                 for e in found))


def _cases(name: str, graded: Mapping[str, Result]) -> list[CaseStats]:
    order: dict[str, CheckResult] = {}
    tried: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    for result in graded.values():
        exercise = _find(result, name)
        for check in exercise.checks if exercise else ():
            order.setdefault(check.name, check)
            if attempted(exercise):
                tried[check.name] += 1
                passed[check.name] += check.passed
    cases = []
    for case, first in order.items():
        cases.append(CaseStats(name, case, first.visibility, first.scored, tried[case],
                               passed[case], _flag(first.scored, tried[case], passed[case])))
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
    edge = [round(i * width, scoring.DECIMALS) for i in range(BINS + 1)]  # 0.6, not 0.600..01
    return tuple(Bin(edge[i], edge[i + 1], counts[i]) for i in range(BINS))


# --------------------------------------------------------------------------- similarity


def _similar(scored: list[str], graded: Mapping[str, Result]) -> tuple[SimilarGroup, ...]:
    """Groups of students whose every written function has the same fingerprint."""
    by_code: dict[tuple[tuple[str, str], ...], list[str]] = defaultdict(list)
    sizes: dict[tuple[tuple[str, str], ...], int] = {}
    for student, result in graded.items():
        shared, nodes = [], 0
        for name in scored:
            exercise = _find(result, name)
            print_ = exercise.fingerprint if exercise and attempted(exercise) else None
            if print_:
                shared.append((name, print_.digest))
                nodes += print_.nodes
        if shared and nodes >= MIN_SIMILAR_NODES:
            by_code[tuple(shared)].append(student)
            sizes[tuple(shared)] = nodes
    groups = [SimilarGroup(tuple(sorted(who)), tuple(name for name, _ in code), sizes[code])
              for code, who in by_code.items() if len(who) > 1]
    groups.sort(key=lambda g: (-len(g.names), -g.nodes, g.names))
    return tuple(groups)
