"""What grading found, as plain data: the statuses of a cell, a check and a result, and the
frozen dataclasses of a graded submission (`Result` and what it holds). Reports and the JSON
(`grader.result_json`) are functions of them."""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from grader.model import PRACTICE, Visibility


class CellStatus(enum.StrEnum):
    """What happened when a cell (or one statement of it) ran."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    SKIPPED = "skipped"


class CheckStatus(enum.StrEnum):
    """The outcome of a check, or of an exercise's checks (a call's is a `CallOutcome`)."""

    PASSED = "passed"
    FAILED = "failed"
    MISSING = "missing"
    ERROR = "error"
    TIMEOUT = "timeout"


class Verdict(enum.StrEnum):
    """What one check found, in the few words a hidden check may say of it: every verdict
    but PASSED is a way to fail, and the student-facing text of a hidden check depends on
    its submission only through this, a catalogued diagnosis and a usual exception class
    (`grader.pipeline.vocabulary`)."""

    PASSED = "passed"
    WRONG_VALUES = "wrong values"
    WRONG_SHAPE = "wrong shape"
    WRONG_TYPE = "wrong type"
    RAISED = "raised"
    CRASHED = "crashed"
    TIMED_OUT = "timed out"
    TOO_LARGE = "too large"
    NOT_WRITTEN = "not written"


class ResultStatus(enum.StrEnum):
    """Whether a submission could be graded at all."""

    GRADED = "graded"
    ERROR = "error"


@dataclass(frozen=True)
class CellResult:
    """What happened when one cell ran."""

    index: int
    """1-based position of the cell in the notebook."""
    status: CellStatus
    """OK, ERROR, TIMEOUT, CRASHED or SKIPPED."""
    message: str = ""
    """What went wrong, naming the line and the exception."""
    file: str = ""
    """The file it is in, when the result combines several files; else empty."""
    number: int = 0
    """1-based position among the code cells; 0 for a module, which is one cell."""
    execution_count: int | None = None
    """The `In [n]` the notebook was saved with, if it ran before it was handed in."""

    @property
    def where(self) -> str:
        """The cell as Jupyter shows it: "code cell 3 (In [5])", or "code cell 3"."""
        if not self.index:
            return "the file"  # it could not be read at all
        if not self.number:
            return "the module"
        shown = f" (In [{self.execution_count}])" if self.execution_count else ""
        return f"code cell {self.number}{shown}"


@dataclass(frozen=True)
class Diagnosis:
    """The misconception or property that explains a wrong answer."""

    id: str
    """Stable identifier from the catalogue, for example "transposed-weights"."""
    message: str
    """A sentence for the student."""


@dataclass(frozen=True)
class ArrayView:
    """Expected and obtained values of a public failing check, for heatmaps."""

    expected: np.ndarray
    """The reference output, or one 2-D slice of it (at most a few dozen cells a side)."""
    obtained: np.ndarray
    """The student's output, same shape as `expected`."""
    mismatched: np.ndarray
    """Boolean mask of the cells outside tolerance."""
    label: str = ""
    """Which output it is, for example "weights"."""
    rows: str = "row"
    """What each row is, for example "query"."""
    columns: str = "column"
    """What each column is, for example "key"."""
    index: str = ""
    """Which 2-D slice of an output of 3 or more dimensions it is, for example "[1, :, :]";
    empty for a 2-D output."""
    slices: int = 1
    """How many 2-D slices the output has; a few of them are drawn (`compare.MAX_SLICES`)."""

    def __eq__(self, other: object) -> bool:
        """Field by field, the arrays by shape and cells (NaN equal to NaN). A dataclass's
        own `==` asks an array for one truth value, which it refuses; Python 3.11 hid that
        for identical arrays, 3.13 no longer does."""
        if not isinstance(other, ArrayView):
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))


def _same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a is b or (a.shape == b.shape and bool(
            np.array_equal(a, b, equal_nan=a.dtype.kind in "fc" and b.dtype.kind in "fc")))
    return bool(a == b)


