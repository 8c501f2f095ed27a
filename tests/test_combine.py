"""One assignment, two notebooks (issue #10): the book splits chapter 12 into 12_1 (softmax,
self-attention, scaled self-attention) and 12_2 (multi-head). A student who hands in both is
graded on each exercise from the file where it scores best, by `grade run`, `grade batch`,
the gradebook and Gradescope alike; each exercise says which file it came from.

The notebooks are written as the book writes them: globals, two-space indents, `print(...)`.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from grader import cli
from grader.course import registry
from grader.pipeline import combine, grading
from grader.results import CellStatus, CheckStatus, Result, ResultStatus
from grader.sandbox.limits import Limits
from tests.conftest import ROOT
from tests.helpers.book import BOOK_SETUP, BOOK_SOFTMAX_COLS, BOOK_STUBS, PART_2

OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))
UDL = registry.get("udl_attention")

SELF_ATTENTION = '''def self_attention(X,omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
  V = beta_v + omega_v @ X
  Q = beta_q + omega_q @ X
  K = beta_k + omega_k @ X
  attention = softmax_cols(K.T @ Q)
  X_prime = V @ attention
  return X_prime
'''
# 12_1 filled in: everything right but multi-head, which lives in 12_2.
PART_1 = [BOOK_SETUP, '''def softmax(items_in):
  e = np.exp(items_in - np.max(items_in))
  items_out = e / np.sum(e)
  return items_out ;
''', BOOK_SOFTMAX_COLS, SELF_ATTENTION, '''def scaled_dot_product_self_attention(X,omega_v, omega_q,
    omega_k, beta_v, beta_q, beta_k):
  V = beta_v + omega_v @ X
  Q = beta_q + omega_q @ X
  K = beta_k + omega_k @ X
  attention = softmax_cols(K.T @ Q / np.sqrt(Q.shape[0]))
  return V @ attention
''', 'X_prime = self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k)\n'
     'print(X_prime)\n']
ALONE = {"12_1": 5.0, "12_2": 5.0}  # 1 + 2 + 2 points in 12_1; 5 for multi-head in 12_2


@pytest.fixture
def parts(make_submission):
    return (make_submission(PART_1, name="12_1_Self_Attention"),
            make_submission(PART_2, name="12_2_Multihead_Self_Attention"))


def test_each_part_alone_scores_only_its_own_exercises(parts):
    first, second = (grading.grade(path, UDL, OPTIONS) for path in parts)
    assert (first.score, second.score) == (ALONE["12_1"], ALONE["12_2"])
    multihead = first.exercises[-1]
    assert multihead.status is CheckStatus.MISSING
    assert (multihead.handed_in, multihead.part) == (False, "part 2 (udl_attention_12_2.ipynb)")
    assert multihead.checks[0].message == "part 2 not handed in (udl_attention_12_2.ipynb)"


def test_both_parts_score_each_exercise_from_its_best_file(parts):
    result = grading.grade_files(list(parts), UDL, OPTIONS)
    assert (result.status, result.score, result.max_score) == (ResultStatus.GRADED, 10.0, 10.0)
    assert result.files == tuple(str(path) for path in parts)
    assert result.name == "12_1_Self_Attention.ipynb + 12_2_Multihead_Self_Attention.ipynb"
    came_from = {e.name: e.file for e in result.exercises}
    assert came_from == {"softmax": str(parts[0]), "softmax_cols": str(parts[0]),
                         "self_attention": str(parts[0]),
                         # 12_2's unscaled copy fails; 12_1's scaled one is taken
                         "scaled_dot_product_self_attention": str(parts[0]),
                         "multihead_scaled_self_attention": str(parts[1])}
    # Cells keep the file they are in.
    assert {cell.file for cell in result.cells} == {str(path) for path in parts}


def test_a_file_that_cannot_be_read_costs_the_other_nothing(parts, tmp_path):
    broken = tmp_path / "12_2_broken.ipynb"
    broken.write_text("{ not json")
    result = grading.grade_files([parts[0], broken], UDL, OPTIONS)
    assert (result.status, result.score) == (ResultStatus.GRADED, ALONE["12_1"])
    (problem,) = [cell for cell in result.problem_cells if cell.file == str(broken)]
    assert problem.status is CellStatus.ERROR and problem.index == 0
    assert "12_2_broken.ipynb" in problem.message and "JSON" in problem.message


def test_ties_go_to_the_notebook_the_declaration_names(tmp_path):
    source = (ROOT / "solutions" / "udl_attention.py").read_text()
    one = tmp_path / "udl_attention_12_1.ipynb"
    two = tmp_path / "udl_attention_12_2.ipynb"
    for path in (one, two):
        path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                    "cells": [{"cell_type": "code", "metadata": {},
                                               "outputs": [], "execution_count": None,
                                               "source": source}]}))
    result = grading.grade_files([two, one], UDL, OPTIONS)
    assert result.score == 10.0
    came_from = {e.name: e.file for e in result.exercises}
    assert came_from["softmax"] == str(one)
    assert came_from["multihead_scaled_self_attention"] == str(two)


def test_one_file_is_graded_exactly_as_before(parts):
    alone = grading.grade(parts[0], UDL, OPTIONS)
    assert combine.best_of(UDL, [alone]) is alone
    assert alone.files == () and all(e.file == "" for e in alone.exercises)


def test_grade_run_with_two_notebooks_is_one_result(parts, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    json_path, md_path = tmp_path / "r.json", tmp_path / "r.md"
    code = cli.run(["run", *map(str, parts), "--assignment", "udl_attention",
                    "--json", str(json_path), "--md", str(md_path)], out, err)
    assert code == 0, err.getvalue()
    text = out.getvalue()
    assert text.startswith(f"{parts[0]} + {parts[1]} · udl_attention: 10 / 10")
    assert "✓ multihead_scaled_self_attention 5/5  (5/5 checks)  from " \
           "12_2_Multihead_Self_Attention.ipynb" in text
    data = json.loads(json_path.read_text())
    assert data["files"] == [str(path) for path in parts]
    assert data["exercises"][-1]["file"] == str(parts[1])
    assert "Graded from 12\\_2\\_Multihead\\_Self\\_Attention.ipynb, the file where it scores " \
           "best." not in md_path.read_text()  # only failing exercises get a section
    # --each grades them as two submissions, as before.
    out = io.StringIO()
    assert cli.run(["run", *map(str, parts), "--assignment", "udl_attention", "--each"],
                   out, io.StringIO()) == 0
    assert f"{parts[0]} · udl_attention: 5 / 10" in out.getvalue()
    assert f"{parts[1]} · udl_attention: 5 / 10" in out.getvalue()


def test_a_student_folder_in_a_batch_is_one_row_with_the_best_of_each(parts, tmp_path):
    folder = tmp_path / "submissions"
    (folder / "alice").mkdir(parents=True)
    for path in parts:
        shutil.copy(path, folder / "alice" / path.name)
    shutil.copy(parts[0], folder / "bob_udl_attention.ipynb")
    out = io.StringIO()
    graded = tmp_path / "graded"
    assert cli.run(["batch", str(folder), "--assignment", "udl_attention", "--out",
                    str(graded), "--jobs", "2"], out, io.StringIO()) == 0
    assert "graded 2, skipped 0" in out.getvalue()
    saved = json.loads((graded / "results" / "alice" / "udl_attention.json").read_text())
    assert saved["score"] == 10.0
    assert saved["submission"] == ("alice/12_1_Self_Attention.ipynb + "
                                   "alice/12_2_Multihead_Self_Attention.ipynb")
    assert saved["exercises"][-1]["file"] == "alice/12_2_Multihead_Self_Attention.ipynb"
    export = io.StringIO()
    assert cli.run(["gradebook", "export", "--out", str(graded)], export, io.StringIO()) == 0
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO(export.getvalue()))}
    assert (float(rows["alice"]["score"]), float(rows["bob"]["score"])) == (10.0, ALONE["12_1"])
    assert rows["alice"]["submission"] == saved["submission"]
    # Nothing changed: nothing to grade. A changed part: alice is graded again.
    out = io.StringIO()
    cli.run(["batch", str(folder), "--assignment", "udl_attention", "--out", str(graded)],
            out, io.StringIO())
    assert "graded 0, skipped 2" in out.getvalue()
    with (folder / "alice" / parts[1].name).open("a") as stream:
        stream.write("\n")
    out = io.StringIO()
    cli.run(["batch", str(folder), "--assignment", "udl_attention", "--out", str(graded)],
            out, io.StringIO())
    assert "graded 1, skipped 1" in out.getvalue()


def test_gradescope_grades_every_file_handed_in(parts, tmp_path, monkeypatch):
    from grader.gradescope import autograder

    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    for path in parts:
        shutil.copy(path, root / "submission" / path.name)
    monkeypatch.setenv(autograder.ROOT_ENV, str(root))
    result: Result = autograder.run(UDL, OPTIONS)
    assert result.score == 10.0
    document = json.loads((root / "results" / "results.json").read_text())
    assert document["score"] == 10.0


def test_the_books_two_notebooks_untouched_score_nothing_and_say_not_written_yet(
        make_submission):
    setup, softmax, given, attention, scaled, multihead = BOOK_STUBS
    first = make_submission([setup, softmax, given, attention, scaled], name="12_1_untouched")
    second = make_submission([setup, given, multihead], name="12_2_untouched")
    result = grading.grade_files([first, second], UDL, OPTIONS)
    assert (result.status, result.score, result.problem_cells) == (ResultStatus.GRADED, 0.0, ())
    for exercise in result.exercises:
        if exercise.name == "softmax_cols":
            assert exercise.max_score == 0.0  # given by the book, never scored
            continue
        failing = [c for c in exercise.checks if not c.passed]
        assert {c.diagnosis.id for c in failing} == {"unattempted"}, exercise.name
    came_from = {e.name: e.file for e in result.exercises}
    # Nothing scores anywhere: each function is taken from the file that defines it.
    assert came_from["multihead_scaled_self_attention"] == str(second)
    assert came_from["self_attention"] == str(first)


def _same_view(document: dict) -> dict:
    """A result's JSON without what names or times the run: what a student is told."""
    kept = {key: value for key, value in document.items()
            if key not in ("submission", "files", "duration_s", "sha256", "worker")}
    kept["exercises"] = [{key: value for key, value in exercise.items() if key != "file"}
                         for exercise in document["exercises"]]
    kept["cells"] = [{key: value for key, value in cell.items() if key != "file"}
                     for cell in document["cells"]]
    for file in document["files"]:  # the output's headings name each file as it was found
        kept["output"] = kept["output"].replace(f"--- {file}\n", f"--- {Path(file).name}\n")
    return kept


