"""`check()` for students: the public cases of one exercise, run inside their own notebook.

This runs in the student's kernel, on purpose and for the student only: it is feedback, not a
grade, so it uses the public references shipped with the package (or, for an assignment the
package does not declare, the check data `grade release` put beside the notebook or module:
its folder, or the working directory) and no sandbox. It names a catalogued mistake as
`grade run` does on the public cases: the check data holds what each misconception returns
on them. Inside the grader's sandbox it does nothing, so that a notebook's check() calls cost
no grading time.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grader.course import references, registry
from grader.course.layout import CHECK_SUFFIX
from grader.errors import UsageError
from grader.model import Assignment, Case, Exercise, Visibility
from grader.pipeline import agreement, diagnose, judging, kernel_source, scoring
from grader.results import CheckResult, CheckStatus, Result, ResultStatus, Verdict
from grader.sandbox.inside.calling import NOT_IMPLEMENTED, SANDBOX_ENV, invoke


def _parameters(signature: str) -> tuple[str, ...]:
    function = ast.parse(f"def f{signature}: pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    return tuple(arg.arg for arg in function.args.args if arg.arg != "self")


def _known(name: str, params: tuple[str, ...] | None, folders: Sequence[Path]
           ) -> list[tuple[Assignment, references.References | None]]:
    """The registry's assignments that may declare exercise `name` (those whose signature
    takes `params`, where one does), then those released into `folders` and the working
    directory (`grade release` writes their check data there); None: the shipped references."""
    fits = None if params is None else (lambda signature: _parameters(signature) == params)
    known: list[tuple[Assignment, references.References | None]] = [
        (a, None) for a in registry.declaring(name, fits).values()]
    names = {a.name for a, _ in known}
    for folder in dict.fromkeys([*folders, Path.cwd()]):
        if not any(folder.glob(f"*{CHECK_SUFFIX}")):
            continue  # the reader of check data is loaded only where there is some
        from grader.course import checkfile as released

        for found, stored in released.found(folder):
            if found.name not in names:
                names.add(found.name)
                known.append((found, stored))
    return known


def _candidates(name: str, target: Any, assignment: str | None, folders: Sequence[Path]
                ) -> list[tuple[Assignment, Exercise, references.References | None]]:
    """Exercises called `name`; when several assignments have one, the parameter names of the
    student's function choose (udl_attention's softmax takes items_in, attention_basics' x)."""
    params = _signature(target) if assignment is None else None
    pairs = [(a, e, stored) for a, stored in _known(name, params, folders) for e in a.exercises
             if e.name == name and (assignment is None or a.name == assignment)]
    if len(pairs) > 1 and params is not None:
        return [pair for pair in pairs if _parameters(pair[1].signature) == params] or pairs
    return pairs


