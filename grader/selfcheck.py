"""`check()` for students: the public cases of one exercise, run inside their own notebook.

This runs in the student's kernel, on purpose and for the student only: it is feedback, not a
grade, so it uses the public references shipped with the package (or, for an assignment the
package does not declare, the check data `grade release` put in the notebook's folder) and no
sandbox. Inside the grader's sandbox it does nothing, so that a notebook's check() calls cost
no grading time.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys
import time
from pathlib import Path
from typing import Any

from grader.errors import UsageError
from grader.model import Assignment, Exercise, Visibility
from grader.pipeline import judging, scoring
from grader.results import CheckResult, CheckStatus, Result, ResultStatus
from grader.sandbox.inside.calling import invoke
from grader.spec import checkfile as released
from grader.spec import references, registry

# The worker's `SANDBOX_ENV` and the session's `NOT_IMPLEMENTED`, spelled here so that a
# student's check() does not load the worker and the sandbox's supervisor for two strings;
# tests/test_selfcheck.py keeps them equal.
SANDBOX_ENV = "GRADER_SANDBOX"
NOT_IMPLEMENTED = "not implemented yet: the stub still raises NotImplementedError"


def _parameters(signature: str) -> tuple[str, ...]:
    function = ast.parse(f"def f{signature}: pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    return tuple(arg.arg for arg in function.args.args if arg.arg != "self")


def _known() -> list[tuple[Assignment, references.References | None]]:
    """The registry's assignments, then those released into this folder (`grade release`
    writes their public cases and expected outputs there); None: the shipped references."""
    known: list[tuple[Assignment, references.References | None]] = [
        (a, None) for a in registry.assignments().values()]
    names = {a.name for a, _ in known}
    known += [(a, stored) for a, stored in released.found(Path.cwd()) if a.name not in names]
    return known


def _candidates(name: str, target: Any, assignment: str | None
                ) -> list[tuple[Assignment, Exercise, references.References | None]]:
    """Exercises called `name`; when several assignments have one, the parameter names of the
    student's function choose (udl_attention's softmax takes items_in, attention_basics' x)."""
    pairs = [(a, e, stored) for a, stored in _known() for e in a.exercises
             if e.name == name and (assignment is None or a.name == assignment)]
    if len(pairs) > 1 and callable(target):
        try:
            params = tuple(inspect.signature(target).parameters)
        except (TypeError, ValueError):
            return pairs
        return [pair for pair in pairs if _parameters(pair[1].signature) == params] or pairs
    return pairs


def run(name: str, target: Any, assignment: str | None = None) -> Result:
    """Check `target` as exercise `name` on its public cases; the result, not displayed."""
    pairs = _candidates(name, target, assignment)
    if not pairs:
        raise UsageError(f"no assignment has an exercise called {name!r}; "
                         "check the spelling, or pass assignment=...")
    chosen, exercise, shipped = pairs[0]
    stored = shipped or references.load(chosen, public_only=True)
    started = time.monotonic()
    checks: list[CheckResult] = []
    for case in exercise.cases:
        if case.visibility is not Visibility.PUBLIC:
            continue
        inputs = case.inputs()
        if target is None:
            checks.append(scoring.failed_check(case.name, exercise, CheckStatus.MISSING,
                                               f"no {exercise.kind} named {name} is defined",
                                               visibility=case.visibility, note=case.note))
            continue
        try:
            value = invoke(target, exercise.kind, inputs, case.init_kwargs, exercise.tensors)
        except NotImplementedError:
            checks.append(scoring.failed_check(
                case.name, exercise, CheckStatus.ERROR, NOT_IMPLEMENTED, visibility=case.visibility,
                note=case.note))
            continue
        except Exception as exc:  # the student's error is feedback
            checks.append(scoring.failed_check(case.name, exercise, CheckStatus.ERROR,
                                               f"raised {type(exc).__name__}: {exc}",
                                               visibility=case.visibility, note=case.note))
            continue
        check, _ = judging.judge(exercise, case, value, stored.get(exercise.name, case.name),
                                 inputs)
        checks.append(check)
    graded = scoring.exercise_result(exercise, checks)
    return Result(assignment=chosen.name, submission=f"{name} (in this notebook)",
                  status=ResultStatus.GRADED, score=graded.score, max_score=graded.max_score,
                  duration_s=round(time.monotonic() - started, 3), exercises=(graded,),
                  public_only=True)


def _in_jupyter() -> bool:
    if "IPython" not in sys.modules:
        return False  # a Jupyter kernel has imported it: no need to import it here
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def check(target: Any, assignment: str | None = None, depth: int = 1) -> None:
    """Show the public-case feedback for an exercise, given by name or as the object itself."""
    if os.environ.get(SANDBOX_ENV):
        return  # being graded: the grader runs every case itself
    if isinstance(target, str):
        name = target
        frame = inspect.stack()[depth].frame
        found = frame.f_globals.get(name, frame.f_locals.get(name))
    else:
        name, found = getattr(target, "__name__", repr(target)), target
    result = run(name, found, assignment)
    if _in_jupyter():
        from IPython.display import HTML, display

        from grader.report import html

        display(HTML(html.fragment(result)))
    else:
        from grader.report import terminal

        print(terminal.render(result), end="")
