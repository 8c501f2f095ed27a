"""Loading notebooks and modules into cells of Python, without running anything."""

from __future__ import annotations

import json

import pytest

from grader import loading
from grader.errors import SubmissionError


def test_notebook_code_cells_keep_their_position(make_submission):
    path = make_submission(["x = 1", "y = 2\nz = 3"])
    submission = loading.load(path)
    assert submission.kind == "notebook"
    assert [c.index for c in submission.cells] == [1, 2]
    assert [s.lineno for s in submission.cells[1].statements] == [1, 2]
    assert len(submission.sha256) == 64


def test_markdown_cells_are_not_code(tmp_path):
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# title"},
        {"cell_type": "code", "metadata": {}, "source": ["a = 1\n", "b = 2"], "outputs": [],
         "execution_count": 1}]}))
    submission = loading.load(path)
    assert [(c.index, c.source) for c in submission.cells] == [(2, "a = 1\nb = 2")]


def test_assignment_from_metadata(make_submission):
    path = make_submission(["x = 1"], metadata={"grader": {"assignment": "udl_attention"}})
    assert loading.load(path).assignment_hint == "udl_attention"


def test_magics_become_python_and_shell_escapes_are_skipped():
    cell = loading.prepare_cell(1, "%matplotlib inline\n!pip install torch\nfiles = !ls")
    reasons = [s.skip_reason for s in cell.statements]
    assert reasons[0] is None
    assert reasons[1] == "shell command `!pip install torch` is never run by the grader"
    assert reasons[2] == "shell command `!ls` is never run by the grader"


@pytest.mark.parametrize("source, reason", [
    ("%%bash\necho hi", "cell magic `%%bash` is never run by the grader"),
    ("%%script python\nprint(1)", "cell magic `%%script` is never run by the grader"),
    ("%pip install numpy", "magic `%pip` is never run by the grader"),
    ("%system ls", "magic `%system` is never run by the grader"),
    ("pip install torch torchvision", "magic `%pip` is never run by the grader"),
])
def test_unsafe_magics_are_skipped(source, reason):
    (statement,) = loading.prepare_cell(1, source).statements
    assert statement.skip_reason == reason


@pytest.mark.parametrize("source", ["%matplotlib inline", "%time x = 1", "%%time\nx = 1",
                                    "%load_ext autoreload"])
def test_harmless_magics_run(source):
    (statement,) = loading.prepare_cell(1, source).statements
    assert statement.skip_reason is None


def test_plain_python_is_left_alone():
    source = "x = 5 % 3\nprint('!not a shell')"
    assert loading.prepare_cell(1, source).source == source


def test_a_cell_that_does_not_parse_records_the_line():
    cell = loading.prepare_cell(4, "x = 1\ndef f(:\n    pass")
    assert cell.statements == ()
    assert cell.syntax_error == "SyntaxError: invalid syntax (line 2)"


def test_module_is_one_cell_without_ipython_syntax(make_submission):
    path = make_submission("import numpy as np\n\n\ndef f():\n    return 1\n")
    submission = loading.load(path)
    assert submission.kind == "module"
    assert [s.lineno for s in submission.cells[0].statements] == [1, 4]


@pytest.mark.parametrize("content, problem", [
    (b"", "is empty"),
    (b"   \n", "is empty"),
    (b"\x00\x01\x02", "is binary data, not text"),
    (b"\xff\xfe{", "is not UTF-8 text (byte 0)"),
    (b"[1, 2]", "is JSON but not a Jupyter notebook"),
    (b'{"nbformat": 4, "cells": 7, "metadata": {}}', "has no list of cells"),
    (b'{"nbformat": 3, "worksheets": 7}', "is not a valid notebook"),
    (b'{"nbformat": "four"}', "has nbformat 'four'"),
    (b"{" * 100000, "not valid notebook JSON"),
])
def test_unreadable_notebooks(tmp_path, content, problem):
    path = tmp_path / "bad.ipynb"
    path.write_bytes(content)
    with pytest.raises(SubmissionError) as info:
        loading.load(path)
    assert str(info.value).startswith(f"{path}: ")
    assert problem in str(info.value)


def test_other_extensions_and_folders_are_refused(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(SubmissionError, match="has the extension '.txt'; hand in a .ipynb"):
        loading.load(tmp_path / "a.txt")
    with pytest.raises(SubmissionError, match="is a folder, not a file"):
        loading.load(tmp_path)
    with pytest.raises(SubmissionError, match="cannot be read"):
        loading.load(tmp_path / "missing.ipynb")
