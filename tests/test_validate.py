"""`grade validate`: each mistake an author makes, from a deliberately broken assignment in
tmp_path, said by its message with exit code 1; a sound assignment passes with exit code 0;
and every assignment in the registry passes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from grader import cli
from grader.authoring import building, validate
from grader.course import layout, registry
from tests.conftest import of_assignment

# Each test reads the registry afresh (it may declare assignments of its own).
pytestmark = pytest.mark.usefixtures("fresh_registry")

SOLUTION = '''import numpy as np


def softmax(x):
    """Stable softmax over the last axis."""
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
'''
STUB = '''import numpy as np


def softmax(x):
    """Stable softmax over the last axis."""
    raise NotImplementedError("softmax")
'''
CASES = '''
    Case("vector", normal((5,)), seed=1, visibility=Visibility.PUBLIC),
    Case("matrix", normal((3, 4)), seed=2),
    Case("large-values", offset_normal((2, 3), 1000.0), seed=3,
         note="values in the thousands overflow exp() unless the maximum is subtracted"),
'''
MISTAKES = '''
    misconception("unstable-softmax", naive_softmax, conditional=LARGE),
    misconception("softmax-whole-array", whole_softmax, conditional=MATRIX),
'''
DECLARATION = '''import numpy as np

from grader.assignments.inputs import fixed, normal, offset_normal
from grader.assignments.variants import (
    LARGE, MATRIX, misconception, naive_softmax, softmax as right, whole_softmax)
from grader.model import Assignment, Case, Exercise, Visibility


ASSIGNMENT = Assignment(name="unit", title="A unit", exercises=(
    Exercise(name="softmax", signature="(x)", points=2, cases=({cases}),
             misconceptions=({mistakes})),
))
'''


def write_course(root: Path, monkeypatch, cases: str = CASES, mistakes: str = MISTAKES,
                 stub: str = STUB, solution: str = SOLUTION, build: bool = True) -> Path:
    """A course folder with one assignment `unit`, registered through the environment."""
    for folder in ("assignments", "solutions", "exercises", "references"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "assignments" / "unit.py").write_text(
        DECLARATION.replace("{cases}", cases).replace("{mistakes}", mistakes))
    (root / "solutions" / "unit.py").write_text(solution)
    (root / "exercises" / "unit.py").write_text(stub)
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"grader": {"assignment": "unit"}},
                "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "outputs": [],
                           "execution_count": None, "source": stub + '\ncheck("softmax")\n'}]}
    (root / "exercises" / "unit.ipynb").write_text(json.dumps(notebook))
    monkeypatch.setenv(layout.ENV_ASSIGNMENTS, str(root / "assignments"))
    monkeypatch.setenv(layout.ENV_SOLUTIONS, str(root / "solutions"))
    monkeypatch.setenv(layout.ENV_PUBLIC, str(root / "references"))
    registry.assignments.cache_clear()
    if build:
        building.build(registry.get("unit"))
    return root


def run_validate(name: str = "unit") -> tuple[int, str]:
    out = io.StringIO()
    code = cli.run(["validate", name], out, io.StringIO())
    return code, out.getvalue()


def test_a_sound_assignment_passes(tmp_path, monkeypatch):
    write_course(tmp_path, monkeypatch)
    assert run_validate() == (0, "unit: 1 exercises, 3 cases: no problem found\n")


@pytest.mark.parametrize("name", [of_assignment(name) for name in [
    "attention_basics", "positional_encoding", "torch_attention", "udl_attention"]])
def test_every_assignment_in_the_registry_passes(name):
    code, output = run_validate(name)
    assert (code, output) == (0, output) and output.endswith("no problem found\n"), output


def test_a_stub_whose_signature_differs_from_the_solutions(tmp_path, monkeypatch):
    root = write_course(tmp_path, monkeypatch,
                        stub=STUB.replace("def softmax(x):", "def softmax(x, axis=-1):"))
    code, output = run_validate()
    assert code == 1
    for stub in ("unit.py", "unit.ipynb"):
        assert (f"unit: {root / 'exercises' / stub}: the stub softmax(x, axis=-1) differs from "
                "the solution's softmax(x); give the stub the solution's parameters\n") in output


def test_a_solution_whose_signature_differs_from_the_declaration(tmp_path, monkeypatch):
    root = write_course(tmp_path, monkeypatch, build=False,
                        solution=SOLUTION.replace("def softmax(x):", "def softmax(z):")
                        .replace("(x", "(z").replace("x,", "z,"))
    code, output = run_validate()
    assert code == 1
    assert (f"unit: {root / 'solutions' / 'unit.py'}: softmax(z) differs from the declared "
            "signature (x); make them agree\n") in output


def test_stale_references(tmp_path, monkeypatch):
    root = write_course(tmp_path, monkeypatch)
    solution = root / "solutions" / "unit.py"
    solution.write_text(SOLUTION.replace("np.max(x, axis=-1, keepdims=True)", "0"))
    code, output = run_validate()
    assert code == 1
    hidden = root / "solutions" / "references" / "unit.npz"
    assert (f"unit: {hidden}: stale, built from another version of {solution}; run "
            "`grade references build unit`\n") in output
    assert (f"unit: {hidden}: softmax/large-values differs from what the solution "
            "computes; run `grade references build unit`\n") in output
    assert "softmax/vector differs" not in output


def test_missing_references(tmp_path, monkeypatch):
    root = write_course(tmp_path, monkeypatch, build=False)
    code, output = run_validate()
    assert code == 1
    assert (f"{root / 'references' / 'unit.npz'}: no references for unit; run `grade "
            "references build unit`") in output


@pytest.mark.parametrize("case, answer", [
    # A 1-D vector is one row: a softmax over the whole array is right there.
    ('Case("row", normal((5,)), seed=4),', "softmax-whole-array"),
    # softmax of one element is 1: a function that returns its input passes.
    ('Case("one", fixed([[1.0]])),', "return the input unchanged"),
    # ... and so do all ones and any normalisation (#21).
    ('Case("one", normal((1,)), seed=5),', "return ones"),
    ('Case("one", normal((1,)), seed=5),', "the input normalised over all of it"),
    # Values a thousand apart: the expected rows are one-hot, and an argmax passes.
    ('Case("huge", normal((2, 3), scale=1000.0), seed=6),',
     "one-hot rows (argmax over axis -1)"),
    # The same inputs as another case: its expected output, looked up by shape, passes.
    ('Case("again", normal((3, 4)), seed=2),', "the expected output of case 'matrix'"),
])
def test_a_scored_case_that_a_wrong_answer_passes(tmp_path, monkeypatch, case, answer):
    mistakes = MISTAKES.replace("whole_softmax, conditional=MATRIX", "whole_softmax")
    write_course(tmp_path, monkeypatch, cases=CASES + f"    {case}\n", mistakes=mistakes)
    code, output = run_validate()
    assert code == 1
    name = case.split('"')[1]
    # A catalogued mistake that the other cases reject may be right on these inputs (a 1-D
    # row is the whole array): validate says how to declare that, before the usual fix.
    conditional = (f"if '{answer}' is right on such inputs (a mistake that shows only on "
                   'some), declare it conditional="the inputs it shows on"; else '
                   if answer == "softmax-whole-array" else "")
    assert (f"unit: softmax/{name}: accepts the wrong answer '{answer}', so it gives free "
            f"points; {conditional}change its inputs so that this answer gives other numbers, "
            "or mark it scored=False and say why in its note\n") in output


def test_a_public_case_is_never_a_leak(tmp_path, monkeypatch):
    """A public case earns no points (#21), so what it accepts costs nothing."""
    write_course(tmp_path, monkeypatch, cases=CASES + (
        '    Case("one", fixed([[1.0]]), visibility=Visibility.PUBLIC),\n'))
    assert run_validate() == (0, "unit: 1 exercises, 4 cases: no problem found\n")


def test_an_exercise_with_no_hidden_scored_case(tmp_path, monkeypatch):
    public = CASES.replace("seed=2)", "seed=2, visibility=Visibility.PUBLIC)").replace(
        "seed=3,", "seed=3, scored=False,")
    write_course(tmp_path, monkeypatch, cases=public)
    assert run_validate() == (1, "unit: softmax: no hidden scored case, so its 2 points can "
                              "never be earned (a public case is the students' example and is "
                              "worth no points); add a hidden case\n")


def test_public_references_that_hold_a_hidden_case(tmp_path, monkeypatch):
    """A case made hidden after the references were built still ships its expected output in
    the package's public file until they are rebuilt (#21)."""
    public = CASES.replace("seed=2)", "seed=2, visibility=Visibility.PUBLIC)")
    root = write_course(tmp_path, monkeypatch, cases=public)
    declaration = root / "assignments" / "unit.py"
    declaration.write_text(declaration.read_text().replace(
        "seed=2, visibility=Visibility.PUBLIC)", "seed=2)"))
    registry.assignments.cache_clear()
    code, output = run_validate()
    assert code == 1
    assert output == (f"unit: {root / 'references' / 'unit.npz'}: holds softmax/matrix, which "
                      "is not a public case: it ships to students with the package; run `grade "
                      "references build unit`\n")


def test_a_conditional_mistake_that_no_case_shows(tmp_path, monkeypatch):
    write_course(tmp_path, monkeypatch, cases=CASES.split("    Case(\"large-values\"")[0])
    code, output = run_validate()
    assert code == 1
    assert output == ("unit: softmax: the misconception 'unstable-softmax' returns what the "
                      "solution returns on every case, so no case can recognise it; add a case "
                      "with inputs large enough to overflow exp()\n")


def test_two_misconceptions_no_case_tells_apart(tmp_path, monkeypatch):
    write_course(tmp_path, monkeypatch, mistakes=MISTAKES + '''
    misconception("weights-not-normalised", lambda x: whole_softmax(x), conditional=MATRIX),
''')
    code, output = run_validate()
    assert code == 1
    assert output == ("unit: softmax: the misconceptions 'softmax-whole-array' and "
                      "'weights-not-normalised' give the same output on every case, so a "
                      "student with the second is told the first; add a case that tells them "
                      "apart\n")


def test_a_misconception_equal_to_the_reference_on_every_case(tmp_path, monkeypatch):
    write_course(tmp_path, monkeypatch, mistakes=MISTAKES + '''
    misconception("softmax-wrong-axis", lambda x: right(x, axis=-1)),
''')
    code, output = run_validate()
    assert code == 1
    # Said once, not again as free points on every scored case.
    assert output == ("unit: softmax: the misconception 'softmax-wrong-axis' returns what the "
                      "solution returns on every case, so no case can recognise it; fix its "
                      "variant, or add a case on which it goes wrong\n")


def test_a_misconception_that_raises_on_every_case_is_called_broken(tmp_path, monkeypatch):
    """It was told to 'return what the solution returns', which sent the author after cases
    when the variant itself was wrong."""
    write_course(tmp_path, monkeypatch, mistakes=MISTAKES + '''
    misconception("softmax-wrong-axis", lambda x: right(x, axis=7)),
''')
    code, output = run_validate()
    assert code == 1
    assert output.startswith("unit: softmax: the misconception 'softmax-wrong-axis' fails on "
                             "every case: on the case '")
    assert "the grader called variant(array(" in output
    assert "which raised AxisError: axis 7 is out of bounds" in output
    assert output.endswith("so no case can recognise it; fix its variant: it is called with a "
                           "case's inputs, as numpy arrays, and returns the outputs as the "
                           "solution does\n")
    assert "no usable output" not in output


@pytest.mark.parametrize("note, said, missing", [
    ("checks stability for large values", "stability",
     "no input reaches 50 in magnitude, so exp() cannot overflow"),
    ("one token", "one token", "no input has an axis of size 1"),
])
def test_a_note_that_claims_what_the_inputs_do_not_exercise(tmp_path, monkeypatch, note, said,
                                                            missing):
    write_course(tmp_path, monkeypatch, cases=CASES + f'''
    Case("claimed", normal((3, 4)), seed=9, note="{note}"),
''')
    code, output = run_validate()
    assert code == 1
    assert output == (f"unit: softmax/claimed: its note says '{said}', but {missing}; change "
                      "the inputs or the note\n")


def test_a_broken_solution_is_said_without_a_traceback(tmp_path, monkeypatch):
    write_course(tmp_path, monkeypatch, build=False,
                 solution=SOLUTION.replace("return e /", "return undefined_name /"))
    code, output = run_validate()
    assert code == 1
    assert "softmax/vector: raised NameError: name 'undefined_name' is not defined" in output
    assert "Traceback" not in output


def test_problems_name_their_place():
    problem = validate.Problem("softmax/vector", "accepts the wrong answer 'x'")
    assert str(problem) == "softmax/vector: accepts the wrong answer 'x'"


def test_a_class_variant_is_told_how_the_grader_called_it():
    """A class's variant is called with the state_dict, forward's inputs and the
    init_kwargs as keywords; one written without the keywords is shown that very call."""
    from grader.model import Case, Exercise, Misconception

    def make(rng):
        return {"w": np.ones((4, 4), np.float32)}, np.zeros((2, 3, 4), np.float32)

    def forgets_the_sizes(state, x):
        return x @ state["w"]

    exercise = Exercise("Block", "(self, h, d_model)", 2, (Case("small", make, init_kwargs={
        "h": 2, "d_model": 4}),), kind="class", tensors="float32",
        misconceptions=(Misconception("missing-scale", "", forgets_the_sizes),))
    found = validate.misconception_problems(exercise, lambda case: (np.zeros((2, 3, 4)),))
    (problem,) = [p for p in found if "'missing-scale' fails" in p.message]
    assert problem.message == (
        "the misconception 'missing-scale' fails on every case: on the case 'small' the grader "
        "called variant(state_dict of 1, array(2, 3, 4) float32, h=2, d_model=4), which raised "
        "TypeError: test_a_class_variant_is_told_how_the_grader_called_it.<locals>."
        "forgets_the_sizes() got an unexpected keyword argument 'h', so no case can recognise "
        "it; fix its variant: it is called with a case's inputs, as numpy arrays (the "
        "state_dict first, then forward's inputs), and the case's init_kwargs as keywords, "
        "and returns forward's output")
