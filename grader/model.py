"""What an assignment is, as instructors declare it: `Assignment`, `Exercise`, `Case`,
`Misconception`, `Visibility`, `PRACTICE` (the practice case's name) and `Inputs`.

The data that flows through the grader stage by stage lives beside it:
submission file -> `grader.submission.Submission` -> sandbox -> `grader.results.CheckResult`s
-> `grader.results.Result` -> reports. Every type is a frozen dataclass; stages build new
values instead of mutating old ones.
"""

from __future__ import annotations

import copy
import enum
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Literal

import numpy as np

Inputs = tuple[Any, ...]
"""Positional arguments for one call: arrays, ints, floats or None."""


class Visibility(enum.StrEnum):
    """Who may see a case's inputs and expected values."""

    PUBLIC = "public"
    HIDDEN = "hidden"


PRACTICE = "practice"
"""The name of an exercise's practice case: public and worth no points like the notebook's
example, but at other sizes than the example's, drawn as the hidden cases are from a seed of
its own, so that a function that only works at the notebook's sizes fails a check students
can run. Reports label it "public, no points": the notebook shows no such example."""
PRACTICE_NOTE = "other sizes than the notebook's example, worth no points"
"""The practice case's note, which reports show beside it."""


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
        """Return this case's inputs, made from its seed. They are made once per process
        (grading asks for them about twice per case); each call returns a deep copy of them,
        so that a caller that changes an array in place changes nothing for the next one."""
        return copy.deepcopy(self._made)

    @cached_property
    def _made(self) -> Inputs:
        """The inputs as `make_inputs` made them, never handed out (`inputs` copies them)."""
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
    """"function", or "class" for an nn.Module: each case's first input is a state_dict (its
    weights, drawn from the case's seed); the grader builds the module with the case's
    `init_kwargs`, loads the state_dict, calls `eval()` and runs forward on the other inputs
    under `torch.no_grad()` (`grader.sandbox.inside.calling.invoke`)."""
    summary: str = ""
    """One line describing what the exercise computes."""
    outputs: tuple[str, ...] = ("output",)
    """Names of the returned values; more than one means a tuple is returned."""
    tensors: str | None = None
    """None for numpy arrays; "float64" or "float32" to hand the code CPU torch tensors: each
    float array becomes a tensor of that dtype, any other array keeps its own (a boolean mask
    stays boolean, integers stay int64) (`grader.sandbox.inside.calling.to_tensors`)."""
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
    alternatives: tuple[str, ...] = ()
    """Other correct implementations (a loops version beside a vectorised one), each of which
    `grade validate` requires to get full marks on every scored case: a module's path relative
    to the solutions folder ("my_unit_loops.py"), or Python source (text with a line break).
    Each defines the function and whatever it calls."""

    @property
    def scored_points(self) -> float:
        """Points it counts for: 0 when the notebook provides it."""
        return 0.0 if self.provided else float(self.points)

    def case(self, name: str) -> Case:
        """Return the case called `name`."""
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(f"{self.name} has no case {name!r}")


Credit = Literal["as written", "own-code"]
"""What a check earns that fails only through a function its exercise calls (`Assignment`)."""
CREDITS: tuple[Credit, ...] = typing.get_args(Credit)


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
    layout: str = ""
    """How the unit lays out its arrays, in words that finish "in this unit ...", for example
    "columns are tokens, X has shape (D, N)". When a call of one of its exercises fails on
    shapes that do not fit (NumPy's "not aligned", "mismatch in its core dimension", "could
    not be broadcast"), the check's message says it first and keeps NumPy's text below
    (`grader.pipeline.layout_hint`). A layout that ends "a product such as X @ omega_q treats
    rows as tokens" is said only when the function has such a product, and names it in the
    example's place. No digits: it is shown on hidden checks too. Empty: no hint."""
    credit: Credit = "as written"
    """What a check earns when it fails only because a graded or given function its exercise
    calls fails, and passes with the reference of that function in its place
    (`grader.pipeline.owncode`): "as written", nothing (the code is graded as it runs, and
    the feedback names the function where the mistake is); "own-code", its points, so that a
    mistake costs only the exercise where it is."""

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
