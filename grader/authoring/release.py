"""`grade release ASSIGNMENT --out DIR`: what students receive, and nothing else.

An allow-list: the stub notebooks (outputs cleared), the stub module, and
`<assignment>.check.npz`, the public cases, their expected outputs and what each catalogued
misconception returns on them, for `check()` and `grade check` (`grader.course.checkfile`).
Each notebook and the module also carry their own self-check, the grader's checking code and
that check data, so that they check themselves with nothing beside them
(`grader.authoring.embedding`).
Before anything is written, every file is checked, three times:
- scanned: every byte it will be written with holds no solution marker and no line of the
  solution module that the stubs' code does not hold, in any cell of any type, attachment,
  output or metadata, or in the check data or the self-check's bundle (`leaks`);
- read: every exercise a student writes (wherever it is defined) raises NotImplementedError;
  IPython syntax is read as the grader reads it, and a notebook through nbformat (an older
  format upgraded, a malformed one refused);
- run: each file as it will be released is graded in the sandbox on the public cases, as a
  student's submission would be, and no exercise a student writes may pass a check. This
  catches what reading cannot: a solution inside a cell magic (`%%capture`), an `exec`, a
  definition the reader does not look for.
"""

from __future__ import annotations

import ast
import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

from grader.authoring import embedding, hidden_values, leaks
from grader.authoring.files import code_sources, notebook_python, notebook_text
from grader.course import checkfile as released
from grader.course import references
from grader.course.layout import ENV_SOLUTIONS, Layout
from grader.errors import SpecError, UsageError
from grader.model import Assignment, Visibility
from grader.pipeline import diagnose

FIX = ("remove it: students get no solution in any cell, attachment, output or metadata "
       "(release the stubs that `grade assign` writes)")


def _cleared(notebook: dict[str, Any]) -> dict[str, Any]:
    """A notebook with no outputs and no execution counts: what ran on the instructor's
    machine (printed hidden values, a solution's results) stays there."""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return notebook


def _read_notebook(path: Path, text: str) -> dict[str, Any]:
    """The stub notebook as nbformat 4 (older formats upgraded), validated; SpecError naming
    the file when it is not a notebook."""
    import nbformat
    from nbformat.warnings import MissingIDFieldWarning

    try:
        with warnings.catch_warnings():  # cells without ids: nbformat gives them ids
            warnings.simplefilter("ignore", MissingIDFieldWarning)
            notebook = nbformat.reads(text, as_version=4)
            nbformat.validate(notebook)
    except nbformat.ValidationError as exc:
        raise SpecError(f"{path}: not a valid notebook ({exc.message}); run `grade assign` or "
                        "re-save it from Jupyter") from None
    except Exception as exc:  # nbformat raises what it meets in a malformed file
        raise SpecError(f"{path}: not valid notebook JSON ({type(exc).__name__}: {exc}); run "
                        "`grade assign` or re-save it from Jupyter") from None
    return json.loads(nbformat.writes(notebook))  # as Jupyter saves it: sources as lines


def _written(assignment: Assignment) -> set[str]:
    """The exercises that students write (not those the notebook gives ready-made)."""
    return {e.name for e in assignment.exercises if not e.provided}


def _refuse_solutions(path: Path, text: str, notebook: dict[str, Any] | None,
                      assignment: Assignment) -> None:
    """SpecError when a stub file (a module's `text`, or a `notebook`) defines an exercise
    that students write, anywhere, without a `raise NotImplementedError` in it, or holds code
    that cannot be checked for it (what is not Python once IPython's syntax is read as the
    grader reads it)."""
    try:
        tree = ast.parse(text if notebook is None else notebook_python(notebook))
    except SyntaxError as exc:
        where = exc.msg if exc.lineno is None else f"line {exc.lineno}: {exc.msg}"
        raise SpecError(f"{path}: {where}; release checks that a stub holds no solution, "
                        "and cannot check code that is not Python: fix it") from None
    written = _written(assignment)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                node.name in written and "NotImplementedError" not in ast.unparse(node):
            raise SpecError(f"{path}: {node.name} is not a stub (it never raises "
                            "NotImplementedError); release the stubs, not a solution")


def _refuse_working_stubs(files: list[tuple[Path, str]], assignment: Assignment,
                          stored: references.References) -> None:
    """SpecError when a file, graded as released on the public cases in the sandbox (against
    the public references `stored`), passes a check of an exercise that students write:
    however it got there, that is a solution."""
    from grader.pipeline import grading
    from grader.sandbox.zygote import Zygotes

    written = _written(assignment)
    with tempfile.TemporaryDirectory(prefix="grader-release-") as scratch, \
            Zygotes() as zygotes:
        options = grading.Options(public_only=True, zygotes=zygotes)
        for source, text in files:
            copy = Path(scratch) / source.name
            copy.write_text(text, encoding="utf-8")
            result = grading.grade(copy, assignment, options, stored)
            for exercise in result.exercises:
                passed = [check.name for check in exercise.checks if check.passed]
                if exercise.name in written and passed:
                    raise SpecError(
                        f"{source}: {exercise.name} passes public checks as it would be "
                        f"released ({', '.join(passed)}), so it is not a stub; release the "
                        "stubs, not a solution")


