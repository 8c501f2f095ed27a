"""The HTML report of a failing submission, opened in headless Chromium (Debian's chromium and
chromium-driver, installed by .ci/run).

Without them the test is skipped, with the command that installs them, so that README.md's two
commands pass on a fresh machine; under CI (`CI` set) a missing browser is a failure instead,
since a skipped test there would hide a missing install step."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from grader.batch import feedback_files
from grader.course import registry
from grader.pipeline import grading
from grader.report import html
from grader.results import Result
from tests.conftest import ARTIFACTS, CHROMIUM_INSTALL, ROOT, chromium_or_skip

pytestmark = pytest.mark.browser


def test_report_of_a_failing_submission_shows_score_diagnosis_and_heatmaps(browser, tmp_path):
    submission = ROOT / "tests" / "corpus" / "udl_attention" / "seed002.ipynb"
    result = grading.grade(submission, registry.get("udl_attention"))
    page = tmp_path / "report.html"
    page.write_text(html.render(result), encoding="utf-8")

    browser.get(page.as_uri())
    score = browser.find_element(By.ID, "score")
    assert score.is_displayed() and score.text == "Score: 4 / 10"
    diagnosis = browser.find_element(By.CSS_SELECTOR,
                                     '.diagnosis[data-diagnosis="transposed-weights"]')
    browser.execute_script("arguments[0].scrollIntoView()", diagnosis)
    assert diagnosis.is_displayed()
    assert diagnosis.text.startswith("Likely mistake: Each head's attention")
    maps = browser.find_elements(By.CSS_SELECTOR, "svg.heatmap[role=img]")
    # Two pairs: the scaled exercise's practice case (5 by 7), then the multi-head example.
    assert len(maps) == 4 and all(m.is_displayed() for m in maps)
    maps = maps[2:]
    # 40-pixel cells, with room for the row and column numbers
    assert maps[0].size["width"] == 28 + 6 * 40 and maps[0].size["height"] == 18 + 8 * 40
    # Every value differs: said in words, not with 48 outlines that hide the colours.
    assert maps[1].find_elements(By.CSS_SELECTOR, "rect.mismatch") == []
    captions = [c.text for c in browser.find_elements(By.TAG_NAME, "figcaption")]
    assert captions == ["Expected output; rows are features, columns are tokens",
                        "Your output; every value differs from the expected one"] * 2
    title = maps[1].find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert title == "your output"

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-seed002.png"
    browser.find_element(By.TAG_NAME, "body")
    assert browser.save_screenshot(str(shot))
    assert Path(shot).stat().st_size > 10_000


def test_a_missing_browser_is_a_skip_with_the_command_and_a_failure_in_ci(monkeypatch, request):
    found = shutil.which("chromium"), shutil.which("chromedriver")
    monkeypatch.setenv("PATH", "/nonexistent")  # no chromium, no chromedriver
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        request.getfixturevalue("browser")  # the fixture asks `chromium_or_skip`
    assert str(skipped.value) == ("Debian's chromium and chromium-driver are not installed: "
                                  + CHROMIUM_INSTALL)
    monkeypatch.setenv("CI", "true")
    with pytest.raises((pytest.fail.Exception, pytest.skip.Exception)) as failed:
        chromium_or_skip()  # a skip caught here, not left to skip the test
    assert failed.type is pytest.fail.Exception
    assert str(failed.value) == str(skipped.value)
    monkeypatch.undo()
    if all(found):  # where the browser is installed, it is what the check finds
        assert chromium_or_skip() == found


def test_feedback_page_shows_each_cell_after_its_code_and_loads_nothing(browser, tmp_path):
    """`grade run --feedback FILE.html`: each feedback cell is visible right after the code cell
    that defines its exercise, and the page, with a student's markdown and outputs that try to
    load from a server of ours and to run script, makes no request and runs nothing."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer


    hits: list[str] = []

    class Record(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Record)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    notebook = json.loads((ROOT / "examples" / "alice.ipynb").read_text(encoding="utf-8"))
    notebook["cells"].append({"cell_type": "markdown", "metadata": {}, "source": (
        f"![pixel]({url}/markdown.png) <img src=\"{url}/img.png\">\n"
        "<script>document.title = 'pwned'</script>\n"
        f"<link rel=\"stylesheet\" href=\"{url}/style.css\">")})
    code = next(c for c in notebook["cells"] if c["cell_type"] == "code")
    code["outputs"].append({"output_type": "display_data", "metadata": {}, "data": {
        "text/html": f"<img src=\"{url}/output.png\" onerror=\"document.title='pwned'\">",
        "application/javascript": f"fetch('{url}/js'); document.title = 'pwned'",
        "text/plain": "display"}})
    page, result = _feedback_page(notebook, tmp_path)

    try:
        browser.get(page.as_uri())
        cells = browser.find_elements(By.CSS_SELECTOR, "section.grader-feedback")
        assert len(cells) == 7  # the summary, five exercises, the cell that raised
        assert cells[0].text.startswith("Feedback from the grader\nFeedback: alice.ipynb")
        assert "Score: 4 / 10." in cells[0].text
        placed = {}
        for cell in cells[1:]:
            browser.execute_script("arguments[0].scrollIntoView()", cell)
            assert cell.is_displayed()
            before = browser.execute_script("return arguments[0].previousElementSibling", cell)
            assert "jp-CodeCell" in before.get_attribute("class")
            for name in cell.get_attribute("data-grader-exercises").split():
                assert f"def {name}(" in before.text
                placed[name] = cell.text
        assert sorted(placed) == sorted(e.name for e in result.exercises)
        assert ("Likely mistake: Each head's attention matrix is applied transposed"
                in placed["multihead_scaled_self_attention"])
        assert browser.title == "Feedback: alice.ipynb"  # no script of the student's ran
        assert browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)") == []
        ARTIFACTS.mkdir(exist_ok=True)
        assert browser.save_screenshot(str(ARTIFACTS / "feedback-alice.png"))
    finally:
        server.shutdown()
        server.server_close()
    assert hits == []


