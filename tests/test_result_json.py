"""The result JSON (`grader.result_json`): the schema's keys and their order, and the round trip
over generated results whose every field is set, arrays, diagnoses and fingerprints included.

The results are generated from the dataclasses' own fields and type hints, as the JSON is: a
field added to a result type is generated here at once, and fails the round trip unless the
JSON carries it.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from grader import result_json, text
from grader.model import Visibility
from grader.results import (
    ArrayView,
    CellResult,
    CellStatus,
    CheckResult,
    CheckStatus,
    Diagnosis,
    ExerciseResult,
    Fingerprint,
    Result,
    ResultStatus,
    Verdict,
)

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# What the gradebook and `--instructor` have, and a student's JSON never (#21).
INSTRUCTOR_ONLY = {Result: {"hidden_output"},
                   CheckResult: {"views", "alternatives", "detail", "callee"}}


def strategy(hint: Any, raw: bool = False) -> st.SearchStrategy[Any]:
    """Values of a type hint of the result dataclasses; strings `clean` unless `raw`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(strategy(arg, raw) for arg in args if arg is not type(None)),
                         st.none())
    if origin is tuple:
        return st.lists(strategy(args[0], raw), min_size=1, max_size=2).map(tuple)
    if hint is np.ndarray:
        return hnp.arrays(st.sampled_from([np.float64, np.float32, np.bool_]),
                          hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=3))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return st.builds(hint, **{field.name: strategy(hints[field.name], raw)
                                  for field in dataclasses.fields(hint)})
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return st.sampled_from(list(hint))
    if hint is str:
        return st.text(max_size=12) if raw else st.text(max_size=12).map(text.clean)
    if hint is bool:
        return st.booleans()
    if hint is int:
        return st.integers(-1, 10**6)
    if hint is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    raise AssertionError(f"no strategy for {hint!r}: teach this test the new field's type")


