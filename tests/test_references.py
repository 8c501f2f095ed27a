"""Stored references agree with solutions/, keep hidden cases out of the package, cover edges;
building them (`grader.authoring.building`) writes where the layout says."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from grader.authoring import building
from grader.course import references, registry
from grader.course.layout import ENV_PUBLIC, ENV_REFERENCES, ENV_SOLUTIONS, Layout
from grader.errors import ReferencesError
from grader.model import Visibility
from tests.conftest import of_assignment

NAMES = sorted(registry.assignments())


@pytest.mark.parametrize("name", [of_assignment(name) for name in NAMES])
def test_stored_references_match_the_solutions(name):
    assert building.verify(registry.get(name)) == []


@pytest.mark.parametrize("name", NAMES)
def test_hidden_file_has_every_case_and_public_file_only_public_ones(name):
    assignment = registry.get(name)
    hidden = references.load(assignment)
    public = references.load(assignment, public_only=True)
    every = {(e.name, c.name) for e in assignment.exercises for c in e.cases}
    shown = {(e.name, c.name) for e in assignment.exercises for c in e.cases
             if c.visibility is Visibility.PUBLIC}
    assert set(hidden.outputs) == every
    assert set(public.outputs) == shown
    assert 0 < len(shown) < len(every)
    assert hidden.solution_sha256 == references.file_sha256(Layout.current().solution(name))


@pytest.mark.parametrize("name", NAMES)
def test_every_exercise_has_public_and_hidden_cases(name):
    for exercise in registry.get(name).exercises:
        kinds = {case.visibility for case in exercise.cases}
        assert kinds == {Visibility.PUBLIC, Visibility.HIDDEN}, exercise.name


def test_a_changed_solution_is_caught(tmp_path, monkeypatch):
    shutil.copytree(Layout.current().solutions, tmp_path / "solutions")
    monkeypatch.setenv(ENV_SOLUTIONS, str(tmp_path / "solutions"))
    path = tmp_path / "solutions" / "udl_attention.py"
    # A solution that forgets to scale: its outputs and its hash both change.
    path.write_text(path.read_text().replace("np.sqrt(omega_q.shape[0])", "1.0"))
    problems = building.verify(registry.get("udl_attention"))
    assert any("built from another version" in p for p in problems)
    assert any("scaled_dot_product_self_attention/five-tokens differs" in p for p in problems)
    assert not any("softmax/vector differs" in p for p in problems)


def test_rebuilding_makes_them_agree_again(tmp_path, monkeypatch):
    shutil.copytree(Layout.current().solutions, tmp_path / "solutions")
    monkeypatch.setenv(ENV_SOLUTIONS, str(tmp_path / "solutions"))
    monkeypatch.setenv(ENV_PUBLIC, str(tmp_path / "public"))
    assignment = registry.get("attention_basics")
    hidden, public = building.build(assignment)
    assert hidden == tmp_path / "solutions" / "references" / "attention_basics.npz"
    assert public == tmp_path / "public" / "attention_basics.npz"
    assert building.verify(assignment) == []


def test_missing_reference_file_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_REFERENCES, str(tmp_path))
    with pytest.raises(ReferencesError, match="run `grade references build udl_attention`"):
        references.load(registry.get("udl_attention"))


def naive_softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("name, exercise, case, axis", [
    ("attention_basics", "softmax", "large-values", -1),
    ("udl_attention", "softmax", "large-values", -1),
    ("udl_attention", "softmax_cols", "large-values", 0),
])
def test_large_cases_overflow_a_softmax_that_does_not_subtract_the_maximum(name, exercise, case,
                                                                         axis):
    (x,) = registry.get(name).exercise(exercise).case(case).inputs()
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.all(np.isfinite(naive_softmax(x, axis)))


def test_large_score_cases_overflow_too():
    Q, K, _ = registry.get("attention_basics").exercise(
        "scaled_dot_product_attention").case("large-scores").inputs()
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.all(np.isfinite(naive_softmax(Q @ K.T / np.sqrt(Q.shape[1]))))


def test_edge_cases_are_there():
    basics = registry.get("attention_basics")
    Q, K, V = basics.exercise("scaled_dot_product_attention").case("d_k-differs-from-d_v").inputs()
    assert Q.shape[1] == K.shape[1] != V.shape[1]
    X, *_ = basics.exercise("causal_self_attention").case("one-token").inputs()
    assert X.shape[0] == 1
    X, *_ = registry.get("udl_attention").exercise(
        "multihead_scaled_self_attention").case("one-token").inputs()
    assert X.shape[1] == 1


def test_inputs_are_deterministic():
    case = registry.get("udl_attention").exercise("self_attention").case("wide")
    for a, b in zip(case.inputs(), case.inputs(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_references_file_is_read_once_until_it_changes(tmp_path, monkeypatch):
    assignment = registry.get("udl_attention")
    path = tmp_path / "udl_attention.npz"
    shutil.copy(references.hidden_path("udl_attention"), path)
    loads: list[object] = []
    real_load = np.load
    monkeypatch.setattr(np, "load", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    first = references.read(path, "udl_attention")
    key = next(iter(first.outputs))
    with pytest.raises(ValueError, match="read-only"):
        first.outputs[key][0][...] = 0.0  # shared between reads: nobody may write into it
    first.outputs.clear()  # each read has a mapping of its own
    second = references.read(path, "udl_attention")
    assert len(loads) == 1 and key in second.outputs and second.path == path
    # Rewritten with other outputs: read again, whatever the clock's resolution.
    changed = {k: tuple(a + 1.0 for a in v) for k, v in second.outputs.items()}
    references.write(path, assignment, second.solution_sha256, changed)
    third = references.read(path, "udl_attention")
    assert len(loads) == 2
    assert np.array_equal(third.outputs[key][0], second.outputs[key][0] + 1.0)
