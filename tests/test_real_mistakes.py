"""The mistakes real students make (issue #25): queries and keys swapped, and tokens taken
as rows where the unit's columns are tokens. The notebooks are written as the book's readers
write them: its names (omega_q, beta_q, all_x, X_prime), globals, two-space indents and
`print(...)` checks; graded by `grade run` (`grading.grade_files`) and by `check()`."""

from __future__ import annotations

import dataclasses
import re

import pytest

from grader import check as check_in_notebook
from grader import selfcheck
from grader.course import checkfile, references, registry
from grader.model import Visibility
from grader.pipeline import grading, layout_hint, vocabulary
from grader.results import CheckResult, CheckStatus, Diagnosis, Result, Verdict
from grader.sandbox.limits import Limits
from tests.helpers.book import BOOK_SETUP, BOOK_SOFTMAX_COLS

OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))
UDL = registry.get("udl_attention")
BASICS = registry.get("attention_basics")
SENTENCE = ("The shapes do not fit together: in this unit columns are tokens, X has shape "
            "(D, N) and Q = omega_q @ X + beta_q; a product such as X @ omega_q treats rows "
            "as tokens.")
NAMED = SENTENCE.replace("a product such as X @ omega_q", "`X @ omega_q` on line {line}")
"""The sentence as `grade run` says it of part_1(rows=True): naming the product it found."""
PARAMETERS = '''np.random.seed(0)
omega_q = np.random.normal(size=(D,D))
omega_k = np.random.normal(size=(D,D))
omega_v = np.random.normal(size=(D,D))
beta_q = np.random.normal(size=(D,1))
beta_k = np.random.normal(size=(D,1))
beta_v = np.random.normal(size=(D,1))
X = np.zeros((D, N))
for n in range(N):
  X[:,n] = np.squeeze(all_x[n])
'''
SOFTMAX = '''def softmax(items_in):
  e = np.exp(items_in - np.max(items_in))
  items_out = e / np.sum(e)
  return items_out ;
'''


def part_1(scores: str, rows: bool = False) -> list[str]:
    """12_1 as a student fills it in, `scores` being what goes into softmax_cols (K.T @ Q
    is right); `rows`: the projections written as if tokens were X's rows."""
    project = ("  Q = X @ omega_q + beta_q.T\n  K = X @ omega_k + beta_k.T\n"
               "  V = X @ omega_v + beta_v.T\n" if rows else
               "  Q = omega_q @ X + beta_q\n  K = omega_k @ X + beta_k\n"
               "  V = omega_v @ X + beta_v\n")
    return [BOOK_SETUP, PARAMETERS, SOFTMAX, BOOK_SOFTMAX_COLS,
            f'''def self_attention(X,omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
{project}  attention = softmax_cols({scores})
  X_prime = V @ attention
  return X_prime
''', 'X_prime = self_attention(X,omega_v, omega_q, omega_k, beta_v, beta_q, beta_k)\n'
     'print(X_prime)\n',
            f'''def scaled_dot_product_self_attention(X,omega_v, omega_q, omega_k,
    beta_v, beta_q, beta_k):
{project}  D_q = Q.shape[0]
  attention = softmax_cols({scores} / np.sqrt(D_q))
  X_prime = V @ attention
  return X_prime
''', 'X_prime = scaled_dot_product_self_attention(X,omega_v, omega_q, omega_k, beta_v, '
     'beta_q, beta_k)\nprint(X_prime)\n']


def part_2(scores: str) -> list[str]:
    """12_2 as a student fills it in: a head written twice, copied and pasted."""
    head = '''  Q{h} = omega_q{h} @ X + beta_q{h}
  K{h} = omega_k{h} @ X + beta_k{h}
  V{h} = omega_v{h} @ X + beta_v{h}
  head{h} = V{h} @ softmax_cols({scores} / np.sqrt(Q{h}.shape[0]))
'''
    heads = "".join(head.format(h=h, scores=scores.replace("Q", f"Q{h}").replace(
        "K", f"K{h}")) for h in (1, 2))
    return [BOOK_SETUP.replace("N = 3\nD = 4", "N = 6\nD = 8"), BOOK_SOFTMAX_COLS,
            f'''def multihead_scaled_self_attention(X,omega_v1, omega_q1, omega_k1,
    beta_v1, beta_q1, beta_k1,
    omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2, omega_c):
{heads}  X_prime = omega_c @ np.vstack([head1, head2])
  return X_prime
''']


def graded(make_submission, first: list[str], second: list[str]) -> Result:
    """Both parts handed in, graded as `grade run` grades them."""
    paths = [make_submission(first, name="12_1_Self_Attention"),
             make_submission(second, name="12_2_Multihead_Self_Attention")]
    return grading.grade_files(paths, UDL, OPTIONS)


def scored(result: Result, exercise: str) -> list[CheckResult]:
    """The exercise's checks worth points, and its public ones (the notebook's example)."""
    declared = UDL.exercise(exercise)
    (found,) = [e for e in result.exercises if e.name == exercise]
    return [c for c in found.checks
            if declared.case(c.name).scored or c.visibility is Visibility.PUBLIC]


