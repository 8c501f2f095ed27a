"""Clean points (issue #24): 2 points over 6 scored cases are 1/3 each, six of them add up to
2, not 1.9999999999999998, and a score of k cases of n reads the same in the result JSON, the
gradebook's CSV, Gradescope's results.json and the class report's JSON."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from grader import result_json
from grader.classreport import page as classpage
from grader.classreport import stats as classreport
from grader.gradebook import Gradebook
from grader.model import Case, Exercise, Visibility
from grader.pipeline import scoring
from grader.report import gradescope_results
from grader.results import Result, ResultStatus, Verdict
from grader.term import grades
from grader.term.exports import files as exports


def _inputs(rng):
    return (rng.normal(size=(2, 2)),)


def exercise(points: float, cases: int) -> Exercise:
    hidden = tuple(Case(f"hidden-{i}", _inputs, seed=i) for i in range(cases))
    return Exercise("f", "(X)", points, (Case("example", _inputs, visibility=Visibility.PUBLIC),
                                          *hidden, Case("advice", _inputs, scored=False)))


def graded(ex: Exercise, passing: int):
    """The exercise's result when its first `passing` scored cases pass, and the rest fail."""
    checks = []
    for i, case in enumerate(ex.cases):
        if case.name.startswith("hidden-") and i > passing:
            checks.append(scoring.failed_check(case.name, ex, Verdict.WRONG_VALUES, "no",
                                               visibility=case.visibility))
        else:
            checks.append(scoring.passed_check(case.name, ex, visibility=case.visibility))
    return scoring.exercise_result(ex, checks)


def test_two_points_over_six_cases_are_two():
    result = graded(exercise(2, 6), 6)
    assert (result.score, result.max_score) == (2.0, 2.0)
    assert [c.max_score for c in result.checks] == [0.0, *[0.333333] * 6, 0.0]
    assert graded(exercise(2, 6), 4).score == 1.333333
    assert scoring.total([result, graded(exercise(0.1, 3), 3), graded(exercise(0.2, 7), 7)]) \
        == (2.3, 2.3)


POINTS = st.one_of(st.integers(1, 100), st.integers(1, 10_000).map(lambda n: n / 100))


@settings(max_examples=300, deadline=None)
@given(POINTS, st.integers(1, 40), st.data())
def test_points_add_up_exactly_and_round_in_one_place(points, cases, data):
    ex = exercise(points, cases)
    shares = [scoring.share(ex, case.name) for case in ex.cases]
    assert sum(shares) == Fraction(repr(float(points)))
    passing = data.draw(st.integers(0, cases))
    result = graded(ex, passing)
    assert result.max_score == float(points)  # the declared points, exactly
    expected = float(round(Fraction(repr(float(points))) * passing / cases, 6))
    assert result.score == expected
    assert graded(ex, cases).score == float(points)


@settings(max_examples=25, deadline=None)
@given(POINTS, st.integers(1, 40), st.data())
def test_every_format_says_the_same_score(points, cases, data):
    ex = exercise(points, cases)
    passing = data.draw(st.integers(0, cases))
    done = graded(ex, passing)
    score, max_score = scoring.total([done])
    result = Result("a", "alice.py", ResultStatus.GRADED, score, max_score, 1.0,
                    exercises=(done,))
    expected = float(round(Fraction(repr(float(points))) * passing / cases, 6))
    as_json = json.loads(json.dumps(result_json.to_dict(result)))
    assert (as_json["score"], as_json["max_score"]) == (expected, float(points))
    assert (as_json["exercises"][0]["score"], as_json["exercises"][0]["max_score"]) == \
        (expected, float(points))
    assert json.loads(gradescope_results.render(result))["score"] == expected
    with tempfile.TemporaryDirectory() as folder:
        book = Gradebook(Path(folder))
        book.record("alice", "alice.py", result)
        (row,) = csv.DictReader(io.StringIO(exports.render(grades.compute(book.recorded()),
                                                           "csv")))
        assert (float(row["score"]), float(row["max_score"])) == (expected, float(points))
        assert row["score"] == _short(expected)
        report = classpage.to_dict(classreport.build("a", book.recorded()))
    assert (report["scores"][0]["score"], report["max_score"]) == (expected, float(points))
    assert report["exercises"][0]["max_score"] == float(points)
    assert report["exercises"][0]["mean_score"] == expected


def _short(value: float) -> str:
    """How a number of points reads in a CSV: as in JSON, but 2 for 2.0."""
    return repr(value)[:-2] if repr(value).endswith(".0") else repr(value)


def test_no_number_in_any_format_shows_a_float_sum():
    ex = exercise(2, 6)
    done = graded(ex, 6)
    result = Result("a", "alice.py", ResultStatus.GRADED, *scoring.total([done]), 1.0,
                    exercises=(done,))
    text = result_json.render(result) + gradescope_results.render(result)
    assert "1.9999999999999998" not in text and "0.3333333333333333" not in text
    assert np.isclose(sum(c.max_score for c in done.checks), 2, atol=1e-5)
