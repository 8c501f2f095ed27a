"""Every catalogued sentence speaks its assignment's layout and says what to write."""

from __future__ import annotations

import re

import pytest

from grader.assignments import variants
from grader.course import registry

COLUMNS_ONLY = re.compile(r"K\.T @ Q|K\^T Q|softmax_cols|omega_|V @ A\b")
ROWS_ONLY = re.compile(r"Q K\^T|Q @ K\.T|K Q\^T|@ V\b|\bd_k\b")
WRONG_CODE = re.compile(r"you compute [^.]*\.")  # a sentence may quote the student's code
FIX = re.compile(r"[:.] .*\b(?:write|divide|take|subtract|add|put|use|return|"
                 r"multiply|normalise|leave|start|let|attend|mask)\b", re.IGNORECASE)


def sentences() -> list[tuple[str, str, str, bool]]:
    """(assignment, exercise, sentence, whether columns are tokens) of every mistake."""
    found = []
    for assignment in registry.assignments().values():
        columns = assignment.layout.startswith("columns are tokens")
        for exercise in assignment.exercises:
            for mistake in exercise.misconceptions:
                found.append((assignment.name, f"{exercise.name}:{mistake.id}", mistake.message,
                              columns))
    return found


@pytest.mark.parametrize(("assignment", "where", "sentence", "columns"), sentences(),
                         ids=lambda value: value if isinstance(value, str) and
                         len(value) < 60 else "")
def test_each_sentence_speaks_its_layout(assignment, where, sentence, columns):
    said = WRONG_CODE.sub("", sentence)
    foreign = (ROWS_ONLY if columns else COLUMNS_ONLY).search(said)
    assert foreign is None, f"{assignment} {where}: {foreign.group()!r} in {sentence!r}"
    assert FIX.search(sentence), f"{assignment} {where} does not say what to write: {sentence}"


def test_the_columns_unit_says_what_to_write_in_its_own_code():
    mistakes = {m.id: m.message for m in registry.get("udl_attention")
                .exercise("scaled_dot_product_self_attention").misconceptions}
    assert "divide K.T @ Q by np.sqrt(D_q) before softmax_cols" in mistakes["missing-scale"]
    assert "write softmax_cols(K.T @ Q)" in mistakes["softmax-wrong-axis"]
    assert "Q K^T" not in " ".join(mistakes.values())


def test_the_rows_catalogue_and_the_columns_catalogue_differ_where_the_layout_shows():
    for id, sentence in variants.COLUMNS.items():
        assert ROWS_ONLY.search(sentence) is None, id
        assert COLUMNS_ONLY.search(variants.CATALOGUE[id]) is None, id
    assert FIX.search(variants.CATALOGUE["hard-coded-size"])


def test_the_check_catches_a_sentence_in_the_other_layout():
    assert ROWS_ONLY.search("scale Q K^T by 1/sqrt(d_k)")
    assert COLUMNS_ONLY.search("write softmax_cols(K.T @ Q)")
    assert not FIX.search("The softmax normalises over the wrong axis.")
