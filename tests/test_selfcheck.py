"""check() for students: public cases in their own notebook, HTML in Jupyter, text elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from grader import check, selfcheck
from grader.errors import UsageError
from grader.results import CheckStatus
from grader.sandbox import outcomes
from grader.sandbox.inside.calling import SANDBOX_ENV
from tests.conftest import ROOT


def softmax_cols(data_in):  # normalises rows: a classic mistake
    e = np.exp(data_in - data_in.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_public_cases_only_with_the_diagnosis():
    result = selfcheck.run("softmax_cols", softmax_cols)
    assert result.public_only and result.assignment == "udl_attention"
    (exercise,) = result.exercises
    assert [c.name for c in exercise.checks] == ["matrix", "practice"]
    assert [c.diagnosis.id for c in exercise.checks] == ["softmax-wrong-axis"] * 2


def test_the_parameter_names_choose_between_assignments():
    def softmax(items_in):
        return np.exp(items_in) / np.exp(items_in).sum()

    def softmax_rows(x):
        return np.exp(x) / np.exp(x).sum(-1, keepdims=True)

    assert selfcheck.run("softmax", softmax).assignment == "udl_attention"
    assert selfcheck.run("softmax", softmax_rows).assignment == "attention_basics"
    assert selfcheck.run("softmax", softmax_rows, "attention_basics").exercises[0].status \
        is CheckStatus.PASSED


def test_by_name_from_the_callers_namespace(capsys):
    check("softmax_cols")
    out = capsys.readouterr().out
    assert out.startswith("✗ softmax_cols: given (not scored): 0 of 2 public checks pass.\n")
    assert "  [softmax-wrong-axis]" in out


def test_stubs_and_missing_functions():
    stub = selfcheck.run("causal_mask", lambda seq_len: (_ for _ in ()).throw(
        NotImplementedError()))
    assert stub.exercises[0].checks[0].message.startswith("not implemented yet")
    missing = selfcheck.run("causal_mask", None)
    assert missing.exercises[0].status is CheckStatus.MISSING
    with pytest.raises(UsageError, match="no assignment has an exercise called 'sofmax'"):
        selfcheck.run("sofmax", None)


def test_does_nothing_inside_the_grader(monkeypatch, capsys):
    monkeypatch.setenv(SANDBOX_ENV, "1")
    assert check("softmax_cols") is None
    assert capsys.readouterr().out == ""


def test_shows_html_inline_in_a_real_jupyter_kernel(tmp_path):
    notebook = new_notebook(cells=[new_code_cell(
        "import numpy as np\nfrom grader import check\n"
        "def causal_mask(seq_len):\n    return np.tril(np.full((seq_len, seq_len), -np.inf), -1)\n"
        "check('causal_mask')")])
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    (output,) = notebook.cells[0].outputs
    assert output.output_type == "display_data"
    page = output.data["text/html"]
    assert "0 of 2 public checks pass" in page  # the example and the practice case
    assert 'data-diagnosis="mask-wrong-direction"' in page


@pytest.mark.parametrize("file, checks", [("udl_attention_12_1.ipynb", 4),
                                         ("udl_attention_12_2.ipynb", 2)])
def test_every_exercise_notebook_runs_its_checks_on_the_stubs(tmp_path, file, checks):
    path = ROOT / "exercises" / file
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = [o.data["text/html"] for cell in notebook.cells for o in cell.get("outputs", [])
             if o.output_type == "display_data"]
    assert len(shown) == checks
    # softmax_cols is given ready-made, as in the book: its check passes; the rest are stubs.
    given = [page for page in shown if "softmax_cols" in page]
    assert len(given) == 1 and "not implemented yet" not in given[0]
    assert all("not implemented yet" in page for page in shown if page not in given)


def test_the_strings_it_shares_with_the_sandbox_are_the_sandboxs_own():
    from grader.sandbox.inside import startup

    assert selfcheck.SANDBOX_ENV is startup.SANDBOX_ENV is SANDBOX_ENV == "GRADER_SANDBOX"
    assert selfcheck.NOT_IMPLEMENTED is outcomes.NOT_IMPLEMENTED


CALLS = """
import json, sys
import numpy as np
from grader import check
imported = sorted(sys.modules)
def softmax(items_in):
    e = np.exp(items_in - items_in.max())
    return e / e.sum()
