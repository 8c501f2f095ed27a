"""A diagnosis is consistent, or it is not given (issue #25).

A catalogued mistake is named only when the student's outputs match its variant on every case
of the exercise where the variant can be told from the reference. Every catalogued mistake of
every assignment is tried as a student who makes it on one case only; then the issue's real
student, whose multi-head code divides each head's scores by the literal 2.
"""

from __future__ import annotations

import re

import pytest

from grader.course import references, registry
from grader.model import Exercise, Misconception, Visibility
from grader.pipeline import agreement, diagnose, grading, vocabulary
from grader.pipeline.judging import Context, judgement
from grader.results import CheckResult, Verdict
from grader.sandbox.limits import Limits
from tests.conftest import of_assignment

OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))
DECIMAL = re.compile(r"\d\.\d|\d[eE][-+]?\d")

MISTAKES = [of_assignment(name, exercise.name, k, id=f"{name}-{exercise.name}-{mistake.id}")
            for name, assignment in sorted(registry.assignments().items())
            for exercise in assignment.exercises
            for k, mistake in enumerate(exercise.misconceptions)]


def _value(exercise: Exercise, outputs: references.Outputs) -> object:
    return outputs if len(exercise.outputs) > 1 else outputs[0]


def _told(exercise: Exercise, mistake: Misconception, stored: references.References
          ) -> dict[str, references.Outputs]:
    """The variant's outputs on each case where it can be told from the reference."""
    told = {}
    for case in exercise.cases:
        expected = stored.get(exercise.name, case.name)
        wrong = diagnose.run_variant(mistake.variant, case.inputs(), case.init_kwargs,
                                     len(exercise.outputs))
        if wrong is not None and not diagnose.same(wrong, expected):
            told[case.name] = wrong
    return told


def _agreed(exercise: Exercise, answers: dict[str, object],
            stored: references.References) -> list[CheckResult]:
    """Every case judged on `answers` (the reference elsewhere), then agreed, as grade run
    agrees them."""
    evidence = []
    for case in exercise.cases:
        expected = stored.get(exercise.name, case.name)
        value = answers.get(case.name, _value(exercise, expected))
        judged = judgement(exercise, case, value, expected, case.inputs())
        evidence.append(agreement.Evidence(case, judged.check, judged.obtained, expected))
    return agreement.agree(exercise, evidence, Context.of(exercise, {}))


@pytest.mark.parametrize(("name", "exercise_name", "k"), MISTAKES)
def test_a_mistake_made_on_one_case_only_is_never_named(name, exercise_name, k):
    assignment = registry.get(name)
    exercise = assignment.exercise(exercise_name)
    mistake = exercise.misconceptions[k]
    stored = references.load(assignment)
    told = _told(exercise, mistake, stored)
    assert told, f"{mistake.id} can be told on no case of {exercise.name}"
    for case_name, wrong in told.items():
        # A student whose code returns the mistake's outputs on this case only: a lookup,
        # or code that is wrong here by coincidence (a literal that fits these sizes).
        checks = _agreed(exercise, {case_name: _value(exercise, wrong)}, stored)
        named = {c.name: c.diagnosis.id for c in checks if c.diagnosis}
        if len(told) > 1:  # other cases tell the mistake apart, and the student is right there
            assert mistake.id not in named.values(), (case_name, named)
        else:  # the only case that can tell it: the diagnosis holds wherever it can speak
            assert case_name in named, (case_name, named)


@pytest.mark.parametrize(("name", "exercise_name", "k"), MISTAKES)
def test_a_mistake_made_on_every_case_is_named_on_every_case_that_tells_it(name,
                                                                           exercise_name, k):
    assignment = registry.get(name)
    exercise = assignment.exercise(exercise_name)
    mistake = exercise.misconceptions[k]
    stored = references.load(assignment)
    told = _told(exercise, mistake, stored)
    checks = _agreed(exercise, {n: _value(exercise, w) for n, w in told.items()}, stored)
    failing = {c.name: c.diagnosis for c in checks if not c.passed}
    assert set(failing) == set(told)
    # Named (or, where its outputs are another mistake's too, the name the cases agree on).
    assert all(d is not None for d in failing.values()), failing
    assert mistake.id in {d.id for d in failing.values() if d}, failing


HEADS = ("omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1, "
         "omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2, omega_c")
MULTIHEAD = f'''import numpy as np

def softmax_cols(data_in):
    exp_values = np.exp(data_in)
    return exp_values / np.sum(exp_values, axis=0)

def multihead_scaled_self_attention(X, {HEADS}):
    heads = []
    for ov, oq, ok, bv, bq, bk in ((omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1),
                                   (omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2)):
        Q = oq @ X + bq
        K = ok @ X + bk
        V = ov @ X + bv
        heads.append(V @ softmax_cols(K.T @ Q SCALE))
    return omega_c @ np.vstack(heads)
'''


def _grade(tmp_path, source: str, exercise: str) -> dict[str, CheckResult]:
    path = tmp_path / "student_udl_attention.py"
    path.write_text(source)
    result = grading.grade(path, registry.get("udl_attention"), OPTIONS)
    (graded,) = [e for e in result.exercises if e.name == exercise]
    return {c.name: c for c in graded.checks}


