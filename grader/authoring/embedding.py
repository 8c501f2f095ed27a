"""The self-check a released notebook or module carries: the grader's own code and the public cases.

A student opens a released notebook where the instructor did not expect (Colab, with the file in
Drive and `/content` as the working folder; VS Code; JupyterLite), with neither attention-grader
nor the `.check.npz` beside it. So `grade release` puts both inside the file:
- the bundle: a zip of the grader's modules that `check()` loads, byte for byte as the package
  holds them (`modules`: found by following `grader.selfcheck`'s imports, so a change there is
  carried by the next release; never a second copy that could drift), and of the assignment's
  check data, the same bytes as the `.check.npz` released beside it;
- a notebook gets one code cell before the cell that imports `check` (hidden in Jupyter and
  Colab, tagged `grader-self-check`): the source of `grader.course.carried.unpack_self_check`,
  then `__grader_check__ = unpack_self_check(...)` with the bundle in base64. The line the
  student runs stays `from grader import check`: the installed package where there is one, else
  the copy;
- a module gets the same at its end, under `if __name__ == "__main__":`, which checks each
  exercise: `python3 udl_attention.py` checks itself.

The bundle is scanned for leaks (each member, the check data inside it too) before it is
written. A student who edits it changes what their own check() says, nothing else: grading runs
the cell as any other (it does nothing in the sandbox) and never reads its data.
"""

from __future__ import annotations

import ast
import base64
import inspect
import io
import textwrap
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import grader
from grader.course import carried
from grader.model import Assignment

ROOT_MODULE = "grader.selfcheck"
"""Where the bundle's modules are followed from: the self-check."""
LEFT_OUT = {
    "grader.report.html": "needs Jinja2: where it is missing, check() prints text",
    "grader.assignments.variants": "the misconceptions' code, which holds lines of solutions: "
                                   "check() names a mistake from the check data's outputs",
}
"""Modules the self-check may import that the bundle does without, and why."""
TAG = "grader-self-check"
"""The tag (and id) of the notebook cell that carries the self-check."""
VARIABLE = "__grader_check__"
"""The name, in the notebook's or module's globals, of the check data's path (`selfcheck`)."""
_PACKAGE = Path(grader.__file__).resolve().parent
_WHEN = (1980, 1, 1, 0, 0, 0)  # every member's time: the same release, the same bytes
_LINE = 76  # base64 characters per line


def _file(module: str) -> Path | None:
    """The source file of a grader module, or None where `module` names no module."""
    parts = module.split(".")[1:]
    for path in (_PACKAGE.joinpath(*parts).with_suffix(".py"),
                 _PACKAGE.joinpath(*parts, "__init__.py")):
        if parts and path.is_file() or not parts and path.name == "__init__.py":
            return path
    return None


def _typing_only(tree: ast.AST) -> set[ast.AST]:
    """The statements under `if TYPE_CHECKING:`: imports that only the type checker runs."""
    return {statement for node in ast.walk(tree) if isinstance(node, ast.If)
            and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"
            for statement in node.body}


def _imported(path: Path) -> Iterable[str]:
    """The grader modules a source file imports, at its top or inside a function, but for
    those only the type checker imports."""
    tree = ast.parse(path.read_bytes())
    skipped = _typing_only(tree)
    for node in ast.walk(tree):
        if node in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:  # `from grader.x import y`: y is a module or a name
                below = f"{node.module}.{alias.name}"
                yield below if _file(below) else node.module


def modules(start: str = ROOT_MODULE) -> tuple[str, ...]:
    """The grader modules that `start` imports, directly or not, with their packages, but for
    `LEFT_OUT`: what the bundle carries."""
    found: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module in found or module in LEFT_OUT or module.split(".")[0] != "grader":
            continue
        path = _file(module)
        if path is None:
            continue
        found.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += list(_imported(path))
    return tuple(sorted(found))


def files(start: str = ROOT_MODULE) -> dict[str, Path]:
    """The bundle's code: each member's name (`grader/...py`) and the package file it is."""
    named = {}
    for module in modules(start):
        path = _file(module)
        assert path is not None
        named[path.relative_to(_PACKAGE.parent).as_posix()] = path
    return named


def bundle(assignment: Assignment, check_data: bytes) -> bytes:
    """The zip a released file carries: the self-check's modules and the check data."""
    target = io.BytesIO()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, path in files().items():
            archive.writestr(zipfile.ZipInfo(name, _WHEN), path.read_bytes(),
                             compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr(zipfile.ZipInfo(f"{assignment.name}.check.npz", _WHEN), check_data)
    return target.getvalue()


def _code(assignment: Assignment, data: bytes) -> str:
    """`unpack_self_check`'s source, then the call that gives it the bundle."""
    lines = textwrap.wrap(base64.b64encode(data).decode("ascii"), _LINE)
    requires = repr(tuple(assignment.requires))
    return (inspect.getsource(carried.unpack_self_check) + "\n\n"
            f'{VARIABLE} = unpack_self_check("""\n' + "\n".join(lines) + f'\n""", {requires})\n')


def cell(assignment: Assignment, data: bytes) -> dict[str, Any]:
    """The notebook cell that carries the self-check (`data`: the bundle)."""
    title = ("#@title attention-grader's self-check, for where attention-grader is not "
             "installed: run this cell; you need not read it\n")
    about = ("# The grader's own checking code and this assignment's public cases, a zip "
             "(base64, below).\n# It tells you what check() finds; it never changes a grade.\n")
    return {"cell_type": "code", "id": TAG, "execution_count": None, "outputs": [],
            "metadata": {"tags": [TAG], "cellView": "form",
                         "jupyter": {"source_hidden": True}},
            "source": (title + about + _code(assignment, data)).splitlines(keepends=True)}


def _imports_check(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(isinstance(node, ast.ImportFrom) and node.module == "grader"
               and any(alias.name == "check" for alias in node.names) for node in ast.walk(tree))


def into_notebook(notebook: dict[str, Any], assignment: Assignment,
                  data: bytes) -> dict[str, Any]:
    """`notebook` with the self-check's cell before its first code cell that imports `check`
    (else before its first code cell, else at its end)."""
    cells = notebook["cells"]
    code = [i for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    importing = [i for i in code if _imports_check("".join(cells[i].get("source", "")))]
    at = (importing or code or [len(cells)])[0]
    cells.insert(at, cell(assignment, data))
    return notebook


def into_module(text: str, assignment: Assignment, data: bytes) -> str:
    """A stub module's text with the self-check at its end, run by `python3 <module>.py`
    (named as `grade release` names the module: the assignment's name)."""
    written = [e.name for e in assignment.exercises]
    body = textwrap.indent(_code(assignment, data), "    ")
    return (text.rstrip("\n") + "\n\n\n"
            f"# attention-grader's self-check: `python3 {assignment.name}.py` checks each "
            "function on the public cases,\n# with the grader's own code and this assignment's "
            "public cases (a zip, base64, below).\n# It tells you what check() finds; it never "
            "changes a grade.\n"
            'if __name__ == "__main__":\n' + body + "\n"
            "    from grader import check\n\n"
            "    for _name in (" + "".join(f"\n        {name!r}," for name in written) +
            "\n    ):\n        check(_name)\n")
