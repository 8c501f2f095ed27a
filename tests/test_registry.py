"""The registry: the course assignments, instructor folders, and clear errors for bad specs."""

from __future__ import annotations

import importlib.machinery
import subprocess
import sys

import pytest

from grader.course import registry
from grader.errors import SpecError, UsageError
from grader.model import Assignment, Case, Exercise

# Each test reads the registry afresh (it may declare assignments of its own).
pytestmark = pytest.mark.usefixtures("fresh_registry")


@pytest.fixture
def bare_path(monkeypatch, tmp_path):
    """`sys.path` holding `tmp_path` only, and the finders of distributions a bare interpreter
    has: what another test of the same process left on the path (a folder, a zip) or in
    `sys.meta_path` (importlib_metadata's backport adds a finder of its own, which
    `_may_have_plugins` rightly answers with True) is out of sight. The modules these tests
    import are imported already or live in `tmp_path`."""
    monkeypatch.setattr(sys, "meta_path", [
        finder for finder in sys.meta_path if not hasattr(finder, "find_distributions")
        or finder is importlib.machinery.PathFinder])
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    return tmp_path


def test_this_environment_installs_no_plugin():
    """A bare interpreter of this environment, as README installs it, reads no entry point of
    the group, so `grade` never imports `importlib.metadata` for plugins."""
    probe = ("import sys; from grader.course import registry; "
             "print(registry._may_have_plugins(), 'importlib.metadata' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["False", "False"], done.stderr


def test_the_four_assignments_with_their_fixed_functions():
    known = registry.assignments()
    assert sorted(known) == ["attention_basics", "positional_encoding", "torch_attention",
                             "udl_attention"]
    assert [e.name for e in known["attention_basics"].exercises] == [
        "softmax", "qkv_projections", "scaled_dot_product_attention", "causal_mask",
        "causal_self_attention"]
    assert known["attention_basics"].exercise("scaled_dot_product_attention").signature == \
        "(Q, K, V, mask=None)"
    assert [e.name for e in known["udl_attention"].exercises] == [
        "softmax", "softmax_cols", "self_attention", "scaled_dot_product_self_attention",
        "multihead_scaled_self_attention"]
    torch_block = known["torch_attention"].exercise("SimpleEncoderBlock")
    assert torch_block.kind == "class"
    assert known["torch_attention"].requires == ("torch",)
    assert known["udl_attention"].max_score == 10.0
    assert [(e.name, e.signature, e.points) for e in known["positional_encoding"].exercises] == [
        ("sinusoidal_encoding", "(seq_len, d_model)", 2),
        ("add_positional_encoding", "(X)", 1),
        ("causal_attention_with_positions", "(X, W_q, W_k, W_v)", 3)]


def test_unknown_assignment_lists_the_known_ones():
    with pytest.raises(UsageError, match="unknown assignment 'nope'; known: attention_basics"):
        registry.get("nope")


DECLARATION = '''
from grader.assignments.inputs import normal
from grader.model import Assignment, Case, Exercise, Visibility

ASSIGNMENT = Assignment(name="relu_unit", title="ReLU", exercises=(
    Exercise(name="relu", signature="(x)", points=1,
             cases=(Case("v", normal((4,)), visibility=Visibility.PUBLIC),
                    Case("w", normal((2, 3))))),
))
'''


def test_an_instructor_folder_adds_an_assignment(tmp_path, monkeypatch):
    (tmp_path / "relu_unit.py").write_text(DECLARATION)
    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path))
    assert registry.get("relu_unit").exercise("relu").points == 1


def test_a_declaration_without_assignment_is_named(tmp_path, monkeypatch):
    (tmp_path / "empty.py").write_text("X = 1\n")
    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path))
    with pytest.raises(SpecError, match=r"empty\.py: defines no ASSIGNMENT"):
        registry.assignments()


def test_a_broken_declaration_is_named(tmp_path, monkeypatch):
    (tmp_path / "broken.py").write_text("import nothing_of_that_name\n")
    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path))
    with pytest.raises(SpecError, match=r"broken\.py: importing the declaration failed"):
        registry.assignments()


def _exercise(**changes):
    fields = dict(name="f", signature="(x)", points=1.0,
                  cases=(Case("a", lambda rng: (1,)), Case("b", lambda rng: (2,))))
    fields.update(changes)
    return Exercise(**fields)


@pytest.mark.parametrize("exercise, message", [
    (_exercise(cases=(Case("a", lambda rng: (1,)), Case("a", lambda rng: (2,)))), "distinct names"),
    (_exercise(points=0), "positive number of points"),
    (_exercise(kind="method"), "use 'function' or 'class'"),
    (_exercise(signature="(x,,)"), "invalid signature"),
])
def test_validation_names_the_problem(exercise, message):
    with pytest.raises(SpecError, match=message):
        registry.validate(Assignment("a", "A", (exercise,)), "decl.py")


def test_a_credit_other_than_the_two_is_named():
    with pytest.raises(SpecError, match=r"decl\.py: a has credit 'own code'; use 'as written' "
                                        r"or 'own-code'"):
        registry.validate(Assignment("a", "A", (_exercise(),), credit="own code"), "decl.py")


def test_duplicate_assignment_names_are_refused(tmp_path, monkeypatch):
    (tmp_path / "again.py").write_text(DECLARATION.replace("relu_unit", "udl_attention"))
    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path))
    with pytest.raises(SpecError, match="'udl_attention' is already declared"):
        registry.assignments()


def _plugin(site, folder: str, name: str) -> None:
    """An installed distribution whose entry point declares `relu_unit` (from `module`)."""
    (site / "relu_plugin.py").write_text(DECLARATION)
    info = site / folder
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{registry.ENTRY_POINT_GROUP}]\nrelu_unit = relu_plugin:ASSIGNMENT\n")


@pytest.mark.parametrize("folder", ["relu_plugin-1.0.dist-info", "Relu_Plugin.egg-info"])
def test_an_installed_package_adds_an_assignment_by_its_entry_point(bare_path, folder):
    assert registry._may_have_plugins() is False, sys.path
    _plugin(bare_path, folder, "relu-plugin")
    assert registry._may_have_plugins() is True
    assert registry.get("relu_unit").exercise("relu").points == 1


def test_entry_points_of_other_groups_bring_no_metadata_reader(bare_path):
    (bare_path / "other-1.0.dist-info").mkdir()
    (bare_path / "other-1.0.dist-info" / "entry_points.txt").write_text(
        "[console_scripts]\nother = other:main\n")
    (bare_path / "a.zip").write_bytes(b"")
    assert registry._may_have_plugins() is False
    sys.path.append(str(bare_path / "a.zip"))  # read inside only by the reader
    assert registry._may_have_plugins() is True
