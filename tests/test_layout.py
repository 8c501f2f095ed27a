"""One `Layout` says where an assignment's files are, and only `Layout.from_environment` reads
the `GRADER_*` variables that locate them."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from grader.course import layout, references, registry
from grader.course.layout import Layout
from grader.errors import SpecError
from grader.gradescope import autograder

PACKAGE = Path(layout.__file__).resolve().parents[1]
PROJECT = PACKAGE.parent
HANDOFFS = ("GRADER_LIMITS", "GRADER_CONFINE", "GRADER_ZYGOTE_", "GRADER_KERNEL_CHANNEL",
            "GRADER_KERNEL_OUTPUT", "GRADER_SANDBOX", "GRADER_PRELOAD")
"""What the grader hands its sandbox child, which reads it at start-up."""
READER = ("course/layout.py", "Layout.from_environment")


@pytest.fixture(autouse=True)
def no_layout_variables(monkeypatch):
    for name in layout.VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_a_course_folder_round_trips_through_the_environment(tmp_path):
    course = Layout(tmp_path)
    assert course.environment() == {
        "GRADER_ASSIGNMENTS": f"{tmp_path}/assignments",
        "GRADER_SOLUTIONS": f"{tmp_path}/solutions",
        "GRADER_PUBLIC_REFERENCES": f"{tmp_path}/references"}
    assert Layout.from_environment(course.environment()) == course
    assert course.hidden("unit") == tmp_path / "solutions" / "references" / "unit.npz"
    assert course.declaration("unit") == tmp_path / "assignments" / "unit.py"
    assert course.module("unit") == tmp_path / "exercises" / "unit.py"


def test_the_project_round_trips_with_no_variable_at_all():
    project = Layout(PROJECT)
    assert project.is_project and project.environment() == {}
    assert Layout.from_environment({}) == project == Layout.from_environment()
    assert project.declarations == PACKAGE / "assignments"
    assert project.public("udl_attention") == PACKAGE / "course" / "public" / "udl_attention.npz"
    assert project.hidden("udl_attention") == \
        PROJECT / "solutions" / "references" / "udl_attention.npz"
    assert (project.declaration_folders, project.autograder) == ((), Path("/autograder"))


def test_every_variable_round_trips(tmp_path):
    """A Gradescope-like layout: references away from the solutions, two declaration folders
    (an empty entry between them is no folder), another autograder root."""
    env = {"GRADER_ASSIGNMENTS": os.pathsep.join([str(tmp_path / "a"), "", str(tmp_path / "b")]),
           "GRADER_SOLUTIONS": str(tmp_path / "course" / "solutions"),
           "GRADER_REFERENCES": str(tmp_path / "source" / "references"),
           "GRADER_PUBLIC_REFERENCES": str(tmp_path / "public"),
           "GRADER_AUTOGRADER_ROOT": str(tmp_path / "autograder")}
    found = Layout.from_environment(env)
    assert found.root == tmp_path / "course"
    assert found.declaration_folders == (tmp_path / "a", tmp_path / "b")
    assert found.hidden("x") == tmp_path / "source" / "references" / "x.npz"
    assert found.environment() == {**env, "GRADER_ASSIGNMENTS": os.pathsep.join(
        [str(tmp_path / "a"), str(tmp_path / "b")])}
    assert Layout.from_environment(found.environment()) == found


def test_the_variables_are_read_when_asked_not_at_import(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_SOLUTIONS", str(tmp_path / "solutions"))
    monkeypatch.setenv("GRADER_PUBLIC_REFERENCES", str(tmp_path / "public"))
    monkeypatch.setenv("GRADER_AUTOGRADER_ROOT", str(tmp_path / "ag"))
    assert references.solution_file("unit") == tmp_path / "solutions" / "unit.py"
    assert references.hidden_path("unit") == tmp_path / "solutions" / "references" / "unit.npz"
    assert references.public_path("unit") == tmp_path / "public" / "unit.npz"
    assert autograder.autograder_root() == tmp_path / "ag"
    monkeypatch.setenv("GRADER_REFERENCES", str(tmp_path / "elsewhere"))
    assert references.hidden_path("unit") == tmp_path / "elsewhere" / "unit.npz"


def test_the_registry_reads_the_declaration_folders_of_the_layout(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "broken.py").write_text("ASSIGNMENT = 1\n")
    monkeypatch.setenv("GRADER_ASSIGNMENTS", os.pathsep + str(tmp_path / "a"))
    registry.assignments.cache_clear()
    try:
        with pytest.raises(SpecError, match=f"{tmp_path}/a/broken.py: defines no ASSIGNMENT"):
            registry.assignments()
    finally:
        registry.assignments.cache_clear()


def _constants(trees: dict[str, ast.Module]) -> dict[str, str]:
    """Every module-level name bound to a `GRADER_*` string, through aliases and imports."""
    values: dict[str, str] = {}
    for _ in range(3):  # an alias of an alias of a constant
        for tree in trees.values():
            for node in tree.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                        and isinstance(node.targets[0], ast.Name):
                    value = _value(node.value, values)
                    if value:
                        values[node.targets[0].id] = value
                elif isinstance(node, ast.ImportFrom):
                    for alias in node.names:
                        if alias.asname and alias.name in values:
                            values[alias.asname] = values[alias.name]
    return values


def _value(node: ast.expr, constants: dict[str, str]) -> str | None:
    """The `GRADER_*` name an expression stands for, if it is one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) \
            and node.value.startswith("GRADER_"):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.Attribute):
        return constants.get(node.attr)
    return None


