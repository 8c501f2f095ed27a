"""Stubs (module and notebook), solutions and declarations agree on names and signatures."""

from __future__ import annotations

import ast
import json

import pytest

from grader.course import registry
from tests.conftest import ROOT

NAMES = sorted(registry.assignments())


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


def notebooks(name: str) -> dict[str, set[str]]:
    """Each stub notebook of an assignment -> the exercises declared to live in it."""
    found: dict[str, set[str]] = {}
    for exercise in registry.get(name).exercises:
        found.setdefault(exercise.notebook or f"{name}.ipynb", set()).add(exercise.name)
    return found


def notebook_source(file: str) -> str:
    notebook = json.loads((ROOT / "exercises" / file).read_text())
    return "\n".join("".join(cell["source"]) for cell in notebook["cells"]
                     if cell["cell_type"] == "code" and "def " in "".join(cell["source"]))


@pytest.mark.parametrize("name", NAMES)
def test_solution_module_and_notebook_stubs_match_the_declaration(name):
    declared = {e.name: e.signature for e in registry.get(name).exercises}
    solution = definitions((ROOT / "solutions" / f"{name}.py").read_text())
    stub = definitions((ROOT / "exercises" / f"{name}.py").read_text())
    for exercise, signature in declared.items():
        assert solution[exercise] == signature, f"solutions/{name}.py: {exercise}"
        assert stub[exercise] == signature, f"exercises/{name}.py: {exercise}"
    assert set(stub) == set(declared)
    provided = {e.name for e in registry.get(name).exercises if e.provided}
    for file, exercises in notebooks(name).items():
        in_notebook = definitions(notebook_source(file))
        for exercise in exercises:
            assert in_notebook[exercise] == declared[exercise], f"exercises/{file}: {exercise}"
        # A notebook holds its own exercises, and may repeat what is given ready-made.
        assert exercises <= set(in_notebook) <= exercises | provided, file


def test_the_book_assignment_follows_the_books_two_notebooks():
    assert notebooks("udl_attention") == {
        "udl_attention_12_1.ipynb": {"softmax", "softmax_cols", "self_attention",
                                     "scaled_dot_product_self_attention"},
        "udl_attention_12_2.ipynb": {"multihead_scaled_self_attention"}}
    assert not (ROOT / "exercises" / "udl_attention.ipynb").exists()
    metadata = json.loads((ROOT / "exercises" / "udl_attention_12_2.ipynb").read_text())
    assert metadata["metadata"]["grader"] == {"assignment": "udl_attention"}


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
    for file, exercises in notebooks(name).items():
        notebook = json.loads((ROOT / "exercises" / file).read_text())
        assert notebook["metadata"]["grader"]["assignment"] == name
        assert notebook["nbformat"] == 4
        sources = ["".join(c["source"]) for c in notebook["cells"]]
        markdown = [c for c in notebook["cells"] if c["cell_type"] == "markdown"]
        assert len(markdown) >= 3
        for exercise in exercises:
            stub_cell = next(s for s in sources if f"def {exercise}(" in s
                             or f"class {exercise}(" in s)
            assert stub_cell.rstrip().splitlines()[-1].startswith(f'check("{exercise}")')


@pytest.mark.parametrize("name", NAMES)
def test_every_file_a_released_stub_names_is_in_the_release(name):
    """`grade release` writes the module, the notebooks and the check data side by side: a
    file named in them (`grade check udl_attention.py`) is one of those, with no folder."""
    import re

    released = {f"{name}.py", *notebooks(name), f"{name}.check.npz"}
    named = set()
    for file in sorted(released - {f"{name}.check.npz"}):
        text = (ROOT / "exercises" / file).read_text()
        named |= set(re.findall(r"[\w./-]+\.(?:py|ipynb|npz)\b", text))
    named = {path for path in named if not path.startswith(("np.", "torch."))}
    assert named and named <= released, sorted(named - released)
