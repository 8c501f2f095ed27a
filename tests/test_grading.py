"""End to end: the corpus of submissions with known outcomes, graded through the pipeline."""

from __future__ import annotations

import re

import nbformat
import pytest

from grader.course import registry
from grader.pipeline import grading, vocabulary
from grader.results import CellStatus, CheckStatus, ResultStatus, Verdict
from grader.sandbox import isolation, zygote
from grader.sandbox.kernel import KernelTransport
from tests.conftest import ROOT, needs, of_assignment
from tests.helpers.corpus import (
    CORPUS,
    EXPECTED,
    FAST,
    grade,
    graded,
    hidden_numbers,
    options_for,
)


def _needs_of(relative: str) -> list:
    folder = relative.split("/")[0]
    return needs(folder) if folder in registry.assignments() else []


def by_file(files) -> list:
    """Corpus files as parameters, each in a pytest-xdist group of its own: the tests of one
    file run in one worker, where `graded` grades it once for all of them."""
    return [pytest.param(relative, marks=[pytest.mark.xdist_group(f"corpus:{relative}"),
                                          *_needs_of(relative)])
            for relative in sorted(files)]


def on_file(relative: str) -> pytest.MarkDecorator:
    """A test that reads `graded(relative)`, in the pytest-xdist group of that file's tests
    (`by_file`): the file is graded once for them all, not again in another worker."""
    return pytest.mark.xdist_group(f"corpus:{relative}")


@pytest.mark.parametrize("relative", by_file(EXPECTED))
def test_corpus_scores_and_cells(relative):
    score, cells = EXPECTED[relative]
    result = graded(relative)
    assert result.status is ResultStatus.GRADED
    assert result.score == pytest.approx(score, abs=1e-6)
    assert {c.index: c.status.value for c in result.problem_cells} == cells
    # On the default path, the zygote (#11), never a silent fallback to a fresh interpreter.
    assert result.worker == ("zygote" if isolation.offered().namespaces else "fresh"), \
        result.isolation


@pytest.mark.parametrize("relative", by_file(set(EXPECTED) - {
    relative for relative in EXPECTED if "fault_" in relative}))
def test_no_hidden_check_of_the_corpus_says_a_number(relative):
    """Issue #10, on the grading each corpus file gets once (`tests/test_hidden_feedback.py`
    says why, and asserts it for more wrong answers)."""
    assert hidden_numbers(graded(relative)) == []


@on_file("attention_basics/fault_memory_hog.ipynb")
def test_memory_hog_is_stopped_by_the_memory_limit():
    result = graded("attention_basics/fault_memory_hog.ipynb")
    assert "MemoryError" in result.problem_cells[0].message


@on_file("attention_basics/fault_print_flood.ipynb")
def test_print_flood_is_capped():
    result = graded("attention_basics/fault_print_flood.ipynb")
    assert len(result.output) < FAST.limits.output_bytes + 200
    assert result.output.endswith("more bytes of output were dropped")


@on_file("attention_basics/fault_os_exit.ipynb")
def test_fake_score_printed_before_os_exit_changes_nothing():
    result = graded("attention_basics/fault_os_exit.ipynb")
    assert "Score: 10/10 All tests passed" in result.output
    assert result.problem_cells[0].message.startswith("line 3: the interpreter exited with code 0")
    assert "only this statement was lost" in result.problem_cells[0].message


@on_file("attention_basics/fault_self_sigterm.ipynb")
def test_a_statement_that_sends_itself_sigterm_is_killed_by_it():
    # The worker is PID 1 of its namespace, which the signal would leave running.
    result = graded("attention_basics/fault_self_sigterm.ipynb")
    assert [(c.index, c.status, c.message) for c in result.problem_cells] == [
        (2, CellStatus.CRASHED, "line 5: the interpreter was stopped by SIGTERM (exit code 143), "
         "while it ran; only this statement was lost")]
    assert "Score: 10/10 All tests passed" in result.output


@on_file("attention_basics/nbformat2.ipynb")
def test_an_nbformat_2_notebook_is_upgraded_and_keeps_its_cell_positions():
    result = graded("attention_basics/nbformat2.ipynb")
    assert [(c.index, c.status, c.message) for c in result.problem_cells] == [
        (5, CellStatus.ERROR, "line 2: NameError: name 'undefined_name' is not defined")]
    assert result.output == "[0.26894142 0.73105858]\n"


@on_file("attention_basics/display_handles.ipynb")
def test_display_handles_update_and_clear_as_in_a_notebook():
    result = graded("attention_basics/display_handles.ipynb")
    assert result.problem_cells == ()
    assert result.output == "handles: DisplayHandle weights\nstep 0\nstep 1\nstep 2\ndone\n"


@on_file("attention_basics/fault_segfault.ipynb")
def test_segfault_costs_only_its_statement():
    result = graded("attention_basics/fault_segfault.ipynb")
    assert "SIGSEGV" in result.problem_cells[0].message


