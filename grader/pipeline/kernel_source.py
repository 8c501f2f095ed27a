"""What `check()` can tell from the source of a function in the student's own kernel, before
any hidden data: the notebook globals it reads (`uses-global`) and the numbers it writes where
a size goes (`hard-coded-size`), read as `grade run` reads a notebook (`notebook_globals`), so
that both name them with the same ids and sentences; and, for a NameError on a notebook global
whose cell has not run, the cell of the notebook that defines it.

The kernel holds the globals' values as the call will see them, so they are read there; the
source comes from what IPython keeps of each cell (`inspect`). Student code is hostile and
this is advice: a function whose source cannot be had or parsed, a notebook that cannot be
read, is read as saying nothing, and nothing here raises.
"""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grader.model import Exercise
from grader.pipeline import notebook_globals
from grader.pipeline.judging import Context

_LARGEST_NOTEBOOK = 20 << 20
"""A notebook larger than this (bytes) is not read: a course's notebooks are far smaller."""
_MOST_NOTEBOOKS = 20
"""How many notebooks of a folder are looked into for the cell that defines a global."""


def definition(target: Any) -> tuple[ast.FunctionDef, int] | None:
    """The syntax tree of a function's definition, and the line of its cell (or file) where
    it starts; None when its source cannot be had (defined by `exec`) or is no `def`."""
    try:
        lines, start = inspect.getsourcelines(target)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef):
        return None
    return node, max(start, 1)


def reader(name: str, target: Any) -> Callable[[str], tuple[ast.FunctionDef, int] | None]:
    """The definitions of the kernel, by name, as `layout_hint.found_in` reads them: `target`'s
    as `name`, and the functions its globals hold under other names; None for a name whose
    value is no function or whose source cannot be had (`definition`)."""
    namespace = getattr(target, "__globals__", None)

    def read(wanted: str) -> tuple[ast.FunctionDef, int] | None:
        found = target if wanted == name else \
            namespace.get(wanted) if isinstance(namespace, dict) else None
        return definition(found) if inspect.isfunction(found) else None

    return read


def unset(function: ast.FunctionDef, target: Any) -> set[str]:
    """The globals `function` (`target`'s definition) reads that the kernel does not hold."""
    return notebook_globals.free_names(function) - set(getattr(target, "__globals__", {}))


def context(exercise: Exercise, target: Any, notebook: Path | None = None) -> Context:
    """The diagnosis's context for `target` as `exercise`: the numeric globals it reads, with
    their values in the kernel now, and the numbers it writes for sizes, on the lines of its
    cell, as `grade run` would read them from the notebook. A global it reads that the kernel
    does not hold yet (its cell has not run) has the value the `notebook` file gives it."""
    found = definition(target) if inspect.isfunction(target) else None
    if found is None:
        return Context.of(exercise, {})
    node, start = found
    namespace: Mapping[str, Any] = getattr(target, "__globals__", {})
    known = {name: number for name, value in list(namespace.items())
             if isinstance(name, str) and (number := notebook_globals.size_of(value)) is not None}
    missing = unset(node, target)
    if missing and notebook is not None:
        given = notebook_globals.numeric_of(_statements(notebook))
        known |= {name: given[name] for name in missing if name in given}
    written = tuple(replace(w, line=w.line + start - 1)
                    for w in notebook_globals.written_by(node))
    return Context.of(exercise, notebook_globals.read_by(node, known), written)


@dataclass(frozen=True)
class Defined:
    """Where a notebook defines a global."""

    notebook: Path
    """The notebook."""
    cell: int
    """Its cell, counted from 1 over every cell (markdown too), as the notebook shows them."""
    title: str
    """The heading of the section the cell is in (the last markdown heading above it), or ""."""

    def sentence(self, name: str) -> str:
        """What a student reads: "H_D is defined in cell 8 (Worked example); run it first"."""
        title = f" ({self.title})" if self.title else ""
        return (f"{name} is defined in cell {self.cell}{title} of {self.notebook.name}; "
                "run it first.")


def _cells(path: Path) -> list[dict[str, Any]]:
    """A notebook's cells; empty when it cannot be read as a notebook."""
    try:
        if path.stat().st_size > _LARGEST_NOTEBOOK:
            return []
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError, RecursionError):
        return []
    return [cell for cell in cells if isinstance(cell, dict)] if isinstance(cells, list) else []


def _source(cell: Mapping[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) \
        else source if isinstance(source, str) else ""


def _binds(statement: ast.stmt, name: str) -> bool:
    """Whether a top-level statement binds `name` (an assignment, a loop, an import, a def)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return statement.name == name
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name).split(".")[0] == name for a in statement.names)
    targets: list[ast.expr] = (
        list(statement.targets) if isinstance(statement, ast.Assign) else
        [statement.target] if isinstance(statement, (ast.AugAssign, ast.AnnAssign, ast.For))
        else [])
    return any(isinstance(node, ast.Name) and node.id == name
               for target in targets for node in ast.walk(target))


def _heading(source: str) -> str:
    """The last markdown heading of a cell's source, without its #s; "" when it has none."""
    headings = [line.lstrip("#").strip() for line in source.splitlines()
                if line.startswith("#")]
    return headings[-1][:80] if headings else ""


def _code(path: Path) -> Iterator[tuple[int, str, list[ast.stmt]]]:
    """Each code cell of a notebook that parses: its number (from 1, over every cell), the
    heading of its section, and its top-level statements."""
    from grader.pipeline import ipython_syntax  # loaded only when a notebook is read

    title = ""
    for index, cell in enumerate(_cells(path), start=1):
        source = _source(cell)
        if cell.get("cell_type") == "markdown":
            title = _heading(source) or title
            continue
        if cell.get("cell_type") != "code":
            continue
        try:
            yield index, title, ipython_syntax.parse(source).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue


def _statements(path: Path) -> list[ast.stmt]:
    return [statement for _, _, body in _code(path) for statement in body]


def notebook_of(function: str, notebooks: Iterable[Path], folders: Iterable[Path]
                ) -> Path | None:
    """The student's notebook: the first of `notebooks` (the exercise's own), then of the
    notebooks in `folders`, that defines `function` at top level."""
    tried: list[Path] = list(notebooks)
    for folder in folders:
        try:
            tried += sorted(folder.glob("*.ipynb"))[:_MOST_NOTEBOOKS]
        except OSError:
            continue
    for path in dict.fromkeys(tried):
        try:
            if not path.is_file():
                continue
        except OSError:
            continue
        if any(_binds(statement, function) for statement in _statements(path)):
            return path
    return None


def defined_in(name: str, notebook: Path) -> Defined | None:
    """The first cell of `notebook` that binds global `name` at top level."""
    for index, title, body in _code(notebook):
        if any(_binds(statement, name) for statement in body):
            return Defined(notebook, index, title)
    return None
