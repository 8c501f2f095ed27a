"""The layout's sentence is said only when the student's source has the product it blames
("a product such as X @ omega_q treats rows as tokens"), and then names it; `grade run` and
check() decide it with the same function (`layout_hint.found_in`) and say the same words."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from grader import selfcheck
from grader.course import registry
from grader.pipeline import grading, kernel_source, layout_hint
from grader.sandbox.limits import Limits
from tests.conftest import ROOT
from tests.helpers.book import BOOK_SOFTMAX_COLS

UDL = registry.get("udl_attention")
SIGNATURE = UDL.exercise("self_attention").signature
SENTENCE = ("The shapes do not fit together: in this unit columns are tokens, X has shape "
            "(D, N) and Q = omega_q @ X + beta_q; {product} treats rows as tokens.")
GENERIC = SENTENCE.format(product="a product such as X @ omega_q")
ROWS = '''def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    Q = X @ omega_q + beta_q.T
    K = X @ omega_k + beta_k.T
    V = X @ omega_v + beta_v.T
    return V @ softmax_cols(K.T @ Q)
'''
ONES_N = '''def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    Q = omega_q @ X + beta_q @ np.ones((1, N))
    K = omega_k @ X + beta_k @ np.ones((1, N))
    V = omega_v @ X + beta_v @ np.ones((1, N))
    return V @ softmax_cols(K.T @ Q)
'''
CORRECT = '''def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    Q = omega_q @ X + beta_q
    K = omega_k @ X + beta_k
    V = omega_v @ X + beta_v
    return V @ softmax_cols(K.T @ Q)
'''
# NumPy's errors for the two students' code on the practice case (N = 7 where the notebook's
# global N is 3), as the sandbox reports them.
MATMUL = ("raised ValueError: matmul: Input operand 1 has a mismatch in its core dimension 0, "
          "with gufunc signature (n?,k),(k,m?)->(n?,m?) (size 5 is different from 7) (line 2)")
BROADCAST = ("raised ValueError: operands could not be broadcast together with shapes (5,7) "
             "(5,3)  (line 2)")


def found(source: str, name: str = "self_attention", signature: str = SIGNATURE,
          layout: str = UDL.layout) -> tuple[layout_hint.Product, ...] | None:
    """What `grade run` finds in a cell (or module) holding `source`."""
    defined = {s.name: (s, 1) for s in ast.parse(source).body
               if isinstance(s, ast.FunctionDef)}
    return layout_hint.found_in(name, signature, layout, defined.get)


def said(source: str, message: str) -> str:
    """The public check's message for a shape error raised by `source`, with no diagnosis."""
    return layout_hint.explain(UDL.layout, "builtins.ValueError", message,
                               found=found(source))


def test_a_rows_as_tokens_student_gets_the_sentence_naming_the_product():
    assert found(ROWS) == (layout_hint.Product("X @ omega_q", 2),
                           layout_hint.Product("X @ omega_k", 3),
                           layout_hint.Product("X @ omega_v", 4))
    assert said(ROWS, MATMUL) == (
        f"{SENTENCE.format(product='`X @ omega_q` on line 2')}\n{MATMUL}")


def test_the_uses_global_student_has_no_such_product_and_gets_no_sentence():
    """The red herring: `np.ones((1, N))` fails on shapes, with no product of X by a weight.
    Even undiagnosed, the failure keeps NumPy's text alone."""
    assert found(ONES_N) == ()
    assert said(ONES_N, BROADCAST) == BROADCAST


def test_a_correct_student_and_the_solutions_have_none():
    assert found(CORRECT) == ()
    solutions = (ROOT / "solutions" / "udl_attention.py").read_text(encoding="utf-8")
    for exercise in UDL.exercises:  # the solutions reach their products through _attend
        assert found(solutions, exercise.name, exercise.signature) == (), exercise.name


@pytest.mark.parametrize(("line", "text"), [
    ("Q = np.dot(X, omega_q)", "np.dot(X, omega_q)"),
    ("Q = np.matmul(X, omega_q) + beta_q.T", "np.matmul(X, omega_q)"),
    ("Q = X.dot(omega_q)", "X.dot(omega_q)"),
    ("Q = X.T @ omega_q.T", "X.T @ omega_q.T"),
    ("Q = np.transpose(X) @ omega_q", "np.transpose(X) @ omega_q"),
    ("Q = X[:, 0] @ omega_q", "X[:, 0] @ omega_q"),
    ("X @= omega_q", "X @= omega_q"),
])
def test_each_way_of_writing_the_product_is_named(line, text):
    source = ("def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):\n"
              f"    {line}\n    return X\n")
    assert found(source) == (layout_hint.Product(text, 2),)


