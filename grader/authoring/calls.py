"""The calls a master notebook makes of its graded functions, recorded by running it.

The master runs in the sandbox, as a submission does: its code cells, with each graded
function wrapped right after the statement that defines it, so that every call the notebook
makes from its own cells (not from inside another graded function) is recorded with its
arguments. The arguments come back as plain data through the sandbox's protocol.
"""

from __future__ import annotations

import ast
import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from grader.authoring.building import LIMITS
from grader.authoring.master import Master
from grader.errors import SpecError, SubmissionError
from grader.model import Inputs
from grader.pipeline import ipython_syntax, loading
from grader.results import CellStatus
from grader.sandbox.config import SandboxConfig
from grader.sandbox.session import Session

MAX_CALLS = 200
RECORD = "__grade_assign_record__"
RECORD_CLASS = "__grade_assign_record_class__"
CALLS = "__grade_assign_calls__"
PRELUDE = f'''import copy as __grade_assign_copy
import functools as __grade_assign_functools
import inspect as __grade_assign_inspect

__grade_assign_log = []
__grade_assign_depth = [0]


__grade_assign_tensors = []
__grade_assign_inits = {{}}


def __grade_assign_plain(value, depth=0):
    """An argument as data the grader can read back, as it is (an integer array stays one,
    a list a list, a CPU tensor an array of its dtype, noted), or None when it is something
    else (an object)."""
    import numpy
    if depth > 20:
        return None
    if type(value).__module__.startswith("torch") and hasattr(value, "detach") and \
            hasattr(value, "numpy"):
        try:
            array = value.detach().cpu().numpy()
        except Exception:
            return None
        __grade_assign_tensors.append(str(array.dtype))
        return (numpy.array(array),)
    if value is None or type(value) in (bool, int, float, str):
        return (value,)
    if isinstance(value, numpy.generic) and value.dtype.kind in "biuf":
        return (value.item(),)
    if type(value) in (list, tuple):
        items = [__grade_assign_plain(item, depth + 1) for item in value]
        return (type(value)(item[0] for item in items),) if all(items) else None
    if type(value) is dict and all(type(key) is str for key in value):
        items = {{key: __grade_assign_plain(item, depth + 1) for key, item in value.items()}}
        if not all(items.values()):
            return None
        return ({{key: item[0] for key, item in items.items()}},)
    if type(value) is numpy.ndarray and value.dtype.kind in "biufc":
        return (numpy.array(value),)
    return None


def {RECORD}(function, name):
    signature = __grade_assign_inspect.signature(function)

    @__grade_assign_functools.wraps(function)
    def recorded(*args, **kwargs):
        if __grade_assign_depth[0] == 0 and len(__grade_assign_log) < {MAX_CALLS}:
            del __grade_assign_tensors[:]
            try:
                bound = signature.bind(*args, **kwargs)
                plain = [__grade_assign_plain(value) for value in bound.args]
                if len(bound.args) == len(bound.arguments) and all(plain):
                    __grade_assign_log.append((name, tuple(p[0] for p in plain), None,
                                               list(__grade_assign_tensors)))
                else:
                    __grade_assign_log.append((name, "unsupported", None, []))
            except TypeError:
                pass
        __grade_assign_depth[0] += 1
        try:
            return function(*args, **kwargs)
        finally:
            __grade_assign_depth[0] -= 1

    return recorded


def {RECORD_CLASS}(cls, name):
    """Record a module's constructor arguments by name, and each call of it from the
    notebook's cells with its state_dict first, as a class exercise's case holds them."""
    init, call = cls.__init__, cls.__call__
    signature = __grade_assign_inspect.signature(init)

    def recorded_init(self, *args, **kwargs):
        try:
            bound = signature.bind(self, *args, **kwargs)
            given = dict(list(bound.arguments.items())[1:])
            plain = {{key: __grade_assign_plain(value) for key, value in given.items()}}
            kinds = {{p.name: p.kind for p in signature.parameters.values()}}
            if all(plain.values()) and all(kinds[key] in (1, 3) for key in given):
                __grade_assign_inits[id(self)] = {{k: v[0] for k, v in plain.items()}}
        except TypeError:
            pass
        return init(self, *args, **kwargs)

    def recorded_call(self, *args, **kwargs):
        if __grade_assign_depth[0] == 0 and len(__grade_assign_log) < {MAX_CALLS}:
            del __grade_assign_tensors[:]
            try:
                bound = __grade_assign_inspect.signature(self.forward).bind(*args, **kwargs)
                plain = [__grade_assign_plain(value) for value in bound.args]
                state = __grade_assign_plain(dict(self.state_dict()))
                init_kwargs = __grade_assign_inits.get(id(self))
                if len(bound.args) == len(bound.arguments) and all(plain) and state and \
                        init_kwargs is not None:
                    __grade_assign_log.append((name, (state[0], *(p[0] for p in plain)),
                                               init_kwargs, list(__grade_assign_tensors)))
                else:
                    __grade_assign_log.append((name, "unsupported", None, []))
            except (TypeError, AttributeError):
                pass
        __grade_assign_depth[0] += 1
        try:
            return call(self, *args, **kwargs)
        finally:
            __grade_assign_depth[0] -= 1

    cls.__init__, cls.__call__ = recorded_init, recorded_call
    return cls


def {CALLS}():
    return list(__grade_assign_log)
'''