@on_file("attention_basics/call_faults.py")
def test_call_faults_stay_in_their_own_exercise():
    result = graded("attention_basics/call_faults.py")
    by_name = {e.name: e for e in result.exercises}
    assert by_name["softmax"].status is CheckStatus.TIMEOUT
    assert by_name["softmax"].checks[0].message == "did not return within 0.5 s"
    assert by_name["qkv_projections"].checks[0].message == \
        "crashed: the process exited with code 3 before answering"
    assert "SIGSEGV" in by_name["causal_mask"].checks[0].message
    # causal_mask set np.triu = None before crashing; causal_self_attention uses np.triu.
    assert by_name["causal_self_attention"].status is CheckStatus.PASSED
    assert by_name["scaled_dot_product_attention"].status is CheckStatus.PASSED


def test_no_process_of_the_submission_outlives_its_grading(own_processes):
    result = grade("attention_basics/fault_forked_children.ipynb")
    assert result.score == 10.0
    assert own_processes.survivors() == []


@on_file("udl_attention/seed002.ipynb")
def test_seed002_multihead_fails_the_seed_case_and_the_scaled_one_only_where_d_differs():
    result = graded("udl_attention/seed002.ipynb")
    by_name = {e.name: e for e in result.exercises}
    assert by_name["self_attention"].status is CheckStatus.PASSED
    scaled = by_name["scaled_dot_product_self_attention"]  # np.sqrt(D), the global
    assert [c.name for c in scaled.checks if not c.passed] == ["practice", "wide"]
    seed_case = by_name["multihead_scaled_self_attention"].checks[0]
    assert (seed_case.name, seed_case.passed) == ("notebook-example", False)
    assert seed_case.message.startswith(
        "values differ from the expected ones.\nA value counts as close when it is within "
        "0.000001 times the expected value, plus 0.00000001.\nMismatched elements: 48 / 48")
    # The notebook's numpy 1 idiom float(k.T @ q_n) raises under numpy 2: recorded, not fatal.
    assert "TypeError" in result.problem_cells[0].message


@on_file("udl_attention/seed002.ipynb")
def test_scaled_attention_of_seed002_passes_only_in_the_state_after_its_cell():
    # The seed reads the global D, which the multi-head cell later sets to 8.
    result = graded("udl_attention/seed002.ipynb")
    scaled = next(e for e in result.exercises if e.name == "scaled_dot_product_self_attention")
    late = {c.name for c in scaled.checks if c.caution}
    # The public example passes only right after its cell, so every hidden case is asked
    # there, once (one token passes anywhere: every scale gives the same weights).
    assert late == {"notebook-example", "five-tokens", "large-scores", "one-token"}


@pytest.mark.parametrize("name", [of_assignment(name) for name in
                                  ["attention_basics", "udl_attention", "torch_attention"]])
def test_every_solution_scores_full_marks_and_every_stub_zero(name):
    assignment = registry.get(name)
    solution = grading.grade(ROOT / "solutions" / f"{name}.py", assignment, FAST)
    assert solution.score == solution.max_score == assignment.max_score
    notebooks = sorted({e.notebook or f"{name}.ipynb" for e in assignment.exercises})
    stubs = [[ROOT / "exercises" / f"{name}.py"],
             [ROOT / "exercises" / notebook for notebook in notebooks]]  # every part at once
    for stub in stubs:
        result = grading.grade_files(stub, assignment, FAST)
        assert result.status is ResultStatus.GRADED
        assert result.score == 0.0
        written = [e for e in result.exercises if not assignment.exercise(e.name).provided]
        assert all(e.status is CheckStatus.ERROR for e in written)
        assert all(c.diagnosis.id == "unattempted" for e in written for c in e.checks)
        assert all(c.message.startswith("not implemented yet") if c.visibility.value ==
                   "public" else c.message == vocabulary.message(
                       Verdict.RAISED, "NotImplementedError", True)
                   for e in written for c in e.checks)
        given = [e for e in result.exercises if assignment.exercise(e.name).provided]
        assert all(e.max_score == 0.0 and e.checks[0].passed for e in given)


@pytest.mark.parametrize("name, problem", [
    ("not_json.ipynb", "not valid notebook JSON (line 4, column 4); re-save it from Jupyter"),
    ("empty.ipynb", "is empty; re-save it"),
    ("binary.ipynb", "is binary data, not text"),
    ("not_a_notebook.ipynb", "is JSON but not a Jupyter notebook (no nbformat field)"),
    ("wrong_version.ipynb", f"has nbformat 99, which the grader's nbformat "
     f"{nbformat.__version__} cannot read (it reads versions 1 to 4); re-save it from Jupyter "
     "(File > Save) as a version 4 notebook and hand it in again"),
    ("r_kernel.ipynb", "this notebook's kernel is ir (R); "),
    ("r_kernel.ipynb", "; change its kernel to Python 3 (Kernel > Change Kernel), or paste the "
     "code into a Python notebook, run it there, save it and hand it in again"),
    ("latin1.ipynb", "is not UTF-8 text (byte 51); save it as UTF-8"),
])
def test_broken_files_are_errors_that_name_the_file_and_the_fix(name, problem):
    path = CORPUS / "broken" / name
    result = grading.grade(path, registry.get("attention_basics"), FAST)
    assert result.status is ResultStatus.ERROR
    assert result.score == 0.0 and result.max_score == 10.0
    assert result.error.startswith(f"{path}: ")
    assert problem in result.error