def same(a: Any, b: Any) -> bool:
    """Equal, arrays by dtype, shape and values (NaN equal to NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(same(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a))
    if isinstance(a, tuple):
        return (isinstance(b, tuple) and len(a) == len(b)
                and all(same(x, y) for x, y in zip(a, b, strict=True)))
    return type(a) is type(b) and a == b


def students(data: dict[str, Any], kind: type) -> dict[str, Any]:
    """An instructor's JSON object as a student's: without `INSTRUCTOR_ONLY`, at every level."""
    hints = typing.get_type_hints(kind)
    found = {}
    for key, value in data.items():
        if key in INSTRUCTOR_ONLY.get(kind, set()):
            continue
        hint = hints.get(key)
        inner = [arg for arg in (typing.get_args(hint) or (hint,)) if arg is not type(None)][0]
        if isinstance(inner, type) and dataclasses.is_dataclass(inner) and value is not None:
            value = ([students(item, inner) for item in value] if isinstance(value, list)
                     else students(value, inner))
        found[key] = value
    return found


def objects(data: Any, kind: type) -> list[tuple[type, dict[str, Any]]]:
    """Every JSON object in `data`, with the dataclass it stands for (`kind` at the top)."""
    found = [(kind, data)]
    hints = typing.get_type_hints(kind)
    for field in dataclasses.fields(kind):
        if field.name not in data:
            continue
        hint, value = hints[field.name], data[field.name]
        inner = [arg for arg in (typing.get_args(hint) or (hint,)) if arg is not type(None)][0]
        if isinstance(inner, type) and dataclasses.is_dataclass(inner) and value is not None:
            items = value if isinstance(value, list) else [value]
            for item in items:
                found += objects(item, inner)
    return found


@SETTINGS
@given(strategy(Result))
def test_a_result_reads_back_whole_from_the_instructors_json(result):
    data = json.loads(result_json.render(result, instructor=True))  # through JSON text
    back = result_json.from_dict(data)
    assert same(back, result)
    assert result_json.to_dict(back, instructor=True) == data


@SETTINGS
@given(strategy(Result))
def test_a_students_json_reads_back_to_itself_without_what_only_the_instructor_sees(result):
    data = json.loads(result_json.render(result))
    back = result_json.from_dict(data)
    assert result_json.to_dict(back) == data
    assert back.hidden_output == "" and all(
        (c.views, c.alternatives, c.detail) == ((), (), "")
        for e in back.exercises for c in e.checks)
    expected = students(result_json.to_dict(result, instructor=True), Result)
    if not result.timed:  # once hidden cases ran, their time is the submission's to choose
        expected["duration_s"] = None
    assert data == expected


@SETTINGS
@given(strategy(Result, raw=True))
def test_every_string_is_clean_in_the_json_and_the_rest_reads_back(result):
    data = json.loads(result_json.render(result, instructor=True))
    assert same(result_json.from_dict(data), text.clean_fields(result))


@SETTINGS
@given(strategy(Result))
def test_the_json_carries_every_field_of_every_result_type(result):
    data = json.loads(result_json.render(result, instructor=True))
    for kind, whole in objects(data, Result):
        fields = {f.name for f in dataclasses.fields(kind)}
        derived = set(result_json.DERIVED.get(kind, ()))
        assert set(whole) - {"schema"} == fields | derived, kind
    assert {kind: set(names) for kind, names in result_json.INSTRUCTOR_ONLY.items()} \
        == INSTRUCTOR_ONLY


def test_a_field_added_to_a_result_type_is_written_and_read_back():
    @dataclasses.dataclass(frozen=True)
    class Later(Fingerprint):
        added: tuple[Diagnosis, ...] = ()
        """A field the JSON has never seen."""

    later = Later("ab", 3, (Diagnosis("x", "y"),))
    data = result_json._object(later, instructor=False)
    assert data == {"digest": "ab", "nodes": 3, "added": [{"id": "x", "message": "y"}]}
    assert result_json._read(Later, json.loads(json.dumps(data))) == later


# --------------------------------------------------------------------------- the schema


VIEW = ArrayView(expected=np.array([[0.5, 0.5], [0.25, 0.75]]),
                 obtained=np.array([[0.5, np.nan], [np.inf, -np.inf]], dtype=np.float32),
                 mismatched=np.array([[False, True], [True, True]]), label="weights",
                 rows="query", columns="key")
DIAGNOSIS = Diagnosis("transposed-weights", "The attention matrix is applied transposed.")
UNSCALED = Diagnosis("missing-scale", "The scores are not divided by sqrt(d_k).")
CHECK = CheckResult("notebook-example", Visibility.PUBLIC, False, 0.0, 1.5, CheckStatus.FAILED,
                    "values differ", DIAGNOSIS, (VIEW,), note="the example", caution="late",
                    alternatives=(DIAGNOSIS, UNSCALED), detail="hidden numbers",
                    verdict=Verdict.WRONG_VALUES)
FULL = Result(
    assignment="udl_attention", submission="12_1.ipynb + 12_2.ipynb",
    status=ResultStatus.GRADED, score=1.5, max_score=4.5, duration_s=0.25,
    error="\x1b[2Jpartly",
    cells=(CellResult(3, CellStatus.ERROR, "line 2: NameError", file="12_1.ipynb", number=2,
                      execution_count=7),),
    exercises=(ExerciseResult("softmax", CheckStatus.FAILED, 0.0, 1.5, (CHECK,),
                              file="12_1.ipynb", fingerprint=Fingerprint("3ee4d300", 67),
                              part="part 1 (12_1.ipynb)"),),
    isolation="namespaces", worker="zygote", output="out\x07", hidden_output="n=6",
    public_only=True, sha256="ab" * 32, grader_failed=True,
    files=("12_1.ipynb", "12_2.ipynb"), show_hidden_after="2030-06-01T18:00+00:00",
    hidden_shown=True)


def test_the_schema_keeps_its_keys_in_their_order():
    data = json.loads(result_json.render(FULL))
    assert list(data) == [
        "schema", "assignment", "submission", "status", "error", "score", "max_score",
        "duration_s", "cells", "exercises", "public_only", "isolation", "worker", "sha256",
        "output", "grader_failed", "files", "show_hidden_after", "hidden_shown"]
    assert data["schema"] == "grader.result/1" and data["error"] == "[2Jpartly"
    assert data["cells"] == [{"index": 3, "status": "error", "message": "line 2: NameError",
                              "file": "12_1.ipynb", "number": 2, "execution_count": 7,
                              "where": "code cell 2 (In [7])"}]
    exercise = data["exercises"][0]
    assert list(exercise) == ["name", "score", "max_score", "status", "checks", "file",
                              "provided", "fingerprint", "part", "handed_in"]
    assert (exercise["part"], exercise["handed_in"]) == ("part 1 (12_1.ipynb)", True)
    assert exercise["fingerprint"] == {"digest": "3ee4d300", "nodes": 67}
    assert exercise["checks"] == [{
        "name": "notebook-example", "visibility": "public", "passed": False, "score": 0.0,
        "max_score": 1.5, "status": "failed", "message": "values differ",
        "diagnosis": {"id": "transposed-weights",
                      "message": "The attention matrix is applied transposed."},
        "note": "the example", "caution": "late", "scored": True, "verdict": "wrong values",
        "raised": ""}]
    assert list(exercise["checks"][0]) == [
        "name", "visibility", "passed", "score", "max_score", "status", "message",
        "diagnosis", "note", "caution", "scored", "verdict", "raised"]
    # The instructor's adds what only they see, after the student's keys.
    whole = json.loads(result_json.render(FULL, instructor=True))
    assert list(whole) == [*data, "hidden_output"] and whole["hidden_output"] == "n=6"
    check = whole["exercises"][0]["checks"][0]
    assert list(check) == [*exercise["checks"][0], "views", "alternatives", "detail", "callee"]
    assert check["views"] == [{
        "expected": {"dtype": "float64", "shape": [2, 2], "values": [0.5, 0.5, 0.25, 0.75]},
        "obtained": {"dtype": "float32", "shape": [2, 2],
                     "values": [0.5, "NaN", "Infinity", "-Infinity"]},
        "mismatched": {"dtype": "bool", "shape": [2, 2], "values": [False, True, True, True]},
        "label": "weights", "rows": "query", "columns": "key", "index": "", "slices": 1}]
    assert (check["detail"], check["callee"]) == ("hidden numbers", "")
    assert [a["id"] for a in check["alternatives"]] == ["transposed-weights", "missing-scale"]
    # Standard JSON: no NaN token, which browsers' JSON.parse refuses.
    json.loads(result_json.render(FULL, instructor=True), parse_constant=lambda name: 1 / 0)


def test_what_has_no_value_reads_back_as_before():
    data = json.loads(result_json.render(dataclasses.replace(FULL, show_hidden_after="")))
    assert data["show_hidden_after"] is None
    assert result_json.from_dict(data).show_hidden_after == ""
    # JSON written before exercises said whether the notebook provides them.
    exercise = data["exercises"][0]
    for max_score, provided in ((0.0, True), (1.5, False)):
        old = {key: value for key, value in exercise.items() if key != "provided"}
        back = result_json.from_dict({**data, "exercises": [{**old, "max_score": max_score}]})
        assert back.exercises[0].provided is provided
