"""The sandbox session: statements, calls in forks, deadlines, restarts and replay."""

from __future__ import annotations

import numpy as np
import pytest

from grader.errors import SandboxError
from grader.pipeline import loading
from grader.results import CellStatus, Verdict
from grader.sandbox import not_started
from grader.sandbox.config import SandboxConfig
from grader.sandbox.inside.protocol import Unsupported
from grader.sandbox.limits import Limits
from grader.sandbox.session import Session

LIMITS = Limits(cell_timeout=1, call_timeout=1, memory_mb=1024)


def run(make_submission, cells, limits=LIMITS, **kwargs):
    session = Session(SandboxConfig(limits, watch=("f",), **kwargs))
    results = session.run(loading.load(make_submission(cells)))
    return session, results


def test_state_survives_a_failing_statement(make_submission):
    session, cells = run(make_submission, ["a = 2\nb = a / 0\ndef f(x):\n    return x * a"])
    with session:
        assert cells[0].status is CellStatus.ERROR
        assert cells[0].message.startswith("line 2: ZeroDivisionError: division by zero")
        outcome = session.call("f", "function", (np.arange(3.0),), {}, None)
    assert outcome.returned
    assert outcome.value.tolist() == [0.0, 2.0, 4.0]


def test_replay_after_a_crash_keeps_earlier_statements_but_not_their_output(make_submission):
    session, cells = run(make_submission, [
        "print('once')\nk = 3", "import os\nos._exit(1)", "def f(x):\n    return x + k"])
    with session:
        assert [c.status for c in cells] == [CellStatus.OK, CellStatus.CRASHED, CellStatus.OK]
        assert session.restarts == 1
        assert session.call("f", "function", (1,), {}, None).value == 4
        assert session.captured_output() == "once\n"


def test_calls_cannot_change_each_others_state(make_submission):
    session, _ = run(make_submission, ["counter = [0]\ndef f(x):\n    counter[0] += 1\n"
                                       "    return counter[0]"])
    with session:
        values = [session.call("f", "function", (0,), {}, None).value for _ in range(3)]
    assert values == [1, 1, 1]


def test_returned_objects_are_reduced_to_numbers_or_named(make_submission):
    session, _ = run(make_submission, [
        "import numpy as np\nclass M(np.ndarray):\n    def __eq__(self, o):\n        return True\n"
        "class Liar:\n    def __eq__(self, o):\n        return True\n"
        "def f(kind):\n    return np.arange(2).view(M) if kind == 0 else Liar()"])
    with session:
        subclass = session.call("f", "function", (0,), {}, None).value
        liar = session.call("f", "function", (1,), {}, None).value
    assert type(subclass) is np.ndarray and subclass.tolist() == [0, 1]
    assert isinstance(liar, Unsupported) and liar.type_name == "__main__.Liar"


@pytest.mark.parametrize("body, status, message", [
    ("    while True:\n        pass", Verdict.TIMED_OUT, "did not return within 1 s"),
    ("    import os\n    os.kill(os.getpid(), 9)", Verdict.CRASHED,
     "crashed: the process died from SIGKILL (killed, often for memory)"),
    ("    raise ValueError('bad shape')", Verdict.RAISED,
     "raised ValueError: bad shape (line 2)"),
])
def test_call_failures_are_outcomes(make_submission, body, status, message):
    session, _ = run(make_submission, [f"def f(x):\n{body}"])
    with session:
        outcome = session.call("f", "function", (0,), {}, None)
    assert (outcome.failure, outcome.message) == (status, message)


def test_missing_and_non_callable(make_submission):
    session, _ = run(make_submission, ["f = 3"])
    with session:
        assert session.call("g", "function", (), {}, None).message == \
            "no function named g is defined"
        assert session.call("f", "function", (), {}, None).message == \
            "f is of type int, not a function"


def test_definition_snapshot_sees_the_globals_of_its_cell(make_submission):
    session, _ = run(make_submission, ["scale = 2\ndef f(x):\n    return x * scale",
                                       "scale = 100"])
    with session:
        assert session.call("f", "function", (1,), {}, None, at="end").value == 100
        assert session.call("f", "function", (1,), {}, None, at="definition").value == 2


