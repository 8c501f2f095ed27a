"""The one registry of assignments: nothing else in the code lists exercises.

Assignments come from the modules of `grader.assignments`, from the entry-point group
`attention_grader.assignments` (an instructor's own package), and from `*.py` declarations in
the folders named by the environment variable `GRADER_ASSIGNMENTS` (separated by `os.pathsep`;
the `Layout`'s `declaration_folders`).
Each such module defines `ASSIGNMENT = Assignment(...)`.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
from datetime import datetime
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

from grader import assignments as builtin
from grader.course.layout import ENV_ASSIGNMENTS, Layout
from grader.errors import SpecError, UsageError
from grader.model import CREDITS, Assignment

ENTRY_POINT_GROUP = "attention_grader.assignments"
ENV_FOLDERS = ENV_ASSIGNMENTS


def _from_module(module: ModuleType, origin: str) -> Assignment:
    assignment = getattr(module, "ASSIGNMENT", None)
    if not isinstance(assignment, Assignment):
        raise SpecError(f"{origin}: defines no ASSIGNMENT = Assignment(...); add one")
    return assignment


def _from_file(path: Path) -> Assignment:
    spec = importlib.util.spec_from_file_location(f"grader_assignment_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise SpecError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # an instructor's declaration is broken: say where
        raise SpecError(f"{path}: importing the declaration failed: {exc!r}") from exc
    return _from_module(module, str(path))


def from_file(path: Path) -> Assignment:
    """The assignment a declaration file defines, validated (before it is registered)."""
    assignment = _from_file(path)
    validate(assignment, str(path))
    return assignment


def validate(assignment: Assignment, origin: str) -> None:
    """Raise SpecError naming what is inconsistent in a declaration."""
    after = assignment.show_hidden_after
    if after is not None and (not isinstance(after, datetime) or after.tzinfo is None):
        raise SpecError(f"{origin}: show_hidden_after of {assignment.name} needs a time zone; "
                        "write datetime(2025, 6, 1, 18, 0, tzinfo=timezone.utc)")
    if assignment.credit not in CREDITS:
        raise SpecError(f"{origin}: {assignment.name} has credit {assignment.credit!r}; "
                        f"use {' or '.join(repr(c) for c in CREDITS)}")
    names = [exercise.name for exercise in assignment.exercises]
    if len(set(names)) != len(names):
        raise SpecError(f"{origin}: {assignment.name} declares an exercise twice")
    for exercise in assignment.exercises:
        cases = [case.name for case in exercise.cases]
        if not cases or len(set(cases)) != len(cases):
            raise SpecError(f"{origin}: {exercise.name} needs cases with distinct names")
        if exercise.points <= 0:
            raise SpecError(f"{origin}: {exercise.name} must be worth a positive number of points")
        if exercise.kind not in ("function", "class"):
            raise SpecError(f"{origin}: {exercise.name} has kind {exercise.kind!r}; "
                            "use 'function' or 'class'")
        try:
            ast.parse(f"def stub{exercise.signature}: pass")
        except SyntaxError:
            raise SpecError(f"{origin}: {exercise.name} has an invalid signature "
                            f"{exercise.signature!r}") from None


@cache
def assignments() -> dict[str, Assignment]:
    """Every known assignment by name, validated."""
    found: list[tuple[Assignment, str]] = []
    for info in pkgutil.iter_modules(builtin.__path__):
        module = importlib.import_module(f"{builtin.__name__}.{info.name}")
        if hasattr(module, "ASSIGNMENT"):  # the others are shared helpers
            found.append((_from_module(module, module.__name__), module.__name__))
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        found.append((entry.load(), f"entry point {entry.name}"))
    for folder in Layout.from_environment().declaration_folders:
        for path in sorted(folder.glob("*.py")):
            found.append((_from_file(path), str(path)))
    registry: dict[str, Assignment] = {}
    for assignment, origin in found:
        validate(assignment, origin)
        if assignment.name in registry:
            raise SpecError(f"{origin}: assignment {assignment.name!r} is already declared")
        registry[assignment.name] = assignment
    return registry


def get(name: str) -> Assignment:
    """The assignment called `name`, or a UsageError listing the known ones."""
    known = assignments()
    if name not in known:
        raise UsageError(f"unknown assignment {name!r}; known: {', '.join(sorted(known))}")
    return known[name]