def softmax_cols(data_in):  # the wrong axis: a diagnosis too
    e = np.exp(data_in - data_in.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
check(softmax)
check(softmax_cols)
json.dump({"imported": imported, "called": sorted(sys.modules)}, sys.stderr)
"""


def test_check_loads_only_what_it_uses(tmp_path):
    """`from grader import check` loads the package alone; a check loads the declaration that
    names its exercise, the judging stages and the terminal report, never the other
    declarations, the sandbox's supervisor or wire protocol, the grading driver, the class's
    side or IPython, nor what only a failing call, a notebook's cells, check data beside the
    notebook or the full report needs."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GRADER_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", CALLS], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "✓ softmax: all 2 public checks pass; hidden cases give the points.\n"
        "✗ softmax_cols: given (not scored): 0 of 2 public checks pass.\n")
    assert "  [softmax-wrong-axis]" in done.stdout
    loaded = json.loads(done.stderr)
    ours = {name for name in loaded["called"] if name.split(".")[0] == "grader"}
    assert {name for name in loaded["imported"] if name.split(".")[0] == "grader"} == {"grader"}
    assert {"grader.selfcheck", "grader.pipeline.judging", "grader.pipeline.kernel_source",
            "grader.report.compact"} <= ours
    never = ("grader.sandbox.session", "grader.sandbox.transport", "grader.sandbox.zygote",
             "grader.sandbox.isolation", "grader.sandbox.resources", "grader.sandbox.kernel",
             "grader.sandbox.doctor", "grader.sandbox.inside.worker",
             "grader.sandbox.inside.zygote_process", "grader.sandbox.inside.shell",
             "grader.pipeline.grading", "grader.gradebook", "grader.term", "grader.batch",
             "grader.classreport", "grader.gradescope", "grader.ingest", "grader.similarity",
             "grader.cli", "grader.authoring", "grader.sandbox.limits", "grader.course.checkfile",
             "grader.pipeline.layout_hint", "grader.report.terminal", "grader.report.html",
             "grader.assignments.attention_basics", "grader.assignments.positional_encoding",
             "grader.assignments.torch_attention", "grader.sandbox.inside.protocol",
             "grader.pipeline.ipython_syntax", "grader.submission")
    assert sorted(name for name in ours if name.startswith(never)) == []
    assert "IPython" not in loaded["called"]
    # 7 packages (grader, course, assignments, pipeline, sandbox, sandbox.inside, report);
    # selfcheck, model, results, errors, text; the registry, layout and references; the one
    # declaration and its 3 helpers (inputs, properties, variants); judging, compare,
    # diagnose, scoring and agreement; kernel_source and notebook_globals; calling; compact.
    assert len(ours) <= 28, sorted(ours)


def test_check_data_is_looked_for_beside_the_callers_file(tmp_path):
    """A module's check() looks beside its own file, a VS Code notebook's beside the notebook
    (Jupyter starts the kernel in the notebook's folder), and beside the function's module."""
    module, notebook = tmp_path / "a" / "mine.py", tmp_path / "b" / "mine.ipynb"

    def defined_elsewhere():
        return None

    assert selfcheck._folders({"__file__": str(module)}, None) == [module.parent]
    assert selfcheck._folders({"__vsc_ipynb_file__": str(notebook)}, softmax_cols) == [
        notebook.parent, ROOT / "tests"]
    assert selfcheck._folders({}, defined_elsewhere) == [ROOT / "tests"]