@dataclass(frozen=True)
class CheckResult:
    """One case of one exercise, compared."""

    name: str
    """The case's name."""
    visibility: Visibility
    """Hidden checks never carry inputs or expected values."""
    passed: bool
    """Whether the output matched within tolerance."""
    score: float
    """Points earned by this check."""
    max_score: float
    """Points available for this check."""
    status: CheckStatus = CheckStatus.PASSED
    """PASSED, FAILED, MISSING, ERROR or TIMEOUT."""
    message: str = ""
    """Why it failed, in the style of pytest's approx; for a hidden check, a text of the
    closed vocabulary (`grader.pipeline.vocabulary`)."""
    diagnosis: Diagnosis | None = None
    """The misconception recognised in the output, if any."""
    views: tuple[ArrayView, ...] = ()
    """Arrays to draw, for public failing checks only."""
    note: str = ""
    """What the case exercises."""
    caution: str = ""
    """A warning about how it passed, for example only right after its defining cell."""
    alternatives: tuple[Diagnosis, ...] = ()
    """Every catalogued mistake its output matches, when more than one does (on symmetric
    inputs, say): the grader picks the one the exercise's other cases agree on."""
    detail: str = ""
    """For a failing hidden check: its message as the instructor reads it, and as students
    read it once the assignment's `show_hidden_after` has passed (numbers of the comparison,
    never the inputs). Only the instructor's views and Gradescope's after_due_date tests
    print it; `grader.pipeline.disclosure` puts it in `message` when it is due."""
    verdict: Verdict = Verdict.PASSED
    """What the check found, in a word: the wrong shape, a raise, a crash."""
    raised: str = ""
    """For a check whose call raised: the exception's class, when it is one of the usual
    built-in classes a hidden check may name (`vocabulary.RAISES`); else empty."""
    callee: str = ""
    """For a check that failed only because of a graded or given function its exercise calls
    (it passes with that function's reference in place of the submission's own:
    `grader.pipeline.owncode`), that function's name; else empty. The instructor's: the
    class report counts the mistake on that function, not on this exercise."""

    @property
    def scored(self) -> bool:
        """Whether it counts towards the score (unscored checks are advice)."""
        return self.max_score > 0

    @property
    def worth(self) -> str:
        """What it is worth, as reports label it: "hidden", "hidden, no points", "public
        example, no points", or for the practice case (`model.PRACTICE`), which is public but
        no example of the notebook, "public, no points" (a public case never earns points)."""
        if self.visibility is Visibility.PUBLIC:
            return "public, no points" if self.name == PRACTICE else "public example, no points"
        return self.visibility.value + ("" if self.scored else ", no points")


@dataclass(frozen=True)
class Fingerprint:
    """A hash of a function's definition in the source, normalised (`grader.pipeline.fingerprint`):
    two that are equal are the same code up to names, comments, docstrings and layout."""

    digest: str
    """The hash of the normalised syntax tree, in hex."""
    nodes: int
    """How many syntax nodes the tree has: how much code two equal fingerprints share."""


