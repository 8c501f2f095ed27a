"""The declaration skeleton `grade assign` writes: one exercise per graded function, with a
public case for each call the master makes, ready for the instructor to complete.

The skeleton ends with a stamp, the SHA-256 of everything above it: while the stamp still
matches, the file is the skeleton as written and `grade assign` may write it again; once the
instructor edits it, it is theirs and is never overwritten.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import pprint
import textwrap
from pathlib import Path

import numpy as np

from grader.authoring import domains
from grader.authoring.calls import Calls
from grader.authoring.files import signature
from grader.authoring.master import Master, definitions, solved
from grader.errors import SpecError
from grader.model import PRACTICE, PRACTICE_NOTE, Inputs

STAMP = "# grade assign skeleton, sha256 "
MARKER = "# grade assign: could not infer"
"""Starts the comment on an argument whose domain the skeleton cannot tell; `grade validate`
points at each one still present."""
DRAWS = 3
"""Hidden cases the skeleton draws for each pattern of arguments (which are arrays, which
`None`), each from a seed of its own."""
PRACTICE_SEED = 101
"""The seed of each exercise's practice case: drawn as its hidden cases are, from a seed none
of them has, and public, so that a function that only works at the notebook's sizes fails a
check the student can run."""
_PRACTICE_END = f',\n             visibility=PUBLIC, note="{PRACTICE_NOTE}"),'
"""How a drawn case's line ends when it is the practice case; a hidden one ends `),  # hidden`."""
MAX_LITERAL = 400
"""Largest array written out as a literal; a bigger one needs a seeded generator."""


def _literal(value: object, indent: int, lists: bool = True) -> str:
    """A value as Python source, wrapped to fit the project's lines: a float64 array as a
    list (which `fixed` makes an array again) when `lists`, any other as `np.array(...)`
    with its dtype, so that integers and booleans stay what they are."""
    if isinstance(value, np.ndarray):
        if lists and value.dtype == np.float64:
            return _literal(value.tolist(), indent)
        dtype = "" if value.dtype == np.float64 else f", dtype={str(value.dtype)!r}"
        return f"np.array({_literal(value.tolist(), indent + 9)}{dtype})"
    lines = pprint.pformat(value, width=96 - indent).splitlines()
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


def _comment(text: str, indent: int) -> str:
    """A comment over lines that fit the project's width."""
    return "".join(f"{' ' * indent}# {line}\n" for line in textwrap.wrap(text, 94 - indent))


def _public(name: str, args: Inputs, tolerance: str = "") -> str:
    """A public case: the very arguments of one call of the master."""
    lists = any(type(a) is list for a in args)
    maker = "exactly" if lists else "fixed"
    written = ", ".join(_literal(a, 99, not lists) for a in args)
    flat = f'        Case("{name}", {maker}({written}), '
    if len(flat) <= 84 and "\n" not in flat:
        return flat + (f'visibility=PUBLIC{tolerance},\n'
                       '             note="the example in the notebook"),')
    inputs = "".join(f"            {_literal(a, 12, not lists)},\n" for a in args)
    return (f'        Case("{name}", {maker}(\n{inputs}        ), visibility=PUBLIC{tolerance},\n'
            f'             note="the example in the notebook"),')


def _hidden(name: str, seed: int, params: list[str], calls: list[Inputs],
            tolerance: str = "", draw: int = 0, public: bool = False) -> str:
    """A hidden case drawn from the domain of the calls (one pattern of arguments): arrays
    of the kind and dtype the master passes, sizes shared where the master's are equal,
    integers in the range it uses, None and numbers as it passes them. Where the calls pass
    no array, their sizes are the whole input: draw number `draw` fixes them at 2 + `draw`
    times the example's, so that no two hidden cases are the same. A `public` one is the
    practice case, worth no points as every public case."""
    found = domains.sizes(params, calls)
    fixed = {size.name: (2 + draw) * max(size.seen) for size in found
             if all(axis < 0 for _, axis in size.axes)}
    parts = _arguments(params, calls, found, len(calls[0]))
    return (f'        Case("{name}", combined(\n' + "".join(parts)
            + _sizes(found, params, fixed) + f"        ), seed={seed}{tolerance}"
            + (_PRACTICE_END if public else "),  # hidden"))


