"""Stubs (module and notebook), solutions and declarations agree on names and signatures."""

from __future__ import annotations

import ast
import json

import pytest

from grader import registry
from tests.conftest import ROOT

NAMES = ["attention_basics", "udl_attention", "torch_attention"]


def definitions(source: str) -> dict[str, str]:
    """Top-level functions and classes -> their parameter list as written, "(a, b=1)"."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = f"({ast.unparse(node.args)})"
        elif isinstance(node, ast.ClassDef):
            init = next(n for n in node.body
                        if isinstance(n, ast.FunctionDef) and n.name == "__init__")
            found[node.name] = f"({ast.unparse(init.args)})"
    return found


def notebook_source(name: str) -> str:
    notebook = json.loads((ROOT / "exercises" / f"{name}.ipynb").read_text())
    return "\n".join("".join(cell["source"]) for cell in notebook["cells"]
                     if cell["cell_type"] == "code" and "def " in "".join(cell["source"]))


@pytest.mark.parametrize("name", NAMES)
def test_solution_module_and_notebook_stubs_match_the_declaration(name):
    declared = {e.name: e.signature for e in registry.get(name).exercises}
    solution = definitions((ROOT / "solutions" / f"{name}.py").read_text())
    stub = definitions((ROOT / "exercises" / f"{name}.py").read_text())
    in_notebook = definitions(notebook_source(name))
    for exercise, signature in declared.items():
        assert solution[exercise] == signature, f"solutions/{name}.py: {exercise}"
        assert stub[exercise] == signature, f"exercises/{name}.py: {exercise}"
        assert in_notebook[exercise] == signature, f"exercises/{name}.ipynb: {exercise}"
    assert set(stub) == set(declared)
    assert set(in_notebook) == set(declared)


@pytest.mark.parametrize("name", NAMES)
def test_every_stub_raises_not_implemented_and_provided_functions_are_given(name):
    provided = {e.name for e in registry.get(name).exercises if e.provided}
    tree = ast.parse((ROOT / "exercises" / f"{name}.py").read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            raises = [n for n in ast.walk(node) if isinstance(n, ast.Raise)]
            if node.name in provided:
                assert not raises, f"{node.name} is provided: give it ready-made"
            else:
                assert raises and all("NotImplementedError" in ast.unparse(r) for r in raises)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_names_its_assignment_and_checks_every_exercise(name):
    notebook = json.loads((ROOT / "exercises" / f"{name}.ipynb").read_text())
    assert notebook["metadata"]["grader"]["assignment"] == name
    assert notebook["nbformat"] == 4
    sources = ["".join(c["source"]) for c in notebook["cells"]]
    markdown = [c for c in notebook["cells"] if c["cell_type"] == "markdown"]
    assert len(markdown) >= 3
    for exercise in registry.get(name).exercises:
        stub_cell = next(s for s in sources if f"def {exercise.name}(" in s
                         or f"class {exercise.name}(" in s)
        assert stub_cell.rstrip().splitlines()[-1].startswith(f'check("{exercise.name}")')
