"""`grade assign MASTER.ipynb --out DIR`: every file of an assignment from its master notebook.

It writes the student's notebook and module, the solution module, the declaration skeleton
(only while it is untouched, see `skeleton`) and the references, built in the sandbox from the
solution: all in a temporary folder first, moved into place once every file is built, so that
a run that fails writes nothing. Running it again after an edit of the master rewrites what
the master determines and rebuilds the references.
"""

from __future__ import annotations

import shutil
import tempfile
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


def _staging(folder: Path) -> Layout:
    """Where `assign` writes first: a folder of its own, laid out as a course is."""
    return Layout(folder, solutions=folder / "solutions", hidden_references=folder / "hidden",
                  public_references=folder / "public",
                  declaration_folders=(folder / "assignments",))


def assign(path: Path, out: Path) -> list[Written]:
    """Build every file of the master's assignment under `out`; what was written, in order.
    Everything is built in a temporary folder first and moved into `out` once all of it is
    built, so that a run that fails writes nothing."""
    found = master.read(path)
    final = Layout(out)
    with tempfile.TemporaryDirectory(prefix="grade-assign-") as folder:
        try:
            staged = _build(found, final, _staging(Path(folder)))
        except SpecError as exc:  # said of the files as they would have been written
            raise type(exc)(exc.message.replace(folder, str(out))) from None
        for written, source in staged:
            written.path.parent.mkdir(parents=True, exist_ok=True)
            if source is not None:
                shutil.move(source, written.path)
    return [written for written, _ in staged]


def _build(found: master.Master, final: Layout, layout: Layout
           ) -> list[tuple[Written, Path | None]]:
    """Every file in `layout`, each paired with the file of `final` it becomes (None: a file
    of `final` kept as it is)."""
    name = found.assignment
    notebook = files.student_notebook(found)
    planned = ((layout.notebooks(name)[0], final.notebooks(name)[0],
                files.notebook_text(notebook), "the student's notebook"),
               (layout.module(name), final.module(name), files.student_module(found),
                "the student's module"),
               (layout.solution(name), final.solution(name), files.solution_module(found),
                "the solution module"))
    _refuse_leaks(found, planned[0][2], planned[1][2], notebook, planned[2][2])
    staged: list[tuple[Written, Path | None]] = []
    for target, destination, text, what in planned:
        _write(target, text)
        staged.append((Written(destination, what), target))
    declaration, kept = layout.declaration(name), final.declaration(name)
    if kept.is_file() and not skeleton.untouched(kept):
        _write(declaration, kept.read_text(encoding="utf-8"))
        staged.append((Written(kept, "the declaration, kept: you have edited it"), None))
    else:
        _write(declaration, skeleton.source(found, calls.record(found)))
        staged.append((Written(kept, "the declaration skeleton"), declaration))
    assignment = registry.from_file(declaration)
    if assignment.name != name:
        raise SpecError(f"{kept}: declares {assignment.name!r}, but the master is "
                        f"{name!r}; make the names agree")
    graded = {g.name for g in found.graded}
    declared = {e.name for e in assignment.exercises}
    if graded != declared:
        raise SpecError(f"{kept}: declares {sorted(declared)}, but the master grades "
                        f"{sorted(graded)}; make them agree (or delete the declaration to get "
                        "a new skeleton)")
    hidden, public = building.build(assignment, layout)
    staged += [(Written(final.hidden(name), "the hidden references"), hidden),
               (Written(final.public(name), "the public references"), public)]
    return staged
