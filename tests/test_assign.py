"""`grade assign`: one master notebook becomes every file of an assignment, again after an edit;
a broken master is refused with the cell, the problem and the fix."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

from grader.authoring import building, master, skeleton
from grader.course import references, registry
from grader.course.layout import Layout
from grader.errors import SpecError
from tests.helpers.command import run
from tests.helpers.command import write_master as notebook_master

# Each test reads the registry afresh (it may declare assignments of its own).
pytestmark = pytest.mark.usefixtures("fresh_registry")


CONFIG = '''# ASSIGNMENT CONFIG
assignment = "relu_unit"
title = "ReLU and a layer"

[exercises]
relu = 1
dense = { points = 2, outputs = ["pre", "post"] }
'''
RELU = '''def relu(x):
    """Zero the negative entries."""
    # BEGIN SOLUTION
    return np.maximum(x, 0.0)
    # END SOLUTION


check("relu")
'''
DENSE = '''def dense(X, W):
    """Return (pre, post): X W, and its ReLU."""
    # BEGIN SOLUTION
    pre = X @ W
    return pre, relu(pre)
    # END SOLUTION
'''
EXAMPLES = '''print(relu(np.array([-1.5, 2.25, -0.125])))
print(relu([3.5, -4.0]))
pre, post = dense(np.array([[1.0, -2.0]]), W=np.array([[0.5], [1.5]]))
print(relu(np.array([-1.5, 2.25, -0.125])))  # the same call twice is one case
'''


def write_master(path: Path, cells: list[tuple[str, str]] | None = None,
                 metadata: dict | None = None) -> Path:
    """The ReLU master, or one of the given cells."""
    cells = cells if cells is not None else [
        ("raw", CONFIG), ("markdown", "# ReLU\n\nWrite `relu`."),
        ("code", "import numpy as np\n\nfrom grader import check\n\nLIMIT = 10.0\nN = 3\n"),
        ("code", RELU), ("code", DENSE), ("code", EXAMPLES)]
    return notebook_master(path, cells, metadata)


@pytest.fixture
def course(tmp_path) -> tuple[Path, Path]:
    path = write_master(tmp_path / "relu_master.ipynb")
    code, out, err = run("assign", str(path), "--out", str(tmp_path / "course"))
    assert (code, err) == (0, ""), err
    return path, tmp_path / "course"


def test_every_file_is_written_and_named(course):
    path, root = course
    code, out, _ = run("assign", str(path), "--out", str(root))
    assert out.splitlines() == [
        f"{root}/exercises/relu_unit.ipynb: the student's notebook",
        f"{root}/exercises/relu_unit.py: the student's module",
        f"{root}/solutions/relu_unit.py: the solution module",
        f"{root}/assignments/relu_unit.py: the declaration skeleton",
        f"{root}/solutions/references/relu_unit.npz: the hidden references",
        f"{root}/references/relu_unit.npz: the public references",
        "to grade it, run in your shell:",
        f"export GRADER_ASSIGNMENTS={root}/assignments",
        f"export GRADER_SOLUTIONS={root}/solutions",
        f"export GRADER_PUBLIC_REFERENCES={root}/references"]


def test_the_student_notebook_has_stubs_and_no_outputs(course):
    path, root = course
    notebook = json.loads((root / "exercises" / "relu_unit.ipynb").read_text())
    assert notebook["metadata"] == {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                   "language": "python"},
                                    "grader": {"assignment": "relu_unit"}}
    assert [c["cell_type"] for c in notebook["cells"]] == ["markdown", "code", "code", "code",
                                                           "code"]
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    assert "".join(code[1]["source"]) == RELU.replace(
        "    # BEGIN SOLUTION\n    return np.maximum(x, 0.0)\n    # END SOLUTION\n",
        '    raise NotImplementedError("relu")\n')
    text = json.dumps(notebook)
    assert "BEGIN SOLUTION" not in text and "ASSIGNMENT CONFIG" not in text
    for line in master.solution_lines(master.read(path)):
        assert line not in text


def test_the_modules_keep_definitions_imports_and_constants(course):
    _, root = course
    stub = (root / "exercises" / "relu_unit.py").read_text()
    solution = (root / "solutions" / "relu_unit.py").read_text()
    for text in (stub, solution):
        tree = ast.parse(text)
        kinds = [type(node).__name__ for node in tree.body]
        assert kinds == ["Expr", "Import", "Assign", "FunctionDef", "FunctionDef"]
        assert "from grader" not in text and "print(" not in text and "N = 3" not in text
        assert "LIMIT = 10.0" in text
    assert stub.count("    raise NotImplementedError(") == 2
    assert 'raise NotImplementedError("dense")' in stub
    assert "pre = X @ W\n    return pre, relu(pre)" in solution
    assert "BEGIN SOLUTION" not in solution


def test_the_skeleton_draws_its_cases_from_the_masters_calls(course):
    path, root = course
    declaration = root / "assignments" / "relu_unit.py"
    assert skeleton.untouched(declaration)
    assignment = registry.from_file(declaration)
    relu, dense = assignment.exercises
    assert (relu.signature, relu.points, relu.summary) == ("(x)", 1, "Zero the negative entries.")
    assert [(c.name, c.visibility.value) for c in relu.cases] == [
        ("notebook-example", "public"), ("notebook-example-2", "public"), ("practice", "public"),
        ("random", "hidden"), ("random-2", "hidden"), ("random-3", "hidden")]
    np.testing.assert_array_equal(relu.cases[0].inputs()[0], [-1.5, 2.25, -0.125])
    assert relu.cases[1].inputs() == ([3.5, -4.0],)  # a list, recorded as one
    # drawn: multiples of the example's size 3, from 6 to 9, never the example's own
    shapes = {case.inputs()[0].shape for case in relu.cases[3:]}
    assert shapes <= {(6,), (9,)} and {case.inputs()[0].dtype for case in relu.cases[2:]} == {
        np.dtype(np.float64)}
    # the practice case: drawn by the same rules from a seed of its own, public, no points
    practice = relu.case("practice")
    assert practice.inputs()[0].shape in {(6,), (9,), (12,), (15,)}
    assert not practice.earns_points and practice.seed not in {c.seed for c in relu.cases[3:]}
    assert (dense.signature, dense.outputs) == ("(X, W)", ("pre", "post"))
    X, W = dense.cases[0].inputs()  # W was passed by keyword
    np.testing.assert_array_equal(X, [[1.0, -2.0]])
    np.testing.assert_array_equal(W, [[0.5], [1.5]])


def test_the_references_come_from_the_solution_and_agree(course, monkeypatch):
    _, root = course
    layout = Layout(root)
    for name, value in layout.environment().items():
        monkeypatch.setenv(name, value)
    assignment = registry.get("relu_unit")
    assert building.verify(assignment) == []
    stored = references.load(assignment)
    pre, post = stored.get("dense", "notebook-example")
    np.testing.assert_array_equal(pre, [[-2.5]])
    np.testing.assert_array_equal(post, [[0.0]])
    assert stored.solution_sha256 == references.file_sha256(layout.solution("relu_unit"))
    public = references.load(assignment, public_only=True)
    assert ("relu", "random") not in public.outputs and ("relu", "random") in stored.outputs


def test_rerunning_after_an_edit_updates_files_and_references(course, monkeypatch):
    path, root = course
    declaration = root / "assignments" / "relu_unit.py"
    # The instructor edits the solution (a leaky ReLU) and adds an example call.
    notebook = json.loads(path.read_text())
    notebook["cells"][3]["source"] = RELU.replace("np.maximum(x, 0.0)",
                                                        "np.maximum(x, np.multiply(0.1, x))")
    notebook["cells"][5]["source"] += "print(relu(np.array([[-8.0, 8.0]])))\n"
    path.write_text(json.dumps(notebook))
    assert run("assign", str(path), "--out", str(root))[0] == 0
    assert "np.multiply(0.1, x)" in (root / "solutions" / "relu_unit.py").read_text()
    cases = [c.name for c in registry.from_file(declaration).exercises[0].cases]
    # the 2-D call is a pattern of its own: hidden cases of its own
    assert cases == ["notebook-example", "notebook-example-2", "notebook-example-3", "practice",
                     *(f"random{'' if n == 1 else f'-{n}'}" for n in range(1, 7))]
    for name, value in Layout(root).environment().items():
        monkeypatch.setenv(name, value)
    stored = references.load(registry.get("relu_unit"))
    np.testing.assert_allclose(stored.get("relu", "notebook-example")[0], [-0.15, 2.25, -0.0125])
    # Once the instructor edits the declaration, it is theirs: kept, and still used.
    declaration.write_text(declaration.read_text().replace('seed=1', 'seed=7'))
    code, out, _ = run("assign", str(path), "--out", str(root))
    assert code == 0
    assert f"{declaration}: the declaration, kept: you have edited it" in out
    assert "seed=7" in declaration.read_text()
    registry.assignments.cache_clear()
    assert building.verify(registry.get("relu_unit")) == []


def test_config_in_the_notebook_metadata(tmp_path):
    cells = [("code", "import numpy as np\n"), ("code", RELU.replace('check("relu")\n', "")),
             ("code", "relu(np.array([-1.0, 2.5]))\n")]
    path = write_master(tmp_path / "m.ipynb", cells, metadata={
        "grader": {"assignment": "relu_meta", "title": "T", "exercises": {"relu": 3}}})
    code, _, err = run("assign", str(path), "--out", str(tmp_path / "out"))
    assert (code, err) == (0, "")
    assignment = registry.from_file(tmp_path / "out" / "assignments" / "relu_meta.py")
    assert (assignment.title, assignment.exercises[0].points) == ("T", 3)
    notebook = json.loads((tmp_path / "out" / "exercises" / "relu_meta.ipynb").read_text())
    assert notebook["metadata"] == {"grader": {"assignment": "relu_meta"}}


@pytest.mark.parametrize("cells, message", [
    ([("code", RELU)], r"m\.ipynb: names no assignment and no graded functions; start the "
     r"notebook with a cell that begins with '# ASSIGNMENT CONFIG'"),
    ([("raw", CONFIG.replace('"relu_unit"', '"Relu Unit"'))],
     r"the assignment name 'Relu Unit' is not a lowercase identifier"),
    ([("raw", CONFIG.replace("relu = 1", "relu = 0"))],
     r"exercise 'relu' has no positive number of points; write relu = 2"),
    ([("raw", CONFIG.replace("relu = 1", "relu = { points = 1, hidden = true }"))],
     r"exercise 'relu' has unknown keys \['hidden'\]"),
    ([("raw", CONFIG), ("code", RELU.replace("    # END SOLUTION\n", "")), ("code", DENSE)],
     r"code cell 1, line 3: # BEGIN SOLUTION without # END SOLUTION; close every solution "
     r"region, and do not nest them"),
    ([("raw", CONFIG), ("code", "# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n" + RELU),
      ("code", DENSE)],
     r"code cell 1, line 1: a solution region outside a function or class; put the markers "
     r"inside the body of a graded function"),
    ([("raw", CONFIG), ("code", RELU)],
     r"dense is graded but no code cell defines it; define it, or remove it from the config"),
    ([("raw", CONFIG), ("code", RELU), ("code", "def dense(X, W):\n    return X @ W\n")],
     r"dense has no # BEGIN SOLUTION region, so students would get it ready-made; mark its "
     r"solution, or declare it provided = true"),
])
def test_a_broken_master_is_refused_with_the_fix(tmp_path, cells, message):
    path = write_master(tmp_path / "m.ipynb", cells)
    with pytest.raises(SpecError, match=message):
        master.read(path)
    code, out, err = run("assign", str(path), "--out", str(tmp_path / "out"))
    assert code == 1 and err.startswith("grade: error: ") and "Traceback" not in err


def test_a_master_that_does_not_run_names_its_cell(tmp_path):
    path = write_master(tmp_path / "m.ipynb", [
        ("raw", CONFIG), ("code", "import numpy as np\n"), ("code", RELU.replace(
            'check("relu")', "undefined_name")), ("code", DENSE)])
    code, _, err = run("assign", str(path), "--out", str(tmp_path / "out"))
    assert code == 1
    assert "code cell 2 error: line 8: NameError: name 'undefined_name' is not defined" in err
    assert "fix the master so that it runs from top to bottom" in err


def test_a_graded_function_never_called_has_no_case(tmp_path):
    path = write_master(tmp_path / "m.ipynb", [
        ("raw", CONFIG), ("code", "import numpy as np\nfrom grader import check\n"),
        ("code", RELU), ("code", DENSE), ("code", "relu(np.array([1.0, -1.0]))\n")])
    code, _, err = run("assign", str(path), "--out", str(tmp_path / "out"))
    assert code == 1
    assert "the master never calls dense on numbers, arrays or tensors" in err
    assert not (tmp_path / "out").exists()  # a run that fails writes nothing


ANSWER = "# BEGIN SOLUTION\nreturn np.maximum(x, 0.0)\n# END SOLUTION\n"


def _master_with(tmp_path, place: str) -> Path:
    """The default master with relu's answer (markers and line) put in one more place."""
    path = write_master(tmp_path / "m.ipynb")
    notebook = json.loads(path.read_text())
    cells = notebook["cells"]
    if place in ("markdown", "raw"):
        cells.insert(2, {"cell_type": place, "id": "extra", "metadata": {}, "source": ANSWER})
    elif place == "attachment":
        cells[1]["attachments"] = {"answer.txt": {"text/plain": ANSWER}}
    elif place == "markdown metadata":
        cells[1]["metadata"] = {"answer": ANSWER}
    elif place == "code tags":  # tags are kept in the student's notebook
        cells[2]["metadata"] = {"tags": [ANSWER]}
    elif place == "kernelspec":  # kept in the student's notebook
        notebook["metadata"]["kernelspec"]["display_name"] = ANSWER
    elif place == "solution line alone":
        cells[1]["source"] += "\n```python\n    return np.maximum(x, 0.0)\n```\n"
    elif place == "outputs":
        cells[3]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ANSWER}]
    path.write_text(json.dumps(notebook))
    return path


