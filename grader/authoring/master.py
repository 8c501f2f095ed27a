"""The instructor's master notebook: exercise text, solutions between markers, and the config.

A solution is written between `# BEGIN SOLUTION` and `# END SOLUTION` lines, inside the body of
a graded function. The config names the assignment, its title and its graded functions with
their points, either in a first cell that starts with `# ASSIGNMENT CONFIG` (TOML, as otter's
config cell) or in the notebook's metadata, `{"grader": {"assignment": ..., "title": ...,
"exercises": {...}}}`. Pure: reads one file, runs nothing.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.authoring import leaks
from grader.errors import SpecError, SubmissionError
from grader.pipeline import ipython_syntax, notebooks

BEGIN = "# BEGIN SOLUTION"
END = "# END SOLUTION"
CONFIG = "# ASSIGNMENT CONFIG"
NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
EXERCISE_KEYS = {"points", "outputs", "summary", "provided"}
CONFIG_HELP = ("start the notebook with a cell that begins with '# ASSIGNMENT CONFIG' followed "
               "by TOML (assignment = \"name\", title = \"...\", and an [exercises] table of "
               "function = points), or put the same in the notebook's metadata under \"grader\"")


@dataclass(frozen=True)
class Graded:
    """A function or class of the master that students write and the grader checks."""

    name: str
    """Its name in the notebook."""
    points: float
    """Points it is worth."""
    outputs: tuple[str, ...] = ()
    """Names of its returned values; empty: read from its `return` statement."""
    summary: str = ""
    """One line on what it computes; empty: the first line of its docstring."""
    provided: bool = False
    """Given ready-made in the student's notebook (no solution region): checked, not scored."""


@dataclass(frozen=True)
class Master:
    """A master notebook, read and checked."""

    path: Path
    """The file."""
    assignment: str
    """The assignment's name, used for every file `grade assign` writes."""
    title: str
    """Its title in reports."""
    graded: tuple[Graded, ...]
    """What students write, in the config's order."""
    notebook: Mapping[str, Any]
    """The notebook as JSON, without its config cell."""
    dropped: int = 0
    """Cells dropped before `notebook`'s (the config cell): its cell N is the file's N + this."""

    @property
    def code_cells(self) -> tuple[str, ...]:
        """The source of every code cell, solutions and markers included."""
        return tuple(_source(cell) for cell in self.notebook["cells"]
                     if cell.get("cell_type") == "code")

    def graded_named(self, name: str) -> Graded:
        """The graded function or class called `name`."""
        return next(graded for graded in self.graded if graded.name == name)


