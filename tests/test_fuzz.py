"""Fuzzing every input the grader parses: whatever the bytes, a result or a clear error."""

from __future__ import annotations

import json
import math
import sys
import time
import tokenize

# Importing IPython raises the recursion limit; do it before hypothesis watches the limit.
import IPython.core.inputtransformer2  # noqa: F401
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from grader.course import registry
from grader.errors import SubmissionError
from grader.pipeline import fingerprint, grading, ipython_syntax, loading, notebook_globals
from grader.results import ResultStatus
from grader.sandbox.limits import Limits
from grader.submission import Submission

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.text(max_size=40))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20)
source = st.one_of(
    st.text(max_size=200),
    st.lists(st.text(max_size=40), max_size=6),
    st.sampled_from(["import numpy as np", "%matplotlib inline", "!ls", "%%bash\nls",
                     "def softmax(x):\n    return x", "print(1", "x = ' \\u2603 '", "\x00"]),
    json_value,
)
cell = st.fixed_dictionaries(
    {"cell_type": st.one_of(st.sampled_from(["code", "markdown", "raw"]), json_leaf),
     "source": source},
    optional={"metadata": json_value, "outputs": json_value, "execution_count": json_value,
              "id": json_value})
notebook = st.fixed_dictionaries(
    {"nbformat": st.one_of(st.sampled_from([3, 4]), json_leaf),
     "cells": st.one_of(st.lists(cell, max_size=8), json_value)},
    optional={"nbformat_minor": json_value, "metadata": json_value, "worksheets": json_value})
encoding = st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1"])


def loads_cleanly(path) -> Submission | None:
    """A Submission, or None after a SubmissionError that names the file; nothing else."""
    try:
        return loading.load(path)
    except SubmissionError as exc:
        assert str(exc).startswith(f"{path}: ")
        return None


@FUZZ
@given(data=st.binary(max_size=3000))
def test_arbitrary_bytes(tmp_path, data):
    path = tmp_path / "fuzz.ipynb"
    path.write_bytes(data)
    loads_cleanly(path)


@FUZZ
@given(document=notebook, encoded_as=encoding)
def test_mutated_notebooks(tmp_path, document, encoded_as):
    path = tmp_path / "fuzz.ipynb"
    path.write_bytes(json.dumps(document).encode(encoded_as, errors="replace"))
    loaded = loads_cleanly(path)
    if loaded is not None:
        assert all(isinstance(c.source, str) for c in loaded.cells)


@FUZZ
@given(text=st.text(max_size=500))
def test_arbitrary_modules(tmp_path, text):
    path = tmp_path / "fuzz.py"
    path.write_bytes(text.encode("utf-8", errors="replace"))
    loads_cleanly(path)


def _code_cells(sources: list[str]) -> dict:
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "source": source, "outputs": []}
        for source in sources]}


def test_huge_cells_many_cells_and_deep_nesting(tmp_path):
    within = {"huge": _code_cells(["x = [" + "1, " * 300_000 + "]"]),
              "many": _code_cells([f"x{i} = {i}" for i in range(500)])}
    over = {"statements": (_code_cells(["x = 1\n" * 50_000]),
                           "has 50,000 top-level statements, over the limit of 5,000"),
            "cells": (_code_cells([f"x{i} = {i}" for i in range(5000)]),
                      "has 5,000 code cells, over the limit of 500")}
    for name, document in within.items():
        path = tmp_path / f"{name}.ipynb"
        path.write_text(json.dumps(document))
        assert loads_cleanly(path) is not None
    for name, (document, problem) in over.items():
        path = tmp_path / f"{name}.ipynb"
        path.write_text(json.dumps(document))
        assert loads_cleanly(path) is None
        with pytest.raises(SubmissionError, match=problem):
            loading.load(path)
    deep = tmp_path / "deep.ipynb"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    assert loads_cleanly(deep) is None
    nested_source = tmp_path / "nested.py"
    nested_source.write_text("x = " + "(" * 5000 + ")" * 5000)
    loaded = loads_cleanly(nested_source)
    assert loaded is not None and loaded.cells[0].syntax_error


# The characters of IPython syntax, brackets, strings, indentation and line breaks.
ipython_text = st.text(alphabet="%!?()[]{}'\"\\#=,;/:>.ab1 \t\n\x0c", max_size=400)


