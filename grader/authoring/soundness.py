"""The checks of `grade validate` that an assignment grades correct code rightly:

- the solution returns NaN or +inf on a case whose note does not say so (`nonfinite_problems`;
  -inf is what a mask puts where no weight may go, as `causal_mask` does);
- a case's inputs lie outside the domain of the master's own example calls: floats where the
  examples pass integers, negative values where they never are (`domain_problems`);
- a `# grade assign: could not infer` comment still in the declaration (`marker_problems`);
- a declared alternative, another correct implementation, that loses points on a scored case
  (`alternative_problems`).

Each problem names the case (or the file and line) and the fix.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
from pathlib import Path

import numpy as np

from grader.authoring import building, calls, domains, master
from grader.authoring.problems import Problem
from grader.authoring.skeleton import MARKER
from grader.course.layout import PACKAGE_DIR, Layout
from grader.course.references import Outputs
from grader.errors import ReferencesError, SpecError
from grader.model import Assignment, Exercise
from grader.pipeline import compare

DECLARED_NONFINITE = re.compile(r"\bnan\b|\binf\b|\binfinit\w*|\bnon-?finite\b", re.I)
"""Words of a case's note that declare a NaN or inf in the solution's output as expected."""


def nonfinite_problems(assignment: Assignment, fresh: dict[tuple[str, str], Outputs]
                       ) -> list[Problem]:
    """Cases on which the solution returns NaN or +inf, unless their note says so (-inf is
    a mask's "never attend")."""
    found = []
    for exercise in assignment.exercises:
        for case in exercise.cases:
            outputs = fresh.get((exercise.name, case.name), ())
            bad = sum(int(np.sum(np.isnan(o) | (o == np.inf))) for o in outputs
                      if np.asarray(o).dtype.kind in "fc")
            if bad and not DECLARED_NONFINITE.search(case.note):
                total = sum(int(np.size(o)) for o in outputs)
                found.append(Problem(f"{exercise.name}/{case.name}", (
                    f"the solution returns NaN or +inf ({bad} of {total} values), so a correct "
                    "answer is compared with them; change the case's inputs so that the "
                    "solution's output is finite, or, if it is meant to be, say so in the "
                    "case's note (a note that names NaN or inf)")))
    return found


def parameters(signature: str) -> list[str]:
    """The parameter names of a declared signature, "(Q, K, V, mask=None)"."""
    inner = signature.strip()[1:-1]
    return [p.split("=")[0].split(":")[0].strip().lstrip("*")
            for p in inner.split(",") if p.strip() and p.strip() not in ("*", "/")]


MAKER = {"integers": "integers(shape, low, high)", "booleans": "booleans(shape)"}


def domain_problems(assignment: Assignment, layout: Layout) -> list[Problem]:
    """Cases whose inputs lie outside the domain of the master's example calls (when the
    solutions folder holds `<name>_master.ipynb`)."""
    path = layout.solutions / f"{assignment.name}_master.ipynb"
    if not path.is_file():
        return []
    try:
        found_master = master.read(path)
        if found_master.assignment != assignment.name:
            return []
        recorded = calls.record(found_master)
    except SpecError as exc:
        return [Problem("", f"{exc.message} (`grade validate` reads the master's example "
                        "calls to check the cases' inputs)")]
    found = []
    for exercise in assignment.exercises:
        examples = recorded.inputs.get(exercise.name, ())
        if not examples:
            continue
        names = parameters(exercise.signature)
        for case in exercise.cases:
            inputs = case.inputs()
            for position, value in enumerate(inputs):
                seen = [call[position] for call in examples if len(call) > position]
                why = domains.outside(seen, value)
                if not why:
                    continue
                kinds = {domains.kind(v) for v in seen if v is not None}
                maker = MAKER.get(next(iter(kinds)), "a maker") if len(kinds) == 1 else "a maker"
                name = names[position] if position < len(names) else f"#{position + 1}"
                found.append(Problem(f"{exercise.name}/{case.name}", (
                    f"the argument {name} {why}, so correct code may fail or be given other "
                    f"numbers; draw it with {maker} (docs/authoring.md, \"Input makers\") in "
                    "the range the master's examples use")))
    return found


def declarations(assignment: Assignment, layout: Layout) -> list[Path]:
    """The files that may declare the assignment."""
    candidates = [folder / f"{assignment.name}.py" for folder in layout.declaration_folders]
    candidates += [layout.declaration(assignment.name),
                   PACKAGE_DIR / "assignments" / f"{assignment.name}.py"]
    return [path for path in dict.fromkeys(candidates) if path.is_file()]


def marker_problems(assignment: Assignment, layout: Layout) -> list[Problem]:
    """Every comment the skeleton left on an argument whose domain it could not tell."""
    found = []
    for path in declarations(assignment, layout):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if MARKER in line:
                found.append(Problem(f"{path}:{number}", (
                    "the skeleton could not infer this argument's domain, so every case it "
                    "drew passes the master's value; draw it with an input maker "
                    "(docs/authoring.md, \"Input makers\") or keep it, and delete the comment")))
    return found


def alternative_problems(assignment: Assignment, fresh: dict[tuple[str, str], Outputs],
                         layout: Layout) -> list[Problem]:
    """Declared alternatives that raise on, or lose points on, a scored case."""
    found = []
    for exercise in assignment.exercises:
        for number, alternative in enumerate(exercise.alternatives, 1):
            found += _alternative(assignment, exercise, number, alternative, fresh, layout)
    return found


def _alternative(assignment: Assignment, exercise: Exercise, number: int, alternative: str,
                 fresh: dict[tuple[str, str], Outputs], layout: Layout) -> list[Problem]:
    inline = "\n" in alternative
    what = f"the alternative #{number} (source)" if inline else f"the alternative {alternative}"
    fix = ("fix the case's inputs so that correct code of either style gets the same "
           f"numbers, or fix {what} if it is wrong")
    cases = tuple(case for case in exercise.cases if case.scored)
    only = dataclasses.replace(assignment, exercises=(
        dataclasses.replace(exercise, cases=cases),))
    with tempfile.TemporaryDirectory(prefix="grade-validate-") as folder:
        path = layout.solutions / alternative
        if inline:
            path = Path(folder) / f"{exercise.name}_alternative.py"
            path.write_text(alternative, encoding="utf-8")
        elif not path.is_file():
            return [Problem(exercise.name, f"{what}: no such file {path}; write it, or give "
                            "its path relative to the solutions folder")]
        try:
            outputs = building.compute(only, path)
        except ReferencesError as exc:
            return [Problem(exercise.name, f"{what} fails: {exc}; {fix}")]
    found = []
    for case in cases:
        got = outputs[(exercise.name, case.name)]
        value = got if len(exercise.outputs) > 1 else got[0]
        result = compare.compare(value, fresh[(exercise.name, case.name)], exercise.outputs,
                                 case.rtol, case.atol, reveal=True)
        if not result.passed:
            first = result.message.splitlines()[0] if result.message else "differs"
            found.append(Problem(f"{exercise.name}/{case.name}", (
                f"{what} gets no points ({first}), but it is declared correct; {fix}")))
    return found
