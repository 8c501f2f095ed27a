"""`grade assign MASTER.ipynb --out DIR`: every file of an assignment from its master notebook.

It writes the student's notebook and module, the solution module, the declaration skeleton
(only while it is untouched, see `skeleton`) and the references, built in the sandbox from the
solution. Running it again after an edit of the master rewrites what the master determines and
rebuilds the references.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.authoring import building, calls, files, leaks, master, skeleton
from grader.course import registry
from grader.course.layout import Layout
from grader.errors import SpecError


@dataclass(frozen=True)
class Written:
    """One file `grade assign` wrote or kept."""

    path: Path
    """The file."""
    what: str
    """What it is, and whether it was kept."""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _refuse_leaks(found: master.Master, notebook_text: str, module: str,
                  notebook: dict[str, Any], solution: str) -> None:
    """SpecError naming the master's cell when what students get would hold a solution
    marker or a line of the solution (kept metadata, a solution line in a text cell, a marker
    in a code cell's string): `grade release` would refuse it later."""
    secret = leaks.solution_lines(solution, [module, *files.code_sources(notebook)])
    for kind, text in (("notebook", notebook_text), ("module", module)):
        hit = leaks.find(f"student.{'ipynb' if kind == 'notebook' else 'py'}",
                         text.encode("utf-8"), secret, first=found.dropped + 1)
        if hit:
            raise SpecError(f"{found.path}: the student's {kind} would hold {hit.what}, from "
                            f"{hit.where}; remove it from the master: a solution goes "
                            "between the markers, inside a function of a code cell")


def assign(path: Path, out: Path) -> list[Written]:
    """Build every file of the master's assignment under `out`; what was written, in order."""
    found = master.read(path)
    layout = Layout(out)
    name = found.assignment
    notebook = files.student_notebook(found)
    planned = ((layout.notebooks(name)[0], files.notebook_text(notebook),
                "the student's notebook"),
               (layout.module(name), files.student_module(found), "the student's module"),
               (layout.solution(name), files.solution_module(found), "the solution module"))
    _refuse_leaks(found, planned[0][1], planned[1][1], notebook, planned[2][1])
    written = []
    for target, text, what in planned:
        _write(target, text)
        written.append(Written(target, what))
    declaration = layout.declaration(name)
    if declaration.is_file() and not skeleton.untouched(declaration):
        written.append(Written(declaration, "the declaration, kept: you have edited it"))
    else:
        _write(declaration, skeleton.source(found, calls.record(found)))
        written.append(Written(declaration, "the declaration skeleton"))
    assignment = registry.from_file(declaration)
    if assignment.name != name:
        raise SpecError(f"{declaration}: declares {assignment.name!r}, but the master is "
                        f"{name!r}; make the names agree")
    graded = {g.name for g in found.graded}
    declared = {e.name for e in assignment.exercises}
    if graded != declared:
        raise SpecError(f"{declaration}: declares {sorted(declared)}, but the master grades "
                        f"{sorted(graded)}; make them agree (or delete the declaration to get "
                        "a new skeleton)")
    hidden, public = building.build(assignment, layout)
    written += [Written(hidden, "the hidden references"),
                Written(public, "the public references")]
    return written
