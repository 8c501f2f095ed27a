"""`grade release ASSIGNMENT --out DIR`: what students receive, and nothing else.

An allow-list: the stub notebooks (outputs cleared), the stub module, and
`<assignment>.check.npz`, the public cases and their expected outputs for `check()`
(`grader.released`). Before anything is written, every file is checked to be a stub: no
solution marker, and every exercise a student writes still raises NotImplementedError.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from grader import references, released
from grader.authoring.files import notebook_python, notebook_text
from grader.authoring.layout import Layout
from grader.authoring.master import BEGIN, END
from grader.errors import SpecError, UsageError
from grader.model import Assignment


def _cleared(notebook: dict[str, Any]) -> dict[str, Any]:
    """A notebook with no outputs and no execution counts: what ran on the instructor's
    machine (printed hidden values, say) stays there."""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return notebook


def _refuse_solutions(path: Path, text: str, notebook: dict[str, Any] | None,
                      assignment: Assignment) -> None:
    """SpecError when a stub file (a module's `text`, or a `notebook`) holds a solution
    marker, or an exercise that students write without a `raise NotImplementedError` in it,
    or code that cannot be checked for either (IPython syntax is read as the grader reads
    it; what is not Python even so is refused)."""
    raw = text if notebook is None else "\n".join(
        "".join(cell.get("source", "")) for cell in notebook.get("cells", [])
        if cell.get("cell_type") == "code")
    if BEGIN in raw or END in raw:
        raise SpecError(f"{path}: holds a solution marker ({BEGIN}); release the stubs that "
                        "`grade assign` writes, not the master")
    try:
        tree = ast.parse(text if notebook is None else notebook_python(notebook))
    except SyntaxError as exc:
        where = exc.msg if exc.lineno is None else f"line {exc.lineno}: {exc.msg}"
        raise SpecError(f"{path}: {where}; release checks that a stub holds no solution, "
                        "and cannot check code that is not Python: fix it") from None
    written = {e.name for e in assignment.exercises if not e.provided}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in written and \
                "NotImplementedError" not in ast.unparse(node):
            raise SpecError(f"{path}: {node.name} is not a stub (it never raises "
                            "NotImplementedError); release the stubs, not a solution")


def release(assignment: Assignment, out: Path, layout: Layout | None = None) -> list[Path]:
    """Write what students receive into `out`; the files written."""
    layout = layout or Layout.current()
    parts = tuple(e.notebook for e in assignment.exercises if e.notebook)
    stored = references.ready(assignment, public_only=True)  # stale or missing: stop here
    planned: list[tuple[Path, str]] = []
    for source in (layout.module(assignment.name), *layout.notebooks(assignment.name, parts)):
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            raise SpecError(f"{source}: cannot be read ({exc.strerror}); run `grade assign` "
                            "or write the stubs") from None
        try:
            notebook = json.loads(text) if source.suffix == ".ipynb" else None
        except ValueError as exc:
            raise SpecError(f"{source}: not valid notebook JSON ({exc}); run `grade assign` "
                            "or re-save it from Jupyter") from None
        _refuse_solutions(source, text, notebook, assignment)
        if notebook is not None:
            text = notebook_text(_cleared(notebook))
        planned.append((out / source.name, text))
    data = out / f"{assignment.name}{released.SUFFIX}"
    ours = {path.name for path, _ in planned} | {data.name}
    others = sorted(p.name for p in out.iterdir() if p.name not in ours) \
        if out.is_dir() else []
    if others:  # a release is the whole folder: nothing else may go out with it
        raise UsageError(f"{out}: holds other files ({', '.join(others[:3])}); release into "
                         "a new or empty folder")
    out.mkdir(parents=True, exist_ok=True)
    for path, text in planned:
        path.write_text(text, encoding="utf-8")
    released.write(data, assignment, stored)
    return [path for path, _ in planned] + [data]