def _source(cell: Mapping[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _fail(path: Path, problem: str, fix: str) -> SpecError:
    return SpecError(f"{path}: {problem}; {fix}")


def read(path: Path) -> Master:
    """Read a master notebook; SpecError naming the file, what is wrong and the fix."""
    try:
        notebook = notebooks.read(str(path), path.read_text(encoding="utf-8"),
                                  fix="re-save it from Jupyter")
    except OSError as exc:
        raise _fail(path, f"cannot be read ({exc.strerror})", "name an existing notebook") \
            from None
    except ValueError as exc:  # not UTF-8
        raise _fail(path, f"is not notebook JSON ({exc})", "re-save it from Jupyter") from None
    except SubmissionError as exc:
        raise SpecError(exc.message) from None
    if not isinstance(notebook.get("cells"), list):
        raise _fail(path, "is not an nbformat 4 notebook", "re-save it from Jupyter")
    cells = list(notebook["cells"])
    _check_text_cells(path, cells)
    config: Mapping[str, Any] | None = None
    if cells and _source(cells[0]).lstrip().startswith(CONFIG):
        try:
            config = tomllib.loads(_source(cells[0]))
        except tomllib.TOMLDecodeError as exc:
            raise _fail(path, f"the config cell is not valid TOML ({exc})",
                        "fix the first cell") from None
        cells = cells[1:]
    elif isinstance(notebook.get("metadata", {}).get("grader"), dict):
        config = notebook["metadata"]["grader"]
    if config is None or "exercises" not in config:
        raise _fail(path, "names no assignment and no graded functions", CONFIG_HELP)
    name, title = config.get("assignment"), config.get("title")
    if not isinstance(name, str) or not NAME.match(name):
        raise _fail(path, f"the assignment name {name!r} is not a lowercase identifier",
                    "write assignment = \"my_unit\" (letters, digits and _)")
    graded = _graded(path, config["exercises"])
    master = Master(path, name, str(title or name), graded, {**notebook, "cells": cells},
                    len(notebook["cells"]) - len(cells))
    _check_regions(master)
    return master


def _check_text_cells(path: Path, cells: list[Any]) -> None:
    """A solution marker in a markdown or raw cell (source, attachments or metadata) would go
    to students verbatim: only code cells are stubbed."""
    for number, cell in enumerate(cells, start=1):
        if isinstance(cell, dict) and cell.get("cell_type") != "code":
            key = leaks.marked(cell)
            if key:
                raise _fail(path, f"cell {number} ({cell.get('cell_type')}) holds a solution "
                            f"marker ({BEGIN}) in its {key}",
                            "move the solution into a code cell, or remove the markers")


def _graded(path: Path, table: object) -> tuple[Graded, ...]:
    if not isinstance(table, Mapping) or not table:
        raise _fail(path, "the config's exercises are not a table of function = points",
                    "write [exercises] then one line per graded function, e.g. softmax = 2")
    found = []
    for name, spec in table.items():
        entry: Any = {"points": spec} if isinstance(spec, (int, float)) else spec
        if not isinstance(entry, Mapping) or not isinstance(entry.get("points"), (int, float)) \
                or isinstance(entry.get("points"), bool) or entry["points"] <= 0:
            raise _fail(path, f"exercise {name!r} has no positive number of points",
                        f"write {name} = 2, or {name} = {{ points = 2 }}")
        unknown = set(entry) - EXERCISE_KEYS
        if unknown:
            raise _fail(path, f"exercise {name!r} has unknown keys {sorted(unknown)}",
                        f"use only {sorted(EXERCISE_KEYS)}")
        found.append(Graded(str(name), float(entry["points"]),
                            tuple(str(o) for o in entry.get("outputs", ())),
                            str(entry.get("summary", "")), bool(entry.get("provided", False))))
    return tuple(found)


def regions(source: str) -> list[tuple[int, int]]:
    """The solution regions of a cell: (BEGIN line, END line), 0-based; ValueError naming the
    line of a marker without its partner."""
    found, start = [], None
    for number, line in enumerate(source.splitlines()):
        marker = line.strip()
        if marker == BEGIN:
            if start is not None:
                raise ValueError(f"line {number + 1}: {BEGIN} inside another solution region")
            start = number
        elif marker == END:
            if start is None:
                raise ValueError(f"line {number + 1}: {END} without {BEGIN}")
            found.append((start, number))
            start = None
    if start is not None:
        raise ValueError(f"line {start + 1}: {BEGIN} without {END}")
    return found


def _owner(tree: ast.Module | None, line: int) -> str:
    """The top-level function or class whose body holds 1-based `line`, or ""."""
    for node in tree.body if tree else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                node.lineno < line <= (node.end_lineno or node.lineno):
            return node.name
    return ""


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(ipython_syntax.to_python(source))
    except (SyntaxError, ValueError):
        return None


def _check_regions(master: Master) -> None:
    owners: set[str] = set()
    for number, source in enumerate(master.code_cells, start=1):
        try:
            found = regions(source)
        except ValueError as exc:
            raise _fail(master.path, f"code cell {number}, {exc}",
                        "close every solution region, and do not nest them") from None
        tree = _parse(source)
        for begin, _ in found:
            owner = _owner(tree, begin + 1)
            if not owner:
                raise _fail(master.path, f"code cell {number}, line {begin + 1}: a solution "
                            "region outside a function or class",
                            "put the markers inside the body of a graded function")
            owners.add(owner)
    defined = {name for source in master.code_cells for name in definitions(source)}
    for graded in master.graded:
        if graded.name not in defined:
            raise _fail(master.path, f"{graded.name} is graded but no code cell defines it",
                        "define it, or remove it from the config")
        if graded.name not in owners and not graded.provided:
            raise _fail(master.path, f"{graded.name} has no {BEGIN} region, so students would "
                        "get it ready-made", "mark its solution, or declare it provided = true")


def definitions(source: str) -> dict[str, ast.FunctionDef | ast.ClassDef]:
    """Top-level functions and classes defined in a cell."""
    tree = _parse(source)
    return {node.name: node for node in (tree.body if tree else ())
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def stubbed(source: str) -> str:
    """The cell as students get it: each solution region replaced by a `raise
    NotImplementedError("<function>")` indented as its BEGIN marker."""
    lines = source.splitlines(keepends=True)
    tree = _parse(source)
    for begin, end in reversed(regions(source)):
        indent = lines[begin][:len(lines[begin]) - len(lines[begin].lstrip())]
        owner = _owner(tree, begin + 1)
        lines[begin:end + 1] = [f'{indent}raise NotImplementedError("{owner}")\n']
    text = "".join(lines)
    return text if source.endswith("\n") else text.rstrip("\n")


def solved(source: str) -> str:
    """The cell as the solution: the markers removed, the solution kept."""
    lines = source.splitlines(keepends=True)
    keep = [line for line in lines if line.strip() not in (BEGIN, END)]
    return "".join(keep)


def solution_lines(master: Master) -> set[str]:
    """Every non-blank line written between the markers, stripped."""
    found = set()
    for source in master.code_cells:
        lines = source.splitlines()
        for begin, end in regions(source):
            found |= {line.strip() for line in lines[begin + 1:end] if line.strip()}
    return found
