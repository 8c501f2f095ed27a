"""What `grade release` gives students for `check()`: the public cases and their expected
outputs, as data, in `<assignment>.check.npz` next to the notebook.

The file holds, for each exercise, what `check()` needs to call it and compare (its name,
signature, outputs, tolerances) and, for each public case, its inputs, the solution's
outputs, and what each catalogued misconception returns on them (with its id and sentence),
so that `check()` names a mistake as `grade run` does. Nothing else: no hidden case, no code
(a misconception becomes a lookup of its recorded outputs). Arrays are stored without
pickles; the rest is JSON. `check()` and `grade check` read it when the assignment is not in
the registry.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from grader.course.layout import CHECK_SUFFIX as SUFFIX
from grader.course.references import Outputs, References
from grader.errors import SpecError
from grader.model import Assignment, Case, Exercise, Inputs, Misconception, Visibility
from grader.sandbox.inside import protocol

SCHEMA = "grader.release/1"

Mistakes = Mapping[tuple[str, str], Mapping[int, Outputs]]
"""What misconceptions return on public cases: (exercise, case) -> {index of the misconception
in the exercise's `misconceptions`: its outputs}; a misconception that does not apply to a
case's inputs, or returns what the solution returns, is left out."""


def _encode(value: Any, arrays: dict[str, np.ndarray], prefix: str) -> Any:
    listed: list[np.ndarray] = []
    tree = protocol.encode(value, listed)
    for i, array in enumerate(listed):
        arrays[f"{prefix}/{i}"] = array
    return {"tree": tree, "arrays": [f"{prefix}/{i}" for i in range(len(listed))]}


def _decode(stored: Mapping[str, Any], data: Any) -> Any:
    return protocol.decode(stored["tree"], [np.array(data[key]) for key in stored["arrays"]])


def write(path: Path, assignment: Assignment, public: References,
          mistakes: Mistakes | None = None) -> None:
    """Write the check data of an assignment's public cases, with their expected outputs and
    the outputs of its misconceptions on them (`mistakes`)."""
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
            wrong = (mistakes or {}).get((exercise.name, case.name), {})
            for index, outputs in wrong.items():
                for i, array in enumerate(outputs):
                    arrays[f"mistakes/{key}/{index}/{i}"] = np.asarray(array)
            cases.append({"name": case.name, "rtol": case.rtol, "atol": case.atol,
                          "note": case.note, "scored": case.scored, "outputs": len(expected),
                          "inputs": _encode(case.inputs(), arrays, f"inputs/{key}"),
                          "init": _encode(dict(case.init_kwargs), arrays, f"init/{key}"),
                          "mistakes": sorted(wrong)})
        exercises.append({"misconceptions": [{"id": m.id, "message": m.message}
                                             for m in exercise.misconceptions],
                          "name": exercise.name, "signature": exercise.signature,
                          "points": exercise.points, "kind": exercise.kind,
                          "summary": exercise.summary, "outputs": list(exercise.outputs),
                          "tensors": exercise.tensors, "provided": exercise.provided,
                          "axes": {k: list(v) for k, v in exercise.axes.items()},
                          "notebook": exercise.notebook, "cases": cases})
    meta = {"schema": SCHEMA, "assignment": assignment.name, "title": assignment.title,
            "requires": list(assignment.requires), "layout": assignment.layout,
            "exercises": exercises}
    arrays["__meta__"] = np.array(json.dumps(meta))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]


def _fixed(inputs: Inputs) -> Callable[[np.random.Generator], Inputs]:
    """Stored inputs as a case's generator: fresh copies of the arrays at each call."""

    def make(rng: np.random.Generator) -> Inputs:
        return tuple(np.array(item) if isinstance(item, np.ndarray) else item
                     for item in inputs)
    return make


def _same(a: Any, b: Any) -> bool:
    """Whether two values encode alike: the same structure, and arrays of the same shape and
    kind holding the same numbers (NaN equal to NaN)."""
    listed_a: list[np.ndarray] = []
    listed_b: list[np.ndarray] = []
    if protocol.encode(a, listed_a) != protocol.encode(b, listed_b):
        return False
    return all(x.shape == y.shape and x.dtype.kind == y.dtype.kind and bool(
        np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))
        for x, y in zip(listed_a, listed_b, strict=True))


def _recorded(recorded: list[tuple[Inputs, Mapping[str, Any], Outputs]]) -> Callable[..., Any]:
    """A misconception as check data holds it: the outputs it returned on each public case,
    looked up by the inputs it is called with; LookupError on other inputs (diagnosis takes
    a variant that raises as one that does not apply)."""

    def variant(*args: Any, **kwargs: Any) -> Any:
        for inputs, init, outputs in recorded:
            if _same(tuple(args), tuple(inputs)) and _same(dict(kwargs), dict(init)):
                copies = tuple(np.array(array) for array in outputs)
                return copies if len(copies) > 1 else copies[0]
        raise LookupError("no recorded outputs for these inputs")
    return variant


def _misconceptions(spec: Mapping[str, Any], data: Any) -> tuple[Misconception, ...]:
    """The exercise's misconceptions, each a lookup of its recorded outputs, in the order
    (the catalogue's) that the diagnosis tries them."""
    named = spec.get("misconceptions", [])  # check data may carry none: then none is named
    recorded: list[list[tuple[Inputs, Mapping[str, Any], Outputs]]] = [[] for _ in named]
    for stored in spec["cases"]:
        key = f"{spec['name']}/{stored['name']}"
        for index in stored.get("mistakes", []):
            outputs = tuple(np.array(data[f"mistakes/{key}/{index}/{i}"])
                            for i in range(stored["outputs"]))
            recorded[index].append((tuple(_decode(stored["inputs"], data)),
                                    _decode(stored["init"], data), outputs))
    return tuple(Misconception(m["id"], m["message"], _recorded(r))
                 for m, r in zip(named, recorded, strict=True))


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
                    axes={k: (v[0], v[1]) for k, v in spec["axes"].items()},
                    misconceptions=_misconceptions(spec, data)))
    except (OSError, ValueError, KeyError, TypeError, IndexError,
            protocol.ProtocolError) as exc:
        raise SpecError(f"{path}: not check data written by `grade release` ({exc}); "
                        "ask for the assignment's files again") from None
    assignment = Assignment(meta["assignment"], meta["title"], tuple(exercises),
                            tuple(meta["requires"]), layout=str(meta.get("layout", "")))
    checked: Mapping[tuple[str, str], Outputs] = outputs
    return assignment, References(assignment.name, "", checked, path)


def found(folder: Path) -> list[tuple[Assignment, References]]:
    """Every assignment whose check data is in `folder` (a notebook's own folder)."""
    return [read(path) for path in sorted(folder.glob(f"*{SUFFIX}"))]
