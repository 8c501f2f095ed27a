"""`uses-global` (issue #10): a function that reads the notebook's size globals is told so,
naming the global and its value, and no diagnosis is given that the code does not match.

The multi-head answer below is how three of seven public student answers to the book's
12_2 notebook scale their heads: `np.sqrt(H_D)`, with `H_D` the notebook's global."""

from __future__ import annotations

import sys
import time

import pytest

from grader.course import registry
from grader.pipeline import grading, ipython_syntax, loading, notebook_globals, vocabulary
from grader.results import CheckStatus, ResultStatus
from grader.sandbox.limits import Limits

OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))

SETUP = '''import numpy as np
np.random.seed(3)
N = 6
D = 8
X = np.random.normal(size=(D, N))
H = 2
H_D = int(D/H)
'''
SOFTMAX_COLS = '''def softmax_cols(data_in):
  exp_values = np.exp(data_in) ;
  denom = np.sum(exp_values, axis = 0);
  return exp_values / denom
'''
MULTIHEAD_WITH_H_D = '''def multihead_scaled_self_attention(X,omega_v1, omega_q1, omega_k1,
    beta_v1, beta_q1, beta_k1, omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2, omega_c):
  heads = []
  for ov, oq, ok, bv, bq, bk in ((omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1),
                                 (omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2)):
    Q = oq @ X + bq
    K = ok @ X + bk
    V = ov @ X + bv
    heads.append(V @ softmax_cols(K.T @ Q / np.sqrt(H_D)))
  X_prime = omega_c @ np.vstack(heads)
  return X_prime
'''
SELF_ATTENTION_WITH_N = '''def self_attention(X,omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
  Q = omega_q @ X + beta_q
  K = omega_k @ X + beta_k
  V = omega_v @ X + beta_v
  X_prime = np.zeros((D, N))
  for n in range(N):
    X_prime[:, n] = (V @ softmax_cols(K.T @ Q[:, n:n+1]))[:, 0]
  return X_prime
'''


def test_numeric_globals_are_read_from_the_source_without_running_it(make_submission):
    path = make_submission([SETUP + "N, D = 3, 4\nscale = D ** 0.5\nW = round(N / 2) * int(7 / H)\n"
                            "D += 1\n", "import os\nos = 2\nH_D = os.sep\n"])
    submission = loading.load(path)
    assert notebook_globals.numeric_globals(submission) == {"N": 3.0, "H": 2.0, "W": 6.0,
                                                             "os": 2.0}


def test_a_function_reads_the_globals_it_neither_takes_nor_binds(make_submission):
    source = SETUP + "def f(X, D):\n  M = N + D\n  return X * M * H_D * len(X)\n"
    submission = loading.load(make_submission([source]))
    assert notebook_globals.globals_read(submission, ["f", "g"]) == {
        "f": {"N": (6.0,), "H_D": (4.0,)}, "g": {}}


def test_a_global_rebound_after_the_definition_has_both_values(make_submission):
    # 12_1 then 12_2 pasted into one notebook (seed 002's layout): D = 4, then D = 8.
    source = "D = 4\ndef f(X):\n  return X / D\nD = 8\n"
    submission = loading.load(make_submission([source]))
    assert notebook_globals.globals_read(submission, ["f"]) == {"f": {"D": (8.0, 4.0)}}


def test_the_h_d_global_is_named_instead_of_wrong_scale(make_submission):
    path = make_submission([SETUP, SOFTMAX_COLS, MULTIHEAD_WITH_H_D], name="bob_udl_attention")
    result = grading.grade(path, registry.get("udl_attention"), OPTIONS)
    multihead = {e.name: e for e in result.exercises}["multihead_scaled_self_attention"]
    checks = {c.name: c for c in multihead.checks}
    assert checks["notebook-example"].passed
    for name, size in (("small", 2), ("wide", 3)):
        assert not checks[name].passed
        assert checks[name].diagnosis.id == "uses-global"
        # The hidden check says the vocabulary's sentence; the instructor's detail, which.
        assert checks[name].diagnosis.message == vocabulary.OWN_DIAGNOSES["uses-global"]
        assert checks[name].detail.endswith(
            "multihead_scaled_self_attention reads the notebook's global H_D = 4, where "
            f"omega_v1.shape[0] is {size}. Take sizes from the shapes of the inputs inside the "
            "function: the notebook's globals fit only its example.")
    # D = 4 in the small case, so sqrt(H_D) equals the sqrt(D) of `wrong-scale`: not said.
    assert all(c.diagnosis is None or c.diagnosis.id != "wrong-scale" for c in multihead.checks)