ATTENTION = ("self_attention", "scaled_dot_product_self_attention",
             "multihead_scaled_self_attention")


def test_queries_and_keys_swapped_is_named(make_submission):
    result = graded(make_submission, part_1("Q.T @ K"), part_2("Q.T @ K"))
    for exercise in ATTENTION:
        checks = scored(result, exercise)
        assert len(checks) >= 2 and not any(c.passed for c in checks), exercise
        assert {c.diagnosis.id for c in checks if c.diagnosis} == {"qk-swapped"}, \
            [(c.name, c.diagnosis) for c in checks]
        assert all(c.diagnosis for c in checks), exercise
    example = scored(result, "self_attention")[0]
    assert example.diagnosis.message.startswith(
        "Queries and keys are swapped: you compute softmax_cols(Q.T @ K)")
    assert result.score == 1.0  # the softmax alone


def test_a_correct_notebook_gets_neither(make_submission):
    result = graded(make_submission, part_1("K.T @ Q"), part_2("K.T @ Q"))
    assert result.score == result.max_score == 10.0
    for exercise in result.exercises:
        for check in exercise.checks:
            assert check.diagnosis is None or check.diagnosis.id != "qk-swapped"
            assert not check.message.startswith(layout_hint.SENTENCE[:20])


def test_tokens_as_rows_get_the_layout_before_numpys_error(make_submission):
    result = graded(make_submission, part_1("K @ Q.T", rows=True), part_2("K.T @ Q"))
    for exercise, line in (("self_attention", 2), ("scaled_dot_product_self_attention", 3)):
        checks = scored(result, exercise)
        assert checks and all(c.status is CheckStatus.ERROR for c in checks)
        said = 0  # the layout's sentence: once per exercise, on its first public check
        for check in checks:
            if check.visibility is Visibility.PUBLIC:
                numpys = check.message
                if numpys.startswith(NAMED.format(line=line)):
                    said += 1
                    numpys = numpys.split("\n", 1)[1]
                assert numpys.startswith("raised ValueError: matmul: Input operand 1 has a "
                                         "mismatch in its core dimension 0")
                assert re.search(r"\(line \d+\)$", numpys)
            else:  # the vocabulary's text, pointing to the public check that says it all
                assert check.message == vocabulary.message(Verdict.RAISED, "ValueError", True)
                assert not re.search(r"\d", check.message)
                assert check.detail.startswith("raised ValueError: matmul: Input operand 1 "
                                               "has a mismatch in its core dimension 0")
                assert re.search(r"\(line \d+\)$", check.detail)
        assert said == 1, exercise
    assert next(e for e in result.exercises if e.name == "multihead_scaled_self_attention"
                ).status is CheckStatus.PASSED


def notebook(cells: list[str]) -> dict:
    """The namespace of a notebook's kernel after running `cells`, as check() sees it."""
    namespace: dict = {}
    for cell in cells:
        exec(cell, namespace)
    return namespace


def test_check_in_the_notebook_says_the_same(capsys):
    kernel = notebook(part_1("K @ Q.T", rows=True)[:5])
    check, _practice = selfcheck.run("self_attention", kernel["self_attention"]).exercises[
        0].checks
    first, numpys = check.message.split("\n", 1)
    assert first == SENTENCE
    assert numpys.startswith("raised ValueError: matmul: Input operand 1 has a mismatch")
    check_in_notebook(kernel["self_attention"])  # as the stub cell's check() line calls it
    assert SENTENCE in capsys.readouterr().out

    kernel = notebook(part_1("Q.T @ K")[:5])
    check, _practice = selfcheck.run("self_attention", kernel["self_attention"]).exercises[
        0].checks
    assert check.diagnosis.id == "qk-swapped"
    assert check.diagnosis.message.startswith("Queries and keys are swapped: you compute "
                                              "softmax_cols(Q.T @ K)")


ROWS_SWAPPED = '''import numpy as np

def softmax(x):
  e = np.exp(x - np.max(x, axis=-1, keepdims=True))
  return e / np.sum(e, axis=-1, keepdims=True)

def qkv_projections(X, W_q, W_k, W_v):
  return X @ W_q, X @ W_k, X @ W_v

def scaled_dot_product_attention(Q, K, V, mask=None):
  scores = K @ Q.T / np.sqrt(Q.shape[-1])
  if mask is not None:
    scores = scores + mask
  weights = softmax(scores)
  return weights, weights @ V

def causal_mask(seq_len):
  return np.triu(np.full((seq_len, seq_len), -np.inf), k=1)

def causal_self_attention(X, W_q, W_k, W_v):
  Q, K, V = qkv_projections(X, W_q, W_k, W_v)
  return scaled_dot_product_attention(Q, K, V, causal_mask(len(X)))
'''