def _ink(png: bytes) -> int:
    """How many pixels of a screenshot are not near white: what was drawn."""
    import io

    from PIL import Image

    return sum(Image.open(io.BytesIO(png)).convert("L").histogram()[:160])


def test_feedback_page_draws_math_heatmaps_verdicts_and_no_broken_image(browser, tmp_path):
    """The feedback page as Chromium draws it: the book's TeX as MathML (no script runs), the
    "Open in Colab" badge, which the page may not load, as its words, long code wrapped,
    heatmaps and coloured verdicts in the feedback cells, and links from the first cell to
    each of them."""
    import json


    notebook = json.loads((ROOT / "examples" / "alice.ipynb").read_text(encoding="utf-8"))
    notebook["cells"][0:0] = [
        {"cell_type": "markdown", "metadata": {}, "source": (
            '<a href="https://colab.research.google.com/github/x/y.ipynb"><img src='
            '"https://colab.research.google.com/assets/colab-badge.svg" alt="Open In Colab"/>'
            "</a>\n\nEach $\\mathbf{x}_{n}\\in\\mathbb{R}^{D}$ is a column, and\n\n"
            "$$X' = V \\cdot \\mathrm{Softmax}[K^\\top Q]$$")},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "long = [" + ", ".join(str(n) for n in range(200)) + "]"}]
    page, result = _feedback_page(notebook, tmp_path)

    browser.set_window_size(1000, 900)
    browser.get(page.as_uri())
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "\\mathbf" not in body and "$$" not in body and "[Open In Colab]" in body
    maths = browser.find_elements(By.TAG_NAME, "math")
    assert len(maths) >= 2
    for math in maths[:2]:
        browser.execute_script("arguments[0].scrollIntoView()", math)
        assert math.size["width"] > 10 and math.size["height"] > 5, math.size
        assert _ink(math.screenshot_as_png) > 20  # drawn, not an empty box
    broken = browser.execute_script(
        "return [...document.images].filter(i => !i.complete || i.naturalWidth === 0)"
        ".map(i => i.outerHTML.slice(0, 80))")
    assert broken == []
    wide = browser.execute_script(
        "return [...document.querySelectorAll('pre')].filter("
        "p => p.scrollWidth > p.clientWidth + 1).length")
    assert wide == 0  # every line of code wraps, none runs off the page
    cells = browser.find_elements(By.CSS_SELECTOR, "section.grader-feedback")
    links = cells[0].find_elements(By.CSS_SELECTOR, 'a[href^="#feedback-"]')
    assert len(links) == 5
    for link in links:
        target = link.get_attribute("href").split("#", 1)[1]
        (cell,) = browser.find_elements(By.ID, target)
        assert "grader-feedback" in cell.get_attribute("class")
    passed = cells[0].find_element(By.CSS_SELECTOR, ".grader-verdict.grader-passed")
    failed = cells[0].find_element(By.CSS_SELECTOR, ".grader-verdict.grader-failed")
    assert passed.value_of_css_property("color") == "rgba(11, 102, 35, 1)"
    assert failed.value_of_css_property("color") == "rgba(164, 22, 26, 1)"
    multihead = next(c for c in cells if c.get_attribute("data-grader-exercises")
                     == "multihead_scaled_self_attention")
    maps = multihead.find_elements(By.TAG_NAME, "img")
    assert len(maps) == 2
    for heatmap in maps:
        browser.execute_script("arguments[0].scrollIntoView()", heatmap)
        assert heatmap.get_attribute("alt").startswith(("expected output", "your output"))
        assert browser.execute_script("return arguments[0].naturalWidth", heatmap) > 100
        assert _ink(heatmap.screenshot_as_png) > 500
    assert browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)") == []
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "feedback-math.png"))


def _feedback_page(notebook: dict, tmp_path: Path) -> tuple[Path, Result]:
    """`notebook` handed in as alice's, graded, and its feedback page written beside it."""
    submission = tmp_path / "alice.ipynb"
    submission.write_text(json.dumps(notebook), encoding="utf-8")
    result = grading.grade(submission, registry.get("udl_attention"))
    page = tmp_path / "alice.feedback.html"
    written, why = feedback_files.content(result, submission, "", page)
    assert written is not None, why
    page.write_text(written, encoding="utf-8")
    return page, result
