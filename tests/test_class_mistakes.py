"""The class report counts what the students did (#25): a class of book-style notebooks, every
one keeping the book's own `softmax_cols` (which overflows), graded by `grade batch` into a
gradebook and reported by `grade gradebook report`. Only the students' own mistakes, on scored
checks, are counted; the book's overflow and unscored cases are advice, apart."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from grader import cli
from grader.classreport import page as classpage
from grader.classreport import stats as classreport
from grader.classreport.mistakes import Source, tally
from grader.gradebook import Row
from grader.results import Result
from tests.helpers.book import BOOK_SOFTMAX_COLS
from tests.helpers.book_class import (
    SOFTMAX_STABLE,
    STABLE_SOFTMAX_COLS,
    book_notebook,
)
from tests.helpers.term import stored

SCALED = "scaled_dot_product_self_attention"
MULTIHEAD = "multihead_scaled_self_attention"

# The students' own softmax, as they write it: the book's hint (exp, then divide by the sum)
# overflows for large inputs, which only the unscored large-values case shows.
SOFTMAX_NAIVE = '''def softmax(items_in):
  e_x = np.exp(items_in)
  items_out = e_x / np.sum(e_x)
  return items_out ;
'''
CLASS = {
    "amy": ("right", SOFTMAX_STABLE, BOOK_SOFTMAX_COLS),
    "bo": ("right", SOFTMAX_NAIVE, BOOK_SOFTMAX_COLS),
    "cy": ("missing-scale", SOFTMAX_NAIVE, BOOK_SOFTMAX_COLS),
    "di": ("transposed-weights", SOFTMAX_STABLE, BOOK_SOFTMAX_COLS),
    "ed": ("missing-scale", SOFTMAX_STABLE, BOOK_SOFTMAX_COLS),
    "fi": ("softmax-wrong-axis", SOFTMAX_STABLE, BOOK_SOFTMAX_COLS),
    "gil": ("own-unstable", SOFTMAX_STABLE, STABLE_SOFTMAX_COLS),
    "hu": ("missing-scale", SOFTMAX_NAIVE, BOOK_SOFTMAX_COLS),
}
BOOK_COLS = ["amy", "bo", "cy", "di", "ed", "fi", "hu"]


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    """The class graded by `grade batch` into a gradebook."""
    root = tmp_path_factory.mktemp("book_class")
    for student, (scaled, softmax, cols) in CLASS.items():
        path = root / "submissions" / student / "12_1_Self_Attention.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(book_notebook(scaled, softmax, cols))
    stderr = io.StringIO()
    code = cli.run(["batch", str(root / "submissions"), "--assignment", "udl_attention",
                    "--out", str(root / "out"), "--jobs", "2"], io.StringIO(), stderr)
    assert code == 0, stderr.getvalue()
    return root / "out"


@pytest.fixture(scope="module")
def report(out, tmp_path_factory) -> dict[str, str]:
    """`grade gradebook report` in its three formats."""
    target = tmp_path_factory.mktemp("report")
    paths = {kind: target / f"class.{kind}" for kind in ("json", "md", "html")}
    stdout, stderr = io.StringIO(), io.StringIO()
    code = cli.run(["gradebook", "report", "--out", str(out),
                    *(arg for kind, path in paths.items() for arg in (f"--{kind}", str(path)))],
                   stdout, stderr)
    assert (code, stderr.getvalue()) == (0, "")
    return {kind: path.read_text() for kind, path in paths.items()}


def test_the_class_is_graded_as_made(report):
    """The seam: what the students wrote is what the grader found, check by check."""
    numbers = json.loads(report["json"])
    assert {s["student"]: s["score"] for s in numbers["scores"]} == {
        "amy": 10, "bo": 10, "cy": 8, "di": 8, "ed": 8, "fi": 8, "gil": 10, "hu": 8}


def test_the_books_softmax_cols_makes_no_student_a_mistake(report):
    numbers = json.loads(report["json"])
    counted = {(m["id"], m["exercise"]) for m in numbers["misconceptions"]}
    assert not any(id == "unstable-softmax" for id, _ in counted), counted
    advice = {(a["id"], a["exercise"], a["source"]): a["names"] for a in numbers["advice"]}
    # The book's overflow, seen in softmax_cols and through it in the scaled attention's
    # unscored large-scores case: every student who kept the book's code, as given code.
    assert advice["unstable-softmax", "softmax_cols", "given-code"] == BOOK_COLS
    # fi's own softmax over the rows overflows too: the gradebook cannot tell who calls whom,
    # and after the book's overflowing softmax_cols it reads as the book's (advice either way).
    assert advice["unstable-softmax", SCALED, "given-code"] == BOOK_COLS
    # gil fixed softmax_cols; his own softmax inside the attention overflows, on an unscored
    # case: his, but advice. The students' naive softmax likewise: it comes before the book's
    # softmax_cols in the notebook, so it is their own, not the book's.
    assert advice["unstable-softmax", SCALED, "unscored-check"] == ["gil"]
    assert advice["unstable-softmax", "softmax", "unscored-check"] == ["bo", "cy", "hu"]


def test_the_students_own_mistakes_come_first_counted_exactly(report):
    numbers = json.loads(report["json"])
    assert [(m["id"], m["exercise"], m["names"], m["students"], m["share"])
            for m in numbers["misconceptions"]] == [
        ("missing-scale", SCALED, ["cy", "ed", "hu"], 3, 3 / 8),
        ("softmax-wrong-axis", SCALED, ["fi"], 1, 1 / 8),
        ("transposed-weights", SCALED, ["di"], 1, 1 / 8)]
    markdown = report["md"]
    tables = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert tables[0] == "| Students | Share | Exercise | Mistake | Who |"
    assert tables[1].startswith(
        "| **3** | 38% | scaled\\_dot\\_product\\_self\\_attention | The scores are not scaled: "
        "divide K.T @ Q by np.sqrt(D")
    assert "## Advice: from the notebook's given code or unscored checks" in markdown
    assert markdown.index("## The class's own mistakes") < markdown.index("## Score distribution")
    assert markdown.index("## Score distribution") < markdown.index("## Advice")
    page = report["html"]
    assert re.search(r"<table[^>]*>", page).group(0) == '<table id="misconceptions">'
    rows = re.findall(r'<tr data-misconception="([^"]+)"><td class="num"><strong>(\d+)</strong>'
                      r'</td>\s*<td class="num">(\d+%)</td>\s*<td class="exercise">(\w+)</td>',
                      page)
    assert rows == [("missing-scale", "3", "38%", SCALED),
                    ("softmax-wrong-axis", "1", "12%", SCALED),
                    ("transposed-weights", "1", "12%", SCALED)]
    assert page.count('data-source="given-code"') == 2
    outside = re.sub(r"<details>.*?</details>", "", page, flags=re.S)
    for student in CLASS:  # names stay in the collapsed lists, advice included
        assert not re.search(rf"\b{student}\b", outside), student


# --------------------------------------------------------------------------- pure rules


def _check(name: str, scored: bool, diagnosis: str | None) -> dict:
    return {"name": name, "visibility": "hidden", "passed": diagnosis is None,
            "score": 0.0, "max_score": 1.0 if scored else 0.0, "scored": scored,
            "status": "passed" if diagnosis is None else "failed", "message": "",
            "diagnosis": {"id": diagnosis, "message": f"{diagnosis}."} if diagnosis else None}


def _student(given: str | None, own: str | None, unscored: str | None) -> Result:
    """A result with a provided `cols`, diagnosed `given`, and an exercise `f` whose scored
    check is diagnosed `own` and whose unscored one `unscored`."""
    return stored({"status": "graded", "error": None, "cells": [], "exercises": [
        {"name": "cols", "score": 0.0, "max_score": 0.0, "status": "failed", "provided": True,
         "checks": [_check("big", False, given)]},
        {"name": "f", "score": 0.0, "max_score": 1.0, "status": "failed", "provided": False,
         "checks": [_check("small", True, own), _check("big", False, unscored)]}]})


def test_a_scored_diagnosis_that_the_given_function_also_gets_is_the_given_codes():
    graded = {"a": _student("overflow", "overflow", None),   # through the given function
              "b": _student(None, "overflow", None),         # the student's own
              "c": _student(None, None, "overflow"),         # an unscored case only
              "d": _student("overflow", "axis", "overflow")}  # own axis; the rest is given
    mistakes, advice = tally(["cols", "f"], ["cols"], graded)
    assert [(m.id, m.exercise, m.names) for m in mistakes] == [
        ("axis", "f", ("d",)), ("overflow", "f", ("b",))]
    assert [(a.id, a.exercise, a.source, a.names) for a in advice] == [
        ("overflow", "cols", Source.GIVEN, ("a", "d")),
        ("overflow", "f", Source.GIVEN, ("a", "d")),
        ("overflow", "f", Source.UNSCORED, ("c",))]
    assert (mistakes[0].share, advice[0].share) == (1 / 4, 2 / 4)


def test_a_given_function_passes_its_diagnosis_only_to_the_exercises_after_it():
    graded = {"a": _student("overflow", "overflow", None)}
    mistakes, advice = tally(["f", "cols"], ["cols"], graded)  # f comes first: it is a's own
    assert [(m.id, m.exercise, m.names) for m in mistakes] == [("overflow", "f", ("a",))]
    assert [(a.exercise, a.source) for a in advice] == [("cols", Source.GIVEN)]


def test_a_student_counted_for_a_mistake_is_not_also_advised_of_it():
    graded = {"a": _student(None, "overflow", "overflow")}
    mistakes, advice = tally(["cols", "f"], ["cols"], graded)
    assert [(m.id, m.names) for m in mistakes] == [("overflow", ("a",))] and advice == ()


def test_advice_is_in_the_json_and_the_page(tmp_path):
    recorded = [(Row(s, "a", "hw.py", "0" * 64, "graded", 0.0, 1.0, "now"),
                 _student("overflow", None, "overflow")) for s in ("s1", "s2")]
    report = classreport.build("a", recorded)
    data = classpage.to_dict(report)
    assert data["misconceptions"] == []
    assert data["advice"] == [
        {"id": "overflow", "exercise": "cols", "source": "given-code", "students": 2,
         "names": ["s1", "s2"], "share": 1.0, "explanation": "overflow."},
        {"id": "overflow", "exercise": "f", "source": "given-code", "students": 2,
         "names": ["s1", "s2"], "share": 1.0, "explanation": "overflow."}]
    page = classpage.html(report)
    assert "No student's own code matched a known mistake on a scored case." in page
    assert "the notebook's given code</td>" in page


def _through_cols(scored: bool) -> Result:
    """A provided `cols` diagnosed "axis", and an exercise `f` whose check (`scored` or not)
    fails only through it (it passes with the reference `cols`: `CheckResult.callee`)."""
    through = {**_check("small", scored, "callee-fails"), "callee": "cols"}
    return stored({"status": "graded", "error": None, "cells": [], "exercises": [
        {"name": "cols", "score": 0.0, "max_score": 0.0, "status": "failed", "provided": True,
         "checks": [_check("big", False, "axis")]},
        {"name": "f", "score": 0.0, "max_score": 1.0, "status": "failed", "provided": False,
         "checks": [through, _check("big", False, "axis")]}]})


def test_a_failure_that_comes_from_a_called_function_is_counted_there_once():
    """Through a scored check, the copy of `cols` is the student's own code (the notebook's
    fails no scored check): its mistake is counted on it alone, and none of it is advice from
    given code."""
    result = _through_cols(scored=True)
    assert result.exercises[1].checks[0].callee == "cols"
    mistakes, advice = tally(["cols", "f"], ["cols"], {"a": result})
    assert [(m.id, m.exercise, m.names) for m in mistakes] == [("axis", "cols", ("a",))]
    assert [(a.id, a.exercise, a.source) for a in advice] == [("axis", "f", Source.UNSCORED)]
    # Through an unscored check only, the copy may be the notebook's own code: given.
    mistakes, advice = tally(["cols", "f"], ["cols"], {"a": _through_cols(scored=False)})
    assert mistakes == () and [(a.id, a.exercise, a.source) for a in advice] == [
        ("axis", "cols", Source.GIVEN), ("axis", "f", Source.GIVEN)]
