"""Reports are pure functions of a Result: HTML, Markdown, terminal, and their heatmaps."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest

from grader import text
from grader.model import (
    ArrayView,
    CellResult,
    CheckResult,
    Diagnosis,
    ExerciseResult,
    Result,
    Status,
    Visibility,
)
from grader.report import heatmap, html, markdown, render, terminal

VIEW = ArrayView(expected=np.array([[0.5, 0.5], [0.25, 0.75]]),
                 obtained=np.array([[0.5, 0.5], [0.75, 0.25]]),
                 mismatched=np.array([[False, False], [True, True]]), label="weights")
DIAGNOSIS = Diagnosis("transposed-weights", "The attention matrix is applied transposed.")


def result(**changes) -> Result:
    public = CheckResult("seed-001", Visibility.PUBLIC, False, 0.0, 1.5, Status.FAILED,
                         "values differ <b>bold</b>\nMismatched elements: 2 / 4", DIAGNOSIS,
                         (VIEW,), note="the example of seed 001")
    hidden = CheckResult("large | scores", Visibility.HIDDEN, False, 0.0, 1.5, Status.FAILED,
                         "values differ\nMismatched elements: 9 / 9", DIAGNOSIS)
    passed = CheckResult("random", Visibility.HIDDEN, True, 1.5, 1.5, Status.PASSED)
    exercise = ExerciseResult("scaled_dot_product_attention", Status.FAILED, 1.5, 4.5,
                              (public, hidden, passed))
    fields = dict(assignment="attention_basics", submission="alice<script>.ipynb",
                  status=Status.GRADED, score=1.5, max_score=4.5, duration_s=0.25,
                  cells=(CellResult(3, Status.ERROR, "line 2: NameError: name 'x' is not "
                                                     "defined"),),
                  exercises=(exercise,), isolation="a separate process", output="hello\n")
    fields.update(changes)
    return Result(**fields)


class Outline(HTMLParser):
    """Collects headings, images with their text alternatives, and scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.headings: list[str] = []
        self.svgs: list[dict] = []
        self.scripts = 0
        self.external: list[str] = []
        self._in_heading = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if re.fullmatch(r"h[1-6]", tag):
            self._in_heading = True
            self.headings.append(tag)
        if tag == "svg" and attrs.get("role") == "img":
            self.svgs.append(attrs)
        if tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            if attrs.get(key, "").startswith(("http:", "https:", "//")):
                self.external.append(attrs[key])


def test_html_is_self_contained_accessible_and_escaped():
    page = html.render(result())
    outline = Outline()
    outline.feed(page)
    assert page.startswith("<!DOCTYPE html>\n<html lang=\"en\">")
    assert outline.headings[0] == "h1" and "h2" in outline.headings
    assert outline.scripts == 0 and outline.external == []
    assert len(outline.svgs) == 2  # expected and obtained, for the public check only
    assert all(svg["aria-labelledby"] for svg in outline.svgs)
    assert '<p class="score" id="score">Score: 1.5 / 4.5</p>' in page
    assert 'data-diagnosis="transposed-weights"' in page
    assert "alice&lt;script&gt;.ipynb" in page and "<script>" not in page
    assert "values differ &lt;b&gt;bold&lt;/b&gt;" in page
    assert "2 cell(s) differ from the reference: (1, 0), (1, 1)." in page
    assert page.count('class="mismatch"') == 2
    assert "Cells that did not simply run" in page and "NameError" in page


def test_hidden_checks_show_result_and_diagnosis_but_no_values():
    page = html.render(result())
    hidden_part = page.split("large | scores", 1)[1].split("</article>", 1)[0]
    assert "Likely mistake (transposed-weights)" in hidden_part
    assert "<svg" not in hidden_part


def test_an_ungradable_submission_says_why():
    page = html.render(result(status=Status.ERROR, error="alice.ipynb: is empty; re-save it",
                              exercises=(), cells=()))
    assert "Could not be graded" in page and "alice.ipynb: is empty; re-save it" in page


def test_markdown_has_the_same_content_and_escapes_untrusted_text():
    text = markdown.render(result())
    assert "**Score: 1.5 / 4.5**" in text
    assert "| scaled\\_dot\\_product\\_attention | ❌ failed | 1 / 3 | 1.5 / 4.5 |" in text
    assert "**Likely mistake (transposed\\-weights):**" not in text  # ids are not escaped twice
    assert "**Likely mistake (transposed-weights):** The attention matrix is applied" in text
    assert "**large \\| scores** (hidden)" in text
    assert "alice\\<script\\>.ipynb" in text
    assert "| 3 | error | line 2: NameError: name 'x' is not defined |" in text


def test_markdown_fences_outlast_backticks_in_messages():
    sneaky = CheckResult("c", Visibility.PUBLIC, False, 0, 1, Status.FAILED, "```\n# injected")
    exercise = ExerciseResult("f", Status.FAILED, 0, 1, (sneaky,))
    text = markdown.render(result(exercises=(exercise,)))
    assert "  ````text\n  ```\n  # injected\n  ````" in text


def test_markdown_escaping_keeps_text_on_one_line():
    assert render.md_escape("a\rb\r\nc\u2028d\x0be\x1b[1m\n# f|g") == "a b c d e\\[1m \\# f\\|g"


def test_reports_clean_every_string_of_a_result_and_keep_the_rest():
    dirty = result(submission="a\x1b[31m\ud800.ipynb", output="\x07ok\r")
    cleaned = text.clean_fields(dirty)
    assert (cleaned.submission, cleaned.output) == ("a[31m\ufffd.ipynb", "ok\n")
    assert cleaned.status is Status.GRADED and cleaned.exercises[0].status is Status.FAILED
    assert cleaned.exercises == dirty.exercises and cleaned.cells == dirty.cells
    assert cleaned.exercises[0].checks[0].views[0].expected is VIEW.expected


def test_terminal_summary_without_and_with_colour():
    plain = terminal.render(result())
    assert plain.startswith("alice<script>.ipynb · attention_basics: 1.5 / 4.5 in 0.25 s\n")
    assert "\x1b[" not in plain
    assert "seed-001 (public): [transposed-weights] The attention matrix is applied" in plain
    coloured = terminal.render(result(), color=True)
    assert "\x1b[" in coloured


@pytest.mark.parametrize("value, ink", [(1.0, "#ffffff"), (0.0, "#000000"), (-1.0, "#ffffff")])
def test_heatmap_text_keeps_contrast(value, ink):
    drawn = heatmap.heatmap(np.array([[value]]), np.array([[False]]), "x", 1.0)
    assert drawn.cells[0].ink == ink


def test_heatmap_pair_shares_one_scale_and_marks_only_the_obtained():
    expected, obtained = heatmap.pair(VIEW)
    assert [c.mismatched for c in expected.cells] == [False] * 4
    assert [c.mismatched for c in obtained.cells] == [False, False, True, True]
    # equal values get equal colours in both maps
    assert expected.cells[0].fill == obtained.cells[0].fill
    assert obtained.title == "your weights"
    assert "NaN" in heatmap.heatmap(np.array([[np.nan]]), np.array([[True]]), "t", 1).cells[0].text
