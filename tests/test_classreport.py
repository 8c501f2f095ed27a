"""The class report: a generated class with known mistakes, graded by `grade batch`, gives
exactly the counts it was made with; odd gradebooks give a page, never a traceback."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from selenium.webdriver.common.by import By

from grader import cli
from grader.classreport import page as classpage
from grader.classreport import stats as classreport
from grader.course import references, registry
from grader.gradebook import FILENAME, Gradebook, Row
from grader.pipeline import grading
from grader.result_json import from_dict
from grader.sandbox.limits import Limits
from tests.conftest import ARTIFACTS, ROOT
from tests.helpers.sqlite_file import opened

FAST = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))

# --------------------------------------------------------------------------- a generated class
#
# Book-style code (tests/corpus/udl_attention/vectorised.py) in several structurally different
# styles, so that honest students never write the same code, and the multi-head exercise with
# the catalogue's mistakes (grader/assignments/variants.py: `cols_attention` with
# transpose=True, the heads stacked without omega_c, the scale left out).

SOFTMAX = (
    "    e = np.exp(items_in - np.max(items_in))\n    return e / np.sum(e)\n",
    "    shifted = items_in - items_in.max()\n    ex = np.exp(shifted)\n"
    "    return ex / ex.sum()\n",
    "    top = np.max(items_in)\n    total = np.sum(np.exp(items_in - top))\n"
    "    return np.exp(items_in - top) / total\n",
)
UNSTABLE_SOFTMAX = "    e = np.exp(items_in)\n    return e / np.sum(e)\n"
SOFTMAX_COLS = (  # given by the notebook: the same for everyone, and not compared
    "def softmax_cols(data_in):\n"
    "    exp_values = np.exp(data_in - np.max(data_in, axis=0, keepdims=True))\n"
    "    return exp_values / np.sum(exp_values, axis=0, keepdims=True)\n")
HEAD_ARGS = "X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k"
ATTENTION = (  # (self_attention body, scaled body): two styles
    ("    Q = omega_q @ X + beta_q\n    K = omega_k @ X + beta_k\n    V = omega_v @ X + beta_v\n"
     "    return V @ softmax_cols(K.T @ Q)\n",
     "    Q = omega_q @ X + beta_q\n    K = omega_k @ X + beta_k\n    V = omega_v @ X + beta_v\n"
     "    return V @ softmax_cols(K.T @ Q / np.sqrt(Q.shape[0]))\n"),
    ("    queries = np.matmul(omega_q, X) + beta_q\n    keys = np.matmul(omega_k, X) + beta_k\n"
     "    values = np.matmul(omega_v, X) + beta_v\n"
     "    weights = softmax_cols(np.matmul(keys.T, queries))\n"
     "    return np.matmul(values, weights)\n",
     "    q = np.dot(omega_q, X) + beta_q\n    k = np.dot(omega_k, X) + beta_k\n"
     "    v = np.dot(omega_v, X) + beta_v\n"
     "    scores = np.dot(k.T, q) / np.sqrt(omega_q.shape[0])\n"
     "    return np.dot(v, softmax_cols(scores))\n"),
)
UNSCALED = ATTENTION[0][0]  # the scaled exercise without its scale: missing-scale
MULTIHEAD_ARGS = ("X, omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1, omega_v2, "
                  "omega_q2, omega_k2, beta_v2, beta_q2, beta_k2, omega_c")
MULTIHEAD = (  # two styles; {t} transposes the weights, {c} applies omega_c
    "    heads = []\n"
    "    for wv, wq, wk, bv, bq, bk in ((omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, "
    "beta_k1),\n"
    "                                   (omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, "
    "beta_k2)):\n"
    "        Q, K, V = wq @ X + bq, wk @ X + bk, wv @ X + bv\n"
    "        A = softmax_cols(K.T @ Q / np.sqrt(Q.shape[0]))\n"
    "        heads.append(V @ A{t})\n"
    "    return {c}np.vstack(heads)\n",
    "    def head(wv, wq, wk, bv, bq, bk):\n"
    "        scores = (wk @ X + bk).T @ (wq @ X + bq) / np.sqrt(wq.shape[0])\n"
    "        return (wv @ X + bv) @ softmax_cols(scores){t}\n"
    "    stacked = np.concatenate([head(omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, "
    "beta_k1),\n"
    "                              head(omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, "
    "beta_k2)], axis=0)\n"
    "    return {c}stacked\n",
)
STUB = "    raise NotImplementedError\n"
NUMPY2 = "\nscore = np.ones((1, 1)) * 0.5\nprint('score:', float(score))\n"  # fine in NumPy 1


def module(style: tuple[int, int, int], multihead: str = "right", softmax: str = "",
           scaled: str = "", numpy2: bool = False) -> str:
    """One student's udl_attention module."""
    s, a, m = style
    if multihead == "stub":
        body = STUB
    else:
        body = MULTIHEAD[m].format(t=".T" if multihead == "transposed" else "",
                                   c="" if multihead == "no-projection" else "omega_c @ ")
    return ("import numpy as np\n\n\n"
            f"def softmax(items_in):\n{softmax or SOFTMAX[s]}\n\n{SOFTMAX_COLS}\n\n"
            f"def self_attention({HEAD_ARGS}):\n{ATTENTION[a][0]}\n\n"
            f"def scaled_dot_product_self_attention({HEAD_ARGS}):\n{scaled or ATTENTION[a][1]}"
            f"\n\ndef multihead_scaled_self_attention({MULTIHEAD_ARGS}):\n{body}"
            + (NUMPY2 if numpy2 else ""))


