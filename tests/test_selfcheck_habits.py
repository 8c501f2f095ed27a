"""check() names, before hand-in, what the grade would cost: real students' habits of taking a
size from the notebook (a global such as H_D, D or N) or writing it as a number (`/ 2`), with
the ids and sentences `grade run` gives; the released notebooks filled in with the solutions
are clean. The habits are written into the released notebooks (exercises/) and run in a real
Jupyter kernel, as a student runs them."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter
from nbformat.v4 import new_code_cell

from grader import selfcheck
from grader.authoring import hidden_values
from grader.course import references, registry
from grader.model import Visibility
from grader.pipeline import grading
from grader.sandbox.limits import Limits
from tests.conftest import ROOT

PART_1, PART_2 = "udl_attention_12_1.ipynb", "udl_attention_12_2.ipynb"
SOLUTIONS = (ROOT / "solutions" / "udl_attention.py").read_text(encoding="utf-8")
# The book's notebooks set the example's sizes as globals; part 1's released copy leaves
# them to the book, so a student's part 1 has them from the book's first cells.
BOOK_GLOBALS = "N = 3\nD = 4\n"
HEADS = '''def multihead_scaled_self_attention(X,
                                    omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1,
                                    omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2,
                                    omega_c):
    heads = []
    for ov, oq, ok, bv, bq, bk in ((omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1),
                                   (omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2)):
        Q = oq @ X + bq
        K = ok @ X + bk
        V = ov @ X + bv
        heads.append(V @ softmax_cols(K.T @ Q / SCALE))
    return omega_c @ np.vstack(heads)
'''
SQRT_H_D = HEADS.replace("SCALE", "np.sqrt(H_D)")  # 5 of 23 real students
LITERAL_2 = HEADS.replace("SCALE", "2")  # the book's True values, digit for digit
SQRT_D = '''def scaled_dot_product_self_attention(X, omega_v, omega_q, omega_k,
                                      beta_v, beta_q, beta_k):
    Q = omega_q @ X + beta_q
    K = omega_k @ X + beta_k
    V = omega_v @ X + beta_v
    return V @ softmax_cols(K.T @ Q / np.sqrt(D))
'''
ONES_N = '''def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    Q = omega_q @ X + beta_q @ np.ones((1, N))
    K = omega_k @ X + beta_k @ np.ones((1, N))
    V = omega_v @ X + beta_v @ np.ones((1, N))
    return V @ softmax_cols(K.T @ Q)
'''
SENTENCE = ("Take sizes from the shapes of the inputs inside the function: the notebook's "
            "globals fit only its example.")


def solution(name: str) -> str:
    """The solution module's definition of `name`, after those it calls."""
    definitions = dict(re.findall(r"^def (\w+)\((.*?)(?=^def |\Z)", SOLUTIONS, re.M | re.S))
    needed = [name]
    for called in needed:
        needed += [other for other in definitions if other not in needed
                   and f"{other}(" in definitions[called]]
    return "".join(f"def {n}({definitions[n]}" for n in reversed(needed))


def filled(file: str, folder: Path, functions: dict[str, str], first: str = "",
           upto: int | None = None) -> nbformat.NotebookNode:
    """The released notebook `file` with each stub of `functions` replaced by the given code
    (its check() line kept), `first` run after the imports, and only its first `upto` cells;
    written into `folder`, where the kernel starts, as Jupyter starts it."""
    notebook = nbformat.read(ROOT / "exercises" / file, as_version=4)
    for cell in notebook.cells:
        for name, code in functions.items():
            if cell.cell_type == "code" and f"def {name}(" in cell.source:
                checks = [line for line in cell.source.splitlines() if line.startswith("check(")]
                cell.source = "\n".join([code, *checks])
    if first:
        notebook.cells.insert(2, new_code_cell(first))
    if upto is not None:
        notebook.cells = notebook.cells[:upto]
    nbformat.write(notebook, folder / file)
    return notebook


def shown(notebook: nbformat.NotebookNode, folder: Path) -> dict[str, str]:
    """Run the notebook in a real kernel; what each check("name") cell displays, by name (the
    last cell's, when several check one function)."""
    NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    pages = {}
    for cell in notebook.cells:
        called = re.search(r'^check\("(\w+)"\)', cell.source, re.M)
        html = [o.data["text/html"] for o in cell.get("outputs", [])
                if o.output_type == "display_data"]
        if called and html:
            pages[called.group(1)] = html[0]
    return pages


