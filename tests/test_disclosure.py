"""`show_hidden_after`: hidden checks show their details from that time on, in every output
format (terminal, JSON, HTML, Markdown, JUnit, Gradescope), judged by an injected clock;
before it they show only their result and diagnosis; their inputs never appear."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from grader import result_json
from grader.course import registry
from grader.errors import SpecError
from grader.model import Assignment, Visibility
from grader.pipeline import grading
from grader.report import gradescope_results as gradescope
from grader.report import html, junit, markdown, terminal
from grader.results import Result
from grader.sandbox.limits import Limits
from tests.conftest import ROOT

DUE = datetime(2030, 6, 1, 18, 0, tzinfo=UTC)
SOLUTION = (ROOT / "solutions" / "positional_encoding.py").read_text()
POSITIONS_FROM_ONE = SOLUTION.replace("np.arange(seq_len)", "np.arange(1, seq_len + 1)")
# Right up to 16 features, the width of every public case: only a hidden case fails, with no
# catalogued mistake, so that each report shows that check on its own.
NARROW = SOLUTION.replace("np.arange(0, d_model, 2) / d_model",
                          "np.arange(0, d_model, 2) / min(d_model, 16)")


def assignment(after: datetime | None = DUE) -> Assignment:
    return dataclasses.replace(registry.get("positional_encoding"), show_hidden_after=after)


def graded(make_submission, now: datetime, after: datetime | None = DUE,
           text: str = NARROW) -> Result:
    options = grading.Options(limits=Limits(call_timeout=10), clock=lambda: now)
    return grading.grade(make_submission(text, name="bob_positional_encoding"),
                         assignment(after), options)


def student_facing(result: Result) -> dict[str, str]:
    """Every format as students may read it, the terminal with every failing check (-v);
    Gradescope's tests only where visible now."""
    scope = gradescope.to_dict(result)
    visible = [t for t in scope["tests"] if t["visibility"] == "visible"]
    return {"terminal": terminal.render(result, verbose=True), "json": result_json.render(result),
            "html": html.render(result), "markdown": markdown.render(result),
            "junit": junit.render([result]),
            "gradescope": json.dumps({**scope, "tests": visible})}


def _table(result: Result, visibility: Visibility) -> list[str]:
    return [line.strip() for e in result.exercises for c in e.checks
            if c.visibility is visibility and not c.passed
            for line in (c.detail or c.message).splitlines() if "|" in line
            and "Index" not in line]


def details(result: Result) -> list[str]:
    """The lines that only the details of the failing hidden checks hold: rows of the approx
    table that no public check shows too (the first columns of an encoding are the same at
    any width)."""
    public = set(_table(result, Visibility.PUBLIC))
    return list(dict.fromkeys(line for line in _table(result, Visibility.HIDDEN)
                              if line not in public))


def hidden_inputs() -> set[str]:
    found = set()
    for exercise in assignment().exercises:
        for case in exercise.cases:
            if case.visibility is Visibility.HIDDEN:
                for item in case.inputs():
                    if isinstance(item, np.ndarray):
                        found |= {f"{v:.6g}" for v in item.ravel() if v != round(v, 2)}
    return found


def test_before_the_time_hidden_checks_show_no_details(make_submission):
    result = graded(make_submission, DUE - timedelta(minutes=1))
    assert (result.hidden_shown, result.show_hidden_after) == (False, "2030-06-01T18:00+00:00")
    secret = details(result)
    assert len(secret) == 5  # the details exist, kept aside for Gradescope
    for fmt, text in student_facing(result).items():
        assert not [line for line in secret if line in text], fmt
    assert "hidden checks: details shown from 2030-06-01T18:00+00:00" in \
        terminal.render(result)
    # On Gradescope, the hidden tests carry them, shown after the due date set there.
    scope = gradescope.to_dict(result)
    hidden = [t for t in scope["tests"] if "hidden" in t["tags"]]
    assert {t["visibility"] for t in hidden} == {"after_due_date"}
    assert all(line in json.dumps(hidden) for line in secret)


