"""The package's plan holds: import layers (import-linter's contracts in pyproject.toml), what
runs in the sandbox, and small modules that each say their one job."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "grader"
INSIDE = PACKAGE / "sandbox" / "inside"
MAX_LINES = 400


def lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the `grader` package found in `project`, with its pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(project)}
    command = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run([sys.executable, "-c", command, "--no-cache"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=120)


def test_import_contracts_hold():
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 kept, 0 broken" in run.stdout


@pytest.mark.parametrize(("where", "imports", "broken"), [
    # The spec layer reaching up into one submission's grading.
    ("course/upward.py", "from grader.pipeline import grading", "grader.course is not allowed"),
    # What runs in the sandbox importing the grader's data model.
    ("sandbox/inside/upward.py", "import grader.model",
     "What runs in the sandbox imports nothing"),
    # Similar code read from a result's JSON instead of the gradebook's `Result`.
    ("similarity/stored.py", "import json", "Nothing above the gradebook reads"),
    # Two modules of one package importing each other.
    ("pipeline/circle.py", "from grader.pipeline import scoring",
     "No cycles are allowed in grader.pipeline"),
])
def test_a_broken_layer_fails_the_contracts(tmp_path, where, imports, broken):
    shutil.copytree(PACKAGE, tmp_path / "grader",
                    ignore=shutil.ignore_patterns("__pycache__", "*.npz"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "grader" / where).write_text(f'"""A module out of place."""\n{imports}\n')
    if "circle" in where:
        scoring = tmp_path / "grader" / "pipeline" / "scoring.py"
        scoring.write_text(scoring.read_text() + "\nfrom grader.pipeline import circle\n")
    run = lint_imports(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert broken in run.stdout


def _imported(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_what_runs_inside_imports_the_standard_library_numpy_and_itself():
    """The sandbox mounts only grader/__init__.py and grader/sandbox/inside: anything else of
    the grader, or a package that is not numpy, would fail in there (or, worse, be found
    elsewhere on the worker's path)."""
    allowed_packages = set(sys.stdlib_module_names) | {"numpy", "__future__"}
    stray = {}
    for path in sorted(INSIDE.glob("*.py")):
        for name in _imported(path):
            top = name.split(".")[0]
            if top == "grader":
                if name in ("grader", "grader.sandbox") or name.startswith("grader.sandbox.inside"):
                    continue
            elif top in allowed_packages:
                continue
            stray.setdefault(path.name, set()).add(name)
    # Jupyter's own packages are imported by the kernel agent only inside a running kernel,
    # where ipykernel put them; the fast engine's stand-in never imports them.
    jupyter = {"IPython", "ipykernel", "matplotlib", "torch"}
    stray = {name: {m for m in found if m.split(".")[0] not in jupyter}
             for name, found in stray.items()}
    assert {name: found for name, found in stray.items() if found} == {}


def test_the_sandbox_mounts_only_the_inside_package():
    from grader.sandbox import isolation

    assert isolation.PACKAGE_ENTRIES == ("__init__.py", "sandbox/__init__.py", "sandbox/inside")


def test_every_module_is_small_and_says_its_job():
    too_long, undocumented = {}, []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            too_long[str(path.relative_to(ROOT))] = lines
        if not ast.get_docstring(ast.parse(path.read_text())) and lines > 5:
            undocumented.append(str(path.relative_to(ROOT)))
    assert too_long == {}
    assert undocumented == []


def test_the_sandbox_contract_forbids_every_module_outside_the_inside_package():
    """The forbidden contract is a list; this keeps it whole: a module added to the grader
    outside `grader.sandbox.inside` is forbidden to what runs inside until listed there."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (inside,) = [c for c in contracts["contracts"]
                 if c["type"] == "forbidden" and c["source_modules"] == ["grader.sandbox.inside"]]
    forbidden = tuple(inside["forbidden_modules"])
    modules = {".".join(path.relative_to(ROOT).with_suffix("").parts)
               for path in PACKAGE.rglob("*.py") if path.name != "__init__.py"}
    outside = {name for name in modules if not name.startswith("grader.sandbox.inside")
               and name not in ("grader.__main__",)}
    assert sorted(name for name in outside
                  if not any(name == f or name.startswith(f + ".") for f in forbidden)) == []


TESTS = ROOT / "tests"


def _test_modules_imported(source: str, package: tuple[str, ...] = ("tests",)) -> set[str]:
    """The test modules (`tests.test_*`) that `source`, a file of `package`, imports: at its
    top or inside a function, absolutely or relatively."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = list(package[:len(package) - node.level + 1]) if node.level else []
            module = ".".join(parts + ([node.module] if node.module else []))
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    dotted = [name.split(".") for name in names]
    return {".".join(parts[:2]) for parts in dotted
            if parts[0] == "tests" and len(parts) > 1 and parts[1].startswith("test_")}


def test_no_test_module_imports_another():
    """What test modules share lives in tests/helpers or conftest.py: a test module imported by
    another couples the two, and pytest imports it from there as well as collecting it."""
    assert _test_modules_imported(
        "from tests import test_batch, conftest\nimport tests.test_grading as g\n"
        "def f():\n    from .test_scaling import resident_mb\n    from . import test_release\n"
    ) == {"tests.test_batch", "tests.test_grading", "tests.test_scaling", "tests.test_release"}
    assert _test_modules_imported("from ..test_leaks import x", ("tests", "helpers")) == {
        "tests.test_leaks"}
    files = [*TESTS.glob("*.py"), *(TESTS / "helpers").glob("*.py")]
    found = {str(path.relative_to(ROOT)): imported for path in sorted(files)
             if (imported := _test_modules_imported(
                 path.read_text(), path.relative_to(ROOT).parent.parts))}
    assert found == {}


ABOVE_THE_GRADEBOOK = ("cli", "selfcheck.py", "classreport", "gradescope", "authoring",
                       "similarity", "batch", "term")
"""The parts of the package in the layers above `grader.gradebook`."""
READS_OTHER_JSON = {
    "grader/cli/served.py": "the messages of `grade serve`'s socket",
    "grader/term/exports/files.py": "its own record of the last export",
    "grader/gradescope/autograder.py": "Gradescope's submission metadata",
    "grader/authoring/release.py": "a notebook, as nbformat writes it",
    "grader/authoring/leaks.py": "a released notebook",
}
"""The modules above the gradebook that read JSON, and what they read: never a result."""


def _json_reads(source: str) -> int:
    """How many times `source` reads JSON: calls of json.load(s), or imports of them."""
    found = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "json" and \
                node.func.attr in ("load", "loads"):
            found += 1
        elif isinstance(node, ast.ImportFrom) and node.module == "json":
            found += sum(alias.name in ("load", "loads") for alias in node.names)
    return found


def test_nothing_above_the_gradebook_reads_a_results_json():
    """The gradebook hands back each result as the `Result` it recorded (`result_json.parse`):
    above it, only the JSON that is not a result is read, each allowed here with what it is."""
    assert _json_reads("import json\nstatus = json.loads(stored)['status']\n") == 1
    assert _json_reads("from json import loads as read\nread(stored)\n") == 1
    assert _json_reads("import json\njson.dumps(ranking)\n") == 0
    reading = set()
    for part in ABOVE_THE_GRADEBOOK:
        where = PACKAGE / part
        for path in sorted([where] if where.is_file() else where.rglob("*.py")):
            if _json_reads(path.read_text()):
                reading.add(str(path.relative_to(ROOT)))
    assert sorted(reading) == sorted(READS_OTHER_JSON)