@dataclass(frozen=True)
class ExerciseResult:
    """All checks of one exercise."""

    name: str
    """The exercise's name."""
    status: CheckStatus
    """PASSED, FAILED, MISSING, ERROR or TIMEOUT."""
    score: float
    """Points earned."""
    max_score: float
    """Points available."""
    checks: tuple[CheckResult, ...]
    """One per case."""
    file: str = ""
    """The file its checks come from, when the result combines several files; else empty."""
    fingerprint: Fingerprint | None = None
    """Its definition's fingerprint, read from the source; None when the source does not
    define it at top level."""
    provided: bool = False
    """The notebook gives it ready-made: it is checked and shown, never scored."""
    part: str = ""
    """For an assignment split across notebooks: the part it belongs in, as students read it,
    "part 2 (udl_attention_12_2.ipynb)"; else empty."""
    handed_in: bool = True
    """False when the file graded is another part of a split assignment and defines nothing
    of this exercise's part: its checks are missing, and reports say so once for the part
    ("part 2 not handed in") instead of failing its exercises one by one."""

    @property
    def scored(self) -> bool:
        """Whether it counts towards the score (a function the notebook provides does not;
        a self-check, whose public cases are worth no points, still counts the others)."""
        return not self.provided

    @property
    def caution(self) -> str:
        """The warning about how the exercise passed, said once: its first check's. Every
        caution names one thing (a later cell changes what the function uses), and a hidden
        case asked where the public example chose says it in words of its own, which a student
        would otherwise read twice."""
        return next((check.caution for check in self.checks if check.caution), "")

    def explains(self, check: CheckResult) -> bool:
        """Whether `check`'s note helps the student: it says why the check earns no points,
        or, for a failure, what sets this case apart from scored cases of the exercise that
        pass ("inputs in the thousands"). When every case fails alike, it explains nothing."""
        if not check.note:
            return False
        if not check.scored:
            return True
        return not check.passed and any(c.passed and c.scored for c in self.checks)

    @property
    def missing(self) -> str:
        """For a function never defined, the one message that says so; else empty."""
        if self.status is CheckStatus.MISSING and self.checks:
            return self.checks[0].message
        return ""


@dataclass(frozen=True)
class Result:
    """The graded submission; reports are pure functions of it."""

    assignment: str
    """The assignment's name."""
    submission: str
    """The file as named on the command line."""
    status: ResultStatus
    """GRADED, or ERROR when the file could not be graded at all."""
    score: float
    """Points earned."""
    max_score: float
    """Points available."""
    duration_s: float
    """Wall time of grading. Student-facing reports say it only when no hidden case ran
    (`timed`)."""
    error: str | None = None
    """Why it could not be graded, naming the file and the fix."""
    cells: tuple[CellResult, ...] = ()
    """Every code cell, and what happened when it ran."""
    exercises: tuple[ExerciseResult, ...] = ()
    """One per exercise of the assignment."""
    isolation: str = ""
    """How strongly the student's code was isolated."""
    worker: str = ""
    """How its worker was started: "zygote" (a fork of the warm interpreter, the default),
    "fresh" (a fresh interpreter: `--engine fresh`, or where no zygote can be had) or
    "kernel" (`--engine kernel`); empty when nothing ran."""
    output: str = ""
    """What the student's code printed, capped: the cells and the public checks' calls, and
    a line saying that hidden checks' calls printed, if they did."""
    hidden_output: str = ""
    """What the hidden checks' calls printed, capped: for the instructor's eyes only (the
    gradebook, `grade run --instructor`); no student-facing format shows it, since a call
    may print its hidden inputs."""
    public_only: bool = False
    """True for a self-check, which runs the public cases only."""
    sha256: str = ""
    """Hash of the submitted file."""
    grader_failed: bool = False
    """The grader, not the submission, is to blame for an ERROR: a batch grades it again."""
    files: tuple[str, ...] = ()
    """The files combined into this result, when a student handed in more than one."""
    show_hidden_after: str = ""
    """When the details of hidden checks become visible (ISO 8601, UTC); empty: never."""
    hidden_shown: bool = False
    """Whether they were visible when it was graded: the messages of hidden checks hold them."""

    @property
    def name(self) -> str:
        """The submission as its reports title it: the file's name without the folders of
        the grading machine, or the names of the files it combines."""
        return " + ".join(Path(file).name for file in self.files or (self.submission,))

    @property
    def timed(self) -> bool:
        """Whether a student-facing report may say how long grading took: not once hidden
        cases ran, nor when the grader failed (perhaps after them), since a submission can
        time its hidden calls to spell out their inputs (the instructor's views always say
        it)."""
        return not self.grader_failed and not any(
            check.visibility is Visibility.HIDDEN
            for exercise in self.exercises for check in exercise.checks)

    @property
    def problem_cells(self) -> tuple[CellResult, ...]:
        """The cells that did not simply run (errors, timeouts, crashes, skipped magics)."""
        return tuple(cell for cell in self.cells if cell.status is not CellStatus.OK)