def test_a_later_redefinition_replaces_the_snapshot(make_submission):
    session, _ = run(make_submission, ["def f(x):\n    return 1", "def f(x):\n    return 2",
                                       "y = 0"])
    with session:
        assert session.call("f", "function", (0,), {}, None, at="definition").value == 2


ASKS = ("def f(x):\n    import os\n"
        "    return [os.getppid(), 'g' in globals(), 'N' in globals(), max(x, 0)]")
"""Where the call ran (its process's parent), what it sees of the names bound later."""


def test_after_definitions_only_a_call_as_defined_needs_no_snapshot(make_submission):
    """Cells that only bind new names cannot change what f's cell left: no snapshot is forked
    (the call "as defined" is a child of the worker, as the call at the end is), and the call
    sees the state of f's cell: no g nor N, and the builtin max that a later cell shadowed."""
    session, _ = run(make_submission, [ASKS, "def g():\n    pass\nN = 3",
                                       "def max(a, b):\n    return -1"])
    with session:
        end = session.call("f", "function", (5,), {}, None, at="end").value
        defined = session.call("f", "function", (5,), {}, None, at="definition").value
    assert end[1:] == [True, True, -1]
    assert defined == [end[0], False, False, 5]


def test_a_statement_that_could_change_the_cell_is_preceded_by_the_snapshot(make_submission):
    """A call runs code: the snapshot is forked before it, and what was bound between f's cell
    and the fork is taken out of the calls made in it."""
    session, _ = run(make_submission, [ASKS, "N = 3", "print('a call')", "def g():\n    pass"])
    with session:
        end = session.call("f", "function", (5,), {}, None, at="end").value
        defined = session.call("f", "function", (5,), {}, None, at="definition").value
    assert end[1:] == [True, True, 5]
    assert defined[1:] == [False, False, 5] and defined[0] != end[0]


@pytest.mark.parametrize("groups, order", [(("public", "hidden"), ["first", "hidden", "second"]),
                                           ((), ["first", "second", "hidden"])])
def test_the_groups_call_processes_are_forked_once_the_cells_have_run(make_submission, groups,
                                                                      order):
    """With `call_groups`, the worker forks a process for each group when the cells are done:
    the hidden group's is older than the public process forked after the first public call
    changed its own (a process's id counts up in the worker's namespace); without, each is
    forked at its group's first call."""
    session, _ = run(make_submission, ["import os\nseen = []\ndef f(x):\n    seen.append(x)\n"
                                       "    return os.getpid()"], call_groups=groups)
    with session:
        pids = {"first": session.call("f", "function", (1,), {}, None, group="public").value,
                "second": session.call("f", "function", (2,), {}, None, group="public").value,
                "hidden": session.call("f", "function", (3,), {}, None, group="hidden").value}
    assert sorted(pids, key=pids.__getitem__) == order


def test_submission_deadline_stops_everything(make_submission):
    session = Session(SandboxConfig(Limits(cell_timeout=5, call_timeout=1, submission_timeout=1)))
    with session:
        cells = session.run(loading.load(make_submission(["import time\ntime.sleep(3)",
                                                           "x = 1"])))
        late = session.call("f", "function", (), {}, None)
    assert cells[-1].message.endswith("the submission's time limit of 1 s was used up")
    assert late.failure is Verdict.TIMED_OUT


def test_student_code_sees_an_empty_folder_and_minimal_environment(make_submission):
    session, _ = run(make_submission, [
        "import os\ndef f(x):\n    return [len(os.listdir('.')), len(os.environ)]"])
    with session:
        files, variables = session.call("f", "function", (0,), {}, None).value
    assert files == 0
    assert variables <= 16