def _signature(target: Any) -> tuple[str, ...] | None:
    """The parameter names of the student's function; None when it has none to read."""
    if not callable(target):
        return None
    try:
        return tuple(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return None


def run(name: str, target: Any, assignment: str | None = None,
        folders: Sequence[Path] = ()) -> Result:
    """Check `target` as exercise `name` on its public cases; the result, not displayed.
    `folders` are where to look for released check data, before the working directory.
    The function's source is read as `grade run` reads the notebook's (`kernel_source`): a
    size it takes from a notebook global or writes as a number is named on the public case
    at other sizes, with the grader's own id and sentence."""
    pairs = _candidates(name, target, assignment, folders)
    if not pairs:
        raise UsageError(f"no assignment has an exercise called {name!r}; "
                         "check the spelling, or pass assignment=...")
    chosen, exercise, shipped = pairs[0]
    stored = shipped or references.load(chosen, public_only=True)
    started = time.monotonic()
    notebook = _notebook(exercise, target, [*dict.fromkeys([*folders, Path.cwd()])])
    context = kernel_source.context(exercise, target, notebook)
    evidence: list[agreement.Evidence] = []
    for case in exercise.cases:
        if case.visibility is Visibility.PUBLIC:
            evidence.append(_checked(chosen, exercise, case, name, target, stored, context,
                                     notebook))
    # The same agreement as grade run's: a diagnosis must hold on every case it speaks of.
    checks: Sequence[CheckResult] = agreement.agree(exercise, evidence, context)
    if any(e.check.verdict is Verdict.RAISED for e in evidence):
        from grader.pipeline import layout_hint  # only a raise says the layout

        checks = layout_hint.once(checks)  # as grade run: once, and never beside a diagnosis
    graded = scoring.exercise_result(exercise, checks)
    return Result(assignment=chosen.name, submission=f"{name} (in this notebook)",
                  status=ResultStatus.GRADED, score=graded.score, max_score=graded.max_score,
                  duration_s=round(time.monotonic() - started, 3), exercises=(graded,),
                  public_only=True)


def _not_defined(exc: Exception, notebook: Path | None) -> str:
    """For a NameError on a name the student's notebook defines in a cell that has not run:
    which cell, in a sentence; else ""."""
    name = getattr(exc, "name", None)
    if not isinstance(exc, NameError) or not isinstance(name, str) or notebook is None:
        return ""
    found = kernel_source.defined_in(name, notebook)
    return found.sentence(name) if found else ""


def _notebook(exercise: Exercise, target: Any, folders: Sequence[Path]) -> Path | None:
    """The student's notebook, looked for only when the function reads a name that the kernel
    does not hold (a cell not run yet): the exercise's own beside the kernel, else one that
    defines the function."""
    found = kernel_source.definition(target) if inspect.isfunction(target) else None
    if found is None or not kernel_source.unset(found[0], target):
        return None
    own = [folder / exercise.notebook for folder in folders] if exercise.notebook else []
    return kernel_source.notebook_of(exercise.name, own, folders)


def _checked(assignment: Assignment, exercise: Exercise, case: Case, name: str, target: Any,
             stored: references.References, context: judging.Context,
             notebook: Path | None) -> agreement.Evidence:
    """One public case called in this process and judged as `grade run` judges it: a value by
    `judging`, an error by `diagnose.of_error`, both with what the source says (`context`)."""
    inputs = case.inputs()
    expected = stored.get(exercise.name, case.name)
    if target is None:
        return agreement.Evidence(case, scoring.failed_check(
            case.name, exercise, Verdict.NOT_WRITTEN, f"no {exercise.kind} named {name} is "
            "defined", visibility=case.visibility, note=case.note), expected=expected)
    try:
        value = invoke(target, exercise.kind, inputs, case.init_kwargs, exercise.tensors)
    except Exception as exc:  # the student's error is feedback
        from grader.pipeline import layout_hint, vocabulary  # loaded only when a call fails

        unattempted = isinstance(exc, NotImplementedError)
        error = f"{type(exc).__module__}.{type(exc).__name__}"
        message = NOT_IMPLEMENTED if unattempted else f"raised {type(exc).__name__}: {exc}"
        diagnosis = diagnose.of_error(exercise, unattempted, inputs, context.reads,
                                      context.example)
        if not unattempted:  # the layout's sentence, as the function's source allows
            hint = layout_hint.Hint(assignment.layout, functools.partial(
                layout_hint.found_in, exercise.name, exercise.signature, assignment.layout,
                kernel_source.reader(exercise.name, target)))
            message = hint.explain(error, message, diagnosis=diagnosis)
        cell = _not_defined(exc, notebook)
        if cell:
            message = f"{cell}\n{message}"
        return agreement.Evidence(case, scoring.failed_check(
            case.name, exercise, Verdict.RAISED, message, diagnosis=diagnosis,
            raised=vocabulary.raised(error), visibility=case.visibility, note=case.note),
            expected=expected)
    judged = judging.judgement(exercise, case, value, expected, inputs, context)
    return agreement.Evidence(case, judged.check, judged.obtained, expected)


def _in_jupyter() -> bool:
    if "IPython" not in sys.modules:
        return False  # a Jupyter kernel has imported it: no need to import it here
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _folders(caller: dict[str, Any], found: Any) -> list[Path]:
    """Where the check data of a module's assignment is: where the caller's own copy was
    unpacked (`__grader_check__`: a released file carries it, `grader.course.carried`), beside
    the file that calls check() and the file that defines the function, wherever Python was
    started (a notebook has no `__file__`: Jupyter starts its kernel in the notebook's folder,
    and VS Code names the notebook in `__vsc_ipynb_file__`)."""
    files = [caller.get("__grader_check__"), caller.get("__file__"),
             caller.get("__vsc_ipynb_file__"), getattr(found, "__globals__", {}).get("__file__")]
    return list(dict.fromkeys(Path(f).resolve().parent for f in files if isinstance(f, str)))


def check(target: Any, assignment: str | None = None, depth: int = 1,
          full: bool = False) -> None:
    """Show the public-case feedback for an exercise, given by name or as the object itself:
    one line when it passes; else the verdict, the mistake and the first differences, with
    the full report (`full`: shown at once) a click away."""
    if os.environ.get(SANDBOX_ENV):
        return  # being graded: the grader runs every case itself
    frame = sys._getframe(depth)  # the caller's, as inspect.stack()[depth] without the source
    if isinstance(target, str):
        name = target
        found = frame.f_globals.get(name, frame.f_locals.get(name))
    else:
        name, found = getattr(target, "__name__", repr(target)), target
    result = run(name, found, assignment, _folders(frame.f_globals, found))
    passed = all(e.status is CheckStatus.PASSED for e in result.exercises)
    if _in_jupyter() and importlib.util.find_spec("jinja2"):  # HTML needs it; else text
        from IPython.display import HTML, display

        from grader.report import compact

        report = ""
        if full or not passed:  # Jinja2 and the templates are loaded only to be shown
            from grader.report import html

            report = html.fragment(result)
        display(HTML(report if full else compact.fragment(result, report)))
    elif full:
        from grader.report import terminal

        print(terminal.render(result), end="")
    else:
        from grader.report import compact

        print(compact.terminal(result), end="")