FIX = "move the solution into a code cell, or remove the markers"
LATER = ("remove it from the master: a solution goes between the markers, inside a function "
         "of a code cell")


@pytest.mark.parametrize("place, message", [
    ("markdown", f"cell 3 (markdown) holds a solution marker (# BEGIN SOLUTION) in its "
                 f"source; {FIX}"),
    ("raw", f"cell 3 (raw) holds a solution marker (# BEGIN SOLUTION) in its source; {FIX}"),
    ("attachment", f"cell 2 (markdown) holds a solution marker (# BEGIN SOLUTION) in its "
                   f"attachments; {FIX}"),
    ("markdown metadata", f"cell 2 (markdown) holds a solution marker (# BEGIN SOLUTION) in "
                          f"its metadata; {FIX}"),
    ("code tags", "the student's notebook would hold a solution marker (BEGIN SOLUTION), from "
                  f"cell 3 (code), its metadata; {LATER}"),
    ("kernelspec", "the student's notebook would hold a solution marker (BEGIN SOLUTION), "
                   f"from the notebook's metadata; {LATER}"),
    ("solution line alone", "the student's notebook would hold a line of the solution "
                            f"(return np.maximum(x, 0.0)), from cell 2 (markdown), its "
                            f"source; {LATER}"),
])
def test_assign_refuses_a_solution_outside_the_code_it_stubs(tmp_path, place, message):
    """`grade assign` stubs code cells only: a marked answer in a text cell went to students
    verbatim, and so did what the student's notebook keeps of metadata (tags, kernelspec)."""
    path = _master_with(tmp_path, place)
    code, out, err = run("assign", str(path), "--out", str(tmp_path / "out"))
    assert (code, out) == (1, "")
    assert err == f"grade: error: {path}: {message}\n"
    assert not (tmp_path / "out").exists()


