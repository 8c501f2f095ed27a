"""`grade assign MASTER.ipynb --out DIR`: every file of an assignment from its master notebook.

It writes the student's notebook and module, the solution module, the declaration skeleton
(only while it is untouched, see `skeleton`) and the references, built in the sandbox from the
solution. Running it again after an edit of the master rewrites what the master determines and
rebuilds the references.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader import references, registry
from grader.authoring import calls, files, master, skeleton
from grader.authoring.layout import Layout
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


def assign(path: Path, out: Path) -> list[Written]:
    """Build every file of the master's assignment under `out`; what was written, in order."""
    found = master.read(path)
    layout = Layout(out)
    name = found.assignment
    written = []
    for target, text, what in (
            (layout.notebooks(name)[0], files.notebook_text(files.student_notebook(found)),
             "the student's notebook"),
            (layout.module(name), files.student_module(found), "the student's module"),
            (layout.solution(name), files.solution_module(found), "the solution module")):
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
    hidden, public = references.build(assignment, layout.solution(name), layout.hidden(name),
                                      layout.public(name))
    written += [Written(hidden, "the hidden references"),
                Written(public, "the public references")]
    return written
