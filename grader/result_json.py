"""The JSON result, schema "grader.result/1": keys may be added, never removed or renamed.

`from_dict` reads it back (a batch graded on a Dask worker comes back as this JSON).
"""

from __future__ import annotations

import json
from typing import Any

from grader import text
from grader.model import (
    CellResult,
    CheckResult,
    Diagnosis,
    ExerciseResult,
    Fingerprint,
    Result,
    Status,
    Visibility,
)

SCHEMA = "grader.result/1"


def _check(check: CheckResult) -> dict[str, Any]:
    diagnosis = (None if check.diagnosis is None
                 else {"id": check.diagnosis.id, "message": check.diagnosis.message})
    return {"name": check.name, "visibility": check.visibility.value, "passed": check.passed,
            "score": check.score, "max_score": check.max_score, "status": check.status.value,
            "message": check.message, "diagnosis": diagnosis, "note": check.note,
            "caution": check.caution,
            "scored": check.scored}


def _exercise(exercise: ExerciseResult) -> dict[str, Any]:
    return {"name": exercise.name, "score": exercise.score, "max_score": exercise.max_score,
            "status": exercise.status.value, "checks": [_check(c) for c in exercise.checks],
            "file": exercise.file, "provided": exercise.provided,
            "fingerprint": None if exercise.fingerprint is None else {
                "digest": exercise.fingerprint.digest, "nodes": exercise.fingerprint.nodes}}


def to_dict(result: Result, instructor: bool = False) -> dict[str, Any]:
    """The result as plain JSON data, every string of it `clean`ed. `instructor` adds what
    only the instructor may see (`hidden_output`): the gradebook and a Dask batch's results
    have it, a student's JSON never."""
    result = text.clean_fields(result)
    found = {
        "schema": SCHEMA, "assignment": result.assignment, "submission": result.submission,
        "status": result.status.value, "error": result.error, "score": result.score,
        "max_score": result.max_score, "duration_s": result.duration_s,
        "cells": [{"index": c.index, "status": c.status.value, "message": c.message,
                   "file": c.file, "number": c.number, "execution_count": c.execution_count,
                   "where": c.where} for c in result.cells],
        "exercises": [_exercise(e) for e in result.exercises],
        "public_only": result.public_only, "isolation": result.isolation,
        "worker": result.worker,
        "sha256": result.sha256, "output": result.output,
        "grader_failed": result.grader_failed, "files": list(result.files),
        "show_hidden_after": result.show_hidden_after or None,
        "hidden_shown": result.hidden_shown,
    }
    if instructor:
        found["hidden_output"] = result.hidden_output
    return found


def from_dict(data: dict[str, Any]) -> Result:
    """The `Result` that `to_dict` made `data` from: `to_dict(from_dict(data)) == data`. What
    the JSON leaves out (the arrays a failed public check draws, a diagnosis's alternatives)
    comes back empty; the JSON is `clean`, so its strings are."""
    return Result(
        assignment=data["assignment"], submission=data["submission"],
        status=Status(data["status"]), score=data["score"], max_score=data["max_score"],
        duration_s=data["duration_s"], error=data["error"],
        cells=tuple(CellResult(c["index"], Status(c["status"]), c["message"], c["file"],
                               c["number"], c["execution_count"]) for c in data["cells"]),
        exercises=tuple(_exercise_from(e) for e in data["exercises"]),
        isolation=data["isolation"], worker=data["worker"], output=data["output"],
        public_only=data["public_only"], sha256=data["sha256"],
        grader_failed=data["grader_failed"], files=tuple(data["files"]),
        hidden_output=data.get("hidden_output", ""))


def _exercise_from(data: dict[str, Any]) -> ExerciseResult:
    mark = data["fingerprint"]
    return ExerciseResult(
        data["name"], Status(data["status"]), data["score"], data["max_score"],
        tuple(_check_from(c) for c in data["checks"]), data["file"],
        None if mark is None else Fingerprint(mark["digest"], mark["nodes"]),
        provided=data.get("provided", data["max_score"] == 0))


def _check_from(data: dict[str, Any]) -> CheckResult:
    found = data["diagnosis"]
    return CheckResult(
        data["name"], Visibility(data["visibility"]), data["passed"], data["score"],
        data["max_score"], Status(data["status"]), data["message"],
        None if found is None else Diagnosis(found["id"], found["message"]),
        note=data["note"], caution=data["caution"])


def render(result: Result, instructor: bool = False) -> str:
    """The result as a JSON document (`instructor`: with what only the instructor sees)."""
    return json.dumps(to_dict(result, instructor), indent=2)