RENAMES = {"shifted": "centred", "ex": "expd", "Q": "query", "K": "key", "V": "value",
           "A": "attn", "heads": "outputs", "wv": "w_value", "wq": "w_query", "wk": "w_key",
           "bv": "b_value", "bq": "b_query", "bk": "b_key", "score": "mark"}


def disguised(source: str) -> list[str]:
    """A copy as a notebook: local names renamed, comments, a docstring, blank lines and a
    cell per definition. The same code, once names, comments and layout are set aside."""
    for old, new in RENAMES.items():
        source = re.sub(rf"\b{old}\b", new, source)
    source = re.sub(r"(?m)^    return ", "    # the result\n\n    return ", source)
    source = source.replace("def softmax(items_in):\n",
                            'def softmax(items_in):\n    """My own softmax."""\n')
    return ["# my attention homework\n" + chunk.strip() + "\n"
            for chunk in re.split(r"\n(?=def |mark = )", source)]


def notebook(cells: list[str]) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": f"c{i}", "metadata": {}, "outputs": [],
         "execution_count": None, "source": cell} for i, cell in enumerate(cells)]})


EVE = module((1, 0, 0), multihead="transposed", numpy2=True)
CLASS = {  # file -> source; what each student got wrong is in the file's name
    "ana/hw.py": module((0, 0, 0)),
    "ben/hw.py": module((1, 1, 0)),
    "cat/transposed.py": module((2, 0, 1), multihead="transposed"),
    "dan/transposed.py": module((0, 1, 1), multihead="transposed"),
    "eve/transposed_numpy2.py": EVE,
    "fay/copies_eve.ipynb": notebook(disguised(EVE)),
    "gus/no_projection_numpy2.py": module((2, 1, 0), multihead="no-projection", numpy2=True),
    "hal/no_scale.py": module((0, 0, 1), scaled=UNSCALED),
    "ivy/multihead_stub.py": module((1, 1, 1), multihead="stub"),
    "jon/unreadable.ipynb": "{ not json",
    "kim/untouched.py": (ROOT / "exercises" / "udl_attention.py").read_text(),
    "leo/unstable_numpy2.py": module((2, 0, 0), softmax=UNSTABLE_SOFTMAX, numpy2=True),
}
SCORES = {"ana": 10, "ben": 10, "cat": 5, "dan": 5, "eve": 5, "fay": 5, "gus": 5, "hal": 8,
          "ivy": 5, "jon": 0, "kim": 0, "leo": 10}


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    """The class above, graded by `grade batch` into a gradebook; returns the --out folder."""
    root = tmp_path_factory.mktemp("class")
    for relative, source in CLASS.items():
        path = root / "submissions" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    code = cli.run(["batch", str(root / "submissions"), "--assignment", "udl_attention",
                    "--out", str(root / "out"), "--jobs", "2"], io.StringIO(), io.StringIO())
    assert code == 1  # jon's notebook cannot be graded
    return root / "out"


