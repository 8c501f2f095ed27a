"""The closed vocabulary of hidden checks (`grader.pipeline.vocabulary`), and SECURITY.md's
figures for it."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from grader.assignments.variants import CATALOGUE
from grader.course import registry
from grader.model import Visibility
from grader.pipeline import vocabulary
from grader.results import CheckResult, CheckStatus, Diagnosis, ExerciseResult, Verdict

SECURITY = " ".join((Path(__file__).parent.parent / "SECURITY.md").read_text().split())
SOFTMAX = registry.get("attention_basics").exercise("softmax")


def _hidden(**fields) -> CheckResult:
    base = {"name": "three-dims", "visibility": Visibility.HIDDEN, "passed": False,
            "score": 0.0, "max_score": 0.5, "status": CheckStatus.FAILED}
    return CheckResult(**{**base, **fields})


def test_security_md_states_the_vocabulary_and_its_size():
    sizes = {vocabulary.size(e) for a in registry.assignments().values() for e in a.exercises}
    assert sizes == {1293}
    texts = len(vocabulary.texts(SOFTMAX))
    ids = len(vocabulary.diagnosis_ids(SOFTMAX))
    assert (texts, ids) == (38, 33)
    assert f"one of {texts} messages" in SECURITY and f"at most {ids} diagnosis ids" in SECURITY
    bits = max(vocabulary.bits(a) for a in registry.assignments().values())
    assert f"log2(1293) = {bits:.1f} bits" in SECURITY and bits == pytest.approx(
        math.log2(1293))
    assert all(f"`{id}`" in SECURITY for id in vocabulary.OWN_DIAGNOSES)
    assert f"{len(vocabulary.RAISES)} usual built-in classes" in SECURITY
    assert all(f"`{name}`" in SECURITY for name in vocabulary.RAISES)
    assert f"**verdict** ({len(Verdict)})" in SECURITY


def test_no_text_holds_a_number():
    assert not any(re.search(r"\d", text) for text in vocabulary.texts(SOFTMAX))
    assert not any(re.search(r"\d", text) for text in vocabulary.OWN_DIAGNOSES.values())


def test_a_failure_that_comes_from_a_called_function_is_said_in_fixed_words():
    """The public check names the function (`owncode.sentence`); a hidden one says the
    vocabulary's sentence for the id, whichever function it was."""
    found = Diagnosis("callee-fails", "`softmax` is right by itself: it fails because the "
                      "`softmax_cols` it calls fails (see softmax_cols).")
    assert vocabulary.diagnosis(found, SOFTMAX) == Diagnosis(
        "callee-fails", vocabulary.OWN_DIAGNOSES["callee-fails"])
    assert "callee-fails" in vocabulary.diagnosis_ids(SOFTMAX)


@pytest.mark.parametrize(("error", "named"), [
    ("builtins.IndexError", "IndexError"), ("numpy.exceptions.AxisError", "AxisError"),
    ("__main__.ValueError", ""), ("leak.in_189p053", ""), ("builtins.KeyboardInterrupt", ""),
    ("", "")])
def test_only_a_usual_class_from_python_or_numpy_is_named(error, named):
    assert vocabulary.raised(error) == named


def test_a_hidden_check_keeps_what_the_grader_found_for_the_instructor_only():
    check = _hidden(message="returned a leak.in_189p053, which is not an array of numbers",
                    verdict=Verdict.WRONG_TYPE,
                    diagnosis=Diagnosis("weights-not-normalised", "yours sum to 2016"),
                    alternatives=(Diagnosis("x", "y"),), raised="leak")
    public = CheckResult("matrix", Visibility.PUBLIC, False, 0.0, 0.0, CheckStatus.FAILED,
                         "returned a str", verdict=Verdict.WRONG_TYPE)
    closed = vocabulary.close(ExerciseResult("softmax", CheckStatus.FAILED, 0.0, 2.0,
                                             (public, check)), SOFTMAX)
    assert closed.checks[0] == public
    hidden = closed.checks[1]
    assert hidden.message == vocabulary.message(Verdict.WRONG_TYPE, same_as_public=True)
    assert hidden.message.endswith(vocabulary.SAME_AS_PUBLIC)
    assert hidden.diagnosis == Diagnosis("weights-not-normalised", CATALOGUE[
        "weights-not-normalised"])
    assert (hidden.alternatives, hidden.raised) == ((), "")
    assert hidden.detail == ("returned a leak.in_189p053, which is not an array of numbers\n"
                             "[weights-not-normalised] yours sum to 2016")


def test_an_unknown_diagnosis_id_is_not_said():
    assert vocabulary.diagnosis(Diagnosis("spelled-1p89", "x"), SOFTMAX) is None
    assert vocabulary.diagnosis(Diagnosis("unstable-softmax", "x"), SOFTMAX) == Diagnosis(
        "unstable-softmax", SOFTMAX.misconceptions[0].message)


def test_a_grader_failure_tells_students_its_class_and_the_instructor_its_message(
        make_submission, monkeypatch):
    from grader.pipeline import checking, grading

    def broken(*args, **kwargs):
        raise ValueError("what a hidden call returned: 1.234567")

    monkeypatch.setattr(checking, "judgement", broken)
    path = make_submission("def softmax(x):\n    return x\n")
    result = grading.grade(path, registry.get("attention_basics"))
    assert result.grader_failed and result.error == (
        f"{path}: the grader failed (ValueError); grade it again, and report this if it "
        "repeats")
    assert "1.234567" in result.hidden_output
