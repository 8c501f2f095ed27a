"""Reference outputs: computed from `solutions/`, stored with the hash of the code that made them.

Two files per assignment:
- hidden: `solutions/references/<name>.npz`, every case; it stays with the instructor's solutions.
- public: `grader/spec/public/<name>.npz`, public cases only; it ships in the package for `check()`.

The solution runs in the sandbox, as a submission does (`compute`): never in this process, so
that a solution made from an instructor's notebook (`grade assign`) cannot touch the grader.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from grader.errors import ReferencesError, SubmissionError
from grader.model import Assignment, Visibility
from grader.pipeline import loading
from grader.results import CellStatus, CheckStatus
from grader.sandbox.limits import Limits
from grader.sandbox.session import SandboxConfig, Session

SCHEMA = "grader.references/1"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
ENV_SOLUTIONS = "GRADER_SOLUTIONS"
ENV_REFERENCES = "GRADER_REFERENCES"
ENV_PUBLIC = "GRADER_PUBLIC_REFERENCES"
# A solution is trusted to finish, not to be quick: torch builds a model per case.
LIMITS = Limits(cell_timeout=120.0, call_timeout=120.0, submission_timeout=3600.0)

Outputs = tuple[np.ndarray, ...]


@dataclass(frozen=True)
class References:
    """Stored outputs of one assignment's solutions."""

    assignment: str
    """The assignment's name."""
    solution_sha256: str
    """Hash of the solution file the outputs were computed from."""
    outputs: Mapping[tuple[str, str], Outputs]
    """(exercise, case) -> the solution's outputs, always a tuple of float64 arrays."""
    path: Path
    """Where they were read from."""

    def get(self, exercise: str, case: str) -> Outputs:
        """The outputs of one case; ReferencesError when they were never built."""
        try:
            return self.outputs[(exercise, case)]
        except KeyError:
            raise ReferencesError(
                f"{self.path}: no reference for {exercise}/{case}; "
                f"run `grade references build {self.assignment}`") from None


def solutions_dir() -> Path:
    """Folder of the reference solutions (`$GRADER_SOLUTIONS`, else the project's `solutions/`)."""
    return Path(os.environ.get(ENV_SOLUTIONS) or PACKAGE_DIR.parent / "solutions")


def hidden_path(name: str) -> Path:
    """File of all references of an assignment (`$GRADER_REFERENCES` overrides its folder)."""
    folder = os.environ.get(ENV_REFERENCES) or solutions_dir() / "references"
    return Path(folder) / f"{name}.npz"


def public_path(name: str) -> Path:
    """File of the public references, shipped inside the package (`$GRADER_PUBLIC_REFERENCES`
    names another folder, for an assignment declared outside the package)."""
    folder = os.environ.get(ENV_PUBLIC) or PACKAGE_DIR / "spec" / "public"
    return Path(folder) / f"{name}.npz"


def solution_file(name: str) -> Path:
    """The reference solution module of an assignment."""
    return solutions_dir() / f"{name}.py"


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_solution(name: str) -> ModuleType:
    """Import `solutions/<name>.py` in this process, for the tests; references never do."""
    path = solution_file(name)
    if not path.is_file():
        raise ReferencesError(f"{path}: no solution file; write it, or set {ENV_SOLUTIONS}")
    spec = importlib.util.spec_from_file_location(f"solution_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def as_outputs(value: object, count: int) -> Outputs:
    """Normalise a solution's return value to a tuple of `count` float64 arrays."""
    items: Sequence[object] = value if count > 1 else (value,)  # type: ignore[assignment]
    return tuple(np.asarray(item, dtype=np.float64) for item in items)


def compute(assignment: Assignment, solution: Path | None = None
            ) -> dict[tuple[str, str], Outputs]:
    """Run the solution on every case's inputs, in the sandbox, as a submission is run."""
    path = solution or solution_file(assignment.name)
    fix = "fix the solution (or the case's declaration)"
    if not path.is_file():
        raise ReferencesError(f"{path}: no solution file; write it, or set {ENV_SOLUTIONS}")
    try:
        module = loading.load(path, LIMITS)
    except SubmissionError as exc:
        raise ReferencesError(exc.message) from None
    outputs: dict[tuple[str, str], Outputs] = {}
    with Session(SandboxConfig(LIMITS, assignment.requires, "solution")) as session:
        for cell in session.run(module):
            if cell.status not in (CellStatus.OK, CellStatus.SKIPPED):
                raise ReferencesError(f"{path}: {cell.message}; fix the solution")
        for exercise in assignment.exercises:
            for case in exercise.cases:
                where = f"{path}: {exercise.name}/{case.name}"
                outcome = session.call(exercise.name, exercise.kind, case.inputs(),
                                       dict(case.init_kwargs), exercise.tensors)
                if outcome.status is not CheckStatus.PASSED:
                    raise ReferencesError(f"{where}: {outcome.message}; {fix}")
                try:
                    outputs[(exercise.name, case.name)] = as_outputs(
                        outcome.value, len(exercise.outputs))
                except (TypeError, ValueError):
                    raise ReferencesError(f"{where}: returned something that is not "
                                          f"{len(exercise.outputs)} array(s) of numbers; "
                                          f"{fix}") from None
    return outputs


def _write(path: Path, assignment: Assignment, sha: str,
           outputs: Mapping[tuple[str, str], Outputs]) -> None:
    arrays = {f"{ex}/{case}/{i}": array
              for (ex, case), values in outputs.items() for i, array in enumerate(values)}
    meta = {"schema": SCHEMA, "assignment": assignment.name, "solution_sha256": sha,
            "numpy": np.__version__}
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays["__meta__"] = np.array(json.dumps(meta))
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]


