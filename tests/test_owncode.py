"""Each exercise judged on its own code (`grader.pipeline.owncode`, `grader.pipeline.callees`):
a book notebook whose own copy of the given `softmax_cols` normalises the rows. Every
attention after it is right by itself and fails through it: each is told so, the class report
counts the mistake once, on the student's `softmax_cols` (no given code), and with credit
"own-code" the attentions earn their points."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from grader.classreport.mistakes import Source, tally
from grader.course import references, registry
from grader.model import Visibility
from grader.pipeline import callees, grading, owncode, vocabulary
from grader.results import Result
from tests.helpers.book_class import SOFTMAX_STABLE, book_notebook

UDL = registry.get("udl_attention")
SCALED = "scaled_dot_product_self_attention"
MULTIHEAD = "multihead_scaled_self_attention"
ORDER = [e.name for e in UDL.exercises]
# The student's copy of the book's softmax_cols, stable but over each row.
ROWS_SOFTMAX_COLS = '''def softmax_cols(data_in):
  exp_values = np.exp(data_in - np.max(data_in, axis=1, keepdims=True))
  return exp_values / np.sum(exp_values, axis=1, keepdims=True)
'''
CALLERS = ("self_attention", SCALED, MULTIHEAD)


def _told(name: str) -> str:
    return (f"`{name}` is right by itself: it fails because the `softmax_cols` it calls fails "
            "(see softmax_cols).")


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    path = tmp_path_factory.mktemp("own_copy") / "12_1_Self_Attention.ipynb"
    path.write_text(book_notebook("right", SOFTMAX_STABLE, ROWS_SOFTMAX_COLS))
    return path


@pytest.fixture(scope="module")
def as_written(notebook) -> Result:
    return grading.grade(notebook, UDL)


def _points(result: Result) -> dict[str, float]:
    return {e.name: e.score for e in result.exercises}


def test_each_attention_is_told_it_fails_through_the_students_softmax_cols(as_written):
    assert _points(as_written) == {"softmax": 1.0, "softmax_cols": 0.0, "self_attention": 0.0,
                                   SCALED: 0.0, MULTIHEAD: 0.0}
    assert (as_written.score, as_written.max_score) == (1.0, 10.0)
    cols = as_written.exercises[1]
    assert {c.diagnosis.id for c in cols.checks} == {"softmax-wrong-axis"}
    for exercise in as_written.exercises[2:]:
        scored = [c for c in exercise.checks if c.scored]
        public = [c for c in exercise.checks if c.visibility is Visibility.PUBLIC]
        # The notebook's example and the practice case at other sizes.
        assert [(c.diagnosis.id, c.diagnosis.message, c.callee) for c in public] == [
            ("callee-fails", _told(exercise.name), "softmax_cols")] * 2, exercise.name
        assert {(c.passed, c.diagnosis.id, c.diagnosis.message, c.callee) for c in scored} == {
            (False, "callee-fails", vocabulary.OWN_DIAGNOSES["callee-fails"],
             "softmax_cols")}, exercise.name
    # An unscored hidden case is advice: it is not asked again, and keeps what it found.
    large = next(c for c in as_written.exercises[3].checks if c.name == "large-scores")
    assert (large.diagnosis.id, large.callee) == ("softmax-wrong-axis", "")


def test_the_class_report_counts_the_mistake_once_on_the_students_own_copy(as_written):
    mistakes, advice = tally(ORDER, ["softmax_cols"], {"fi": as_written})
    assert [(m.id, m.exercise, m.names) for m in mistakes] == [
        ("softmax-wrong-axis", "softmax_cols", ("fi",))]
    assert [(a.id, a.exercise, a.source) for a in advice] == [
        ("softmax-wrong-axis", SCALED, Source.UNSCORED)]


def test_with_credit_own_code_the_attentions_earn_their_points(notebook):
    result = grading.grade(notebook, replace(UDL, credit="own-code"))
    assert _points(result) == {"softmax": 1.0, "softmax_cols": 0.0, "self_attention": 2.0,
                               SCALED: 2.0, MULTIHEAD: 5.0}
    assert result.score == 10.0
    for exercise in result.exercises[2:]:
        public = next(c for c in exercise.checks if c.visibility is Visibility.PUBLIC)
        assert (public.passed, public.diagnosis.message) == (False, _told(exercise.name))
        assert all(c.passed and c.callee == "softmax_cols" and not c.caution
                   for c in exercise.checks if c.scored)


def test_what_a_call_with_the_solutions_function_prints_reaches_no_one(tmp_path):
    path = tmp_path / "12_1_Self_Attention.ipynb"
    path.write_text(book_notebook("right", SOFTMAX_STABLE, ROWS_SOFTMAX_COLS).replace(
        "attention = softmax_cols(dot_products)\\n",
        "attention = softmax_cols(dot_products)\\n"
        "  print('MARK:' + softmax_cols.__globals__['__name__'])\\n"))
    result = grading.grade(path, UDL)
    assert "MARK:__main__" in result.output + result.hidden_output
    assert "MARK:reference" not in result.output + result.hidden_output
    assert result.exercises[2].checks[0].callee == "softmax_cols"


def test_a_public_only_grading_asks_nothing_again(notebook):
    result = grading.grade(notebook, UDL, grading.Options(public_only=True))
    public = result.exercises[3].checks[0]
    assert (public.diagnosis.id, public.callee) == ("softmax-wrong-axis", "")


# --------------------------------------------------------------------------- the source


CALLS = '''
import numpy as np

def helper(x):
    return softmax(x)

def softmax(x):
    return np.exp(x)

def f(x):
    return helper(x) * 2

class M:
    def forward(self, x):
        return f(x) + self.g(x)

def g(x):
    return x

def softmax(x):
    return x
'''


def test_an_exercise_reaches_the_others_through_the_submissions_functions():
    found = callees.reached(ast.parse(CALLS).body, ["softmax", "f", "M", "g", "absent"])
    # M reaches g only as an attribute (self.g): not followed.
    assert found == {"softmax": (), "f": ("softmax",), "M": ("softmax", "f"), "g": ()}


def test_a_solutions_definition_keeps_what_it_uses_and_nothing_else():
    module = references.solution_file("udl_attention").read_text()
    source = callees.definition_source(module, SCALED)
    assert [line for line in source.splitlines() if line and not line[0].isspace()] == [
        "import numpy as np", "def softmax_cols(data_in):",
        "def _attend(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k, scale):",
        "def scaled_dot_product_self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, "
        "beta_k):"]
    scope: dict = {}
    exec(source, scope)
    inputs = UDL.exercise(SCALED).case("wide").inputs()
    assert np.allclose(scope[SCALED](*inputs),
                       references.load_solution("udl_attention").__dict__[SCALED](*inputs))
    assert callees.definition_source(module, "absent") is None
    assert callees.definition_source("def (:", SCALED) is None


def test_owncode_says_the_function_in_a_sentence_of_the_assignments_names():
    assert owncode.sentence("MultiHeadedAttention", "attention") == (
        "`MultiHeadedAttention` is right by itself: it fails because the `attention` it calls "
        "fails (see attention).")


def test_the_authors_guide_quotes_the_sentence_and_names_both_credits():
    guide = " ".join((Path(__file__).parents[1] / "docs" / "authoring.md").read_text().split())
    assert owncode.sentence("MultiHeadedAttention", "attention")[:-1] in guide
    assert 'credit="as written"' in guide and 'credit="own-code"' in guide