def test_globals_in_a_loop_are_named_when_the_call_raises(make_submission):
    setup = SETUP.replace("N = 6", "N = 3").replace("D = 8", "D = 4")
    path = make_submission([setup, SOFTMAX_COLS, SELF_ATTENTION_WITH_N],
                           name="carol_udl_attention")
    result = grading.grade(path, registry.get("udl_attention"), OPTIONS)
    attention = {e.name: e for e in result.exercises}["self_attention"]
    checks = {c.name: c for c in attention.checks}
    assert checks["notebook-example"].passed
    wide = checks["wide"]
    assert not wide.passed and wide.diagnosis.id == "uses-global"
    assert "the notebook's global D = 4, where X.shape[0] is 6" in wide.detail
    assert "the notebook's global N = 3, where X.shape[1] is 5" in wide.detail


def test_a_correct_function_that_reads_no_global_gets_no_such_diagnosis(make_submission):
    honest = MULTIHEAD_WITH_H_D.replace("np.sqrt(H_D)", "np.sqrt(oq.shape[0])")
    path = make_submission([SETUP, SOFTMAX_COLS, honest], name="dan_udl_attention")
    result = grading.grade(path, registry.get("udl_attention"), OPTIONS)
    multihead = {e.name: e for e in result.exercises}["multihead_scaled_self_attention"]
    assert multihead.score == multihead.max_score == 5.0


def test_scaling_by_the_notebooks_global_d_costs_the_case_where_d_differs(make_submission):
    # 12_1 sets D = 4, the size of every input of the notebook's example: only a case with
    # another D can tell np.sqrt(D) from np.sqrt(Q.shape[0]).
    scaled = '''def scaled_dot_product_self_attention(X,omega_v, omega_q, omega_k,
    beta_v, beta_q, beta_k):
  Q = beta_q + omega_q @ X
  K = beta_k + omega_k @ X
  V = beta_v + omega_v @ X
  return V @ softmax_cols(K.T @ Q / np.sqrt(D))
'''
    setup = "import numpy as np\nnp.random.seed(3)\nN = 3\nD = 4\n"
    path = make_submission([setup, SOFTMAX_COLS, scaled], name="carol_udl_attention")
    result = grading.grade(path, registry.get("udl_attention"), OPTIONS)
    exercise = {e.name: e for e in result.exercises}["scaled_dot_product_self_attention"]
    failing = [c for c in exercise.checks if not c.passed and c.scored]
    assert [c.name for c in failing] == ["wide"]
    assert failing[0].diagnosis.id == "uses-global"
    assert "scaled_dot_product_self_attention reads the notebook's global D = 4, where " \
        "X.shape[0] is 6" in failing[0].detail
    assert exercise.score < exercise.max_score


# --------------------------------------------------------------------------- hostile globals (#21)

CORRECT_SOFTMAX = '''import numpy as np

def softmax(items_in):
  e_x = np.exp(items_in - np.max(items_in))
  return e_x / e_x.sum()
'''


