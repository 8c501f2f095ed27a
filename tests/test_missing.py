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


def _solution_parts() -> tuple[str, str]:
    """The solution module as the book's two notebooks split it: part 2 holds the given
    softmax_cols and the multi-head exercise."""
    import ast

    from tests.conftest import ROOT

    source = (ROOT / "solutions" / "udl_attention.py").read_text()
    definitions = {node.name: ast.get_source_segment(source, node)
                   for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}
    head = "import numpy as np\n\n"
    part_2 = ("softmax_cols", "_attend", "multihead_scaled_self_attention")
    return (head + "\n\n".join(text for name, text in definitions.items()
                                if name != "multihead_scaled_self_attention"),
            head + "\n\n".join(definitions[name] for name in part_2).replace(
                "scaled_dot_product_self_attention(", "_head(")
            + "\n\n\ndef _head(X, *head):\n"
            "    return _attend(X, *head, np.sqrt(head[1].shape[0]))\n")


def test_one_part_of_two_says_which_and_that_the_other_is_not_handed_in(make_submission):
    from grader.report import html, markdown, render, terminal

    part_1, part_2 = _solution_parts()
    first = grading.grade(make_submission(part_1, name="alice_part1"), UDL, FAST)
    by_name = {e.name: e for e in first.exercises}
    assert by_name["softmax"].part == "part 1 (udl_attention_12_1.ipynb)"
    away = by_name["multihead_scaled_self_attention"]
    assert (away.part, away.handed_in) == ("part 2 (udl_attention_12_2.ipynb)", False)
    assert {c.message for c in away.checks if c.visibility is Visibility.PUBLIC} == {
        "part 2 not handed in (udl_attention_12_2.ipynb)"}
    assert all(e.handed_in and e.status is CheckStatus.PASSED for e in first.exercises
               if e.part.startswith("part 1"))
    heading = ("This file is part 1 (udl_attention_12_1.ipynb) of 2; part 2 "
               "(udl_attention_12_2.ipynb) not handed in, so its exercises are not graded "
               "here. Hand in both notebooks.")
    page = html.render(first)
    assert f'<p class="caution" id="parts">{heading}</p>' in page
    assert 'id="ex-multihead_scaled_self_attention"' not in page
    assert "<td class=\"missing\">not handed in</td>" in page
    text = markdown.render(first)
    assert f"**{render.md_escape(heading)}**" in text and "**Score: 5 / 10**" in text
    assert "| part 2 (udl\\_attention\\_12\\_2.ipynb) | ❓ not handed in | – | – |" in text
    said = terminal.render(first)
    assert f"  {heading}\n" in said
    assert "multihead_scaled_self_attention" not in said

    second = grading.grade(make_submission(part_2, name="alice_part2"), UDL,
                           FAST.__class__(**{**FAST.__dict__, "public_only": True}))
    by_name = {e.name: e for e in second.exercises}
    assert by_name["multihead_scaled_self_attention"].status is CheckStatus.PASSED
    # The given softmax_cols is in both notebooks: it belongs to part 1, and says nothing.
    assert [e.name for e in second.exercises if not e.handed_in] == [
        "softmax", "softmax_cols", "self_attention", "scaled_dot_product_self_attention"]
    assert "This file is part 2 (udl_attention_12_2.ipynb) of 2; part 1" in html.render(second)


def test_a_blank_file_fails_every_part_as_before(make_submission):
    blank = grading.grade(make_submission("import numpy as np\n", name="blank"), UDL, FAST)
    assert all(e.handed_in and e.status is CheckStatus.MISSING for e in blank.exercises)


def test_grade_check_on_a_finished_part_passes(make_submission):
    import io

    from grader.cli import app

    part_1, _ = _solution_parts()
    out = io.StringIO()
    code = app.run(["check", str(make_submission(part_1, name="alice_part1")), "--assignment",
                    "udl_attention"], out, io.StringIO())
    assert code == 0, out.getvalue()
    assert "alice_part1.py · udl_attention: 8 / 8 public checks pass" in out.getvalue()
    assert "part 2 (udl_attention_12_2.ipynb) not handed in" in out.getvalue()
