"""What `grade release` gives students for `check()`: the public cases and their expected
outputs, as data, in `<assignment>.check.npz` next to the notebook.

The file holds, for each exercise, what `check()` needs to call it and compare (its name,
signature, outputs, tolerances) and, for each public case, its inputs and the solution's
outputs. Nothing else: no hidden case, no misconception, no code. Arrays are stored without
pickles; the rest is JSON. `check()` reads it when the assignment is not in the registry.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from grader.errors import SpecError
from grader.model import Assignment, Case, Exercise, Inputs, Visibility
from grader.sandbox.inside import protocol
from grader.spec.references import Outputs, References

SCHEMA = "grader.release/1"
SUFFIX = ".check.npz"


def _encode(value: Any, arrays: dict[str, np.ndarray], prefix: str) -> Any:
    listed: list[np.ndarray] = []
    tree = protocol.encode(value, listed)
    for i, array in enumerate(listed):
        arrays[f"{prefix}/{i}"] = array
    return {"tree": tree, "arrays": [f"{prefix}/{i}" for i in range(len(listed))]}


def _decode(stored: Mapping[str, Any], data: Any) -> Any:
    return protocol.decode(stored["tree"], [np.array(data[key]) for key in stored["arrays"]])


def write(path: Path, assignment: Assignment, public: References) -> None:
    """Write the check data of an assignment's public cases, with their expected outputs."""
    arrays: dict[str, np.ndarray] = {}
    exercises = []
    for exercise in assignment.exercises:
        cases = []
        for case in exercise.cases:
            if case.visibility is not Visibility.PUBLIC:
                continue
            key = f"{exercise.name}/{case.name}"
            expected = public.get(exercise.name, case.name)
            for i, array in enumerate(expected):
                arrays[f"expected/{key}/{i}"] = array
            cases.append({"name": case.name, "rtol": case.rtol, "atol": case.atol,
                          "note": case.note, "scored": case.scored, "outputs": len(expected),
                          "inputs": _encode(case.inputs(), arrays, f"inputs/{key}"),
                          "init": _encode(dict(case.init_kwargs), arrays, f"init/{key}")})
        exercises.append({"name": exercise.name, "signature": exercise.signature,
                          "points": exercise.points, "kind": exercise.kind,
                          "summary": exercise.summary, "outputs": list(exercise.outputs),
                          "tensors": exercise.tensors, "provided": exercise.provided,
                          "axes": {k: list(v) for k, v in exercise.axes.items()},
                          "notebook": exercise.notebook, "cases": cases})
    meta = {"schema": SCHEMA, "assignment": assignment.name, "title": assignment.title,
            "requires": list(assignment.requires), "exercises": exercises}
    arrays["__meta__"] = np.array(json.dumps(meta))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]


def _fixed(inputs: Inputs) -> Callable[[np.random.Generator], Inputs]:
    """Stored inputs as a case's generator: fresh copies of the arrays at each call."""

    def make(rng: np.random.Generator) -> Inputs:
        return tuple(np.array(item) if isinstance(item, np.ndarray) else item
                     for item in inputs)
    return make


def read(path: Path) -> tuple[Assignment, References]:
    """The public part of an assignment, and its expected outputs, from a check data file."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["__meta__"]))
            if meta.get("schema") != SCHEMA:
                raise ValueError(f"schema {meta.get('schema')!r}")
            exercises, outputs = [], {}
            for spec in meta["exercises"]:
                cases = []
                for stored in spec["cases"]:
                    key = f"{spec['name']}/{stored['name']}"
                    cases.append(Case(stored["name"], _fixed(tuple(_decode(stored["inputs"],
                                                                           data))),
                                      visibility=Visibility.PUBLIC, rtol=stored["rtol"],
                                      atol=stored["atol"], note=stored["note"],
                                      scored=stored["scored"],
                                      init_kwargs=_decode(stored["init"], data)))
                    outputs[(spec["name"], stored["name"])] = tuple(
                        np.array(data[f"expected/{key}/{i}"]) for i in range(stored["outputs"]))
                exercises.append(Exercise(
                    name=spec["name"], signature=spec["signature"], points=spec["points"],
                    cases=tuple(cases), kind=spec["kind"], summary=spec["summary"],
                    outputs=tuple(spec["outputs"]), tensors=spec["tensors"],
                    provided=spec["provided"], notebook=spec["notebook"],
                    axes={k: (v[0], v[1]) for k, v in spec["axes"].items()}))
    except (OSError, ValueError, KeyError, TypeError, protocol.ProtocolError) as exc:
        raise SpecError(f"{path}: not check data written by `grade release` ({exc}); "
                        "ask for the assignment's files again") from None
    assignment = Assignment(meta["assignment"], meta["title"], tuple(exercises),
                            tuple(meta["requires"]))
    checked: Mapping[tuple[str, str], Outputs] = outputs
    return assignment, References(assignment.name, "", checked, path)


def found(folder: Path) -> list[tuple[Assignment, References]]:
    """Every assignment whose check data is in `folder` (a notebook's own folder)."""
    return [read(path) for path in sorted(folder.glob(f"*{SUFFIX}"))]