def release(assignment: Assignment, out: Path, layout: Layout | None = None) -> list[Path]:
    """Write what students receive into `out`; the files written."""
    layout = layout or Layout.current()
    parts = tuple(e.notebook for e in assignment.exercises if e.notebook)
    stored = references.ready(assignment, public_only=True)  # stale or missing: stop here
    read: list[tuple[Path, str, dict[str, Any] | None]] = []
    for source in (layout.module(assignment.name), *layout.notebooks(assignment.name, parts)):
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            raise SpecError(f"{source}: cannot be read ({exc.strerror}); run `grade assign` "
                            "or write the stubs") from None
        notebook = _read_notebook(source, text) if source.suffix == ".ipynb" else None
        read.append((source, text, notebook))
    secret = _solution_lines(assignment, layout, [
        part for _, text, notebook in read
        for part in ([text] if notebook is None else code_sources(notebook))])
    planned: list[tuple[Path, str]] = []
    for source, text, notebook in read:
        if notebook is not None:
            text = notebook_text(_cleared(notebook))
        leaks.refuse(source, text.encode("utf-8"), secret, FIX)  # the bytes to be written
        _refuse_solutions(source, text, notebook, assignment)
        planned.append((source, text))
    data = out / f"{assignment.name}{released.SUFFIX}"
    ours = {source.name for source, _ in planned} | {data.name}
    others = sorted(p.name for p in out.iterdir() if p.name not in ours) \
        if out.is_dir() else []
    if others:  # a release is the whole folder: nothing else may go out with it
        raise UsageError(f"{out}: holds other files ({', '.join(others[:3])}); release into "
                         "a new or empty folder")
    with tempfile.TemporaryDirectory(prefix="grader-release-") as scratch:
        staged = Path(scratch) / data.name
        released.write(staged, assignment, stored,
                       mistakes(assignment, references.ready(assignment)))
        check_data = staged.read_bytes()
    leaks.refuse(data, check_data, secret, "remove it from the declaration's public cases")
    planned = _carrying(planned, assignment, embedding.bundle(assignment, check_data), secret)
    _refuse_working_stubs(planned, assignment, stored)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for source, text in planned:
        written.append(out / source.name)
        written[-1].write_text(text, encoding="utf-8")
    data.write_bytes(check_data)
    return [*written, data]


def _carrying(planned: list[tuple[Path, str]], assignment: Assignment, bundle: bytes,
              secret: frozenset[str]) -> list[tuple[Path, str]]:
    """The files with their own self-check (`bundle`), each scanned again as it will be
    written (a zip decoded from base64 is searched member by member)."""
    leaks.refuse(Path(f"{assignment.name}.self-check.zip"), bundle, secret, FIX)
    carrying = []
    for source, text in planned:
        if source.suffix == ".ipynb":
            text = notebook_text(embedding.into_notebook(json.loads(text), assignment, bundle))
        else:
            text = embedding.into_module(text, assignment, bundle)
        leaks.refuse(source, text.encode("utf-8"), secret, FIX)
        carrying.append((source, text))
    return carrying


def mistakes(assignment: Assignment, stored: references.References) -> released.Mistakes:
    """What each misconception returns on each public case, run as the diagnosis runs it
    (`diagnose.run_variant`), so that `check()` can name it without its code; left out where
    it does not apply or returns what the solution does (the diagnosis skips it there), and
    where it holds a number of a hidden case (`hidden_values`; `stored`: all the references),
    which students never get: check() then cannot name that mistake on that case."""
    secret = hidden_values.secrets(assignment, stored)
    found: dict[tuple[str, str], dict[int, references.Outputs]] = {}
    for exercise in assignment.exercises:
        for case in exercise.cases:
            if case.visibility is not Visibility.PUBLIC:
                continue
            expected = stored.get(exercise.name, case.name)
            inputs = case.inputs()
            for index, mistake in enumerate(exercise.misconceptions):
                wrong = diagnose.run_variant(mistake.variant, inputs, case.init_kwargs,
                                             len(exercise.outputs))
                if wrong is not None and not diagnose.same(wrong, expected) \
                        and not hidden_values.holds(wrong, secret):
                    found.setdefault((exercise.name, case.name), {})[index] = wrong
    return found


def _solution_lines(assignment: Assignment, layout: Layout,
                    stubs: list[str]) -> frozenset[str]:
    """The lines of the solution module that no file may hold: those the `stubs` (their code)
    do not give students."""
    solution = layout.solution(assignment.name)
    try:
        text = solution.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{solution}: cannot be read ({exc.strerror}); release looks for "
                        "every line of the solution in what it writes: run `grade assign`, "
                        f"or set {ENV_SOLUTIONS}") from None
    return leaks.solution_lines(text, stubs)