def test_a_masters_outputs_never_reach_the_student(tmp_path):
    """A code cell's outputs (what the solution printed) are dropped with the execution
    counts, as they were before the scan: refusing them would ask the instructor to clear a
    notebook that `grade assign` clears anyway."""
    path = _master_with(tmp_path, "outputs")
    code, _, err = run("assign", str(path), "--out", str(tmp_path / "out"))
    assert (code, err) == (0, "")
    text = (tmp_path / "out" / "exercises" / "relu_unit.ipynb").read_text()
    assert "BEGIN SOLUTION" not in text and "np.maximum(x, 0.0)" not in text
    assert all(c.get("outputs", []) == [] and c.get("execution_count") is None
               for c in json.loads(text)["cells"])


def test_the_variables_to_paste_name_absolute_folders_when_out_is_relative(course,
                                                                          monkeypatch):
    path, root = course
    monkeypatch.chdir(root.parent)
    code, out, _ = run("assign", str(path), "--out", root.name)
    assert code == 0
    exports = [line for line in out.splitlines() if line.startswith("export ")]
    assert exports == [f"export GRADER_ASSIGNMENTS={root.resolve()}/assignments",
                       f"export GRADER_SOLUTIONS={root.resolve()}/solutions",
                       f"export GRADER_PUBLIC_REFERENCES={root.resolve()}/references"]
