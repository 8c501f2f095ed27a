"""Reports are pure functions of a Result: HTML, Markdown, terminal, and their heatmaps."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from html.parser import HTMLParser

import numpy as np
import pytest

from grader import result_json, text
from grader.model import PRACTICE, Visibility
from grader.report import heatmap, html, markdown, render, terminal
from grader.results import (
    ArrayView,
    CellResult,
    CellStatus,
    CheckResult,
    CheckStatus,
    Diagnosis,
    ExerciseResult,
    Result,
    ResultStatus,
)

VIEW = ArrayView(expected=np.array([[0.5, 0.5], [0.25, 0.75]]),
                 obtained=np.array([[0.5, 0.5], [0.75, 0.25]]),
                 mismatched=np.array([[False, False], [True, True]]), label="weights")
DIAGNOSIS = Diagnosis("transposed-weights", "The attention matrix is applied transposed.")
UNSCALED = Diagnosis("missing-scale", "The scores are not divided by sqrt(d_k).")


def result(**changes) -> Result:
    public = CheckResult("notebook-example", Visibility.PUBLIC, False, 0.0, 1.5, CheckStatus.FAILED,
                         "values differ <b>bold</b>\nMismatched elements: 2 / 4", DIAGNOSIS,
                         (VIEW,), note="the example in the notebook")
    hidden = CheckResult("large | scores", Visibility.HIDDEN, False, 0.0, 1.5, CheckStatus.FAILED,
                         "values differ\nMismatched elements: 9 / 9", UNSCALED)
    passed = CheckResult("random", Visibility.HIDDEN, True, 1.5, 1.5, CheckStatus.PASSED)
    exercise = ExerciseResult("scaled_dot_product_attention", CheckStatus.FAILED, 1.5, 4.5,
                              (public, hidden, passed))
    fields = dict(assignment="attention_basics", submission="alice<script>.ipynb",
                  status=ResultStatus.GRADED, score=1.5, max_score=4.5, duration_s=0.25,
                  cells=(CellResult(3, CellStatus.ERROR, "line 2: NameError: name 'x' is not "
                                                     "defined", number=2, execution_count=7),),
                  exercises=(exercise,), isolation="a separate process", output="hello\n")
    fields.update(changes)
    return Result(**fields)


def public_only(**changes) -> Result:
    """`result()` with its public check alone: no hidden case ran."""
    graded = result(**changes)
    exercise = graded.exercises[0]
    return replace(graded, exercises=(replace(exercise, checks=exercise.checks[:1]),))


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
    assert "<strong>Likely mistake:</strong> The scores are not divided by sqrt(d_k)." in \
        hidden_part
    assert 'data-diagnosis="missing-scale"' in hidden_part
    assert "<svg" not in hidden_part


def test_an_ungradable_submission_says_why():
    page = html.render(result(status=ResultStatus.ERROR, error="alice.ipynb: is empty; re-save it",
                              exercises=(), cells=()))
    assert "Could not be graded" in page and "alice.ipynb: is empty; re-save it" in page


def test_markdown_has_the_same_content_and_escapes_untrusted_text():
    text = markdown.render(result())
    assert "**Score: 1.5 / 4.5**" in text
    assert "| scaled\\_dot\\_product\\_attention | ❌ failed | 1 / 3 | 1.5 / 4.5 |" in text
    assert "transposed-weights" not in text and "transposed\\-weights" not in text  # ids: JSON
    assert "> **Likely mistake:** The attention matrix is applied" in text
    assert "**large \\| scores** (hidden)" in text
    assert "alice\\<script\\>.ipynb" in text
    assert "| code cell 2 (In \\[7\\]) | error | line 2: NameError: name 'x' is not defined |" \
        in text


def test_markdown_fences_outlast_backticks_in_messages():
    sneaky = CheckResult("c", Visibility.PUBLIC, False, 0, 1, CheckStatus.FAILED, "```\n# injected")
    exercise = ExerciseResult("f", CheckStatus.FAILED, 0, 1, (sneaky,))
    text = markdown.render(result(exercises=(exercise,)))
    assert "  ````text\n  ```\n  # injected\n  ````" in text


def test_markdown_escaping_keeps_text_on_one_line():
    assert render.md_escape("a\rb\r\nc\u2028d\x0be\x1b[1m\n# f|g") == "a b c d e\\[1m \\# f\\|g"


def test_array_views_are_equal_by_their_cells():
    copy = ArrayView(VIEW.expected.copy(), VIEW.obtained.copy(), VIEW.mismatched.copy(),
                     label=VIEW.label)
    assert copy == VIEW and VIEW == VIEW
    assert replace(VIEW, obtained=VIEW.expected) != VIEW
    assert replace(VIEW, expected=VIEW.expected[:1]) != VIEW
    assert replace(VIEW, label="output") != VIEW
    nan = replace(VIEW, obtained=np.full((2, 2), np.nan))
    assert nan == replace(nan, obtained=np.full((2, 2), np.nan))


def test_reports_clean_every_string_of_a_result_and_keep_the_rest():
    dirty = result(submission="a\x1b[31m\ud800.ipynb", output="\x07ok\r")
    cleaned = text.clean_fields(dirty)
    assert (cleaned.submission, cleaned.output) == ("a[31m\ufffd.ipynb", "ok\n")
    assert cleaned.status is ResultStatus.GRADED
    assert cleaned.exercises[0].status is CheckStatus.FAILED
    assert cleaned.exercises == dirty.exercises and cleaned.cells == dirty.cells
    assert cleaned.exercises[0].checks[0].views[0].expected is VIEW.expected


def test_terminal_summary_without_and_with_colour():
    plain = terminal.render(result())
    # Hidden cases ran: how long grading took is the submission's to choose, and not said.
    assert plain.startswith("alice<script>.ipynb · attention_basics: 1.5 / 4.5\n")
    assert terminal.render(public_only()).startswith(
        "alice<script>.ipynb · attention_basics: 1.5 / 4.5 in 0.25 s\n")
    assert "\x1b[" not in plain
    assert ("notebook-example (public example, no points): [transposed-weights] The attention "
            "matrix is applied") in plain
    coloured = terminal.render(result(), color=True)
    assert "\x1b[" in coloured


TRICKY = ("[bold]not bold[/] [red]x[/red] \\[y] :smile: \t tab \u2603 \u5bbd\u5b57 "
          "trailing  ")


@pytest.mark.parametrize("graded", [
    result(), public_only(), result(show_hidden_after="2030-01-01", hidden_shown=True),
    result(submission=TRICKY, cells=(CellResult(1, CellStatus.CRASHED, TRICKY, file=TRICKY),)),
    result(exercises=(ExerciseResult("softmax", CheckStatus.MISSING, 0.0, 1.0, (CheckResult(
        "x", Visibility.PUBLIC, False, 0.0, 1.0, CheckStatus.MISSING, TRICKY),), file=TRICKY),)),
    result(exercises=(replace(result().exercises[0], provided=True, checks=tuple(
        replace(c, message=f"{TRICKY}\n{TRICKY}", caution=TRICKY)
        for c in result().exercises[0].checks)),)),
    Result("attention_basics", TRICKY, ResultStatus.ERROR, 0.0, 4.5, 0.1, error=TRICKY),
], ids=["graded", "public", "hidden-shown", "tricky-cell", "missing", "unscored", "error"])
def test_the_plain_summary_is_what_rich_prints_without_colour(graded):
    for verbose in (False, True):
        summary = terminal.lines(graded, verbose)
        assert terminal.plain(summary) == terminal.coloured(summary, color=False)
        assert terminal.render(graded, verbose=verbose) == terminal.plain(summary)
    # Markup and emoji codes in a result are printed as the characters they are.
    shown = "[bold]not bold[/] [red]x[/red] \\[y] :smile:"
    assert (shown in terminal.render(graded)) == (shown in repr(graded).replace("\\\\", "\\"))


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


# --------------------------------------------------------------------------- words (#10)

def _missing_exercise() -> ExerciseResult:
    message = ("no function named multihead_scaled_self_attention is defined (it belongs in "
               "udl_attention_12_2.ipynb)")
    checks = tuple(CheckResult(name, Visibility.PUBLIC if name == "notebook-example"
                               else Visibility.HIDDEN, False, 0.0, 1.25, CheckStatus.MISSING,
                               message)
                   for name in ("notebook-example", "small", "wide", "eight-heads"))
    return ExerciseResult("multihead_scaled_self_attention", CheckStatus.MISSING, 0.0, 5.0, checks)


def test_a_missing_function_is_reported_once_in_every_report():
    missing = result(exercises=(_missing_exercise(),), score=0.0, max_score=5.0)
    said = "no function named multihead_scaled_self_attention is defined"
    for page in (html.render(missing), markdown.render(missing),
                 terminal.render(missing, verbose=True)):
        page = page.replace("\\_", "_")  # Markdown escapes underscores
        assert page.count(said) == 1, page
        assert "(it belongs in udl_attention_12_2.ipynb)" in page
    assert "<p class=\"missing\">Not found: no function named" in html.render(missing)


def test_a_note_is_shown_only_when_it_explains_the_failure():
    note = "values in the thousands"
    alike = CheckResult("large", Visibility.HIDDEN, False, 0.0, 1.0, CheckStatus.FAILED,
                        "values differ", note=note)
    other = CheckResult("small", Visibility.PUBLIC, False, 0.0, 1.0, CheckStatus.FAILED,
                        "values differ")
    everything_fails = ExerciseResult("softmax", CheckStatus.FAILED, 0.0, 2.0, (other, alike))
    assert not everything_fails.explains(alike)
    page = html.render(result(exercises=(everything_fails,)))
    assert note not in page and note not in markdown.render(result(exercises=(everything_fails,)))
    # Only the large case fails: its note says what sets it apart.
    passing = CheckResult("small", Visibility.PUBLIC, True, 1.0, 1.0, CheckStatus.PASSED)
    only_large = ExerciseResult("softmax", CheckStatus.FAILED, 1.0, 2.0, (passing, alike))
    assert only_large.explains(alike)
    assert note in html.render(result(exercises=(only_large,)))
    assert f"**large** (hidden): {note}" in markdown.render(result(exercises=(only_large,)))
    # A check worth no points always says why, passed or not.
    advice = CheckResult("one-token", Visibility.HIDDEN, True, 0.0, 0.0, CheckStatus.PASSED,
                         note="worth no points: one token")
    assert ExerciseResult("softmax", CheckStatus.PASSED, 1.0, 1.0,
                          (passing, advice)).explains(advice)


def test_titles_name_the_file_not_the_grading_machines_folders():
    graded = result(submission="/srv/grading/2026/alice/12_1_Self_Attention.ipynb")
    for page in (html.render(graded), markdown.render(graded)):
        assert "/srv/grading" not in page
        assert "12_1_Self_Attention.ipynb" in page.replace("\\_", "_")
    assert "<h1>Feedback for 12_1_Self_Attention.ipynb</h1>" in html.render(graded)


def test_the_footer_is_in_plain_words():
    confined = result(isolation="a separate process; its own PID, network and IPC namespaces "
                                "(no network; ...)", duration_s=1.234)
    footer = html.render(confined).split("<footer>")[1]
    assert re.search(r"Graded by attention-grader [\w.+-]+\.\n", footer)
    assert "seconds" not in footer  # hidden cases ran: their time is not said
    timed = html.render(public_only(duration_s=1.234)).split("<footer>")[1]
    assert re.search(r"Graded by attention-grader [\w.+-]+ in 1\.2 seconds\.\n", timed)
    assert "Hidden cases use inputs you do not see" in footer
    assert "cut off from the network and from the grader's files" in footer
    assert "namespace" not in footer
    # Without that isolation the footer does not claim it; a self-check says what it is.
    plain = markdown.render(result(isolation="a separate process", public_only=True))
    assert "cut off from the network" not in plain
    assert "This is a self-check on the public cases" in plain


def test_failures_that_look_alike_are_said_once():
    stub = Diagnosis("unattempted", "Not written yet: it returns zeros, as the notebook's stub "
                                    "does. Replace the stub's body with your own code.")
    checks = tuple(CheckResult(name, visibility, False, 0.0, 1.0, CheckStatus.FAILED,
                               "values differ", stub)
                   for name, visibility in (("small", Visibility.HIDDEN),
                                            ("notebook-example", Visibility.PUBLIC),
                                            ("wide", Visibility.HIDDEN)))
    exercise = ExerciseResult("self_attention", CheckStatus.FAILED, 0.0, 3.0, checks)
    (failure,) = render.failures(exercise)
    assert failure.check.name == "notebook-example"  # the public one leads
    assert [c.name for c in failure.also] == ["small", "wide"]
    assert failure.label == ""  # not written yet is no "likely mistake"
    page = html.render(result(exercises=(exercise,)))
    assert page.count('class="diagnosis"') == 1 and "Likely mistake" not in page
    assert "Fails the same way: small (hidden), wide (hidden)." in page
    assert "Fails the same way: small (hidden), wide (hidden)." in \
        markdown.render(result(exercises=(exercise,)))


def test_heatmaps_are_readable_and_say_what_rows_and_columns_are():
    view = ArrayView(np.array([[0.019, -0.29], [1234.0, 0.5]]), np.zeros((2, 2)),
                     np.ones((2, 2), dtype=bool), "weights", "query", "key")
    expected, obtained = heatmap.pair(view)
    assert [cell.text for cell in expected.cells] == ["0.02", "-0.29", "1e3", "0.50"]
    assert all(len(cell.text) <= 5 for cell in expected.cells)
    assert expected.axes == "rows are queries, columns are keys"
    assert sorted(h.text for h in expected.headers) == ["0", "0", "1", "1"]
    assert expected.cell >= 40 and expected.font >= 11
    assert expected.width == heatmap.ROW_HEADER + 2 * expected.cell
    # Every value differs: no outline on every cell, which would hide the colours; said.
    assert not obtained.outline and not any(cell.mismatched for cell in obtained.cells)
    assert obtained.marks == "every value differs from the expected one"
    assert obtained.cells[0].label == "query 0, key 0: 0"
    # The expected map marks nothing, and its words never say that no cell differs.
    assert not expected.outline and expected.marks == ""
    assert expected.description.endswith(
        "4 cell(s) of yours differ from it: (0, 0), (0, 1), (1, 0), (1, 1).")
    assert "No cell differs" not in expected.description
    page = html.render(result(exercises=(ExerciseResult(
        "scaled_dot_product_attention", CheckStatus.FAILED, 0.0, 1.0,
        (CheckResult("notebook-example", Visibility.PUBLIC, False, 0.0, 1.0, CheckStatus.FAILED,
                     "values differ", views=(view,)),)),)))
    assert "Expected weights; rows are queries, columns are keys" in page
    assert "Your weights; every value differs from the expected one" in page


def _page_of(views: tuple[ArrayView, ...]) -> str:
    return html.render(result(exercises=(ExerciseResult(
        "dot_product_attention", CheckStatus.FAILED, 0.0, 1.0,
        (CheckResult("notebook-example", Visibility.PUBLIC, False, 0.0, 1.0, CheckStatus.FAILED,
                     "values differ", views=views),)),)))


def test_a_3d_output_is_drawn_as_its_labelled_slices():
    # (batch, query, key) weights, D2L's shape (#24): 8 slices, 4 of which differ
    from grader.pipeline import compare

    expected = np.random.default_rng(0).random((8, 3, 4))
    obtained = expected.copy()
    obtained[[1, 5, 6, 7], 0, 1] += 1
    comparison = compare.compare(obtained, (expected,), ("weights",), 1e-6, 1e-8, True,
                                 axes={"weights": ("query", "key")})
    assert [(v.index, v.slices, v.expected.shape) for v in comparison.views] == [
        ("[1, :, :]", 8, (3, 4)), ("[5, :, :]", 8, (3, 4)), ("[6, :, :]", 8, (3, 4))]
    page = _page_of(comparison.views)
    for index in ("[1, :, :]", "[5, :, :]", "[6, :, :]"):
        assert f"Expected weights {index}; rows are queries, columns are keys" in page
        assert f"Your weights {index}; outlined cells with a corner mark differ" in page
    assert "[0, :, :]" not in page and "[7, :, :]" not in page
    assert page.count("<svg") == 6
    assert ("weights has 8 slices of 3 × 4 (query by key): showing 3 of 8 slices, the first "
            "that differ.") in page
    # Hidden cases draw nothing, whatever their dimensions.
    assert compare.compare(obtained, (expected,), ("weights",), 1e-6, 1e-8, False).views == ()


def test_a_4d_output_names_each_slice_by_its_leading_indices():
    from grader.pipeline import compare

    expected = np.zeros((2, 2, 3, 3))
    obtained = expected + np.eye(3)[None, None] * np.array([0, 1])[None, :, None, None]
    comparison = compare.compare(obtained, (expected,), ("weights",), 1e-6, 1e-8, True)
    assert [v.index for v in comparison.views] == ["[0, 1, :, :]", "[1, 1, :, :]"]
    page = _page_of(comparison.views)
    assert "Expected weights [0, 1, :, :]" in page and "Your weights [1, 1, :, :]" in page
    assert "weights has 4 slices of 3 × 3 (row by column): showing 2 of 4 slices" in page
    # A 2-D output stays one heatmap, with no slice label nor note.
    flat = compare.compare(np.ones((2, 2)), (np.zeros((2, 2)),), ("weights",), 1e-6, 1e-8,
                           True)
    assert [(v.index, v.slices) for v in flat.views] == [("", 1)]
    assert "slices" not in _page_of(flat.views)


def test_slices_too_wide_to_draw_are_left_out():
    from grader.pipeline import compare

    wide = np.zeros((2, 3, compare.MAX_VIEW_SIDE + 1))
    assert compare.compare(wide + 1, (wide,), ("weights",), 1e-6, 1e-8, True).views == ()


def test_cells_are_located_as_jupyter_shows_them(make_submission):
    from grader.course import registry
    from grader.pipeline import grading

    path = make_submission(["import numpy as np", "x = 1", "raise ValueError('late')"])
    notebook = json.loads(path.read_text())
    notebook["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": "# Title"})
    notebook["cells"][3]["execution_count"] = 5  # it ran as In [5] before it was saved
    path.write_text(json.dumps(notebook))
    result = grading.grade(path, registry.get("attention_basics"))
    (cell,) = result.problem_cells
    # The fourth cell of the notebook, the third code cell, In [5] in Jupyter.
    assert (cell.index, cell.number, cell.execution_count) == (4, 3, 5)
    assert cell.where == "code cell 3 (In [5])"
    assert "  code cell 3 (In [5]): error: line 1: ValueError: late" in terminal.render(result)
    assert "<th scope=\"row\">code cell 3 (In [5])</th>" in html.render(result)
    document = json.loads(result_json.render(result))
    assert document["cells"][2] == {"index": 4, "status": "error", "number": 3,
                                    "execution_count": 5, "where": "code cell 3 (In [5])",
                                    "file": "", "message": "line 1: ValueError: late"}
    assert CellResult(1, CellStatus.ERROR, "x").where == "the module"
    assert CellResult(0, CellStatus.ERROR, "x").where == "the file"


def advised(provided: bool = False) -> Result:
    """A passing exercise whose hidden huge-inputs case, worth no points, overflows."""
    stable = Diagnosis("unstable-softmax", "The softmax overflows for large inputs.")
    passed = CheckResult("vector", Visibility.PUBLIC, True, 0.0, 0.0, CheckStatus.PASSED)
    large = CheckResult("large-values", Visibility.HIDDEN, False, 0.0, 0.0, CheckStatus.FAILED,
                        "returned NaN", stable, note="advice, worth no points")
    exercise = ExerciseResult("softmax", CheckStatus.PASSED, 1.0, 1.0, (passed, large),
                              provided=provided)
    return result(exercises=(exercise,), score=1.0, max_score=1.0, cells=())


@pytest.mark.parametrize("provided", [False, True])
def test_advice_is_drawn_as_a_tip_in_every_format(provided):
    graded = advised(provided)
    exercise = graded.exercises[0]
    (failure,) = render.failures(exercise)
    assert failure.tip and failure.label == "Tip:"
    page = html.render(graded)
    assert 'class="check tip"' in page and 'class="check failed-check"' not in page
    assert 'class="diagnosis tip"' in page and "Likely mistake" not in page
    assert "<strong>Tip:</strong> The softmax overflows" in page
    assert '<span class="tip-status">a tip, worth no points</span>' in page
    if not provided:  # a passing exercise reads as passed at a glance
        assert '<span class="passed">✓ passed</span>' in page
    text = markdown.render(graded)
    assert "- 💡 **large-values** (hidden, no points), a tip" in text
    assert "> **Tip:** The softmax overflows" in text and "❌" not in text.split("###", 1)[1]
    said = terminal.render(graded)
    assert "large-values (hidden, no points): Tip: [unstable-softmax]" in said


def test_a_failure_worth_points_is_still_a_likely_mistake():
    graded = result()
    failures = render.failures(graded.exercises[0])
    assert [f.tip for f in failures] == [False, False]
    page = html.render(graded)
    assert 'class="check failed-check"' in page and 'class="check tip"' not in page
    assert page.count("<strong>Likely mistake:</strong>") == 2


def test_a_tab_without_rich_is_expanded_as_rich_expands_ascii(monkeypatch):
    """Where Rich is missing (a released file's own self-check, numpy alone), a tab in the
    summary is still printed, at the next multiple of eight, as Rich puts it for ASCII text."""
    graded = result(submission="a\tb.ipynb")
    summary = terminal.lines(graded)
    with_rich = terminal.plain(summary)
    monkeypatch.setitem(sys.modules, "rich.console", None)  # import fails: no Rich
    monkeypatch.setitem(sys.modules, "rich.text", None)
    without = terminal.plain(summary)
    assert "\t" not in without and without.startswith("a       b.ipynb · attention_basics")
    assert without == with_rich


def test_the_practice_case_is_labelled_public_and_the_example_public_example():
    """The practice case is public and worth no points, like the notebook's example, but the
    notebook shows no such example: every format labels it "public, no points", the example
    "public example, no points"."""
    example = CheckResult("notebook-example", Visibility.PUBLIC, False, 0.0, 0.0,
                          CheckStatus.FAILED, "values differ", DIAGNOSIS)
    practice = CheckResult(PRACTICE, Visibility.PUBLIC, False, 0.0, 0.0, CheckStatus.FAILED,
                           "values differ", UNSCALED)
    hidden = CheckResult("random", Visibility.HIDDEN, True, 1.5, 1.5, CheckStatus.PASSED)
    assert (example.worth, practice.worth) == ("public example, no points", "public, no points")
    exercise = ExerciseResult("scaled_dot_product_attention", CheckStatus.FAILED, 1.5, 1.5,
                              (example, practice, hidden))
    graded = result(exercises=(exercise,), score=1.5, max_score=1.5, cells=())
    said = terminal.render(graded)
    assert "      notebook-example (public example, no points): [transposed-weights]" in said
    assert "      practice (public, no points): [missing-scale]" in said
    text = markdown.render(graded)
    assert "**notebook-example** (public example, no points)" in text
    assert "**practice** (public, no points)" in text
    page = html.render(graded)
    assert '<h3>practice <span class="note">(public, no points)</span>:' in page
    assert '<h3>notebook-example <span class="note">(public example, no points)</span>:' in page
    assert "practice (public example" not in said + text + page