@pytest.mark.parametrize("line", [
    "omega_q @ X + beta_q", "K.T @ Q", "V @ softmax_cols(K.T @ Q)", "np.dot(omega_q, X)",
    "omega_q.dot(X)", "X @ X.T", "beta_q @ np.ones((1, X.shape[1]))",
])
def test_the_units_own_products_are_not_named(line):
    source = ("def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):\n"
              f"    Q = K = V = X\n    return {line}\n")
    assert found(source) == ()


def test_the_students_own_names_are_read_in_the_places_of_the_signatures():
    source = ("def self_attention(x, w_v, w_q, w_k, b_v, b_q, b_k):\n"
              "    q = x @ w_q\n    return x @ b_q\n")
    assert found(source) == (layout_hint.Product("x @ w_q", 2),)


def test_a_product_in_a_function_it_calls_is_named_with_that_function():
    source = ('''def project(X, omega, beta):
    return X @ omega + beta.T

def unused(X, omega_q):
    return X @ omega_q

def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    Q = project(X, omega_q, beta_q)
    return Q
''')
    (product,) = found(source)
    assert product == layout_hint.Product("X @ omega", 2, "project")
    assert layout_hint.explain(UDL.layout, "builtins.ValueError", MATMUL, found=(product,)) \
        .startswith(SENTENCE.format(product="`X @ omega` in project, line 2") + "\n")


def test_a_long_product_is_cut():
    source = ("def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):\n"
              f"    return X @ omega_q[:, {list(range(40))}]\n")
    (product,) = found(source)
    assert len(product.text) == 60 and product.text.endswith("...")
    assert product.text.startswith("X @ omega_q[:, [0, 1, 2")


def test_an_unread_source_or_a_layout_that_blames_no_product_says_the_sentence_as_written():
    assert found(ROWS, name="scaled_dot_product_self_attention") is None
    assert layout_hint.explain(UDL.layout, "builtins.ValueError", BROADCAST, found=None) == \
        f"{GENERIC}\n{BROADCAST}"
    rows = "rows are tokens, X has shape (seq_len, d_model) and Q = X @ W_q"
    assert found(ONES_N, layout=rows) == ()
    assert layout_hint.explain(rows, "builtins.ValueError", BROADCAST, found=()) == \
        f"The shapes do not fit together: in this unit {rows}.\n{BROADCAST}"
    namespace: dict = {}
    exec(ROWS, namespace)  # a function defined by exec: its source cannot be had
    read = kernel_source.reader("self_attention", namespace["self_attention"])
    assert read("self_attention") is None


def _module(tmp_path: Path, source: str):
    """`source` first in a module, so that its lines are the notebook cell's, then what the
    notebook defines before it; imported as a kernel holds a cell (its source readable)."""
    path = tmp_path / "student.py"
    path.write_text(f"{source}\n\nimport numpy as np\nN = 3\n\n{BOOK_SOFTMAX_COLS}")
    spec = importlib.util.spec_from_file_location("student_layout", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules.pop("student_layout", None)
    return module


@pytest.mark.parametrize(("source", "first"), [
    (ROWS, SENTENCE.format(product="`X @ omega_q` on line 2")),
    (ONES_N, None), (CORRECT, None)])
def test_grade_run_and_check_decide_the_same(tmp_path, source, first):
    """The same student in a notebook graded by `grade run` and in a kernel's check(): the
    sentence on the same checks, word for word, or on none."""
    checked = selfcheck.run("self_attention", _module(tmp_path, source).self_attention)
    notebook = tmp_path / "student.ipynb"
    cells = ["import numpy as np\nN = 3\n", BOOK_SOFTMAX_COLS, source]
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in cells]), notebook)
    graded = grading.grade_files([notebook], UDL, grading.Options(
        public_only=True, limits=Limits(cell_timeout=10, call_timeout=10)))
    (ran,) = [e for e in graded.exercises if e.name == "self_attention"]
    opening = "The shapes do not fit together"
    in_check = {c.name: c.message.split("\n")[0] for c in checked.exercises[0].checks
                if c.message.startswith(opening)}
    in_run = {c.name: c.message.split("\n")[0] for c in ran.checks
              if c.message.startswith(opening)}
    assert in_check == in_run == ({"notebook-example": first} if first else {})
    assert [c.passed for c in checked.exercises[0].checks] == [c.passed for c in ran.checks]