def again(notebook: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """The notebook with a last cell that checks `name` again, once every cell has run (part
    2's check() line sits under the stub, above the worked example that sets H_D)."""
    notebook.cells.append(new_code_cell(f'check("{name}")'))
    return notebook


def summary(page: str) -> str:
    """The compact view's lines, as the student reads them above the full report."""
    head = page.split("<details>")[0]
    return re.sub(r"<[^>]+>", "", head).replace("&#x27;", "'").replace("&quot;", '"')


@pytest.mark.slow
def test_part_1s_habits_are_named_in_the_notebook(tmp_path):
    notebook = filled(PART_1, tmp_path, {"self_attention": ONES_N,
                                         "scaled_dot_product_self_attention": SQRT_D,
                                         "softmax": solution("softmax")}, first=BOOK_GLOBALS)
    pages = shown(notebook, tmp_path)
    ones = summary(pages["self_attention"])
    assert ones.startswith("✗ self_attention: 1 of 2 public checks pass.\n")
    assert ("[uses-global] self_attention reads the notebook's global N = 3, where "
            f"X.shape[1] is 7. {SENTENCE}") in ones
    assert "The shapes do not fit together" not in ones  # the cause is named: no red herring
    sqrt_d = summary(pages["scaled_dot_product_self_attention"])
    assert ("[uses-global] scaled_dot_product_self_attention reads the notebook's global "
            f"D = 4, where X.shape[0] is 5. {SENTENCE}") in sqrt_d
    assert summary(pages["softmax"]).count("\n") == 0  # a passing check is one line
    assert "<details>" not in pages["softmax"]


@pytest.mark.slow
def test_part_2s_habits_are_named_in_the_notebook(tmp_path):
    name = "multihead_scaled_self_attention"
    sqrt_h_d = summary(shown(again(filled(PART_2, tmp_path, {name: SQRT_H_D}), name),
                             tmp_path)[name])
    assert sqrt_h_d.startswith(f"✗ {name}: 1 of 2 public checks pass.\n  practice (other "
                               "sizes than the notebook's example, worth no points):\n")
    assert (f"[uses-global] {name} reads the notebook's global H_D = 4, where "
            f"omega_v1.shape[0] is 5. {SENTENCE}") in sqrt_h_d
    notebook = again(filled(PART_2, tmp_path, {name: LITERAL_2}), name)
    literal = shown(notebook, tmp_path)[name]
    assert (f"[hard-coded-size] {name} writes sizes as numbers: `2` on line 11 stands for the "
            "square root of omega_v1.shape[0], which is 4 in the notebook's example, but 5 in "
            "this case.") in summary(literal)
    # The full report is one click away, and the lines keep their monospace when exported.
    assert '<details><summary style="cursor: pointer">The full report</summary>' in literal
    assert literal.startswith('<div class="grader-check"><pre style="font-family: '
                              'ui-monospace')
    exported, _ = HTMLExporter().from_notebook_node(notebook)  # as nbconvert --to html
    assert exported.count('<div class="grader-check"><pre style="font-family: ui-monospace') == 3


@pytest.mark.slow
def test_a_global_whose_cell_has_not_run_says_which_cell_and_is_named(tmp_path):
    """Run top to bottom, part 2's check() line comes before the worked example that sets
    H_D: the example's check says which cell to run, and the practice case names the global
    with the value the notebook gives it."""
    name = "multihead_scaled_self_attention"
    notebook = filled(PART_2, tmp_path, {name: SQRT_H_D})
    example = next(i for i, cell in enumerate(notebook.cells, 1) if "H_D = " in cell.source)
    page = summary(shown(notebook, tmp_path)[name])
    assert page.startswith(f"✗ {name}: 0 of 2 public checks pass.\n  practice")
    assert (f"[uses-global] {name} reads the notebook's global H_D = 4, where "
            f"omega_v1.shape[0] is 5. {SENTENCE}") in page
    assert (f"H_D is defined in cell {example} (Worked example (seed notebook)) of "
            f"{PART_2}; run it first.\n    raised NameError: name 'H_D' is not defined") in page


@pytest.mark.slow
def test_the_solutions_in_the_released_notebooks_are_clean(tmp_path):
    one = shown(filled(PART_1, tmp_path, {
        name: solution(name) for name in ("softmax", "self_attention",
                                          "scaled_dot_product_self_attention")},
        first=BOOK_GLOBALS), tmp_path)
    (tmp_path / "2").mkdir()
    two = shown(filled(PART_2, tmp_path / "2", {
        "multihead_scaled_self_attention": solution("multihead_scaled_self_attention")}),
        tmp_path / "2")
    pages = {**one, **two}
    assert sorted(pages) == ["multihead_scaled_self_attention", "scaled_dot_product_self_attention",
                             "self_attention", "softmax", "softmax_cols"]
    for name, page in pages.items():
        line = summary(page)
        assert line.startswith(f"✓ {name}: ") and "\n" not in line, line
        assert "<details>" not in page


def _module(tmp_path: Path, source: str):
    """A module holding `source` first, so that its lines are a notebook cell's, then the
    notebook's globals; imported as a student's module is (its source readable, as IPython
    keeps a cell's)."""
    path = tmp_path / "student.py"
    path.write_text(source + "\n\nimport numpy as np\nfrom solutions_cols import softmax_cols\n"
                    "N, D, H_D = 6, 8, 4\n")
    (tmp_path / "solutions_cols.py").write_text(solution("softmax_cols").replace(
        "def softmax_cols", "import numpy as np\n\ndef softmax_cols"))
    sys.path.insert(0, str(tmp_path))
    try:
        spec = importlib.util.spec_from_file_location("student", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("solutions_cols", None)
    return module


@pytest.mark.parametrize("source, expected", [
    (SQRT_H_D, "uses-global"), (LITERAL_2, "hard-coded-size"), (HEADS.replace(
        "SCALE", "np.sqrt(omega_q1.shape[0])"), None)])
def test_check_and_grade_run_name_the_same_mistake(tmp_path, source, expected):
    """check() in the kernel and `grade run` on the same code say the same of the practice
    case: the id and the sentence, word for word."""
    module = _module(tmp_path, source)
    name = "multihead_scaled_self_attention"
    checked = selfcheck.run(name, getattr(module, name))
    practice = {c.name: c for c in checked.exercises[0].checks}["practice"]
    assert (practice.diagnosis.id if practice.diagnosis else None) == expected
    notebook = tmp_path / "student.ipynb"
    cells = ["import numpy as np\nN, D, H_D = 6, 8, 4\n", solution("softmax_cols"), source]
    nbformat.write(nbformat.v4.new_notebook(cells=[new_code_cell(c) for c in cells]), notebook)
    udl = registry.get("udl_attention")
    graded = grading.grade_files([notebook], udl, grading.Options(
        public_only=True, limits=Limits(cell_timeout=10, call_timeout=10)))
    (exercise,) = [e for e in graded.exercises if e.name == name]
    ran = {c.name: c for c in exercise.checks}["practice"]
    assert ran.diagnosis == practice.diagnosis


def _sizes(inputs: object) -> list[tuple[int, ...]]:
    """The sizes a case's inputs carry: each array's shape, each whole number alone."""
    if isinstance(inputs, (tuple, list)):
        return [size for item in inputs for size in _sizes(item)]
    if isinstance(inputs, dict):
        return [size for item in inputs.values() for size in _sizes(item)]
    if isinstance(inputs, np.ndarray):
        return [inputs.shape]
    return [(inputs,)] if isinstance(inputs, int) and not isinstance(inputs, bool) else []


@pytest.mark.parametrize("name", ["udl_attention", "attention_basics", "positional_encoding",
                                  "torch_attention"])
def test_each_exercise_has_a_practice_case_at_other_sizes_holding_no_hidden_value(name):
    """A practice case is public and worth nothing, like the example, and comes last of the
    public cases; every size of its inputs that is not 1 differs from the one at the same
    place in each other public case (and no hidden case has all its sizes), so that a size
    taken from the notebook fails it; it has a seed of its own; and it shows no number of a
    hidden case that the other public cases do not show already (the leak scan's windows)."""
    assignment = registry.get(name)
    stored = references.load(assignment)
    for exercise in assignment.exercises:
        public = [c for c in exercise.cases if c.visibility is Visibility.PUBLIC]
        assert [c.name for c in public][-1:] == ["practice"], exercise.name
        assert sum(c.name == "practice" for c in exercise.cases) == 1, exercise.name
        practice = public[-1]
        assert not practice.earns_points and practice.note
        drawn = _sizes(practice.inputs())
        for other in exercise.cases:
            if other is practice:
                continue
            given = _sizes(other.inputs())
            assert given != drawn, (exercise.name, other.name)
            if other.visibility is not Visibility.PUBLIC or len(given) != len(drawn):
                continue
            for a, b in zip(given, drawn, strict=True):
                if len(a) == len(b):
                    assert all(x != y for x, y in zip(a, b, strict=True) if x != 1), (
                        exercise.name, other.name, a, b)

        def seen(case, exercise=exercise):
            return hidden_values.windows([*hidden_values._arrays(case.inputs()),
                                          *stored.get(exercise.name, case.name)])

        example = set().union(*(seen(c) for c in public[:-1]))
        hidden = set().union(*(seen(c) for c in exercise.cases
                               if c.visibility is Visibility.HIDDEN))
        assert (seen(practice) - example).isdisjoint(hidden), exercise.name
        assert practice.seed not in {c.seed for c in exercise.cases if c is not practice}