def test_grade_run_a_batch_and_gradescope_grade_one_students_files_alike(
        parts, tmp_path, monkeypatch):
    """One function grades a student's files (`grading.grade_files`); the three ways in
    agree on everything the student is told."""
    from grader import result_json
    from grader.gradescope import autograder

    run_json = tmp_path / "run.json"
    assert cli.run(["run", "--assignment", "udl_attention", *map(str, parts), "--json",
                    str(run_json)], io.StringIO(), io.StringIO()) == 0
    by_run = json.loads(run_json.read_text())
    folder = tmp_path / "class" / "alice"
    folder.mkdir(parents=True)
    for path in parts:
        shutil.copy(path, folder / path.name)
    out = tmp_path / "graded"
    assert cli.run(["batch", str(folder.parent), "--assignment", "udl_attention", "--out",
                    str(out)], io.StringIO(), io.StringIO()) == 0
    by_batch = json.loads((out / "results" / "alice" / "udl_attention.json").read_text())
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    for path in parts:
        shutil.copy(path, root / "submission" / path.name)
    monkeypatch.setenv(autograder.ROOT_ENV, str(root))
    by_gradescope = result_json.to_dict(autograder.run(UDL, grading.Options()))
    assert by_run["score"] == 10.0
    assert _same_view(by_batch) == _same_view(by_run) == _same_view(by_gradescope)
    assert by_batch["files"] == ["alice/12_1_Self_Attention.ipynb",
                                 "alice/12_2_Multihead_Self_Attention.ipynb"]


