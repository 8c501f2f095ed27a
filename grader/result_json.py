"""The JSON result, schema "grader.result/1": keys may be added, never removed or renamed.

Both directions follow the fields of the result dataclasses (`grader.results`), so that a
field added there is written and read back with no list to update here. What differs from
"one key per field, in field order" is written once below: the schema's key order, the keys
derived from properties, the fields only the instructor sees, and how an absent value reads.
`from_dict` and `parse` read it back (the gradebook, and a batch graded on a Dask worker).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from grader import text
from grader.results import CellResult, CheckResult, ExerciseResult, Result

SCHEMA = "grader.result/1"

# The keys as the schema has always ordered them; a field not named here follows them, in
# the order of the fields.
_ORDER: dict[type, tuple[str, ...]] = {
    Result: ("assignment", "submission", "status", "error", "score", "max_score", "duration_s",
             "cells", "exercises", "public_only", "isolation", "worker", "sha256", "output",
             "grader_failed", "files", "show_hidden_after", "hidden_shown"),
    ExerciseResult: ("name", "score", "max_score", "status", "checks", "file", "provided",
                     "fingerprint"),
    CheckResult: ("name", "visibility", "passed", "score", "max_score", "status", "message",
                  "diagnosis", "note", "caution", "scored", "verdict", "raised"),
    CellResult: ("index", "status", "message", "file", "number", "execution_count", "where"),
}
# Properties written for readers of the JSON, never read back.
DERIVED: dict[type, tuple[str, ...]] = {CheckResult: ("scored",), CellResult: ("where",)}
# Only the instructor sees these (the gradebook, a Dask batch's results, `--instructor`):
# what hidden calls printed may hold their inputs; `detail` is a hidden check's message as
# it reads once its due date has passed; the arrays a failed public check draws and the
# mistakes its output also matches are the HTML report's, which no student JSON held; the
# function a check's failure comes from is said to students in its diagnosis's closed words.
INSTRUCTOR_ONLY: dict[type, tuple[str, ...]] = {
    Result: ("hidden_output",), CheckResult: ("views", "alternatives", "detail", "callee")}
# Empty strings the schema writes as null.
_NULL_WHEN_EMPTY: dict[type, tuple[str, ...]] = {Result: ("show_hidden_after",)}
# How a key that older JSON lacks reads (else the field's default).
_ABSENT: dict[tuple[type, str], Callable[[dict[str, Any]], Any]] = {
    (ExerciseResult, "provided"): lambda data: data["max_score"] == 0}
# Floats that JSON has no number for, written as strings.
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def keys(kind: type, instructor: bool = True) -> tuple[str, ...]:
    """The keys of a dataclass's JSON object, in order (without "schema")."""
    names = [f.name for f in dataclasses.fields(kind)]
    pinned = _ORDER.get(kind, ())
    found = [*pinned, *(name for name in names if name not in pinned)]
    hidden = () if instructor else INSTRUCTOR_ONLY.get(kind, ())
    return tuple(name for name in found if name not in hidden)


def _encode(value: Any, instructor: bool) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _object(value, instructor)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return [_encode(part, instructor) for part in value]
    if isinstance(value, np.ndarray):
        return {"dtype": value.dtype.name, "shape": list(value.shape),
                "values": [_number(v) for v in value.ravel().tolist()]}
    return value


def _number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return value


def _object(value: Any, instructor: bool) -> dict[str, Any]:
    kind = type(value)
    found = {}
    for key in keys(kind, instructor):
        item = getattr(value, key)
        if key in _NULL_WHEN_EMPTY.get(kind, ()) and not item:
            item = None
        if not instructor and (kind, key) == (Result, "duration_s") and not value.timed:
            item = None  # a student's JSON: the hidden calls' time is the submission's
        found[key] = _encode(item, instructor)
    return found


def to_dict(result: Result, instructor: bool = False) -> dict[str, Any]:
    """The result as plain JSON data, every string of it `clean`ed. `instructor` adds what
    only the instructor may see (`INSTRUCTOR_ONLY`): the gradebook and a Dask batch's
    results have it, a student's JSON never."""
    return {"schema": SCHEMA, **_object(text.clean_fields(result), instructor)}


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def _decode(value: Any, hint: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        (other,) = [arg for arg in args if arg is not type(None)]
        return _decode(value, other)
    if origin is tuple:
        return tuple(_decode(part, args[0]) for part in value)
    if hint is np.ndarray:
        numbers = [_NON_FINITE.get(v, v) if isinstance(v, str) else v for v in value["values"]]
        return np.array(numbers, dtype=value["dtype"]).reshape(value["shape"])
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _read(hint, value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    return value


def _read(kind: type, data: dict[str, Any]) -> Any:
    hints = _hints(kind)
    found = {}
    for field in dataclasses.fields(kind):
        if field.name in data:
            value = data[field.name]
            if value is None and field.name in _NULL_WHEN_EMPTY.get(kind, ()):
                value = ""
            if value is None and (kind, field.name) == (Result, "duration_s"):
                value = 0.0
            found[field.name] = _decode(value, hints[field.name])
        elif (kind, field.name) in _ABSENT:
            found[field.name] = _ABSENT[kind, field.name](data)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise KeyError(field.name)
    return kind(**found)


def from_dict(data: dict[str, Any]) -> Result:
    """The `Result` that `to_dict` made `data` from: `to_dict(from_dict(data)) == data`, and
    from an instructor's JSON, the whole result (`clean`: the JSON's strings are). What a
    student's JSON leaves out comes back empty."""
    result: Result = _read(Result, data)
    return result


def parse(document: str) -> Result:
    """The `Result` of a JSON document that `render` wrote (with `instructor`, the whole
    result): what a gradebook or a Dask worker hands back."""
    return from_dict(json.loads(document))


def render(result: Result, instructor: bool = False) -> str:
    """The result as a JSON document (`instructor`: with what only the instructor sees)."""
    return json.dumps(to_dict(result, instructor), indent=2)