def test_a_module_that_does_not_parse_scores_zero_and_names_the_line():
    result = grading.grade(CORPUS / "broken" / "syntax_error.py",
                           registry.get("attention_basics"), FAST)
    assert result.status is ResultStatus.GRADED and result.score == 0.0
    assert result.problem_cells[0].message == ("SyntaxError: invalid syntax (line 4); "
                                       "the cell did not run")


def test_jupyter_semantics_on_request(make_submission):
    path = make_submission(["import numpy as np\n1 / 0\n"
                            "def softmax(x):\n"
                            "    return np.exp(x) / np.exp(x).sum(-1, keepdims=True)",
                            "def causal_mask(n):\n    return np.triu(np.full((n, n), -np.inf), 1)"])
    basics = registry.get("attention_basics")
    lenient = grading.grade(path, basics, FAST)
    per_cell = grading.grade(path, basics, grading.Options(limits=FAST.limits, on_error="cell"))
    stop = grading.grade(path, basics, grading.Options(limits=FAST.limits, on_error="stop"))
    assert lenient.score == pytest.approx(1.0 + 1.0)  # its softmax overflows: 1 of 2
    assert per_cell.score == pytest.approx(1.0)  # softmax never defined, causal_mask is
    assert "did not run, as in Jupyter (--on-error cell)" in per_cell.problem_cells[0].message
    assert stop.score == 0.0
    assert [c.status for c in stop.problem_cells] == [CellStatus.ERROR, CellStatus.SKIPPED]


def test_a_correct_notebook_grades_well_under_a_second():
    result = grade("udl_attention/loops.ipynb", grading.Options())
    assert result.score == 10.0
    assert result.duration_s < 5  # generous: shared CI machines; bench/ measures the real figure


def problems(result) -> list[tuple[int, str, list[int]]]:
    """(cell, status, the lines its message names) of each cell that did not run cleanly."""
    return [(c.index, c.status.value,
             [int(line) for line in re.findall(r"(?:^|; )line (\d+): ", c.message)])
            for c in result.problem_cells]


def test_problems_reads_the_lines_of_every_note():
    result = graded("attention_basics/vectorised_with_magics.ipynb")
    assert problems(result) == [(2, "skipped", [2]), (3, "skipped", [1]), (7, "skipped", [1])]
    assert problems(graded("attention_basics/after_broken_cell.ipynb")) == [
        (1, "error", []), (2, "error", [2]), (3, "error", [1])]


def outcome(result) -> tuple:
    """What the engines must agree on: the status, each exercise's score, and the cells that
    did not run cleanly with the lines their messages name."""
    return result.status, [(e.name, e.score) for e in result.exercises], problems(result)


SHOWN_ELSEWHERE = {
    "attention_basics/loops.py": "test_differential (every notebook holds the reference "
                                 "functions, graded by both engines)",
    "udl_attention/loops.ipynb": "test_differential (udl_attention's notebooks)",
    "udl_attention/vectorised.py": "test_kernel_engine_is_confined_like_the_fast_one below",
    "attention_basics/unstable_softmax.py": "test_differential (the naive-softmax variant)",
    # The kernel engine runs the cells the loader made, never the file: old formats are the
    # loader's (test_loading::test_old_notebook_formats_are_upgraded_by_nbformat).
    "attention_basics/nbformat2.ipynb": "test_engines::test_error_lines_count_from_the_start_"
                                        "of_the_cell[kernel] (a NameError's line)",
    "attention_basics/nbformat3.ipynb": "test_loading",
    "attention_basics/display_handles.ipynb": "test_engines::test_display_handles_work_as_in_"
                                              "ipython[kernel]",
    "attention_basics/fault_self_sigterm.ipynb": "test_engines::test_a_process_that_signals_"
                                                 "itself_dies_of_it[kernel]",
    "attention_basics/fault_sys_exit.ipynb": "test_engines::test_error_lines_count_from_the_"
                                             "start_of_the_cell[kernel] (sys.exit in a cell)",
}
"""Corpus files whose grading by the kernel engine another test already compares with the
fast engine's, and where."""


@pytest.mark.slow
@pytest.mark.parametrize("relative", by_file(set(EXPECTED) - set(SHOWN_ELSEWHERE)))
def test_the_kernel_engine_grades_the_corpus_as_the_fast_one(relative):
    kernel = grade(relative, options_for(relative, "kernel"))
    assert outcome(kernel) == outcome(graded(relative))


def test_kernel_engine_is_confined_like_the_fast_one():
    relative = "udl_attention/vectorised.py"
    kernel, fast = grade(relative, options_for(relative, "kernel")), graded(relative)
    assert kernel.score == fast.score == 10.0
    assert outcome(kernel) == outcome(fast)
    assert (kernel.worker, fast.worker) == ("kernel", "zygote")
    # The same confinement; only the sentence that says how the worker started differs.
    assert kernel.isolation.replace(KernelTransport.started, zygote.STARTED) == fast.isolation