def _sizes(found: list[domains.Size], params: list[str], fixed: dict[str, int] | None = None
           ) -> str:
    """The `sizes={...}` of a hidden case: each drawn (low, high, step), or a fixed number
    (a size a module's constructor takes, which the case's init_kwargs state)."""
    fixed = fixed or {}
    sizes = "".join(_comment(_axes(size, params), 16) + f"                {size.name!r}: "
                    + (f"{fixed[size.name]}" if size.name in fixed
                       else f"({size.low}, {size.high}, {size.step})") + ",\n"
                    for size in found)
    shared = _comment("Axes of equal size in every example call share one size, drawn in "
                      "multiples of the examples' sizes, never the examples' own (low, high, "
                      "step); where they only coincide, give each a name of its own.", 12)
    return f"{shared}            sizes={{\n{sizes}            }},\n" if found else ""


def _arguments(params: list[str], calls: list[Inputs], found: list[domains.Size],
               count: int) -> list[str]:
    """The makers of the first `count` arguments of a hidden case, each with its comment."""
    named = {axis: size.name for size in found for axis in size.axes}
    parts = []
    for position, value in enumerate(calls[0][:count]):
        param = params[position]
        what = domains.kind(value)
        shape = tuple(named[(position, axis)] for axis in range(np.ndim(value)))
        dtype = f", dtype={str(value.dtype)!r}" if isinstance(value, np.ndarray) else ""
        note = ""
        if what == "floats":
            line = f"floats({shape!r}{dtype if value.dtype != np.float64 else ''})"
        elif what == "integers":
            limits = domains.bound(position, calls, found)
            line = (f"integers({shape!r}, {limits.low}, {limits.high!r}"
                    f"{dtype if value.dtype != np.int64 else ''})")
            note = f"{param}: {limits.why}."
        elif what == "booleans" and all(domains.lower_triangular(c[position]) for c in calls):
            line = f"lower_triangular({shape!r})"
            note = f"{param}: a lower triangle (a causal mask), as in the master's calls."
        elif what == "booleans" and all(domains.each_row(c[position]) for c in calls):
            line = f"booleans({shape!r}, each_row=True)"
            note = f"{param}: each row holds a True, as in the master's calls."
        elif what == "booleans":
            line = f"booleans({shape!r})"
        elif what == "number" and type(value) is int and (sized := next(
                (s.name for s in found if s.seen == tuple(c[position] for c in calls)), None)):
            line = f"size({sized!r})"
            note = f"{param}: the size {sized}, as in the master's calls."
        elif what in ("none", "number"):
            line = repr(value)
        else:
            line = _literal(value, 12, lists=False)
            note = (f"{MARKER[2:]} the domain of {param} ({type(value).__name__}): every hidden "
                    "case passes the master's value; draw it with an input maker "
                    '(docs/authoring.md, "Input makers") or keep it, then delete this comment.')
        parts.append(_comment(note, 12) + f"            {line},\n")
    return parts


def _axes(size: domains.Size, params: list[str]) -> str:
    """The axes a size is, in words: "X axes 0, 1; valid_lens axis 0"."""
    by: dict[int, list[str]] = {}
    for position, axis in size.axes:
        by.setdefault(position, []).append(str(axis))
    return "; ".join(f"{params[p]}" if a == ["-1"] else
                     f"{params[p]} ax{'es' if len(a) > 1 else 'is'} {', '.join(a)}"
                     for p, a in by.items())


def _cases(params: list[str], calls: tuple[Inputs, ...], tolerance: str = ""
           ) -> tuple[list[str], list[str]]:
    """Case lines for the calls, and comments about the calls left out."""
    lines: list[str] = []
    notes: list[str] = []
    for args in calls:
        if any(isinstance(a, np.ndarray) and a.size > MAX_LITERAL for a in args):
            notes.append(f"# A call with an array of more than {MAX_LITERAL} values was left "
                         "out of the public cases: its hidden case stands for it.")
            continue
        lines.append(_public("notebook-example" if not lines
                             else f"notebook-example-{len(lines) + 1}", args, tolerance))
    if not lines:
        return [], notes
    groups: dict[tuple[tuple[str, int], ...], list[Inputs]] = {}
    for args in calls:
        groups.setdefault(domains.pattern(args), []).append(args)
    names = params + [f"arg{i}" for i in range(len(params), max(map(len, calls)))]
    drawn = [group for key, group in groups.items()
             if any(what in domains.DRAWN for what, _ in key) or domains.int_sizes(group[0])]
    if drawn:
        lines.append(_hidden(PRACTICE, PRACTICE_SEED, names, drawn[0], tolerance, DRAWS,
                             public=True))
    for i, group in enumerate(drawn):
        for draw in range(DRAWS):  # several draws, so that one size that happens to fit
            number = i * DRAWS + draw  # cannot hide a mistake
            lines.append(_hidden("random" if number == 0 else f"random-{number + 1}",
                                 number + 1, names, group, tolerance, draw))
    if not drawn:
        notes.append("# TODO: add hidden cases (the default visibility): other sizes, edges.")
    return lines, notes