@pytest.fixture
def default_recursion_limit():
    """Python's default limit of 1,000 frames, which a fresh `grade` has (importing IPython,
    as some tests do, raises it to 3,000)."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(saved)


def test_a_long_global_costs_nothing_and_the_softmax_keeps_its_points(
        make_submission, default_recursion_limit):
    # The review's notebook: 990 terms used to exhaust the frames in `_value`.
    long_sum = "N = " + "+".join(["1"] * 990) + "\n"
    path = make_submission([CORRECT_SOFTMAX, long_sum], name="eve_udl_attention")
    result = grading.grade(path, registry.get("udl_attention"), OPTIONS)
    assert (result.status, result.error) == (ResultStatus.GRADED, None)
    softmax = result.exercises[0]
    assert (softmax.name, softmax.status, softmax.score) == ("softmax", CheckStatus.PASSED, 1.0)
    assert result.score == 1.0
    # Compiling the sum needs more frames than the sandbox's interpreter has (Jupyter's has
    # 3,000): that is the cell's own error, data in the result, and it costs no points.
    assert [c.number for c in result.problem_cells] in ([], [2])


HOSTILE = {
    "long sum": "+".join(["1"] * 990),
    "deep negation": "-" * 990 + "1",
    "deep casts": "int(" * 150 + "2" + ")" * 150,
    "huge literal": "1" + "0" * 400,
    "float of a huge literal": "float(1" + "0" * 400 + ")",
    "int of inf": "int(1e999)",
    "round of minus inf": "round(-1e999)",
    "inf itself": "1e999 - 1",
    "power tower": "10**10**10",
    "huge string": '"a" * 10**10',
    "huge list": "[0] * 10**10",
    "division by zero": "1 // 0",
    "modulo by zero": "D % (D - D)",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_global_is_left_unknown_and_the_others_are_read(make_submission, name,
                                                                  default_recursion_limit):
    source = (f"D = 4\nN = {HOSTILE[name]}\nH_D = int(D / 2)\n"
              "def f(X):\n  return X * N * D * H_D\n")
    submission = loading.load(make_submission(source))
    assert notebook_globals.globals_read(submission, ["f"]) == {"f": {"D": (4.0,),
                                                                     "H_D": (2.0,)}}
    assert notebook_globals.numeric_globals(submission) == {"D": 4.0, "H_D": 2.0}


def test_a_short_sum_is_still_evaluated(make_submission):
    source = "N = " + "+".join(["1"] * 40) + "\nD = -(-(2 * N) // 3)\n"
    submission = loading.load(make_submission(source))
    assert notebook_globals.numeric_globals(submission) == {"N": 40.0, "D": 27.0}


def test_many_definitions_after_many_globals_take_linear_time(make_submission):
    # One tuple binds 50,000 globals; 4,000 definitions of f followed. Each definition used
    # to copy every global: 200 million entries.
    names = [f"g{i}" for i in range(50_000)]
    source = (", ".join(names) + " = " + ", ".join("1" for _ in names) + "\n"
              + "def f(X):\n  return X * g7\n" * 4000)
    submission = loading.load(make_submission(source))
    started = time.process_time()  # this process's work: a busy machine does not count
    assert notebook_globals.globals_read(submission, ["f"]) == {"f": {"g7": (1.0,)}}
    assert time.process_time() - started < 2.0


def test_a_notebook_of_hostile_expressions_is_graded(make_submission, default_recursion_limit):
    softmax = CORRECT_SOFTMAX.replace("e_x.sum()", "e_x.sum() + 0 * (" + "+".join(["1"] * 200)
                                      + ")")
    cells = [softmax,
             "class Loop:\n  def __repr__(self):\n    return repr(self)\nloop = Loop()\nloop",
             "raise ValueError(Loop())",
             # Deeper than Python 3.11's limit (the recursion limit) and 3.13's (the C stack's).
             "N = " + "+".join(["1"] * 12000) + "\nM = " + "-" * 990 + "1",
             "BIG = 1" + "0" * 400 + "\nD = int(1e999)"]
    result = grading.grade(make_submission(cells, name="eve_udl_attention"),
                           registry.get("udl_attention"), OPTIONS)
    assert (result.status, result.error, result.score) == (ResultStatus.GRADED, None, 1.0)
    softmax_result = result.exercises[0]
    assert (softmax_result.status, softmax_result.score) == (CheckStatus.PASSED, 1.0)
    assert softmax_result.fingerprint is None  # too deep to normalise: advice lost, not points
    # Each hostile cell is its own error, data in the result; the repr that recurses is shown
    # as nothing, not as an error.
    assert [(c.number, c.message.split(";")[0]) for c in result.problem_cells] == [
        (3, "line 1: ValueError: <its message cannot be shown: its __str__ or __repr__ raised>"),
        (4, "cannot be parsed: RecursionError"),
        (5, "line 2: OverflowError: cannot convert float infinity to integer")]


def test_numbers_written_for_sizes_are_read_and_those_the_code_needs_are_not(make_submission):
    # Issue #25: `/ 2`, `np.sqrt(4)`, `range(3)`, a shape and a slice are sizes; two heads in
    # `X.shape[0] // 2`, axes, indices and exponents are not, nor is 0 or 1.
    path = make_submission(['''import numpy as np
def f(X):
    d = X.shape[0] // 2
    h = int(d / 2)
    s = np.swapaxes(X, 1, 2).sum(axis=2) / np.sqrt(d) + X[2] + X.shape[1] ** 2
    s = s / 2 + np.sqrt(4) + np.zeros((4, 3)).sum() + 16 ** 0.5
    for i in range(3):
        s = s[:5] / 1
    return s
def g(X):
    return X / 2
''', "def g(X):\n    return X\n"])
    written = notebook_globals.numbers_written(loading.load(path), ["f", "g", "h"])
    assert written["g"] == () and written["h"] == ()  # g's last definition writes none
    assert [(w.value, w.line, w.divisor) for w in written["f"]] == [
        (2.0, 6, True), (3.0, 6, False), (4.0, 6, False), (16.0, 6, False),
        (3.0, 7, False), (5.0, 8, False)]


def test_both_readings_share_one_parse_and_agree_with_their_own(make_submission,
                                                                 monkeypatch):
    submission = loading.load(make_submission(
        ["N = 3\nH = 2", "def f(X):\n    return X.reshape(4, 3) * N / 2", "N = 6"]))
    alone = (notebook_globals.globals_read(submission, ["f"]),
             notebook_globals.numbers_written(submission, ["f"]))
    parsed: list[str] = []
    real = ipython_syntax.parse
    monkeypatch.setattr(ipython_syntax, "parse",
                        lambda source, *a: parsed.append(source) or real(source, *a))
    statements = notebook_globals.top_level(submission)
    shared = (notebook_globals.globals_read(submission, ["f"], statements=statements),
              notebook_globals.numbers_written(submission, ["f"], statements=statements))
    assert len(parsed) == 3  # once per cell, for both
    assert shared == alone
    assert alone[0] == {"f": {"N": (6.0, 3.0)}}
    assert {w.value for w in alone[1]["f"]} == {4.0, 3.0, 2.0}
