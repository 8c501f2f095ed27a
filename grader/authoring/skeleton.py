"""The declaration skeleton `grade assign` writes: one exercise per graded function, with a
public case for each call the master makes, ready for the instructor to complete.

The skeleton ends with a stamp, the SHA-256 of everything above it: while the stamp still
matches, the file is the skeleton as written and `grade assign` may write it again; once the
instructor edits it, it is theirs and is never overwritten.
"""

from __future__ import annotations

import ast
import hashlib
import pprint
import textwrap
from pathlib import Path

import numpy as np

from grader.authoring.calls import Calls
from grader.authoring.files import signature
from grader.authoring.master import Master, definitions, solved
from grader.errors import SpecError
from grader.model import Inputs

STAMP = "# grade assign skeleton, sha256 "
MAX_LITERAL = 400
"""Largest array written out as a literal; a bigger one needs a seeded generator."""


def _literal(value: object, indent: int) -> str:
    """A value as Python source, wrapped to fit the project's lines."""
    plain = value.tolist() if isinstance(value, np.ndarray) else value
    lines = pprint.pformat(plain, width=96 - indent).splitlines()
    return ("\n" + " " * indent).join(lines)


def _string(text: str, indent: int) -> str:
    """A string literal, split over lines that fit the project's width."""
    parts = textwrap.wrap(text, 96 - indent, drop_whitespace=False) or [""]
    if len(parts) == 1:
        return repr(text)
    return "(" + ("\n" + " " * indent).join(repr(part) for part in parts) + ")"


def _returns(node: ast.FunctionDef | ast.ClassDef) -> tuple[str, ...]:
    """Names of the returned values, from the function's last `return` of a tuple."""
    if isinstance(node, ast.ClassDef):
        return ("output",)
    returns = [n for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
    if returns and isinstance(returns[-1].value, ast.Tuple):
        items = returns[-1].value.elts
        return tuple(item.id if isinstance(item, ast.Name) else f"output{i + 1}"
                     for i, item in enumerate(items))
    return ("output",)


def _cases(name: str, calls: tuple[Inputs, ...]) -> tuple[list[str], list[str]]:
    """Case lines for the calls, and comments about the calls left out."""
    lines: list[str] = []
    notes: list[str] = []
    for args in calls:
        if any(isinstance(a, np.ndarray) and a.size > MAX_LITERAL for a in args):
            notes.append(f"# A call with an array of more than {MAX_LITERAL} values was left "
                         "out: declare it with a seeded generator such as normal(shape).")
            continue
        case = "notebook-example" if not lines else f"notebook-example-{len(lines) + 1}"
        flat = f'        Case("{case}", fixed({", ".join(_literal(a, 99) for a in args)}), '
        if len(flat) <= 84 and "\n" not in flat:
            lines.append(flat + 'visibility=PUBLIC,\n             note="the example in the '
                         'notebook"),')
            continue
        inputs = "".join(f"            {_literal(a, 12)},\n" for a in args)
        lines.append(f'        Case("{case}", fixed(\n{inputs}        ), visibility=PUBLIC,\n'
                     f'             note="the example in the notebook"),')
    arrays = [args for args in calls if args and all(isinstance(a, np.ndarray) for a in args)]
    if arrays:
        shapes = ", ".join(repr(tuple(a.shape)) for a in arrays[0])
        lines.append(f'        Case("random", normal({shapes}), seed=1),  # hidden')
    else:
        notes.append("# TODO: add hidden cases (the default visibility): other sizes, edges.")
    return lines, notes


def source(master: Master, calls: Calls) -> str:
    """The declaration skeleton as Python source, stamped."""
    nodes = {}
    for cell in master.code_cells:
        nodes.update(definitions(solved(cell)))
    blocks, missing = [], []
    for graded in master.graded:
        node = nodes[graded.name]
        lines, notes = ([], []) if isinstance(node, ast.ClassDef) else \
            _cases(graded.name, calls.inputs.get(graded.name, ()))
        if not lines:
            missing.append(graded.name)
            continue
        dropped = calls.unsupported.get(graded.name, 0)
        if dropped:
            notes.append(f"# {dropped} call(s) with arguments other than numbers and arrays "
                         "were left out.")
        summary = graded.summary or " ".join(
            (ast.get_docstring(node) or "").split("\n\n")[0].split())
        outputs = graded.outputs or _returns(node)
        fields = [f'    name="{graded.name}",', f'    signature="{signature(node)}",',
                  f"    points={graded.points:g},", f"    summary={_string(summary, 13)},"]
        if outputs != ("output",):
            fields.append(f"    outputs={outputs!r},")
        if graded.provided:
            fields.append("    provided=True,")
        blocks.append(f"{graded.name} = Exercise(\n" + "\n".join(fields) + "\n    cases=(\n"
                      + "\n".join(lines) + "\n" + "".join(f"        {n}\n" for n in notes)
                      + "    ),\n)\n")
    if missing:
        raise SpecError(f"{master.path}: the master never calls {', '.join(missing)} on "
                        "numbers or arrays, so there is no public case to draw; call each "
                        "graded function on the notebook's example (classes: write their "
                        "cases in the declaration yourself)")
    names = ", ".join(graded.name for graded in master.graded)
    about = textwrap.fill(
        f"Declared by `grade assign` from {master.path.name}: each public case is a call the "
        "master makes. Add hidden cases (the default visibility), misconceptions and "
        "properties here; once you edit this file, `grade assign` never writes it again.", 96)
    text = (f'"""Assignment `{master.assignment}`: {master.title}.\n\n{about}\n"""\n\n'
            "from __future__ import annotations\n\n"
            "from grader.assignments.inputs import fixed, normal  # noqa: F401\n"
            "from grader.model import Assignment, Case, Exercise, Visibility\n\n"
            "PUBLIC = Visibility.PUBLIC\n\n" + "\n".join(blocks)
            + f"\nASSIGNMENT = Assignment(\n    name={master.assignment!r},\n"
            f"    title={master.title!r},\n    exercises=({names},),\n)\n")
    return text + STAMP + hashlib.sha256(text.encode()).hexdigest() + "\n"


def untouched(path: Path) -> bool:
    """Whether the file is a skeleton exactly as `grade assign` wrote it."""
    text = path.read_text(encoding="utf-8")
    body, _, stamp = text.rstrip("\n").rpartition("\n")
    return stamp.startswith(STAMP) and \
        stamp[len(STAMP):] == hashlib.sha256((body + "\n").encode()).hexdigest()
