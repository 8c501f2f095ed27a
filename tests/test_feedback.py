"""Feedback beside the student's code (`grader.report.feedback`, `grade run --feedback`,
`grade batch --feedback`): the student's notebook with a feedback cell after each exercise's
defining cell, as a valid notebook and as a page with no script and no network."""

from __future__ import annotations

import copy
import io
import json
import re
from dataclasses import replace

import nbformat
import pytest

from grader import cli
from grader.batch import batch
from grader.course import registry
from grader.model import Visibility
from grader.pipeline import definitions, grading, loading, notebooks
from grader.pipeline.grading import Options
from grader.report import feedback, markdown
from grader.results import CheckResult, CheckStatus
from tests.conftest import ROOT

ALICE = ROOT / "examples" / "alice.ipynb"
UDL = registry.get("udl_attention")


def invoke(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def alice():
    result = grading.grade(ALICE, UDL)
    notebook = notebooks.read(str(ALICE), ALICE.read_text(encoding="utf-8"))
    defined = definitions.defining_cells(loading.load(ALICE), UDL_NAMES)
    return result, notebook, defined


UDL_NAMES = [exercise.name for exercise in UDL.exercises]


def ours(cell: dict) -> bool:
    return feedback.KEY in cell.get("metadata", {})


def source(cell: dict) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def test_defining_cells_are_the_last_top_level_definitions(make_submission):
    path = make_submission(["import numpy as np", "def softmax(x):\n    return x",
                            "%matplotlib inline\ndef softmax(x):\n    return np.exp(x)",
                            "if True:\n    def self_attention(X): pass",
                            "softmax_cols = lambda x: x"])
    found = definitions.defining_cells(loading.load(path),
                                       ["softmax", "softmax_cols", "self_attention"])
    assert found == {"softmax": 3, "softmax_cols": 5}  # `if` bodies are not top level


def test_a_feedback_cell_follows_each_exercise_and_each_failing_cell(alice):
    result, notebook, defined = alice
    annotated = feedback.annotate(result, notebook, defined)
    nbformat.validate(nbformat.from_dict(copy.deepcopy(annotated)))
    cells = annotated["cells"]
    students = [cell for cell in cells if not ours(cell)]
    assert students == notebook["cells"]  # outputs kept as handed in
    assert ours(cells[0]) and source(cells[0]).startswith(
        "## Feedback: alice.ipynb (udl\\_attention)\n\n**Score: 4 / 10.**")
    for name, position in defined.items():
        student_cell = notebook["cells"][position - 1]
        at = next(i for i, cell in enumerate(cells) if cell is student_cell or cell == student_cell)
        after = cells[at + 1]
        assert ours(after) and name in after["metadata"][feedback.KEY]["exercises"]
        assert f"def {name}(" in source(student_cell)
    multihead = next(c for c in cells if ours(c)
                     and c["metadata"][feedback.KEY]["exercises"] == [
                         "multihead_scaled_self_attention"])
    text = source(multihead)
    assert text.startswith('### multihead\\_scaled\\_self\\_attention: <span class="grader-'
                           'verdict grader-failed">✗ failed</span>, 0 / 5 points')
    # The report's heatmaps, attached as SVG: Jupyter and the page draw them alike.
    assert re.search(r"!\[expected output: a 8 by 6 matrix[^]]*\]\(attachment:heatmap-\d+\.svg\)",
                     text)
    assert "**Likely mistake:** Each head's attention matrix is applied transposed" in text
    assert "Mismatched elements: 48 / 48" in text
    assert ("Fails the same way: practice (public, no points), small (hidden), "
            "wide (hidden).") in text
    assert multihead["metadata"][feedback.KEY]["feedback"] == "failed"
    (error,) = result.problem_cells
    after_error = cells[cells.index(notebook["cells"][error.index - 1]) + 1]
    assert ours(after_error) and source(after_error).startswith(
        "**This cell did not simply run:** error. line 5: TypeError: only 0-dimensional")
    assert len([c for c in cells if ours(c)]) == 1 + len(defined) + 1


def test_feedback_shows_no_number_the_markdown_report_does_not(alice):
    """Hidden checks under the reports' rules: the feedback cells hold no number that the
    Markdown report (which `disclosure` and `render.failures` govern) does not show."""
    result, notebook, defined = alice
    hidden = CheckResult("secret", Visibility.HIDDEN, False, 0.0, 1.0, CheckStatus.FAILED,
                         "values differ from the expected ones (hidden case: details are not "
                         "shown)", detail="Max absolute difference: 987.654321")
    exercises = tuple(replace(e, checks=(*e.checks, hidden)) if e.name == "softmax" else e
                      for e in result.exercises)
    result = replace(result, exercises=exercises)
    text = "\n".join(source(c) for c in feedback.annotate(result, notebook, defined)["cells"]
                     if ours(c))
    assert "secret" in text and "987.654321" not in text
    # A public case's heatmap says its range in its text description, as the HTML report's
    # does; the Markdown report has no heatmaps, so the numbers are compared without them.
    shown = re.sub(r"!\[[^]]*\]\(attachment:[^)]*\)", "", text)
    numbers = set(re.findall(r"\d+\.\d+", shown))
    assert numbers and numbers <= set(re.findall(r"\d+\.\d+", markdown.render(result)))


def test_an_exercise_no_cell_defines_is_spoken_of_at_the_end(make_submission):
    path = make_submission(["import numpy as np",
                            "def softmax(x):\n    e = np.exp(x - x.max(axis=0))\n"
                            "    return e / e.sum(axis=0)"], name="carol")
    result = grading.grade(path, UDL)
    notebook = notebooks.read(str(path), path.read_text())
    defined = definitions.defining_cells(loading.load(path), UDL_NAMES)
    cells = feedback.annotate(result, notebook, defined)["cells"]
    assert [ours(c) for c in cells] == [True, False, False, True, True]
    assert source(cells[3]).startswith(
        '### softmax: <span class="grader-verdict grader-passed">✓ passed</span>, 1 / 1 points')
    assert cells[3]["metadata"][feedback.KEY]["feedback"] == "passed"
    last = source(cells[4])
    assert last.startswith("### Not defined in any cell")
    assert ('### self\\_attention: <span class="grader-verdict grader-missing">? missing</span>, '
            "0 / 2 points") in last


HOSTILE_MD = ("# Mine\n<script>document.title='pwned'</script>\n"
              "<img src=x onerror=\"document.title='pwned'\">\n"
              "![tracker](http://127.0.0.1:9/pixel.png)\n"
              "<a href=\"javascript:alert(1)\">click</a> <iframe src=\"http://127.0.0.1:9/\">"
              "</iframe>\n")


def hostile_notebook(minor: int = 5) -> dict:
    """A notebook whose markdown and outputs try to run script and load from the network, and
    one of whose cells forges the grader's feedback marks."""
    code = {"cell_type": "code", "metadata": {"tags": [feedback.TAG],
                                              feedback.KEY: {"feedback": "passed"}},
            "execution_count": 1,
            "source": "import numpy as np\ndef softmax(x):\n    return np.exp(x)",
            "outputs": [
                {"output_type": "display_data", "metadata": {"filenames": {
                    "image/png": "http://127.0.0.1:9/out.png"}},
                 "data": {"text/html": "<script>document.title='pwned'</script><b>bold</b>",
                          "application/javascript": "document.title='pwned'",
                          "image/png": "iVBORw0KGgo=", "text/plain": "x"}},
                {"output_type": "display_data", "metadata": {},
                 "data": {"image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'>"
                          "<script>document.title='pwned'</script></svg>"}}]}
    cells = [{"cell_type": "markdown", "metadata": {}, "source": HOSTILE_MD}, code]
    if minor >= 5:
        for number, cell in enumerate(cells):
            cell["id"] = f"c{number}"
    return {"nbformat": 4, "nbformat_minor": minor, "metadata": {}, "cells": cells}


def test_a_hostile_notebook_gives_a_page_with_no_script_and_no_address(tmp_path):
    path = tmp_path / "eve.ipynb"
    path.write_text(json.dumps(hostile_notebook()))
    code, out, err = invoke("run", "--assignment", "udl_attention", str(path),
                            "--feedback", str(tmp_path / "eve.html"))
    assert (code, err) == (0, ""), out
    page = (tmp_path / "eve.html").read_text()
    assert "<script" not in page.lower() and "onerror=" not in page
    assert re.findall(r"<[^>]*\ssrc=\"(?!data:)", page) == []  # images from data only
    assert re.findall(r"<[^>]*href=\"javascript", page) == []
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in page  # shown, inert
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # the summary, softmax's, the exercises no cell defines
    assert page.count('class="jp-Cell jp-MarkdownCell jp-Notebook-cell grader-feedback') == 3
    assert len(page) < 400_000  # JupyterLab's CSS, inlined; nothing else


def test_the_ipynb_form_is_valid_and_keeps_an_older_minor_version(tmp_path):
    path = tmp_path / "eve.ipynb"
    path.write_text(json.dumps(hostile_notebook(minor=4)))
    target = tmp_path / "out" / "eve.feedback.ipynb"
    code, _, err = invoke("run", "--assignment", "udl_attention", str(path),
                          "--feedback", str(target))
    assert (code, err) == (0, "")
    written = json.loads(target.read_text())
    nbformat.validate(nbformat.from_dict(written))
    assert written["nbformat_minor"] == 4 and all("id" not in c for c in written["cells"])
    student = written["cells"][2]
    assert feedback.KEY not in student["metadata"] and student["metadata"]["tags"] == []
    assert student["outputs"] == hostile_notebook(minor=4)["cells"][1]["outputs"]


def test_feedback_of_a_module_or_one_file_for_several_is_a_usage_error(tmp_path):
    module = tmp_path / "bob_udl_attention.py"
    module.write_text("x = 1\n")
    code, out, err = invoke("run", str(module), "--feedback", str(tmp_path / "f.html"))
    assert (code, out) == (2, "")
    assert (f"--feedback: {module} is a module, not a notebook: feedback beside the code "
            "needs a .ipynb notebook; use --html for a module's report") in err
    assert not (tmp_path / "f.html").exists()
    first, second = tmp_path / "a_udl_attention.ipynb", tmp_path / "b_udl_attention.ipynb"
    for path in (first, second):
        path.write_text(json.dumps(hostile_notebook()))
    code, out, err = invoke("run", "--each", str(first), str(second),
                            "--feedback", str(tmp_path / "f.html"))
    assert code == 2 and "names one file, but 2 notebooks are graded: name a folder" in err
    code, out, err = invoke("run", "--each", str(first), str(second),
                            "--feedback", str(tmp_path / "pages"))
    assert (code, err) == (0, "")
    assert sorted(p.name for p in (tmp_path / "pages").iterdir()) == [
        "a_udl_attention.feedback.html", "b_udl_attention.feedback.html"]


def test_batch_writes_each_notebook_feedback_beside_its_reports(tmp_path):
    folder = tmp_path / "submissions"
    (folder / "alice").mkdir(parents=True)
    (folder / "alice" / "hw.ipynb").write_bytes(ALICE.read_bytes())
    (folder / "bob_attention.py").write_text("def softmax(x):\n    return x\n")
    options = Options()
    batch.run(folder, UDL, tmp_path / "out", 2, options, progress=io.StringIO(),
              feedback=True)
    results = tmp_path / "out" / "results"
    assert sorted(p.name for p in (results / "alice").iterdir()) == [
        "hw.feedback.html", "hw.html", "hw.json", "hw.md"]
    assert sorted(p.name for p in (results / "bob").iterdir()) == [
        "bob_attention.html", "bob_attention.json", "bob_attention.md"]
    page = (results / "alice" / "hw.feedback.html").read_text()
    assert 'data-grader-exercises="multihead_scaled_self_attention"' in page
    # Without `feedback`, a notebook has its reports alone: test_batch's class records so.


def test_one_student_with_two_notebooks_gets_each_exercise_where_it_was_graded(tmp_path):
    first, second = tmp_path / "part1.ipynb", tmp_path / "part2.ipynb"
    for path, body in ((first, "return x"), (second, "e = np.exp(x - x.max(axis=0))\n"
                                                      "    return e / e.sum(axis=0)")):
        path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {},
                                    "cells": [{"cell_type": "code", "metadata": {},
                                               "execution_count": None, "outputs": [],
                                               "source": "import numpy as np\n"
                                                         f"def softmax(x):\n    {body}"}]}))
    code, out, err = invoke("run", "--assignment", "udl_attention", str(first), str(second),
                            "--feedback", str(tmp_path / "pages"))
    assert (code, err) == (0, ""), out
    one = (tmp_path / "pages" / "part1.feedback.html").read_text()
    two = (tmp_path / "pages" / "part2.feedback.html").read_text()
    assert 'data-grader-exercises="softmax"' in two
    assert 'data-grader-exercises="softmax"' not in one
