"""The files a master notebook becomes: the student's notebook and module, the solution module.

Pure functions from a `Master` to text. A module keeps what a module needs from the
notebook's code cells: imports (not the grader's), functions, classes and UPPER_CASE
constants, in notebook order; examples, prints and `check()` calls stay in the notebook.
"""

from __future__ import annotations

import ast
import copy
import json
import textwrap
from collections.abc import Callable
from typing import Any

from grader.authoring.master import Master, solved, stubbed
from grader.pipeline import ipython_syntax

NBFORMAT_MINOR = 5


def signature(node: ast.FunctionDef | ast.ClassDef) -> str:
    """The parameter list as written, "(Q, K, V, mask=None)"; a class's is its __init__'s."""
    if isinstance(node, ast.ClassDef):
        init = next((n for n in node.body
                     if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        return f"({ast.unparse(init.args)})" if init else "(self)"
    return f"({ast.unparse(node.args)})"


def code_sources(notebook: dict[str, Any]) -> list[str]:
    """The source of each code cell of a notebook, as written (a list of lines joined)."""
    return ["".join(source) if isinstance(source, list) else str(source)
            for cell in notebook.get("cells", []) if cell.get("cell_type") == "code"
            for source in [cell.get("source", "")]]


def notebook_python(notebook: dict[str, Any]) -> str:
    """A notebook's code cells as Python, IPython syntax turned into Python as the grader
    does (`ipython_syntax.to_python`), joined; SyntaxError naming the code cell that is not Python
    even so."""
    sources = []
    for number, source in enumerate(code_sources(notebook), 1):
        try:
            python = ipython_syntax.to_python(source)
            ast.parse(python)
        except SyntaxError as exc:
            raise SyntaxError(f"code cell {number}: {exc.msg} (line {exc.lineno})") from None
        except (ValueError, RecursionError, MemoryError) as exc:
            raise SyntaxError(f"code cell {number} cannot be read as Python "
                              f"({type(exc).__name__})") from None
        sources.append(python)
    return "\n".join(sources)


def signatures(source: str) -> dict[str, str]:
    """Top-level functions and classes of Python source -> their parameter lists; SyntaxError
    when the source does not parse."""
    return {node.name: signature(node) for node in ast.parse(source).body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def _keeps(node: ast.stmt) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return True
    if isinstance(node, ast.Import):
        return not any(alias.name.split(".")[0] == "grader" for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] != "grader"
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        # BASE = 10000.0 is a constant a module needs; X = ... or N = 3 is the notebook's example.
        return all(isinstance(t, ast.Name) and len(t.id) > 1 and t.id.isupper()
                   for t in targets)
    return False


def module(master: Master, cell: Callable[[str], str], docstring: str) -> str:
    """A module of the master's code cells, each first turned into what `cell` makes of it."""
    parts: list[str] = []
    for source in master.code_cells:
        text = ipython_syntax.to_python(cell(source))
        lines = text.splitlines()
        for node in ast.parse(text).body:
            if not _keeps(node):
                continue
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            part = "\n".join(lines[first - 1:node.end_lineno])
            if part not in parts:  # the same import in several cells is written once
                parts.append(part)
    imports = [p for p in parts if p.startswith(("import ", "from "))]
    body = [p for p in parts if p not in imports]
    text = "\n\n".join(textwrap.fill(paragraph, 90) for paragraph in docstring.split("\n\n"))
    return (f'"""{text}\n"""\n\n' + "\n".join(imports) + "\n\n\n"
            + "\n\n\n".join(body) + "\n")


def solution_module(master: Master) -> str:
    """solutions/<name>.py: the graded functions as the master solves them."""
    return module(master, solved, f"Reference solutions for `{master.assignment}`: "
                  f"{master.title}.\n\nWritten by `grade assign` from {master.path.name}: "
                  "edit the master notebook, not this file.")


def student_module(master: Master) -> str:
    """exercises/<name>.py: the same functions, each solution a `raise NotImplementedError`."""
    return module(master, stubbed, f"{master.assignment}: {master.title}.\n\nReplace each "
                  "`raise NotImplementedError` with your implementation. Check your work with "
                  f"`grade check {master.assignment}.py` (public cases only).")


def student_notebook(master: Master) -> dict[str, Any]:
    """exercises/<name>.ipynb: the master without its config, solutions stubbed, outputs
    cleared, and metadata that names the assignment."""
    notebook = copy.deepcopy(dict(master.notebook))
    metadata = {key: value for key, value in notebook.get("metadata", {}).items()
                if key in ("kernelspec", "language_info")}
    metadata["grader"] = {"assignment": master.assignment}
    cells = []
    for number, cell in enumerate(notebook["cells"], start=1):
        source = "".join(cell.get("source", ""))
        kept: dict[str, Any] = {"cell_type": cell.get("cell_type", "code"),
                                "id": cell.get("id") or f"cell-{number}"}
        kept["metadata"] = {k: v for k, v in cell.get("metadata", {}).items() if k == "tags"}
        if kept["cell_type"] == "code":
            source = stubbed(source)
            kept["outputs"] = []
            kept["execution_count"] = None
        kept["source"] = source.splitlines(keepends=True)
        cells.append(kept)
    return {"cells": cells, "metadata": metadata, "nbformat": 4,
            "nbformat_minor": max(int(notebook.get("nbformat_minor", 0)), NBFORMAT_MINOR)}


def notebook_text(notebook: dict[str, Any]) -> str:
    """A notebook as Jupyter saves it: one-space indents and a final newline."""
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
