"""check()'s compact view: one line when it passes; the verdict, the mistake and the first
differences when it fails, the full report in a <details>; a student's text never markup."""

from __future__ import annotations

import numpy as np

from grader import selfcheck
from grader.report import compact


def softmax(items_in):
    e = np.exp(items_in - items_in.max())
    return e / e.sum()


def softmax_rows(data_in):  # normalises rows: the wrong axis
    e = np.exp(data_in - data_in.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def hostile(items_in):
    raise ValueError("<script>alert(1)</script>\x1b[31m")


def test_a_passing_check_is_one_line_without_the_report():
    result = selfcheck.run("softmax", softmax)
    assert compact.terminal(result) == ("✓ softmax: all 2 public checks pass; hidden cases "
                                        "give the points.\n")
    page = compact.fragment(result, "<p>the full report</p>")
    assert "<details>" not in page and "the full report" not in page
    assert 'style="color: #1a7f37"' in page


def test_a_failing_check_shows_the_mistake_and_the_first_differences():
    result = selfcheck.run("softmax_cols", softmax_rows)
    lines = compact.lines(result)
    assert lines[:3] == ["✗ softmax_cols: given (not scored): 0 of 2 public checks pass.",
                         "  matrix:",
                         "  [softmax-wrong-axis] The softmax normalises each row: normalise "
                         "each column instead, with axis=0 in the max and the sum."]
    assert lines[3] == "    values differ from the expected ones."
    assert len(lines) == 3 + compact.DIFFERENCES + 1 and lines[-1] == "    …"
    page = compact.fragment(result, "<p>REPORT</p>")
    assert page.endswith('<details><summary style="cursor: pointer">The full report</summary>'
                         "<p>REPORT</p></details></div>")


def test_a_students_text_is_shown_as_characters():
    result = selfcheck.run("softmax", hostile)
    page = compact.fragment(result, "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[31m" in page
    assert "<script>" not in page and "\x1b" not in page and "<details>" not in page
    assert "\x1b" not in compact.terminal(result)
