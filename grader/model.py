"""The data that flows through the grader, stage by stage.

submission file -> `Submission` -> `Execution` -> `CheckResult`s -> `Result` -> reports.
Every type here is a frozen dataclass; stages build new values instead of mutating old ones.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

Inputs = tuple[Any, ...]
"""Positional arguments for one call: arrays, ints, floats or None."""


class Visibility(str, enum.Enum):
    """Who may see a case's inputs and expected values."""

    PUBLIC = "public"
    HIDDEN = "hidden"


class Status(str, enum.Enum):
    """Outcome of an exercise, a cell or a whole submission."""

    PASSED = "passed"
    FAILED = "failed"
    MISSING = "missing"
    ERROR = "error"
    TIMEOUT = "timeout"
    OK = "ok"
    CRASHED = "crashed"
    SKIPPED = "skipped"
    GRADED = "graded"


# --------------------------------------------------------------------------- assignments


@dataclass(frozen=True)
class Case:
    """One call of an exercise on seeded inputs, compared against a stored reference."""

    name: str
    """Stable identifier, unique within its exercise (used as the reference key)."""
    make_inputs: Callable[[np.random.Generator], Inputs]
    """Builds the positional arguments from a seeded generator; must be deterministic."""
    seed: int = 0
    """Seed of the generator handed to `make_inputs`."""
    visibility: Visibility = Visibility.HIDDEN
    """Hidden cases never show their inputs or expected values to students."""
    rtol: float = 1e-6
    """Relative tolerance of the comparison."""
    atol: float = 1e-8
    """Absolute tolerance of the comparison."""
    note: str = ""
    """What the case exercises, shown to students (for example "one token")."""
    init_kwargs: Mapping[str, Any] = field(default_factory=dict)
    """For class exercises: keyword arguments of the constructor."""
    scored: bool = True
    """Whether a hidden case earns points. A case that cannot tell right from wrong (one token,
    where every attention returns V) or that checks what the exercise never asks for (stability
    for huge inputs) still runs and is shown, with its `note` saying why it is worth 0.
    A public case never earns points, whatever this says (`earns_points`)."""

    @property
    def earns_points(self) -> bool:
        """Whether it is worth points: scored and hidden. A public case is the example to
        check against: its inputs and expected outputs ship with the stubs, so an answer that
        looks them up must earn nothing from it (SECURITY.md, "Public cases")."""
        return self.scored and self.visibility is Visibility.HIDDEN

    def inputs(self) -> Inputs:
        """Return this case's inputs, regenerated from its seed."""
        return self.make_inputs(np.random.default_rng(self.seed))


@dataclass(frozen=True)
class Misconception:
    """A known wrong variant of an exercise, recognised by running it on the same inputs."""

    id: str
    """Stable identifier, for example "missing-scale"."""
    message: str
    """One sentence for the student, naming the mistake."""
    variant: Callable[..., Any]
    """The wrong implementation; called with a case's inputs, returns outputs like the reference."""
    conditional: str = ""
    """Empty when the mistake shows on every input, so that every scored case must reject it;
    else the inputs it shows on, in words ("inputs large enough to overflow exp()"): then the
    mistake only has to be told apart by some case of the exercise, since code with it is
    right everywhere else (`grader.authoring.fairness`)."""


@dataclass(frozen=True)
class Exercise:
    """One function or class that students implement."""

    name: str
    """The name students define, for example "multihead_scaled_self_attention"."""
    signature: str
    """The parameter list students must keep, for example "(Q, K, V, mask=None)"."""
    points: float
    """Points for the exercise, split equally across its hidden scored cases."""
    cases: tuple[Case, ...]
    """The seeded calls it is checked on."""
    kind: str = "function"
    """"function", or "class" for an nn.Module that loads a state_dict and runs forward."""
    summary: str = ""
    """One line describing what the exercise computes."""
    outputs: tuple[str, ...] = ("output",)
    """Names of the returned values; more than one means a tuple is returned."""
    tensors: str | None = None
    """None for numpy; "float64" or "float32" to hand torch tensors of that dtype to the code."""
    misconceptions: tuple[Misconception, ...] = ()
    """Known wrong variants, tried in order when a check fails."""
    properties: tuple[Callable[..., tuple[str, str] | None], ...] = ()
    """Checks of a failing output, `(inputs, obtained, expected) -> (id, message) | None`."""
    provided: bool = False
    """The notebook gives this function ready-made: it is checked and shown, never scored."""
    trivial: tuple[tuple[str, Callable[..., Any]], ...] = ()
    """Answers that compute nothing of the exercise, beyond the generic ones (an input
    returned unchanged, zeros): `(name, function of the inputs)`, for example "return V".
    No scored case may accept one (`grader.authoring.fairness`)."""
    axes: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """What the rows and the columns of each 2-D output are, for the heatmaps of a failing
    public check: `{"weights": ("query", "key")}`. Unnamed outputs say "row" and "column"."""
    notebook: str = ""
    """The stub notebook it lives in, when the assignment is split across several as the book
    splits chapter 12 (for example "udl_attention_12_2.ipynb"); empty when there is one.
    A student may hand in every part: each exercise is taken from the file where it scores
    best (`grader.pipeline.combine`)."""

    @property
    def scored_points(self) -> float:
        """Points it counts for: 0 when the notebook provides it."""
        return 0.0 if self.provided else float(self.points)

    def case_points(self, case: Case) -> float:
        """Points of one case: the exercise's points split equally across the cases that earn
        points (hidden and scored); 0 for a public or an unscored case."""
        earning = [c for c in self.cases if c.earns_points]
        return self.scored_points / len(earning) if case.earns_points and earning else 0.0

    def case(self, name: str) -> Case:
        """Return the case called `name`."""
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(f"{self.name} has no case {name!r}")