def build(assignment: Assignment, solution: Path | None = None, hidden: Path | None = None,
          shipped: Path | None = None) -> tuple[Path, Path]:
    """Recompute and store the hidden and public references; return both paths (by default
    where grading looks for them; `grade assign` names the files of its own folder)."""
    solution = solution or solution_file(assignment.name)
    outputs = compute(assignment, solution)
    sha = file_sha256(solution)
    public = {key: value for key, value in outputs.items()
              if assignment.exercise(key[0]).case(key[1]).visibility is Visibility.PUBLIC}
    hidden = hidden or hidden_path(assignment.name)
    shipped = shipped or public_path(assignment.name)
    _write(hidden, assignment, sha, outputs)
    _write(shipped, assignment, sha, public)
    return hidden, shipped


def read(path: Path, name: str) -> References:
    """Load a references file written by `build`."""
    if not path.is_file():
        raise ReferencesError(f"{path}: no references for {name}; "
                              f"run `grade references build {name}`")
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["__meta__"]))
        outputs: dict[tuple[str, str], list[np.ndarray]] = {}
        for key in data.files:
            if key == "__meta__":
                continue
            exercise, case, index = key.split("/")
            outputs.setdefault((exercise, case), []).append((int(index), data[key]))  # type: ignore[arg-type]
    if meta.get("schema") != SCHEMA or meta.get("assignment") != name:
        raise ReferencesError(f"{path}: not a references file for {name}; rebuild it")
    ordered = {key: tuple(array for _, array in sorted(values))  # type: ignore[misc]
               for key, values in outputs.items()}
    return References(name, meta["solution_sha256"], ordered, path)


def load(assignment: Assignment, public_only: bool = False) -> References:
    """The stored references of an assignment: all of them, or the shipped public ones."""
    path = public_path(assignment.name) if public_only else hidden_path(assignment.name)
    return read(path, assignment.name)


def not_public(assignment: Assignment, stored: References) -> list[str]:
    """The outputs a public references file holds that are not a public case's
    ("exercise/case"): a case made hidden since it was built, or one that is not declared."""
    public = {(exercise.name, case.name) for exercise in assignment.exercises
              for case in exercise.cases if case.visibility is Visibility.PUBLIC}
    return [f"{exercise}/{case}" for exercise, case in stored.outputs
            if (exercise, case) not in public]


def ready(assignment: Assignment, public_only: bool = False) -> References:
    """The references that grading will use, checked before any submission is graded.

    Raises ReferencesError, naming the file and the fix, when they are missing, lack a case,
    or were built from another version of the solution (when the solution is here to tell).
    """
    stored = load(assignment, public_only)
    rebuild = f"run `grade references build {assignment.name}`"
    missing = [f"{exercise.name}/{case.name}" for exercise in assignment.exercises
               for case in exercise.cases
               if (not public_only or case.visibility is Visibility.PUBLIC)
               and (exercise.name, case.name) not in stored.outputs]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise ReferencesError(f"{stored.path}: no reference for {', '.join(missing[:3])}"
                              f"{more}; {rebuild}")
    solution = solution_file(assignment.name)
    if solution.is_file() and file_sha256(solution) != stored.solution_sha256:
        raise ReferencesError(f"{stored.path}: stale, built from another version of "
                              f"{solution}; {rebuild}")
    return stored


def verify(assignment: Assignment,
           fresh: Mapping[tuple[str, str], Outputs] | None = None) -> list[str]:
    """What no longer agrees between the stored references and `solutions/`; empty when all do.
    `fresh` is what `compute` returned, when the caller has it."""
    problems = []
    solution = solution_file(assignment.name)
    if not solution.is_file():
        return [f"{solution}: no solution file; write it, or set {ENV_SOLUTIONS}"]
    sha = file_sha256(solution)
    if fresh is None:
        try:
            fresh = compute(assignment, solution)
        except ReferencesError as exc:
            return [str(exc)]
    rebuild = f"run `grade references build {assignment.name}`"
    for path, public_only in ((hidden_path(assignment.name), False),
                              (public_path(assignment.name), True)):
        try:
            stored = read(path, assignment.name)
        except ReferencesError as exc:
            problems.append(str(exc))
            continue
        if stored.solution_sha256 != sha:
            problems.append(f"{path}: stale, built from another version of {solution}; "
                            f"{rebuild}")
        if public_only:
            problems += [f"{path}: holds {name}, which is not a public case: it ships to "
                         f"students with the package; {rebuild}"
                         for name in not_public(assignment, stored)]
        for (exercise, case), outputs in fresh.items():
            spec = assignment.exercise(exercise).case(case)
            if public_only and spec.visibility is not Visibility.PUBLIC:
                continue
            old = stored.outputs.get((exercise, case))
            if old is None or len(old) != len(outputs) or not all(
                    a.shape == b.shape and np.allclose(a, b, rtol=spec.rtol, atol=spec.atol)
                    for a, b in zip(old, outputs, strict=True)):
                problems.append(f"{path}: {exercise}/{case} differs from what the solution "
                                f"computes; {rebuild}")
    return problems