def test_the_literal_2_multihead_is_told_of_its_literal_never_of_wrong_scale(tmp_path):
    checks = _grade(tmp_path, MULTIHEAD.replace("SCALE", "/ 2"),
                    "multihead_scaled_self_attention")
    assert checks["notebook-example"].passed and checks["one-token"].passed
    for name, size in (("small", 2), ("wide", 3)):
        diagnosis = checks[name].diagnosis
        assert diagnosis is not None and diagnosis.id == "hard-coded-size"
        # A hidden check says the closed vocabulary's sentence; the instructor's detail, the
        # diagnosis in full.
        assert diagnosis.message == vocabulary.OWN_DIAGNOSES["hard-coded-size"]
        assert checks[name].detail.endswith(
            "[hard-coded-size] multihead_scaled_self_attention writes sizes as numbers: `2` on "
            "line 14 stands for the square root of omega_v1.shape[0], which is 4 in the "
            f"notebook's example, but {size} in this case. A number written in the code fits "
            "only the notebook's example: take sizes from the shapes of the inputs inside the "
            "function.")
        assert not DECIMAL.search(diagnosis.message)


def test_a_scale_the_source_does_not_show_gets_values_differ_and_no_name(tmp_path):
    # `* 0.5` is no size the grader reads; where the head size is 2 it equals dividing by
    # sqrt(D) = 2, `wrong-scale`, which the example (head size 4) and wide (3) refute.
    checks = _grade(tmp_path, MULTIHEAD.replace("SCALE", "* 0.5"),
                    "multihead_scaled_self_attention")
    assert checks["notebook-example"].passed
    assert [(n, c.diagnosis) for n, c in checks.items() if not c.passed] == \
        [("practice", None), ("small", None), ("wide", None)]
    # The practice case, public, fails the same way: the hidden one points to it.
    assert checks["small"].message == (vocabulary.message(Verdict.WRONG_VALUES) + " "
                                       + vocabulary.SAME_AS_PUBLIC)
    assert checks["small"].detail.startswith("values differ")


def test_a_number_is_not_blamed_when_the_example_fails_too(tmp_path):
    # Transposed weights and `/ 2`: the example fails, so 2 is not what goes wrong (or not
    # alone); `transposed-weights` fits the example only, since the scale is wrong elsewhere.
    source = MULTIHEAD.replace("SCALE", "/ 2").replace("V @ softmax_cols(K.T @ Q / 2)",
                                                       "V @ softmax_cols(K.T @ Q / 2).T")
    checks = _grade(tmp_path, source, "multihead_scaled_self_attention")
    failing = [c for c in checks.values() if not c.passed]
    assert [c.name for c in failing] == ["notebook-example", "practice", "small", "wide"]
    assert all(c.diagnosis is None for c in failing), [c.diagnosis for c in failing]


SINGLE_HEAD = '''import numpy as np

def softmax_cols(data_in):
    exp_values = np.exp(data_in - data_in.max(axis=0))
    return exp_values / np.sum(exp_values, axis=0)

def scaled_dot_product_self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    Q = omega_q @ X + beta_q
    K = omega_k @ X + beta_k
    V = omega_v @ X + beta_v
    return V @ softmax_cols(K.T @ Q / np.sqrt(4))

def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    Q = omega_q @ X + beta_q
    K = omega_k @ X + beta_k
    V = omega_v @ X + beta_v
    X_prime = np.zeros((4, 3))
    for n in range(X.shape[1]):
        X_prime[:, n] = V @ softmax_cols(K.T @ Q[:, n])
    return X_prime
'''


def test_a_size_written_in_sqrt_or_in_a_shape_is_named_with_its_line(tmp_path):
    checks = _grade(tmp_path, SINGLE_HEAD, "scaled_dot_product_self_attention")
    # D = 5 and 6 there only
    assert [n for n, c in checks.items() if not c.passed] == ["practice", "wide"]
    assert checks["wide"].diagnosis is not None
    assert "`4` on line 11 stands for X.shape[0], which is 4 in the notebook's example, " \
           "but 6 in this case" in checks["wide"].detail  # the instructor's view
    # np.zeros((4, 3)): the wide case (D = 6, N = 5) raises an IndexError, and the check,
    # hidden, says so with the numbers' lines and no more of the error.
    checks = _grade(tmp_path, SINGLE_HEAD, "self_attention")
    wide = checks["wide"]
    assert wide.status.value == "error" and wide.visibility is Visibility.HIDDEN
    assert wide.diagnosis is not None and wide.diagnosis.id == "hard-coded-size"
    assert wide.message == (vocabulary.message(Verdict.RAISED, "ValueError") + " "
                            + vocabulary.SAME_AS_PUBLIC)  # as the practice case does
    assert "`4` on line 17 stands for X.shape[0]" in wide.detail
    assert "`3` on line 17 stands for X.shape[1], which is 3 in the notebook's example, but " \
           "5 in this case" in wide.detail
    one = checks["one-token"]
    assert not one.passed and one.diagnosis is not None
    assert "`3` on line 17 stands for X.shape[1]" in one.detail
    assert "`4` on line 17" not in one.detail  # D is the example's there