@FUZZ
@given(text=ipython_text)
def test_ipython_syntax_of_any_kind_gives_a_cell_in_linear_work(monkeypatch, text):
    read = [0]
    real = tokenize.generate_tokens

    def counting(readline):
        def counted():
            line = readline()
            read[0] += len(line)
            return line
        return real(counted)

    with monkeypatch.context() as patch:
        patch.setattr(tokenize, "generate_tokens", counting)
        cell = loading.prepare_cell(1, text)
    assert cell.syntax_error is None or cell.statements == ()
    assert read[0] <= ipython_syntax.TOKENIZE_FACTOR * (len(text) + 1) + 1000


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(document=notebook)
def test_grading_fuzzed_notebooks_gives_a_result(tmp_path_factory, document):
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.ipynb"
    path.write_text(json.dumps(document))
    options = grading.Options(limits=Limits(cell_timeout=2, call_timeout=1,
                                            submission_timeout=20))
    result = grading.grade(path, registry.get("udl_attention"), options)
    assert result.status in (ResultStatus.GRADED, ResultStatus.ERROR)
    assert result.duration_s < 30
    if result.status is ResultStatus.ERROR:
        assert result.error.startswith(f"{path}: ")


# --------------------------------------------------------------------------- notebook globals (#21)

def _repeat(text: str, joiner: str = "") -> st.SearchStrategy[str]:
    return st.integers(1, 1500).map(lambda n: joiner.join([text] * n))


leaf = st.one_of(
    st.integers(-(10**400), 10**400).map(str),
    st.floats(allow_nan=False).map(repr).map(lambda r: {"inf": "1e999", "-inf": "-1e999"}
                                            .get(r, r)),
    st.sampled_from(["N", "D", "H", "f", "np", '"a"', "[0]", "()", "None", "True", "X.shape"]),
)
BINARY = ["+", "-", "*", "/", "//", "%", "**", "@", "<<", "&", "=="]


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, st.sampled_from(BINARY), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["-", "+", "~", "not "]), inner).map("".join),
        st.tuples(st.sampled_from(["int", "float", "round", "abs", "len", "range"]),
                  st.lists(inner, max_size=2)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.lists(inner, max_size=3).map(lambda items: f"[{', '.join(items)}]"),
        st.tuples(inner, inner).map(lambda t: f"({t[0]}, {t[1]})"),
        inner.map(lambda x: f"(lambda q: q * {x})(1)"),
    )


expression = st.one_of(
    st.recursive(leaf, _compound, max_leaves=12),
    _repeat("1", "+"),                                      # long: the review's sum
    _repeat("-").map(lambda s: s + "N"),                    # deep unary chains
    st.integers(1, 180).map(lambda n: "int(" * n + "D" + ")" * n),  # deep calls
    st.integers(1, 180).map(lambda n: "[" * n + "]" * n),   # deep displays
    st.sampled_from(["10**10**10", '"a" * 10**10', "[0] * 10**10", "int(1e999)",
                     "round(-1e999)", "float(1" + "0" * 400 + ")", "1 // 0", "D % (D - D)"]),
)
statement = st.one_of(
    st.tuples(st.sampled_from(["N", "D", "H", "H_D"]), expression).map(" = ".join),
    st.tuples(expression, expression).map(lambda t: f"N, D = {t[0]}, {t[1]}"),
    expression.map(lambda x: f"D += {x}"),
    expression.map(lambda x: f"def softmax(X):\n    return X * N * D + {x}"),
    expression.map(lambda x: f"softmax = lambda X: X * {x}"),
    st.sampled_from(["import numpy as np", "from math import *", "class N: pass"]),
)


def _frames_left(left: int, call):
    """call() with only `left` of the interpreter's frames to spare: grading runs deep in a
    stack (a CLI, a batch, a Dask thread), and the limit is 1,000 without IPython."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back

    def down(n: int):
        return call() if n <= 0 else down(n - 1)

    return down(sys.getrecursionlimit() - depth - left)


@settings(FUZZ, max_examples=100)
@example(cells=["N = " + "+".join(["1"] * 990), "def softmax(X):\n    return X / N"])
@example(cells=["N = " + "-" * 990 + "1\nD = int(1e999)\ndef softmax(X):\n    return X * D"])
@given(cells=st.lists(st.lists(statement, min_size=1, max_size=4).map("\n".join),
                      min_size=1, max_size=4))
def test_notebook_globals_and_fingerprints_never_raise_and_finish_quickly(tmp_path, cells):
    path = tmp_path / "fuzz.ipynb"
    path.write_text(json.dumps(_code_cells(cells)))
    submission = loading.load(path)
    started = time.process_time()  # this process's work: a busy machine does not count

    def analyse():
        return (notebook_globals.globals_read(submission, ["softmax", "f"]),
                notebook_globals.numeric_globals(submission),
                fingerprint.fingerprints(submission, ["softmax", "f"]))

    reads, numbers, prints = _frames_left(700, analyse)
    assert time.process_time() - started < 2.0
    assert set(reads) == set(prints) == {"softmax", "f"}
    assert all(math.isfinite(v) for v in numbers.values())
    assert all(math.isfinite(v) for found in reads.values() for values in found.values()
               for v in values)