@dataclass(frozen=True)
class Calls:
    """What the master's own cells called each graded function with."""

    inputs: dict[str, tuple[Inputs, ...]]
    """Function name -> the distinct positional arguments of its calls, in order; a class's
    start with the module's state_dict, as the class's cases hold them."""
    unsupported: dict[str, int]
    """Function name -> calls with an argument that is not data (an object: left out)."""
    init_kwargs: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    """Class name -> the constructor's arguments, by name, of each call in `inputs`."""
    tensors: dict[str, str] = field(default_factory=dict)
    """Function or class name -> the dtype of the first float tensor its calls pass
    ("float32"), or "float32" when they pass tensors of other dtypes only; absent: the
    calls pass no tensor."""


def _wrapped(source: str, names: set[str]) -> tuple[str, list[int]]:
    """A cell with `name = record(name, "name")` after each statement that defines a graded
    function or class, and the lines (1-based, of the new cell) that were added."""
    try:
        tree = ast.parse(ipython_syntax.to_python(source))
    except (SyntaxError, ValueError):
        return source, []
    lines = ipython_syntax.to_python(source).splitlines()
    defined = sorted((node.end_lineno or node.lineno, node.name,
                      RECORD_CLASS if isinstance(node, ast.ClassDef) else RECORD)
                     for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                     and node.name in names)
    for end, name, recorder in reversed(defined):
        lines.insert(end, f'{name} = {recorder}({name}, "{name}")')
    return "\n".join(lines) + "\n", [end + i + 1 for i, (end, _, _) in enumerate(defined)]


def _located(message: str, added: list[int]) -> str:
    """A cell's message with its line numbers as the master's cell has them."""
    return re.sub(r"\bline (\d+)", lambda m: "line " + str(
        int(m.group(1)) - sum(line < int(m.group(1)) for line in added)), message)


def _same(a: Any, b: Any) -> bool:
    """Whether two recorded values are the same, type and dtype included."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    return bool(a == b)


def record(master: Master) -> Calls:
    """Run the master in the sandbox and return the calls it makes; SpecError when a cell of
    it fails, naming the cell."""
    names = {graded.name for graded in master.graded}
    wrapped = [_wrapped(source, names) for source in master.code_cells]
    cells = [PRELUDE] + [source for source, _ in wrapped]
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": f"c{i}", "metadata": {}, "outputs": [],
         "execution_count": None, "source": source} for i, source in enumerate(cells)]}
    with tempfile.TemporaryDirectory(prefix="grade-assign-") as folder:
        path = Path(folder) / f"{master.assignment}.ipynb"
        path.write_text(json.dumps(notebook), encoding="utf-8")
        try:
            submission = loading.load(path, LIMITS)
        except SubmissionError as exc:
            raise SpecError(f"{master.path}: {exc.message}") from None
        with Session(SandboxConfig(LIMITS)) as session:
            for result in session.run(submission):
                if result.status not in (CellStatus.OK, CellStatus.SKIPPED):
                    message = _located(result.message, wrapped[result.index - 2][1])
                    raise SpecError(f"{master.path}: code cell {result.index - 1} "
                                    f"{result.status.value}: {message}; fix the master so "
                                    "that it runs from top to bottom")
            outcome = session.call(CALLS, "function", (), {}, None)
    if not outcome.returned or not isinstance(outcome.value, list):
        raise SpecError(f"{master.path}: its calls could not be read back ({outcome.message})")
    return _collect(outcome.value, names)


def _collect(log: list[Any], names: set[str]) -> Calls:
    inputs: dict[str, list[Inputs]] = {name: [] for name in sorted(names)}
    inits: dict[str, list[dict[str, Any]]] = {}
    unsupported: dict[str, int] = {}
    tensors: dict[str, str] = {}
    for entry in log:
        name, args, init, dtypes = entry
        if args == "unsupported":
            unsupported[name] = unsupported.get(name, 0) + 1
            continue
        if dtypes and name not in tensors:
            floats = [dtype for dtype in dtypes if dtype.startswith("float")]
            tensors[name] = floats[0] if floats else "float32"
        args = tuple(args)
        seen = zip(inputs[name], inits.get(name, [None] * len(inputs[name])), strict=True)
        if not any(_same(args, other) and _same(init, other_init) for other, other_init in seen):
            inputs[name].append(args)
            if init is not None:
                inits.setdefault(name, []).append(dict(init))
    return Calls({name: tuple(found) for name, found in inputs.items()}, unsupported,
                 {name: tuple(found) for name, found in inits.items()}, tensors)