def environment_reads(package: Path) -> dict[tuple[str, str], set[str]]:
    """(file, function) -> the `GRADER_*` names it reads from a mapping or `getenv`:
    `m.get(X)`, `m.pop(X)`, `m.setdefault(X)`, `getenv(X)`, `m[X]`, `X in m`."""
    trees = {path.relative_to(package).as_posix(): ast.parse(path.read_text(), str(path))
             for path in sorted(package.rglob("*.py"))}
    constants = _constants(trees)
    found: dict[tuple[str, str], set[str]] = {}

    def visit(node: ast.AST, where: tuple[str, str]) -> None:
        key: ast.expr | None = None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("get", "pop", "setdefault", "getenv", "getenvb"):
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = node.slice
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
            key = node.left
        value = _value(key, constants) if key is not None else None
        if value:
            found.setdefault(where, set()).add(value)
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                scope = where[1] if where[1] != "<module>" else ""
                inner = (where[0], f"{scope}.{child.name}".lstrip("."))
            visit(child, inner)

    for file, tree in trees.items():
        visit(tree, (file, "<module>"))
    return found


def test_only_the_layout_reads_the_variables_that_locate_files():
    reads = environment_reads(PACKAGE)
    locating = {where: {n for n in names if not n.startswith(HANDOFFS)}
                for where, names in reads.items()}
    assert {where: names for where, names in locating.items() if names} == {
        READER: set(layout.VARIABLES)}
    # The handoffs are read where the sandbox child starts (and where the grader asks
    # whether it is that child: check() and the self-check a released file carries, which
    # do nothing while graded), nowhere else.
    handoffs = {where[0] for where, names in reads.items() if names - locating[where]}
    assert all(file.startswith("sandbox/inside/")
               or file in ("__init__.py", "selfcheck.py", "course/carried.py")
               for file in handoffs), handoffs


def test_the_scan_finds_a_read_anywhere(tmp_path):
    """The scan above can fail: each way of reading a variable is found, in its function."""
    (tmp_path / "names.py").write_text('SOLUTIONS = "GRADER_SOLUTIONS"\nROOT = SOLUTIONS\n')
    (tmp_path / "sneaky.py").write_text(
        "import os\nfrom names import ROOT as HERE\n"
        "def a():\n    return os.environ.get('GRADER_REFERENCES')\n"
        "class B:\n    def c(self, env):\n        return env[HERE], os.getenv('GRADER_X')\n"
        "def d():\n    return 'GRADER_AUTOGRADER_ROOT' in os.environ\n"
        "def e():\n    return os.environ.pop('GRADER_LIMITS'), f'set {HERE}'\n")
    assert environment_reads(tmp_path) == {
        ("sneaky.py", "a"): {"GRADER_REFERENCES"},
        ("sneaky.py", "B.c"): {"GRADER_SOLUTIONS", "GRADER_X"},
        ("sneaky.py", "d"): {"GRADER_AUTOGRADER_ROOT"},
        ("sneaky.py", "e"): {"GRADER_LIMITS"}}


def test_the_project_named_relatively_needs_no_variable(monkeypatch):
    monkeypatch.chdir(PROJECT)
    assert Layout(Path(".")).environment() == {}
    monkeypatch.chdir(PROJECT / "solutions")
    assert Layout(Path("..")).environment() == {}
