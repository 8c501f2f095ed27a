"""The one notebook reader: what grading, `grade assign` and `grade validate` make of a file."""

from __future__ import annotations

import json
import re

import pytest

from grader.authoring import master, validate
from grader.course import registry
from grader.course.layout import Layout
from grader.errors import SpecError, SubmissionError
from grader.pipeline import loading, notebooks

V3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {"grader": {"assignment": "unit"}},
      "worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1", "language": "python",
                                 "outputs": [], "prompt_number": 4}]}]}
BROKEN = {
    "not JSON": ('{"cells": [', "not valid notebook JSON (line 1, column 12)"),
    "no nbformat": ('{"cells": []}', "is JSON but not a Jupyter notebook (no nbformat field)"),
    "nbformat 99": ('{"nbformat": 99, "cells": []}', "has nbformat 99, which the grader's"),
    "an R notebook": (json.dumps({"nbformat": 4, "nbformat_minor": 5, "cells": [],
                                  "metadata": {"kernelspec": {"name": "ir", "language": "R"}}}),
                      None),  # refused by grading only: authoring reads it as any notebook
}


def test_an_old_notebook_is_upgraded_with_its_cells_counts_and_metadata():
    notebook = notebooks.read("old.ipynb", json.dumps(V3))
    assert notebook["nbformat"] == 4
    assert notebooks.code_cells("old.ipynb", notebook) == ([(1, "x = 1")], [4])
    assert notebooks.metadata_assignment(notebook["metadata"]) == "unit"


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_grading_and_authoring_say_the_same_about_a_broken_notebook(tmp_path, name):
    text, problem = BROKEN[name]
    path = tmp_path / "nb.ipynb"
    path.write_text(text)
    with pytest.raises(SubmissionError) as graded:
        loading.load(path)
    if problem is None:
        assert "this notebook's kernel is ir (R)" in graded.value.message
        return
    assert graded.value.message.startswith(f"{path}: {problem}")
    assert "; re-save it from Jupyter (File > Save) " in graded.value.message
    assert graded.value.message.endswith(" and hand it in again")
    # The instructor's tools name the same problem, with a fix meant for them.
    with pytest.raises(SpecError) as read_master:
        master.read(path)
    with pytest.raises(SpecError) as validated:
        validate._code(path)
    for error, fix in ((read_master, "re-save it from Jupyter"),
                       (validated, "run `grade assign` again")):
        assert error.value.message.startswith(f"{path}: {problem}")
        assert re.search(f"; {re.escape(fix)}(, as a version 4 notebook)?$", error.value.message)
        assert "hand it in" not in error.value.message


@pytest.mark.parametrize("name", ["not JSON", "nbformat 99"])
def test_grade_validate_lists_a_broken_stub_notebook_and_goes_on(tmp_path, name):
    text, problem = BROKEN[name]
    assignment = registry.get("udl_attention")
    layout = Layout(tmp_path)
    stub = layout.notebooks("udl_attention", ("udl_attention_12_1.ipynb",))[0]
    stub.parent.mkdir()
    stub.write_text(text)
    found = [str(p) for p in validate.signature_problems(assignment, layout)]
    assert [p for p in found if p.startswith(f"{stub}: {problem}")], found
    # ... and the solution, which is missing, is still reported after it.
    assert any(p.startswith(f"{layout.solution('udl_attention')}: the solution cannot be read")
               for p in found), found
