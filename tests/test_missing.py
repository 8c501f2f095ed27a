"""A function that is not defined because the cell that defines it did not run: the message
names that cell and its error, which is what the student has to fix. A hidden check says the
closed vocabulary's text, pointing to the public one, and keeps that message as its detail."""

from __future__ import annotations

from grader.course import registry
from grader.model import Visibility
from grader.pipeline import grading, vocabulary
from grader.results import CheckStatus, Verdict
from tests.helpers.book import BOOK_SETUP, BOOK_SOFTMAX_COLS
from tests.helpers.corpus import CORPUS, FAST

UDL = registry.get("udl_attention")
SELF_ATTENTION = '''def self_attention(X,omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
  V = beta_v + omega_v @ X
  Q = beta_q + omega_q @ X
  K = beta_k + omega_k @ X
  return V @ softmax_cols(K.T @ Q
'''  # the bracket is never closed


NOT_WRITTEN = vocabulary.message(Verdict.NOT_WRITTEN, "", True)


def _messages(result, name):
    """The public checks' messages, and the exercise's status; the hidden checks say the
    vocabulary's text, with the public message as their detail."""
    (exercise,) = [e for e in result.exercises if e.name == name]
    public = {c.message for c in exercise.checks if c.visibility is Visibility.PUBLIC}
    hidden = [c for c in exercise.checks if c.visibility is Visibility.HIDDEN]
    if exercise.status is CheckStatus.MISSING:
        assert hidden and {(c.message, c.detail) for c in hidden} == \
            {(NOT_WRITTEN, message) for message in public}
    return public, exercise.status


def test_a_module_that_does_not_parse_names_its_error_for_the_function_it_defines():
    result = grading.grade(CORPUS / "broken" / "syntax_error.py", UDL, FAST)
    messages, status = _messages(result, "softmax")
    assert status is CheckStatus.MISSING
    assert messages == {"no function named softmax is defined: the module defines it, but did "
                        "not run (SyntaxError: invalid syntax (line 4)); fix that first"}
    # A function the module never defines is simply missing.
    messages, _ = _messages(result, "self_attention")
    assert messages == {"no function named self_attention is defined (it belongs in "
                        "udl_attention_12_1.ipynb)"}


def test_a_notebook_cell_that_does_not_parse_is_named_with_its_line(make_submission):
    path = make_submission([BOOK_SETUP, BOOK_SOFTMAX_COLS, SELF_ATTENTION])
    result = grading.grade(path, UDL, FAST)
    messages, status = _messages(result, "self_attention")
    assert status is CheckStatus.MISSING
    (message,) = messages
    assert message.startswith("no function named self_attention is defined: code cell 3 "
                              "defines it, but did not run (SyntaxError: ")
    assert message.endswith("); fix that first")
    # softmax_cols, in a cell that ran, is graded as usual (the book's own: it overflows).
    messages, status = _messages(result, "softmax_cols")
    assert status is CheckStatus.FAILED and not any("did not run" in m for m in messages)
