"""The one registry of assignments: nothing else in the code lists exercises.

Assignments come from the modules of `grader.assignments`, from the entry-point group
`attention_grader.assignments` (an instructor's own package), and from `*.py` declarations in
the folders named by the environment variable `GRADER_ASSIGNMENTS` (separated by `os.pathsep`;
the `Layout`'s `declaration_folders`).
Each such module defines `ASSIGNMENT = Assignment(...)`.

Entry points are read by `importlib.metadata`, which parses every installed distribution's
metadata; a `grade run` would pay for it about a fifth of numpy's import. So a plain look at the
`entry_points.txt` files it would read (`_may_have_plugins`) comes first, and only a file that
names the group, or anything such a look cannot read (a zip on the path, another finder of
distributions), brings `importlib.metadata` in.

A student's `check()` asks for one exercise, not every assignment (`declaring`): the package's
declarations are read as source first (`_written`), and only those that name the exercise are
imported, so that a check loads one declaration and its helpers, not all of them. A declaration
whose exercises cannot be read that way (a name that is not a literal string) is imported.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import os
import pkgutil
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from grader import assignments as builtin
from grader.course.layout import ENV_ASSIGNMENTS, Layout
from grader.errors import SpecError, UsageError
from grader.model import CREDITS, Assignment

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.metadata import EntryPoint

ENTRY_POINT_GROUP = "attention_grader.assignments"
ENV_FOLDERS = ENV_ASSIGNMENTS


def _may_have_plugins(path: Sequence[str] | None = None,
                      finders: Sequence[object] | None = None) -> bool:
    """Whether an installed distribution may declare an entry point of `ENTRY_POINT_GROUP`:
    False only when every `*.dist-info` and `*.egg-info` folder on `path` (`sys.path`) was read
    and none has an `entry_points.txt` that names the group, and the only finder of
    distributions in `finders` (`sys.meta_path`) is the standard one, which reads those."""
    path = sys.path if path is None else path
    finders = sys.meta_path if finders is None else finders
    readers = [finder for finder in finders if hasattr(finder, "find_distributions")]
    if readers != [importlib.machinery.PathFinder]:
        return True
    for entry in path:
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                return True  # a zip or an egg: importlib.metadata reads inside it
            continue
        try:
            children = [child.name for child in os.scandir(folder)]
        except OSError:
            return True
        for name in children:
            if not name.lower().endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), "rb") as file:
                    if ENTRY_POINT_GROUP.encode() in file.read():
                        return True
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:
                return True
    return False


def _plugins() -> list[EntryPoint]:
    """The entry points of `ENTRY_POINT_GROUP`, as `importlib.metadata` finds them."""
    if not _may_have_plugins():
        return []
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP))


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


def _builtin() -> Iterator[str]:
    """The names of the package's declaration modules (and of their shared helpers)."""
    for info in pkgutil.iter_modules(builtin.__path__):
        yield f"{builtin.__name__}.{info.name}"


@cache
def _written(module: str) -> set[tuple[str, str | None]] | None:
    """The exercises a package module's source writes as `Exercise(name=..., signature=...)`:
    each name with its signature (None where that is not a literal string); None when a name
    is not a literal string, or the source cannot be had."""
    try:
        spec = importlib.util.find_spec(module)
        read = getattr(spec.loader, "get_source", None) if spec else None
        source = read(module) if read else None
        tree = ast.parse(source) if isinstance(source, str) else None
    except (ImportError, OSError, SyntaxError, ValueError):
        return None
    if tree is None:
        return None
    found: set[tuple[str, str | None]] = set()
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    for node in calls:
        if getattr(node.func, "id", getattr(node.func, "attr", None)) != "Exercise":
            continue
        given = {k.arg: k.value for k in node.keywords if k.arg in ("name", "signature")}
        name, signature = given.get("name"), given.get("signature")
        if not isinstance(name, ast.Constant) or not isinstance(name.value, str):
            return None
        found.add((name.value, signature.value if isinstance(signature, ast.Constant)
                   and isinstance(signature.value, str) else None))
    return found


def _registered(modules: list[str]) -> dict[str, Assignment]:
    """The assignments of the package's `modules`, of the plugins and of the declaration
    folders, by name, validated; SpecError for one declared twice."""
    found: list[tuple[Assignment, str]] = []
    for name in modules:
        module = importlib.import_module(name)
        if hasattr(module, "ASSIGNMENT"):  # the others are shared helpers
            found.append((_from_module(module, module.__name__), module.__name__))
    found.extend((entry.load(), f"entry point {entry.name}") for entry in _plugins())
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


@cache
def assignments() -> dict[str, Assignment]:
    """Every known assignment by name, validated."""
    return _registered(list(_builtin()))


def declaring(exercise: str, fits: Callable[[str], bool] | None = None
              ) -> dict[str, Assignment]:
    """The known assignments that may declare `exercise`, as `assignments()` orders them:
    of the package's declarations, only those whose source names it (those whose signature
    `fits`, where one does) and every plugin's and folder's; every declaration where one
    cannot be read, or where they are all loaded already."""
    if assignments.cache_info().currsize:
        return assignments()
    read = {module: _written(module) for module in _builtin()}
    if any(found is None for found in read.values()):
        return assignments()
    named = [m for m, found in read.items() if any(n == exercise for n, _ in found or ())]
    fitting = [m for m in named if fits is None or any(
        n == exercise and (signature is None or fits(signature))
        for n, signature in read[m] or ())]
    return _registered(fitting or named)


def get(name: str) -> Assignment:
    """The assignment called `name`, or a UsageError listing the known ones."""
    known = assignments()
    if name not in known:
        raise UsageError(f"unknown assignment {name!r}; known: {', '.join(sorted(known))}")
    return known[name]
