"""Reference outputs as stored: written and read with the hash of the solution that made them.

Two files per assignment, where the `Layout` says (`grader.course.layout`):
- hidden: `solutions/references/<name>.npz`, every case; it stays with the instructor's solutions.
- public: `grader/course/public/<name>.npz`, public cases only; it ships in the package for
  `check()`.

Computing them (running the solution in the sandbox) is authoring's job:
`grader.authoring.building`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from types import ModuleType

import numpy as np

from grader.course.layout import ENV_SOLUTIONS, Layout
from grader.errors import ReferencesError
from grader.model import Assignment, Visibility

SCHEMA = "grader.references/1"

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
    """Folder of the reference solutions (the current `Layout`'s: `$GRADER_SOLUTIONS`, else
    the project's `solutions/`)."""
    return Layout.from_environment().solutions


def hidden_path(name: str) -> Path:
    """File of all references of an assignment (`$GRADER_REFERENCES` overrides its folder)."""
    return Layout.from_environment().hidden(name)


def public_path(name: str) -> Path:
    """File of the public references, shipped inside the package (`$GRADER_PUBLIC_REFERENCES`
    names another folder, for an assignment declared outside the package)."""
    return Layout.from_environment().public(name)


def solution_file(name: str) -> Path:
    """The reference solution module of an assignment."""
    return Layout.from_environment().solution(name)


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


def write(path: Path, assignment: Assignment, sha: str,
          outputs: Mapping[tuple[str, str], Outputs]) -> None:
    """Store outputs computed from the solution whose hash is `sha`, as `read` reads them."""
    arrays = {f"{ex}/{case}/{i}": array
              for (ex, case), values in outputs.items() for i, array in enumerate(values)}
    meta = {"schema": SCHEMA, "assignment": assignment.name, "solution_sha256": sha,
            "numpy": np.__version__}
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays["__meta__"] = np.array(json.dumps(meta))
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]


def read(path: Path, name: str) -> References:
    """Load a references file written by `write`. A process reads each file once, and again
    only when it has changed (its inode, size, modification or change time). Each call gets
    a mapping of its own; the arrays are shared, so they are read-only."""
    if not path.is_file():
        raise ReferencesError(f"{path}: no references for {name}; "
                              f"run `grade references build {name}`")
    status = path.stat()
    kept = _read(str(path), name, (status.st_dev, status.st_ino, status.st_size,
                                   status.st_mtime_ns, status.st_ctime_ns))
    return replace(kept, outputs=dict(kept.outputs))


@lru_cache(maxsize=32)
def _read(where: str, name: str, version: tuple[int, ...]) -> References:
    """`read`'s work, kept per file path, assignment and `version` of the file's status."""
    path = Path(where)
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
    for arrays in ordered.values():
        for array in arrays:
            array.flags.writeable = False
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