def _parameters(node: ast.FunctionDef | ast.ClassDef) -> list[str]:
    """The names of the positional parameters; a class's are its forward's, but self."""
    if isinstance(node, ast.ClassDef):
        forward = next((n for n in node.body
                        if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
        return _parameters(forward)[1:] if forward else []
    return [a.arg for a in node.args.posonlyargs + node.args.args]


def _state(state: dict[str, np.ndarray], sizes: dict[tuple[str, int], str], indent: int
           ) -> str:
    """A module's weights as a `weights({...})` maker: each parameter's shape (an axis's
    size as `sizes` writes it, else its number) and dtype."""
    lines = []
    for key, value in state.items():
        dims = [sizes.get((key, axis), str(n)) for axis, n in enumerate(value.shape)]
        shape = ", ".join(dims) + ("," if len(dims) == 1 else "")
        lines.append(f"{' ' * (indent + 4)}{key!r}: (({shape}), {str(value.dtype)!r}),\n")
    return f"weights({{\n{''.join(lines)}{' ' * indent}}})"


def _class_cases(params: list[str], calls: tuple[Inputs, ...],
                 inits: tuple[dict[str, object], ...], tolerance: str
                 ) -> tuple[list[str], list[str]]:
    """Case lines for the calls of a module: its weights drawn from each case's seed, then
    forward's inputs; the constructor's arguments as init_kwargs. A hidden case draws the
    sizes as a function's do, but a size a constructor argument gives (d_model) is fixed per
    case, 2 or 3 times the example's, and stated in init_kwargs too."""
    lines: list[str] = []
    keys = [list(call[0]) for call in calls]
    names = params + [f"arg{i}" for i in range(len(params), max(len(c) - 1 for c in calls))]
    for call, init in zip(calls, inits, strict=True):
        suffix = f"-{len(lines) + 1}" if lines else ""
        state = _state(call[0], {}, 12)
        rest = "".join(
            f"            {_literal(a, 12, lists=False)},\n" if not isinstance(a, np.ndarray)
            or a.size <= MAX_LITERAL else f"            {_drawn(a)},\n" for a in call[1:])
        lines.append(f'        Case("notebook-example{suffix}", combined(\n            {state},\n'
                     f"{rest}        ), init_kwargs={init!r}, visibility=PUBLIC{tolerance},\n"
                     '             note="the example in the notebook, with weights drawn from '
                     'its seed"),')
    groups: dict[object, list[int]] = {}
    for i, call in enumerate(calls):
        groups.setdefault((domains.pattern(call[1:]), tuple(keys[i]), tuple(inits[i])),
                          []).append(i)
    for g, members in enumerate(groups.values()):
        group = [calls[i] for i in members]
        flat = [(*call[1:], *call[0].values()) for call in group]
        count = len(group[0]) - 1
        found = domains.sizes(names[:count] + keys[members[0]], flat)
        tied = {}
        for key, value in inits[members[0]].items():
            size = next((s for s in found if type(value) is int and s.seen == tuple(
                inits[i][key] for i in members) and any(p >= count for p, _ in s.axes)), None)
            if size is not None:
                tied[size.name] = key
        found = [dataclasses.replace(s, name=tied.get(s.name, s.name)) for s in found]
        order = list(group[0][0])
        written = {(order[p - count], axis): repr(size.name) for size in found
                   for p, axis in size.axes if p >= count}
        # The first group also draws the practice case (draw DRAWS, public, its own seed).
        for draw in range(DRAWS + (g == 0)):
            practice = draw == DRAWS
            factor = 2 + draw % 2
            fixed = {key: factor * size.seen[0] for size in found for key in [size.name]
                     if key in tied.values()}
            init = {key: fixed.get(key, value) for key, value in inits[members[0]].items()}
            state = _state(group[0][0], written, 12)
            number = g * DRAWS + draw
            name = (PRACTICE if practice else "random" if number == 0
                    else f"random-{number + 1}")
            end = _PRACTICE_END if practice else "),  # hidden"
            lines.append(f'        Case("{name}", combined(\n            {state},\n'
                         + "".join(_arguments(names, flat, found, count))
                         + _sizes(found, names[:count] + keys[members[0]], fixed)
                         + f"        ), init_kwargs={init!r}, "
                         f"seed={PRACTICE_SEED if practice else number + 1}{tolerance}{end}")
    return lines, []


def _drawn(value: np.ndarray) -> str:
    """A maker of an array too large to write out, of its shape and kind."""
    if value.dtype.kind == "b":
        return f"{'lower_triangular' if domains.lower_triangular(value) else 'booleans'}" \
               f"({value.shape!r})"
    if value.dtype.kind in "iu":
        return f"integers({value.shape!r}, {int(value.min())}, {int(value.max())})"
    return f"floats({value.shape!r}, dtype={str(value.dtype)!r})"


def source(master: Master, calls: Calls) -> str:
    """The declaration skeleton as Python source, stamped."""
    nodes = {}
    for cell in master.code_cells:
        nodes.update(definitions(solved(cell)))
    blocks, missing = [], []
    for graded in master.graded:
        node = nodes[graded.name]
        dtype = calls.tensors.get(graded.name)
        tolerance = ", rtol=1e-4, atol=1e-5" if dtype == "float32" else ""
        recorded = calls.inputs.get(graded.name, ())
        if isinstance(node, ast.ClassDef):
            lines, notes = _class_cases(_parameters(node), recorded,
                                        calls.init_kwargs.get(graded.name, ()), tolerance) \
                if recorded else ([], [])
        else:
            lines, notes = _cases(_parameters(node), recorded, tolerance)
        if not lines:
            missing.append(graded.name)
            continue
        dropped = calls.unsupported.get(graded.name, 0)
        if dropped:
            notes.append(f"# {dropped} call(s) with an argument that is not data (an object "
                         "of a class) were left out: declare such cases by hand.")
        summary = graded.summary or " ".join(
            (ast.get_docstring(node) or "").split("\n\n")[0].split())
        outputs = graded.outputs or _returns(node)
        fields = [f'    name="{graded.name}",', f'    signature="{signature(node)}",',
                  f"    points={graded.points:g},", f"    summary={_string(summary, 13)},"]
        if isinstance(node, ast.ClassDef):
            fields.append('    kind="class",')
        if dtype:
            fields.append(f"    tensors={dtype!r},")
        if outputs != ("output",):
            fields.append(f"    outputs={outputs!r},")
        if graded.provided:
            fields.append("    provided=True,")
        blocks.append(f"{graded.name} = Exercise(\n" + "\n".join(fields) + "\n    cases=(\n"
                      + "\n".join(lines) + "\n" + "".join(f"        {n}\n" for n in notes)
                      + "    ),\n)\n")
    if missing:
        raise SpecError(f"{master.path}: the master never calls {', '.join(missing)} on "
                        "numbers, arrays or tensors, so there is no public case to draw; call "
                        "each graded function on the notebook's example (a class: construct "
                        "it, then call the module on the example)")
    names = ", ".join(graded.name for graded in master.graded)
    about = textwrap.fill(
        f"Declared by `grade assign` from {master.path.name}: each public case is a call the "
        "master makes. Add hidden cases (the default visibility), misconceptions and "
        "properties here; once you edit this file, `grade assign` never writes it again.", 96)
    text = (f'"""Assignment `{master.assignment}`: {master.title}.\n\n{about}\n"""\n\n'
            "from __future__ import annotations\n\n"
            "import numpy as np  # noqa: F401\n\n"
            "from grader.assignments.inputs import (  # noqa: F401\n"
            "    booleans, combined, exactly, fixed, floats, integers, lower_triangular, normal,\n"
            "    size, weights)\n"
            "from grader.model import Assignment, Case, Exercise, Visibility\n\n"
            "PUBLIC = Visibility.PUBLIC\n\n" + "\n".join(blocks)
            + f"\nASSIGNMENT = Assignment(\n    name={master.assignment!r},\n"
            f"    title={master.title!r},\n    exercises=({names},),\n"
            + ('    requires=("torch",),\n' if calls.tensors else "") + ")\n")
    return text + STAMP + hashlib.sha256(text.encode()).hexdigest() + "\n"


def untouched(path: Path) -> bool:
    """Whether the file is a skeleton exactly as `grade assign` wrote it."""
    text = path.read_text(encoding="utf-8")
    body, _, stamp = text.rstrip("\n").rpartition("\n")
    return stamp.startswith(STAMP) and \
        stamp[len(STAMP):] == hashlib.sha256((body + "\n").encode()).hexdigest()
