"""The registry: the course assignments, instructor folders, and clear errors for bad specs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader.course import registry
from grader.errors import SpecError, UsageError
from grader.model import Assignment, Case, Exercise
from tests.conftest import ROOT

# Each test reads the registry afresh (it may declare assignments of its own).
pytestmark = pytest.mark.usefixtures("fresh_registry")


def test_this_environment_installs_no_plugin():
    """A bare interpreter of this environment, as README installs it, reads no entry point of
    the group, so `grade` never imports `importlib.metadata` for plugins."""
    probe = ("import sys; from grader.course import registry; "
             "print(registry._may_have_plugins(), 'importlib.metadata' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
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


def test_the_package_declarations_read_as_source_name_what_they_declare():
    """What `declaring` reads without importing is what importing declares: each module's
    exercises, with their signatures where they are written as literals (a helper, none)."""
    declared = {f"grader.assignments.{a.name}": {(e.name, e.signature) for e in a.exercises}
                for a in registry.assignments().values()}
    read = {module: registry._written(module) for module in registry._builtin()}
    assert {m: {name for name, _ in found} for m, found in read.items() if found} == {
        m: {name for name, _ in exercises} for m, exercises in declared.items()}
    assert all(signature is None or (name, signature) in declared[m]
               for m, found in read.items() for name, signature in found or ())
    assert {m for m, found in read.items() if found == set()} == {
        "grader.assignments.inputs", "grader.assignments.properties",
        "grader.assignments.variants"}


def test_declaring_imports_only_the_declarations_that_name_the_exercise():
    probe = ("import sys; from grader.course import registry; "
             "print(*registry.declaring('softmax', lambda s: s == '(x)')); "
             "print(*registry.declaring('softmax', lambda s: s == '(z)')); "
             "print(*registry.declaring('causal_mask')); print(*registry.declaring('nothing')); "
             "print(*sorted(m for m in sys.modules if m.startswith('grader.assignments.')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.splitlines() == [
        "attention_basics", "attention_basics udl_attention", "attention_basics", "",
        "grader.assignments.attention_basics grader.assignments.inputs "
        "grader.assignments.properties grader.assignments.udl_attention "
        "grader.assignments.variants"], done.stderr


def test_declaring_imports_every_declaration_where_one_cannot_be_read(monkeypatch):
    unreadable, read = "grader.assignments.torch_attention", registry._written
    monkeypatch.setattr(registry, "_written", lambda module: None if module == unreadable
                        else read(module))
    assert sorted(registry.declaring("causal_mask")) == sorted(registry.assignments())


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


def test_declaring_keeps_the_folders_and_the_loaded_registry(tmp_path, monkeypatch):
    (tmp_path / "relu_unit.py").write_text(DECLARATION)
    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path))
    assert list(registry.declaring("causal_mask")) == ["attention_basics", "relu_unit"]
    registry.assignments()
    assert registry.declaring("causal_mask") is registry.assignments()


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


def _bare_interpreter_says(*path: object) -> bool:
    """`_may_have_plugins` of `path` in a bare interpreter, with the finders of distributions it
    starts with: in this process another test may have imported importlib_metadata's backport,
    which takes `find_distributions` away from the standard finder (and the function then
    rightly answers True)."""
    probe = ("import sys; from grader.course import registry; "
             "print(registry._may_have_plugins(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", probe, *map(str, path)], capture_output=True,
                          text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return {"True\n": True, "False\n": False}[done.stdout]


@pytest.mark.parametrize("folder", ["relu_plugin-1.0.dist-info", "Relu_Plugin.egg-info"])
def test_an_installed_package_adds_an_assignment_by_its_entry_point(tmp_path, folder):
    assert _bare_interpreter_says(tmp_path) is False
    _plugin(tmp_path, folder, "relu-plugin")
    assert _bare_interpreter_says(tmp_path) is True
    probe = ("from grader.course import registry; "
             "print(registry.get('relu_unit').exercise('relu').points)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"})
    assert done.stdout == "1\n", done.stderr


def test_entry_points_of_other_groups_bring_no_metadata_reader(tmp_path):
    (tmp_path / "other-1.0.dist-info").mkdir()
    (tmp_path / "other-1.0.dist-info" / "entry_points.txt").write_text(
        "[console_scripts]\nother = other:main\n")
    (tmp_path / "a.zip").write_bytes(b"")
    assert _bare_interpreter_says(tmp_path, tmp_path / "gone") is False
    # a zip is read inside only by the reader, and so is another finder's distribution
    assert _bare_interpreter_says(tmp_path, tmp_path / "a.zip") is True
    assert registry._may_have_plugins([str(tmp_path)], [_OtherFinder()]) is True
    assert registry._may_have_plugins([str(tmp_path)], []) is True


class _OtherFinder:
    """A finder of distributions of its own, as importlib_metadata's backport adds."""

    def find_distributions(self, context=None):
        return iter(())