def report_of(out: Path, *formats: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = cli.run(["gradebook", "report", "--out", str(out), *formats], stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope="module")
def numbers(graded, tmp_path_factory) -> dict:
    target = tmp_path_factory.mktemp("json") / "class.json"
    assert report_of(graded, "--json", str(target))[0] == 0
    return json.loads(target.read_text())


def test_scores_are_one_per_student_as_the_gradebook_counts_them(numbers):
    assert numbers["submissions"] == 12 and numbers["graded"] == 11
    assert {s["student"]: s["score"] for s in numbers["scores"]} == pytest.approx(SCORES)
    assert [s["student"] for s in numbers["scores"] if s["status"] == "error"] == ["jon"]
    assert numbers["mean"] == pytest.approx(68 / 12) and numbers["median"] == 5
    assert [b["count"] for b in numbers["histogram"]] == [2, 0, 0, 0, 0, 6, 0, 0, 1, 3]


def test_each_mistake_is_counted_for_exactly_the_students_who_made_it(numbers):
    found = {(m["id"], m["exercise"]): m["names"] for m in numbers["misconceptions"]}
    assert found == {
        ("transposed-weights", "multihead_scaled_self_attention"): ["cat", "dan", "eve", "fay"],
        ("missing-output-projection", "multihead_scaled_self_attention"): ["gus"],
        ("missing-scale", "scaled_dot_product_self_attention"): ["hal"],
    }
    # leo's softmax overflows only on the unscored large-values case: advice, not counted
    # (before #25 it was counted as the class's mistake).
    assert [(a["id"], a["exercise"], a["source"], a["names"]) for a in numbers["advice"]] == [
        ("unstable-softmax", "softmax", "unscored-check", ["leo"])]
    first = numbers["misconceptions"][0]
    assert first["students"] == 4 and first["share"] == pytest.approx(4 / 11)
    assert first["explanation"].startswith("Each head's attention matrix is applied transposed")


def test_exercise_and_case_pass_rates(numbers):
    exercises = {e["name"]: e for e in numbers["exercises"]}
    assert list(exercises) == ["softmax", "self_attention", "scaled_dot_product_self_attention",
                               "multihead_scaled_self_attention"]  # softmax_cols is given
    assert numbers["provided"] == ["softmax_cols"]
    multihead = exercises["multihead_scaled_self_attention"]
    assert multihead["pass_rate"] == pytest.approx(4 / 11)  # ana, ben, hal, leo
    assert multihead["attempted"] == 9  # ivy's and kim's are the stub
    assert multihead["mean_score"] == pytest.approx(20 / 11)
    assert {d["points"]: d["students"] for d in multihead["distribution"]} == {0: 7, 5: 4}
    assert exercises["scaled_dot_product_self_attention"]["pass_rate"] == pytest.approx(9 / 11)
    assert exercises["softmax"]["pass_rate"] == pytest.approx(10 / 11)  # stability is advice
    cases = {(c["exercise"], c["case"]): c for c in numbers["cases"]}
    example = cases["multihead_scaled_self_attention", "notebook-example"]
    assert (example["passed"], example["attempted"], example["flag"]) == (4, 9, None)
    assert example["pass_rate"] == pytest.approx(4 / 9)
    assert cases["softmax", "six-values"]["flag"] == "nearly-all-pass"
    # A public example earns no points (#21): shown with its pass rate, never flagged.
    assert (cases["softmax", "vector"]["scored"], cases["softmax", "vector"]["flag"]) == \
        (False, None)
    stable = cases["softmax", "large-values"]  # advice: shown, never flagged
    assert (stable["passed"], stable["attempted"], stable["scored"], stable["flag"]) == \
        (9, 10, False, None)
    assert cases["scaled_dot_product_self_attention", "wide"]["visibility"] == "hidden"


def test_the_numpy2_float_error_is_one_group(numbers):
    first = numbers["cell_errors"][0]
    assert (first["error"], first["names"]) == ("TypeError", ["eve", "fay", "gus", "leo"])
    assert "only 0-dimensional arrays can be converted" in first["message"]
    assert first["hint"].startswith("NumPy 2 no longer")
    # One group, though the line differs: fay's notebook has it in a cell of its own.
    places = {(p["where"], p["line"]): p["students"] for p in first["places"]}
    assert sum(places.values()) == 4 and len(places) > 1
    assert places["code cell 7", 3] == 1  # fay's: the comment, the assignment, the float()


def test_the_copy_with_renamed_names_is_the_only_group(numbers):
    assert numbers["similar"] == [{
        "names": ["eve", "fay"], "exercises": ["softmax", "self_attention",
                                               "scaled_dot_product_self_attention",
                                               "multihead_scaled_self_attention"],
        "nodes": numbers["similar"][0]["nodes"]}]
    assert numbers["similar"][0]["nodes"] >= classreport.MIN_SIMILAR_NODES
    assert numbers["fingerprinted"] == 11


def test_the_page_and_the_markdown_say_the_same_numbers(graded, tmp_path):
    code, stdout, _ = report_of(graded, "--html", str(tmp_path / "class.html"),
                                "--md", str(tmp_path / "class.md"))
    assert code == 0 and stdout == ""
    page = (tmp_path / "class.html").read_text()
    assert "<script" not in page and "http" not in page.replace("http-equiv", "")
    assert "<strong>12</strong> submissions (1 could not be graded, counted as 0)" in page
    assert 'data-misconception="transposed-weights"' in page
    # names only inside <details>: nothing between a </details> and the next <details>
    outside = re.sub(r"<details[ >].*?</details>", "", page, flags=re.S)
    for student in SCORES:
        assert not re.search(rf"\b{student}\b", outside), student
    markdown = (tmp_path / "class.md").read_text()
    # The first table is the class's own mistakes (#25: it used to follow the scores,
    # exercises and cases, with the share in the count's cell).
    first_table = next(line for line in markdown.splitlines() if line.startswith("|"))
    assert first_table == "| Students | Share | Exercise | Mistake | Who |"
    assert ("| **4** | 36% | multihead\\_scaled\\_self\\_attention | Each head's attention "
            "matrix") in markdown
    assert re.search(r"<table[^>]*>", page).group(0) == '<table id="misconceptions">'
    assert page.index('id="misconceptions"') < page.index('id="histogram"')
    assert "1. 2 submissions share softmax" in markdown


def test_without_a_target_the_markdown_goes_to_stdout(graded):
    code, stdout, _ = report_of(graded)
    assert code == 0 and stdout.startswith("# Class report: udl\\_attention")


@pytest.mark.browser
def test_the_page_opens_in_chromium_with_the_histogram_and_the_mistakes(graded, browser,
                                                                        tmp_path):
    page = tmp_path / "class.html"
    assert report_of(graded, "--html", str(page))[0] == 0
    browser.get(page.as_uri())
    histogram = browser.find_element(By.ID, "histogram")
    assert histogram.is_displayed()
    assert (histogram.size["width"], histogram.size["height"]) == (640, 240)
    bars = histogram.find_elements(By.CSS_SELECTOR, "g.bar rect")
    heights = [bar.size["height"] for bar in bars]
    assert len(bars) == 10 and heights.index(max(heights)) == 5  # six students scored 5
    table = browser.find_element(By.ID, "misconceptions")
    browser.execute_script("arguments[0].scrollIntoView()", table)
    assert table.is_displayed() and table.size["width"] > 600
    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    # most frequent first, then in the assignment's order of exercises; leo's unstable softmax
    # (an unscored case) is advice, in a table of its own (#25)
    assert [r.get_attribute("data-misconception") for r in rows] == [
        "transposed-weights", "missing-scale", "missing-output-projection"]
    assert [td.text for td in rows[0].find_elements(By.TAG_NAME, "td")[:3]] == [
        "4", "36%", "multihead_scaled_self_attention"]
    advice = browser.find_elements(By.CSS_SELECTOR, "#advice-table tbody tr")
    assert [(r.get_attribute("data-advice"), r.get_attribute("data-source")) for r in advice] \
        == [("unstable-softmax", "unscored-check")]
    names = rows[0].find_element(By.CSS_SELECTOR, "p.names")
    assert not names.is_displayed()  # hidden until asked for
    rows[0].find_element(By.TAG_NAME, "summary").click()
    assert names.is_displayed() and names.text == "cat, dan, eve, fay"
    browser.execute_script("window.scrollTo(0, 0)")
    ARTIFACTS.mkdir(exist_ok=True)  # kept after the run, beside the report's screenshot
    shot = ARTIFACTS / "class-report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 20_000


# --------------------------------------------------------------------------- odd gradebooks


def test_a_missing_gradebook_names_the_file_and_the_fix(tmp_path):
    code, _, stderr = report_of(tmp_path / "nowhere", "--html", str(tmp_path / "c.html"))
    assert code == 2  # as `gradebook export` says it
    assert f"{tmp_path / 'nowhere' / FILENAME}: no gradebook here" in stderr
    assert "grade batch SUBMISSIONS_DIR --assignment NAME --out" in stderr
    assert "Traceback" not in stderr and not (tmp_path / "nowhere").exists()
    assert not (tmp_path / "c.html").exists()


def test_an_empty_gradebook_gives_a_page_that_says_so(tmp_path):
    Gradebook(tmp_path)
    code, _, stderr = report_of(tmp_path, "--html", str(tmp_path / "c.html"),
                                "--json", str(tmp_path / "c.json"))
    assert (code, stderr) == (0, "")
    assert "Nothing graded yet" in (tmp_path / "c.html").read_text()
    data = json.loads((tmp_path / "c.json").read_text())
    assert (data["submissions"], data["scores"], data["mean"], data["misconceptions"]) == \
        (0, [], None, [])


def test_a_class_of_one(graded, tmp_path):
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(graded / FILENAME, one / FILENAME)
    with opened(one / FILENAME) as db:
        db.execute("DELETE FROM results WHERE student != 'eve'")
    code, _, _ = report_of(one, "--html", str(tmp_path / "c.html"), "--json",
                           str(tmp_path / "c.json"))
    data = json.loads((tmp_path / "c.json").read_text())
    assert code == 0 and data["submissions"] == 1 and data["mean"] == data["median"] == 5
    assert data["similar"] == [] and {c["flag"] for c in data["cases"]} == {None}
    page = (tmp_path / "c.html").read_text()
    assert "<strong>1</strong> submission " in page
    assert "only 0-dimensional arrays" in page  # the one student's error, shown


def test_a_gradebook_of_errors_only(graded, tmp_path):
    errors = tmp_path / "errors"
    errors.mkdir()
    shutil.copy(graded / FILENAME, errors / FILENAME)
    with opened(errors / FILENAME) as db:
        db.execute("DELETE FROM results WHERE status != 'error'")
    code, _, _ = report_of(errors, "--html", str(tmp_path / "c.html"), "--md",
                           str(tmp_path / "c.md"))
    page = (tmp_path / "c.html").read_text()
    assert code == 0 and "No submission could be graded" in page
    assert "not valid notebook JSON" in page
    assert "could not be graded" in (tmp_path / "c.md").read_text()


def test_several_assignments_need_one_named(graded, tmp_path):
    both = tmp_path / "both"
    both.mkdir()
    shutil.copy(graded / FILENAME, both / FILENAME)
    with opened(both / FILENAME) as db:
        db.execute("UPDATE results SET assignment = 'attention_basics' WHERE student = 'ana'")
    code, _, stderr = report_of(both, "--json", str(tmp_path / "c.json"))
    assert code == 2 and "holds attention_basics, udl_attention: pass --assignment" in stderr
    code, _, _ = report_of(both, "--assignment", "udl_attention", "--json",
                           str(tmp_path / "c.json"))
    assert code == 0 and json.loads((tmp_path / "c.json").read_text())["submissions"] == 11


# --------------------------------------------------------------------------- pure parts


def _row(student: str, submission: str, score: float) -> Row:
    return Row(student, "a", submission, "0" * 64, "graded", score, 2.0, "2025-01-01")


def _result(passed: list[bool], fingerprint: bool = True) -> dict:
    """A result's JSON (as the gradebook stores it) of one exercise, "f"."""
    checks = [{"name": f"case{i}", "visibility": "hidden", "passed": ok, "score": float(ok),
               "max_score": 1.0, "status": "passed" if ok else "failed", "diagnosis": None,
               "scored": True, "message": ""} for i, ok in enumerate(passed)]
    exercise = {"name": "f", "score": float(sum(passed)), "max_score": float(len(passed)),
                "status": "passed" if all(passed) else "failed", "checks": checks}
    if fingerprint:
        exercise["fingerprint"] = {"digest": "same", "nodes": 100}
    return {"assignment": "a", "submission": "hw.py", "status": "graded", "score": 0.0,
            "max_score": 2.0, "duration_s": 0.0, "error": None, "exercises": [exercise],
            "cells": []}


def test_the_best_row_of_a_student_counts_as_in_the_exports():
    recorded = [(_row("zoe", "draft.py", 0.0), from_dict(_result([False, False]))),
                (_row("zoe", "final.py", 2.0), from_dict(_result([True, True])))]
    report = classreport.build("a", recorded)
    assert [(s.student, s.score, s.submission) for s in report.scores] == \
        [("zoe", 2.0, "final.py")]
    assert report.exercises[0].pass_rate == 1.0


def test_a_case_nearly_everyone_fails_is_flagged():
    recorded = [(_row(f"s{i}", "hw.py", 1.0), from_dict(_result([True, i == 0])))
                for i in range(10)]
    report = classreport.build("a", recorded)
    assert [(c.case, c.pass_rate, c.flag) for c in report.cases] == [
        ("case0", 1.0, classreport.Flag.NEARLY_ALL_PASS),
        ("case1", 0.1, classreport.Flag.NEARLY_ALL_FAIL)]
    few = classreport.build("a", recorded[:4])  # too few to say anything about a case
    assert {c.flag for c in few.cases} == {None}


def test_results_without_fingerprints_are_not_compared_and_the_page_says_so():
    recorded = [(_row(s, "hw.py", 1.0), from_dict(_result([True, False], fingerprint=False)))
                for s in ("a1", "a2")]
    report = classreport.build("a", recorded)
    assert (report.fingerprinted, report.similar) == (0, ())
    assert "did not yet fingerprint the code" in classpage.html(report)
    mixed = classreport.build("a", [*recorded, *[
        (_row(s, "hw.py", 1.0), from_dict(_result([True, False]))) for s in ("b1", "b2")]])
    assert mixed.fingerprinted == 2
    assert [g.names for g in mixed.similar] == [("b1", "b2")]
    assert "2 of the graded submissions were recorded without fingerprints" in \
        classpage.html(mixed)


def test_hostile_names_and_messages_stay_text(tmp_path):
    book = Gradebook(tmp_path)
    result = _result([True, False])
    result["cells"] = [{"index": 1, "number": 1, "status": "error", "file": "",
                        "message": "line 1: ValueError: <script>alert(1)</script>"}]
    with opened(book.path) as db:
        for student in ("<img src=x onerror=alert(1)>", "| # heading"):
            db.execute("INSERT INTO results (student, assignment, submission, sha256, status, "
                       "score, max_score, result, graded_at) "
                       "VALUES (?, 'a', 'hw.py', '', 'graded', 1, 2, ?, '')",
                       (student, json.dumps(result)))
    report = classreport.build("a", book.recorded())
    page, markdown = classpage.html(report), classpage.markdown(report)
    assert "<script>" not in page and "<img" not in page and "&lt;img" in page
    assert "\\| \\# heading" in markdown and "\n# heading" not in markdown


# --------------------------------------------------------------------------- lookup tables (#21)

SCALED = "scaled_dot_product_self_attention"


def _lookup_table(case_name: str) -> str:
    """A module whose scaled attention looks up the reference answer of one case by the bytes
    of its X (as a student who saw that case's inputs printed could), and else returns zeros,
    as the notebook's stub does."""
    exercise = registry.get("udl_attention").exercise(SCALED)
    inputs = exercise.case(case_name).inputs()
    answer = getattr(references.load_solution("udl_attention"), SCALED)(*inputs)
    key = np.asarray(inputs[0], dtype=float).tobytes().hex()
    return ("import numpy as np\n"
            f"TABLE = {{bytes.fromhex({key!r}): np.array({np.asarray(answer).tolist()!r})}}\n")


def test_a_lookup_table_that_earns_points_is_counted_as_written(tmp_path):
    table = _lookup_table("five-tokens")
    key = "np.asarray(X, dtype=float).tobytes()"
    files = {
        "lou": table + f"def {SCALED}({HEAD_ARGS}):\n"
                       f"    return TABLE.get({key}, np.zeros_like(X))\n",
        # Not a `def` at top level: a lambda behind a dispatch dictionary. No fingerprint.
        "max": table + f"DISPATCH = {{'table': lambda X, *rest: TABLE.get({key}, "
                       "np.zeros_like(X))}\n"
                       f"{SCALED} = DISPATCH['table']\n",
        "ned": (ROOT / "exercises" / "udl_attention.py").read_text(),  # the stub
        "ora": (ROOT / "solutions" / "udl_attention.py").read_text(),
    }
    recorded = []
    for student, source in files.items():
        path = tmp_path / f"{student}.py"
        path.write_text(source)
        result = grading.grade(path, registry.get("udl_attention"), FAST)
        recorded.append((Row(student, "udl_attention", path.name, result.sha256 or "",
                             result.status.value, result.score, result.max_score, "now"),
                         result))
    stored = {row.student: result for row, result in recorded}
    for student in ("lou", "max"):  # what the report used to read as the stub
        scaled = next(e for e in stored[student].exercises if e.name == SCALED)
        assert scaled.score > 0, student
        assert {c.diagnosis.id for c in scaled.checks if c.diagnosis} == {"unattempted"}, \
            student
    report = classreport.build("udl_attention", recorded)
    exercise = next(e for e in report.exercises if e.name == SCALED)
    assert (exercise.graded, exercise.attempted, exercise.unattempted) == (4, 3, 1)
    cases = {c.case: c for c in report.cases if c.exercise == SCALED}
    assert (cases["five-tokens"].attempted, cases["five-tokens"].passed) == (3, 3)
    assert (cases["wide"].attempted, cases["wide"].passed) == (3, 1)
    softmax = next(e for e in report.exercises if e.name == "softmax")
    assert (softmax.attempted, softmax.unattempted) == (1, 3)  # the stub's, or not defined