def test_rows_as_tokens_swapped_is_named_and_a_shape_error_says_the_layout(make_submission):
    result = grading.grade_files([make_submission(ROWS_SWAPPED)], BASICS, OPTIONS)
    by_name = {e.name: e for e in result.exercises}
    for exercise in ("scaled_dot_product_attention", "causal_self_attention"):
        failing = [c for c in by_name[exercise].checks if not c.passed]
        assert failing, exercise
        named = {c.diagnosis.id for c in failing if c.diagnosis}
        # causal_self_attention calls the student's own scaled_dot_product_attention: where
        # it passes with the right one in its place, it is told so (callee-fails).
        allowed = {"qk-swapped"} if exercise == "scaled_dot_product_attention" else {
            "qk-swapped", "callee-fails"}
        assert named and named <= allowed, [(c.name, c.diagnosis, c.message) for c in failing]
    # Three queries over five keys: K @ Q.T is (5, 3), and (5, 3) @ V does not fit. The case
    # is hidden: it says the vocabulary's text (the layout's sentence is a public check's,
    # test_tokens_as_rows_get_the_layout_before_numpys_error), NumPy's error its detail.
    differs = next(c for c in by_name["scaled_dot_product_attention"].checks
                   if c.name == "d_k-differs-from-d_v")
    assert differs.visibility is Visibility.HIDDEN
    # the practice case, 6 queries over 7 keys, raises it too: a public case says the details
    assert differs.message == vocabulary.message(Verdict.RAISED, "ValueError",
                                                 same_as_public=True)
    assert differs.detail.startswith("raised ValueError: matmul: Input operand 1 has a "
                                     "mismatch in its core dimension 0")


@pytest.mark.parametrize("message", [
    "raised ValueError: matmul: Input operand 1 has a mismatch in its core dimension 0, with "
    "gufunc signature (n?,k),(k,m?)->(n?,m?) (size 4 is different from 3) (line 3)",
    "raised ValueError: shapes (3,4) and (3,4) not aligned: 4 (dim 1) != 3 (dim 0)",
    "raised ValueError: operands could not be broadcast together with shapes (4,3) (1,4) ",
    "raised RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x4 and 3x4)",
])
def test_numpys_and_torchs_shape_errors_get_the_sentence(message):
    error = "builtins." + message.split()[1].rstrip(":")
    assert layout_hint.explain("rows are tokens", error, message) == \
        f"The shapes do not fit together: in this unit rows are tokens.\n{message}"
    assert layout_hint.explain("", error, message) == message
    assert layout_hint.explain("rows are tokens", error, message, "raised ValueError") == \
        "The shapes do not fit together: in this unit rows are tokens.\nraised ValueError"


@pytest.mark.parametrize(("error", "message"), [
    ("builtins.IndexError", "raised IndexError: index 3 is out of bounds for axis 1 with size 3"),
    ("", "did not return within 5 s"),
    ("builtins.AssertionError", "raised AssertionError: operands could not be broadcast"),
    ("__main__.ValueError", "raised ValueError: operands could not be broadcast together"),
])
def test_other_errors_are_left_alone(error, message):
    assert layout_hint.explain("rows are tokens", error, message) == message


def test_every_assignment_declares_a_layout_without_digits():
    for assignment in registry.assignments().values():
        assert assignment.layout and not re.search(r"\d", assignment.layout), assignment.name


def test_released_check_data_keeps_the_layout(tmp_path):
    """check() on a course declared outside the package reads the layout from the check
    data `grade release` writes, and says it as grade run does."""
    course = dataclasses.replace(UDL, name="my_course")
    checkfile.write(tmp_path / "my_course.check.npz", course,
                    references.load(UDL, public_only=True))
    kernel = notebook(part_1("K @ Q.T", rows=True)[:5])
    result = selfcheck.run("self_attention", kernel["self_attention"], "my_course", [tmp_path])
    assert result.assignment == "my_course"
    assert result.exercises[0].checks[0].message.split("\n")[0] == SENTENCE


def test_a_diagnosed_shape_error_gets_no_layout_sentence():
    message = "raised ValueError: operands could not be broadcast together with shapes (4,3) (1,6)"
    global_read = Diagnosis("uses-global", "self_attention reads the notebook's global N = 3")
    assert layout_hint.explain("columns are tokens", "builtins.ValueError", message,
                               diagnosis=global_read) == message


def test_the_layout_sentence_is_said_once_per_exercise():
    said = f"{SENTENCE}\nraised ValueError: not aligned"
    global_read = Diagnosis("uses-global", "reads the notebook's global N = 3")
    checks = (CheckResult("a", Visibility.PUBLIC, False, 0, 0, message=said, diagnosis=global_read),
              CheckResult("b", Visibility.PUBLIC, False, 0, 0, message=said),
              CheckResult("c", Visibility.PUBLIC, False, 0, 0, message=said),
              CheckResult("d", Visibility.PUBLIC, True, 0, 0))
    kept = [check.message for check in layout_hint.once(checks)]
    assert kept == ["raised ValueError: not aligned", said, "raised ValueError: not aligned", ""]