def test_grade_run_keeps_the_other_file_when_the_grader_fails_on_one(
        parts, tmp_path, monkeypatch):
    """A file the grader itself fails on is that file's error, as in a batch: the other file
    still counts, and the JSON is written."""
    real = grading.grade

    def failing(path, *args, **kwargs):
        if path == parts[1]:
            raise RuntimeError("a bug of ours")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(grading, "grade", failing)
    target = tmp_path / "r.json"
    code = cli.run(["run", "--assignment", "udl_attention", *map(str, parts), "--json",
                    str(target)], io.StringIO(), io.StringIO())
    document = json.loads(target.read_text())
    assert (code, document["status"], document["score"]) == (0, "graded", ALONE["12_1"])
    assert document["files"] == [str(path) for path in parts]
    assert f"{parts[1]}: could not be graded (a bug of ours)" in json.dumps(document["cells"])


def test_an_exercise_in_neither_file_comes_from_the_file_of_its_part():
    """Two files, each one part, neither defining multi-head: it is part 2's and missing
    there, never "not handed in" as part 1's file says of it."""
    from grader.model import Visibility
    from grader.results import CheckResult, ExerciseResult

    def result(name: str, handed_in: bool) -> Result:
        check = CheckResult("notebook-example", Visibility.PUBLIC, False, 0.0, 0.0,
                            CheckStatus.MISSING, "not defined")
        exercise = ExerciseResult("multihead_scaled_self_attention", CheckStatus.MISSING, 0.0,
                                  5.0, (check,), part="part 2 (udl_attention_12_2.ipynb)",
                                  handed_in=handed_in)
        others = tuple(ExerciseResult(e.name, CheckStatus.PASSED, 0.0, 0.0, ())
                       for e in UDL.exercises[:-1])
        return Result(assignment=UDL.name, submission=name, status=ResultStatus.GRADED,
                      score=0.0, max_score=10.0, duration_s=0.0, exercises=(*others, exercise))

    first, second = result("a_1.ipynb", False), result("a_2.ipynb", True)
    for order in ((first, second), (second, first)):
        combined = combine.best_of(UDL, list(order))
        chosen = combined.exercises[-1]
        assert (chosen.handed_in, chosen.file) == (True, "a_2.ipynb")