@dataclass(frozen=True)
class Assignment:
    """A set of exercises graded together, declared once in `grader.assignments`."""

    name: str
    """Identifier used on the command line and in notebook metadata."""
    title: str
    """Human title for reports."""
    exercises: tuple[Exercise, ...]
    """Everything students implement, in notebook order."""
    requires: tuple[str, ...] = ()
    """Extra modules the student's code needs preloaded (for example "torch")."""
    show_hidden_after: datetime | None = None
    """From this time on (timezone-aware), students see the details of hidden checks, as
    Gradescope's after_due_date (`grader.pipeline.disclosure`); None: never."""

    @property
    def max_score(self) -> float:
        """Total points of all exercises, but those the notebook provides."""
        return float(sum(exercise.scored_points for exercise in self.exercises))

    def exercise(self, name: str) -> Exercise:
        """Return the exercise called `name`."""
        for exercise in self.exercises:
            if exercise.name == name:
                return exercise
        raise KeyError(f"{self.name} has no exercise {name!r}")


# --------------------------------------------------------------------------- submissions


@dataclass(frozen=True)
class Statement:
    """One top-level statement of a code cell, as the worker will run it."""

    index: int
    """Position among the top-level statements of its cell."""
    lineno: int
    """First line in the cell (1-based)."""
    skip_reason: str | None = None
    """Why it is not run (a shell escape, an unsupported magic), or None to run it."""


@dataclass(frozen=True)
class Cell:
    """A code cell after IPython syntax has been turned into Python."""

    index: int
    """1-based position of the cell in the notebook (a module is one cell)."""
    source: str
    """Python source, with magics already transformed."""
    statements: tuple[Statement, ...]
    """Its top-level statements; empty when `syntax_error` is set."""
    syntax_error: str | None = None
    """The SyntaxError that stops the cell from running at all, with its line."""
    number: int = 1
    """1-based position among the code cells: the cell as a student counts them."""
    execution_count: int | None = None
    """The `In [n]` the notebook was saved with, or None when the cell never ran."""
    imports: tuple[str, ...] = ()
    """The top-level packages its import statements name, read from the source."""


@dataclass(frozen=True)
class Submission:
    """A student's file, loaded and split into cells; nothing of it has run yet."""

    path: str
    """The file as named on the command line."""
    kind: str
    """"notebook" or "module"."""
    cells: tuple[Cell, ...]
    """Code cells in order."""
    assignment_hint: str | None = None
    """Assignment named in the notebook's metadata, if any."""
    sha256: str = ""
    """Hash of the file's bytes, to tell resubmissions apart."""

    @property
    def imports(self) -> frozenset[str]:
        """The top-level packages that its cells import (read from the source)."""
        return frozenset(name for cell in self.cells for name in cell.imports)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class CellResult:
    """What happened when one cell ran."""

    index: int
    """1-based position of the cell in the notebook."""
    status: Status
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
    """The reference output (2-D, at most a few dozen cells a side)."""
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
    status: Status = Status.PASSED
    """PASSED, FAILED, MISSING, ERROR or TIMEOUT."""
    message: str = ""
    """Why it failed, in the style of pytest's approx."""
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
    """For a failing hidden check of an assignment with `show_hidden_after`: its message as
    it reads once that time has passed (numbers of the comparison, never the inputs). Only
    Gradescope's after_due_date tests print it; `grader.pipeline.disclosure` puts it in
    `message`."""

    @property
    def scored(self) -> bool:
        """Whether it counts towards the score (unscored checks are advice)."""
        return self.max_score > 0

    @property
    def worth(self) -> str:
        """What it is worth, as reports label it: "hidden", "hidden, no points", or "public
        example, no points" (a public case never earns points)."""
        if self.visibility is Visibility.PUBLIC:
            return "public example, no points"
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
    status: Status
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

    @property
    def scored(self) -> bool:
        """Whether it counts towards the score (a function the notebook provides does not;
        a self-check, whose public cases are worth no points, still counts the others)."""
        return not self.provided

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
        if self.status is Status.MISSING and self.checks:
            return self.checks[0].message
        return ""


@dataclass(frozen=True)
class Result:
    """The graded submission; reports are pure functions of it."""

    assignment: str
    """The assignment's name."""
    submission: str
    """The file as named on the command line."""
    status: Status
    """GRADED, or ERROR when the file could not be graded at all."""
    score: float
    """Points earned."""
    max_score: float
    """Points available."""
    duration_s: float
    """Wall time of grading."""
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
    def problem_cells(self) -> tuple[CellResult, ...]:
        """The cells that did not simply run (errors, timeouts, crashes, skipped magics)."""
        return tuple(cell for cell in self.cells if cell.status is not Status.OK)