def test_modules_stay_importable_inside_the_confined_root(make_submission):
    # Wherever the project and the interpreter live (CI may clone into /tmp), lazy imports of
    # the standard library, site-packages and the grader's sandbox modules still work. The
    # call may take its time: importing matplotlib on a busy machine takes more than 1 s.
    session, _ = run(make_submission, [
        "def f(x):\n    import fractions, json, grader.sandbox.inside.protocol\n"
        "    import matplotlib\n    return float(fractions.Fraction(1, 4)) + x"],
        limits=Limits(cell_timeout=1, call_timeout=60, memory_mb=1024))
    with session:
        outcome = session.call("f", "function", (1,), {}, None)
    assert (outcome.returned, outcome.value) == (True, 1.25), outcome.message


def test_only_the_sandbox_part_of_the_grader_package_is_there(make_submission):
    session, _ = run(make_submission, [
        "import os, grader\ndef f(x):\n"
        "    return sorted(os.listdir(os.path.dirname(grader.__file__)))"])
    with session:
        outcome = session.call("f", "function", (0,), {}, None)
    assert outcome.value == ["__init__.py", "sandbox"]
    for module, missing in (("grader.course.references", "grader.course"),
                            ("grader.sandbox.session", "grader.sandbox.session"),
                            ("grader.pipeline.grading", "grader.pipeline")):
        with Session(SandboxConfig(LIMITS, watch=("f",))) as session:
            session.run(loading.load(make_submission(
                [f"def f(x):\n    import {module}\n    return 1"], name="bob")))
            outcome = session.call("f", "function", (0,), {}, None)
        assert outcome.failure is Verdict.RAISED
        assert outcome.message.startswith("raised ModuleNotFoundError: No module named "
                                          f"'{missing}'"), module


def test_a_preload_that_is_not_installed_is_named_with_the_fix(make_submission):
    """An assignment that requires torch, graded where torch is not installed: the error names
    the module and the install, not "the interpreter exited"."""
    with Session(SandboxConfig(Limits(cell_timeout=30), ("no_such_module_here",))) as session, \
            pytest.raises(SandboxError) as error:
        session.run(loading.load(make_submission(["x = 1"])))
    assert str(error.value).startswith(
        "the sandbox worker did not start: it preloads no_such_module_here, which is not "
        "installed in this environment (")
    assert str(error.value).endswith("); install it there")  # no other module's install


def test_a_missing_torch_is_named_with_its_install(monkeypatch):
    monkeypatch.setattr(not_started, "not_installed", lambda modules: ["torch"])
    assert not_started.why(("numpy", "torch"), "code 1").endswith(
        'install it there (torch: `python3 -m pip install "torch==2.13.0" -e ".[torch]"`)')


@pytest.mark.parametrize("engine", ["fast", pytest.param("kernel", marks=pytest.mark.slow)])
def test_each_worker_is_sent_a_cells_source_once(make_submission, engine):
    """A statement's request carries its cell's source only when the worker does not hold
    it: the first statement of each cell, and again for a new worker's replay. (Sent with
    every statement, a cell of 0.8 MB and 4,000 statements took 12 s to grade.)"""
    session = Session(SandboxConfig(Limits(cell_timeout=30, call_timeout=5), watch=("f",),
                                    engine=engine))
    sent: list[tuple[int, int, bool, bool]] = []
    real = session.transport.request

    def recording(header, value, deadline, limit=None):
        if header.get("op") == "exec":
            sent.append((header["cell"], header["stmt"], bool(header.get("quiet")),
                         value is not None))
        return real(header, value, deadline) if limit is None else \
            real(header, value, deadline, limit)

    session.transport.request = recording
    cells = ["a = 1\nb = 2\nc = 3", "import os\nd = 4\nos._exit(1)", "e = a + d\nprint(e)"]
    with session:
        results = session.run(loading.load(make_submission(cells)))
        assert [c.status for c in results] == [CellStatus.OK, CellStatus.CRASHED, CellStatus.OK]
        assert session.captured_output() == "5\n"
    assert sent == [
        (1, 0, False, True), (1, 1, False, False), (1, 2, False, False),
        (2, 0, False, True), (2, 1, False, False), (2, 2, False, False),  # the worker dies
        (1, 0, True, True), (1, 1, True, False), (1, 2, True, False),  # replayed, quietly
        (2, 0, True, True), (2, 1, True, False),
        (3, 0, False, True), (3, 1, False, False)]