def test_from_the_time_on_every_format_shows_them(make_submission):
    result = graded(make_submission, DUE)
    assert result.hidden_shown
    secret = details(result)
    hidden_checks = [c for e in result.exercises for c in e.checks
                     if c.visibility is Visibility.HIDDEN and not c.passed and c.detail]
    assert hidden_checks and all(c.message == c.detail for c in hidden_checks)
    assert all("Mismatched elements" in c.message for c in hidden_checks)
    texts = student_facing(result)
    for fmt, text in texts.items():
        shown = [line for line in secret if line in text]
        # The terminal shows a message's first 8 lines: the first 3 rows of its table.
        assert shown == (secret[:3] if fmt == "terminal" else secret), fmt
    assert "Hidden checks show their details since 2030-06-01T18:00+00:00" in texts["html"]
    assert "since 2030-06-01T18:00+00:00" in texts["markdown"]
    data = json.loads(texts["json"])
    assert (data["show_hidden_after"], data["hidden_shown"]) == ("2030-06-01T18:00+00:00", True)
    assert {t["visibility"] for t in gradescope.to_dict(result)["tests"]} == {"visible"}


def test_a_mistake_grouped_with_a_public_check_shows_each_hidden_detail_when_due(
        make_submission):
    # Positions from 1: a catalogued mistake that fails public and hidden cases alike, so the
    # reports group them under the public check; a hidden check's own details are due too.
    before = graded(make_submission, DUE - timedelta(minutes=1), text=POSITIONS_FROM_ONE)
    after = graded(make_submission, DUE, text=POSITIONS_FROM_ONE)
    diagnosed = [c for e in after.exercises for c in e.checks if not c.passed and c.diagnosis]
    assert {c.visibility for c in diagnosed} == {Visibility.PUBLIC, Visibility.HIDDEN}
    secret = details(after)
    assert len(secret) >= 3
    for fmt, render in (("html", html.render), ("markdown", markdown.render)):
        assert [line for line in secret if line in render(after)] == secret, fmt
        assert not [line for line in secret if line in render(before)], fmt
    assert "What each of them returned" in html.render(after)
    # The HTML keeps them folded, so that one box still says what went wrong.
    page = html.render(after)
    assert page.index("<details class=\"own\">") < page.index(secret[0])


# A row of the approx table: index | obtained | expected.
ROW = re.compile(r"\(\d+(?:, \d+)*\)\s+\| \S+\s+\| \S+")


@pytest.mark.parametrize("after", [DUE + timedelta(days=1), DUE - timedelta(days=1)],
                         ids=["before", "after"])
def test_the_inputs_of_hidden_cases_never_appear(make_submission, after):
    """Not before the time, anywhere. After it, only where an expected value equals an input
    (X + PE is X where the sine of position 0 is 0): the inputs are never printed as such."""
    result = graded(make_submission, DUE, after, POSITIONS_FROM_ONE)
    inputs = hidden_inputs()
    assert len(inputs) > 50
    for fmt, text in student_facing(result).items():
        if result.hidden_shown:
            text = ROW.sub("", text)
        assert not [value for value in inputs if value in text], fmt


def test_without_a_time_the_details_are_kept_for_the_instructor_only(make_submission):
    result = graded(make_submission, DUE + timedelta(days=3650), None, POSITIONS_FROM_ONE)
    assert (result.hidden_shown, result.show_hidden_after) == (False, "")
    assert any(c.detail for e in result.exercises for c in e.checks)  # the gradebook's
    assert not [line for line in details(result) if line in result_json.render(result)]
    assert json.loads(result_json.render(result))["show_hidden_after"] is None
    assert "hidden checks" not in terminal.render(result)
    assert not [line for line in details(result) if line in gradescope.render(result)]


def test_a_time_without_a_zone_is_refused():
    naive = dataclasses.replace(registry.get("positional_encoding"),
                                show_hidden_after=datetime(2030, 6, 1))
    with pytest.raises(SpecError, match="show_hidden_after of positional_encoding needs a time "
                       "zone; write datetime"):
        registry.validate(naive, "decl.py")
