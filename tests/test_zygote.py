"""The zygote (#11): workers forked from one warm interpreter keep every isolation
property of a fresh one. Each test asserts that the zygote did run, so it fails without it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from grader.pipeline import loading
from grader.results import CellStatus
from grader.sandbox import isolation, zygote
from grader.sandbox.config import SandboxConfig
from grader.sandbox.inside.processes import PRELOAD_ENV
from grader.sandbox.limits import Limits
from grader.sandbox.session import Session
from grader.sandbox.spares import READY_PER_KIND, Spares
from grader.sandbox.transport import WorkerStart

from .conftest import ROOT, processes

LIMITS = Limits(cell_timeout=5, call_timeout=5, memory_mb=1024)
PRELOAD = ("numpy",)

pytestmark = [pytest.mark.skipif(not isolation.offered().namespaces,
                                 reason="a zygote needs namespaces"),
              pytest.mark.own_zygotes]


@pytest.fixture(autouse=True)
def pool():
    """Each test is one command: its submissions share its zygotes, as a batch's do, and they
    are stopped when it ends."""
    with zygote.Zygotes() as zygotes:
        POOL[:] = [zygotes]
        yield zygotes
    POOL.clear()


POOL: list[zygote.Zygotes] = []


def config(**fields) -> SandboxConfig:
    """The sandbox of a submission graded by the test's command."""
    return SandboxConfig(LIMITS, preload=fields.pop("preload", PRELOAD), zygotes=POOL[0],
                         **fields)


def grade(make_submission, cells, name):
    """Run a notebook in a zygote worker; (results, output, isolation, zygote pid)."""
    with Session(config()) as session:
        results = session.run(loading.load(make_submission(cells, name=name)))
        output = session.captured_output()
        described = session.isolation
        assert session.worker is WorkerStart.ZYGOTE
    return results, output, described, POOL[0].client(isolation.offered(), PRELOAD).zygote_pid


def test_files_and_processes_of_one_submission_are_gone_for_the_next(make_submission,
                                                                    own_processes):
    first = ['''
import os, time
open("/tmp/left-behind", "w").write("A was here")
open("/tmp/work/left-behind", "w").write("A was here")
import ctypes  # the worker, and the fork below, named (PR_SET_NAME)
ctypes.CDLL(None).prctl(15, b"a-was-here", 0, 0, 0)
if os.fork() == 0:
    os.setsid()
    time.sleep(1000)
print("A wrote and forked in", os.readlink("/proc/self/ns/pid"), "as",
      open("/proc/self/comm").read().strip())
''']
    second = ['''
import os
print("tmp", sorted(os.listdir("/tmp")), "work", os.listdir("/tmp/work"))
print("exists", os.path.exists("/tmp/left-behind"))
print("processes", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
''']
    results_a, output_a, described, zygote_a = grade(make_submission, first, "a")
    assert [r.status for r in results_a] == [CellStatus.OK]
    assert "A wrote and forked" in output_a
    results_b, output_b, described_b, zygote_b = grade(make_submission, second, "b")
    assert zygote_a == zygote_b  # graded next by the same zygote
    assert zygote.STARTED in described and zygote.STARTED in described_b
    # (/tmp also holds the grader package's folder when the project lives in /tmp)
    assert "left-behind" not in output_b and "work []" in output_b
    assert "exists False" in output_b
    assert "processes [1]" in output_b  # nothing of A's, nothing of the zygote's
    # A's sleeper died with A's PID namespace, and the zygote keeps no child but the spare
    # workers started ahead for the next submissions (`spares`), which ran nothing.
    # (`own_processes.survivors()` would also count the zygote and the spares.)
    namespace = output_a.split("forked in ")[1].split()[0]
    assert f"forked in {namespace} as a-was-here" in output_a
    assert _members(namespace, "a-was-here") == []
    spares = POOL[0].keep("spares", Spares)
    deadline = time.monotonic() + 5  # A's worker is put away in the background
    while True:
        others = [pid for pid in own_processes.started()
                  if _parent(pid) == zygote_a and pid not in spares.waiting()]
        if not others or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert others == []
    assert 1 <= len(spares.waiting()) <= READY_PER_KIND


def _members(namespace: str, name: str, grace: float = 30.0) -> list[int]:
    """The live processes of PID namespace `namespace` named `name`, once they are gone or
    `grace` seconds have passed: the kernel kills a namespace's members when its first process
    dies, in its own time on a busy machine. A zombie has died: it is not counted (whoever it
    was reparented to reaps it when it next waits). The name, because a namespace's number is
    given again to a new one once it is gone: another test's worker, in a suite that runs in
    parallel, was found "in" a namespace that had ended."""
    deadline = time.monotonic() + grace
    while True:
        found = []
        for pid in processes():
            try:
                if os.readlink(f"/proc/{pid}/ns/pid") == namespace and not _dead(pid) \
                        and _name(pid) == name:
                    found.append(pid)
            except OSError:
                pass
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _name(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as stream:
        return stream.read().strip()


def _dead(pid: int) -> bool:
    """Whether process `pid` is a zombie, or gone."""
    try:
        with open(f"/proc/{pid}/stat") as stream:
            return stream.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def test_corrupted_modules_and_numpy_state_do_not_reach_the_next_submission(make_submission):
    first = ['''
import builtins, sys
import numpy as np
np.random.seed(1)
np.allclose = lambda *a, **k: True
np.ndarray.__module__
del sys.modules["numpy.linalg"]
sys.modules["json"] = None
builtins.len = lambda x: 42
print("A", np.random.rand())
''']
    second = ['''
import sys
import numpy as np
print("allclose", np.allclose([1.0], [2.0]))
print("linalg", "numpy.linalg" in sys.modules)
import json
print("json", json.dumps([1]))
print("len", len([1, 2]))
print("draw", repr(np.random.rand()))
''']
    results_a, output_a, _, zygote_a = grade(make_submission, first, "a")
    _, output_b, described, zygote_b = grade(make_submission, second, "b")
    _, output_c, _, _ = grade(make_submission, second, "c")
    assert zygote_a == zygote_b and zygote.STARTED in described
    assert "A 0.417022004702574" in output_a, results_a  # the seed worked in A
    for line in ("allclose False", "linalg True", "json [1]", "len 2"):
        assert line in output_b
    draw_b = output_b.split("draw ")[1].split()[0]
    draw_c = output_c.split("draw ")[1].split()[0]
    # Unseeded draws are not A's seeded state, and not the same in every fork.
    assert float(draw_b) != np.random.RandomState(1).rand()
    assert draw_b != draw_c


def test_a_killed_zygote_is_started_again_and_the_batch_goes_on(make_submission):
    _, _, _, first = grade(make_submission, ["x = 1"], "a")
    os.kill(first, signal.SIGKILL)
    results, _, described, second = grade(make_submission, ["y = 2\nprint(y)"], "b")
    assert second != first
    assert [r.status for r in results] == [CellStatus.OK] and zygote.STARTED in described
    # Killed in the middle of a submission: its statement is lost, the rest goes on.
    with Session(config(watch=("f",))) as session:
        path = make_submission(["import time\nk = 3", "time.sleep(2)",
                                "def f(x):\n    return x + k"], name="c")
        killer = threading.Timer(1.0, os.kill, (second, signal.SIGKILL))
        killer.start()
        results = session.run(loading.load(path))
        killer.join()
        assert [r.status for r in results] == [CellStatus.OK, CellStatus.CRASHED, CellStatus.OK]
        assert session.call("f", "function", (1,), {}, None).value == 4
        assert session.restarts == 1
        assert zygote.STARTED in session.isolation
    assert POOL[0].client(isolation.offered(), PRELOAD).zygote_pid not in (first, second)


def test_the_isolation_text_says_which_start_ran(make_submission):
    _, _, described, _ = grade(make_submission, ["x = 1"], "a")
    assert zygote.STARTED in described
    assert "its own PID, network and IPC namespaces" in described
    assert "a private read-only root" in described
    with Session(config(engine="fresh")) as session:
        session.run(loading.load(make_submission(["x = 1"], name="b")))
        assert "zygote" not in session.isolation
        assert session.worker is WorkerStart.FRESH


def test_a_zygote_does_not_outlive_its_command(make_submission, pool):
    _, _, _, pid = grade(make_submission, ["x = 1"], "a")
    assert Path(f"/proc/{pid}").exists()  # the session is over; the command still has it
    pool.close()  # the command is done
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists()
    with pytest.raises(zygote.ZygoteLost, match="its command has finished"):
        pool.client(isolation.offered(), PRELOAD)


def test_a_session_given_no_zygotes_starts_its_own_and_stops_it(make_submission):
    with Session(SandboxConfig(LIMITS, preload=PRELOAD)) as session:
        session.run(loading.load(make_submission(["x = 1"], name="alone")))
        transport = session.transport
        own = transport.zygotes
        assert session.worker is WorkerStart.ZYGOTE and own is not POOL[0]
        (current,) = own.running().values()
        pid = current.zygote_pid
    assert own.running() == {}
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists()
    assert POOL[0].running() == {}  # the command's zygotes were never started for it


def test_the_zygote_holds_nothing_of_the_grader():
    current = POOL[0].client(isolation.offered(), PRELOAD)
    pid = current.zygote_pid
    assert Path(f"/proc/{pid}/task").exists() and len(os.listdir(f"/proc/{pid}/task")) == 1
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert not any(entry.startswith((b"GRADER_SOLUTIONS", b"GRADER_REFERENCES"))
                   for entry in environ)
    names = {entry.split(b"=")[0] for entry in environ if entry}
    # (the start-up environment, as /proc shows it: its fd and preload are popped at once)
    allowed = {*isolation.environment(Path("/")), "GRADER_ZYGOTE_FD", PRELOAD_ENV}
    assert names <= {key.encode() for key in allowed}
    fds = os.listdir(f"/proc/{pid}/fd")
    assert len(fds) <= 5, fds  # 0, 1, 2 and its socket (and maybe a transient one)


def test_a_submission_that_imports_matplotlib_is_forked_from_a_zygote_that_has_it(
        make_submission):
    """pyplot is imported once in a zygote of its own, not in every such submission's cells;
    the forked worker still plots and saves, and a submission without it is not given it."""
    from grader.course import registry
    from grader.pipeline import grading

    cells = ['import sys\nprint("warm", "matplotlib.pyplot" in sys.modules)',
             'import os\nimport matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 4])\n'
             'plt.savefig("figure.png")\nprint("saved", os.path.getsize("figure.png") > 1000)']
    assignment = registry.get("udl_attention")
    outputs = []
    for name, source in (("plots", cells), ("plain", cells[:1])):
        submission = loading.load(make_submission(source, name=name))
        preload = grading.preload(submission, assignment)
        with Session(config(preload=preload)) as session:
            results = session.run(submission)
            outputs.append(session.captured_output())
            assert session.worker is WorkerStart.ZYGOTE
        assert {r.status for r in results} == {CellStatus.OK}
    assert grading.preload(loading.load(make_submission(cells, name="again")),
                           assignment) == ("matplotlib.pyplot",)
    assert "warm True" in outputs[0] and "saved True" in outputs[0]
    assert "warm False" in outputs[1]
    # The folder matplotlib cached its fonts in while the zygote imported it is gone already,
    # so a grader killed now leaves nothing behind.
    warm = POOL[0].client(isolation.offered(), ("matplotlib.pyplot",))
    assert warm.alive and not Path(warm.cache).exists()


CORRECT = Path(__file__).parent / "corpus" / "udl_attention" / "loops.ipynb"


def _graded_by_default():
    """A correct notebook through `grading.grade` with the default engine: (score, the JSON
    result's worker, the isolation text)."""
    from grader import result_json
    from grader.course import registry
    from grader.pipeline import grading

    result = grading.grade(CORRECT, registry.get("udl_attention"))
    return result.score, result_json.to_dict(result)["worker"], result.isolation


def test_without_namespaces_the_default_engine_starts_a_fresh_interpreter_and_says_so(
        monkeypatch):
    monkeypatch.setattr(isolation, "offered", lambda: isolation.Offer(
        (), "the unshare command (util-linux) is not installed", None, False))
    score, worker, described = _graded_by_default()
    assert (score, worker) == (10.0, "fresh")
    assert ("started as a fresh interpreter: a zygote needs namespaces, which this machine "
            "does not give") in described
    assert "Linux namespaces are not available here" in described


def test_a_zygote_that_cannot_be_had_leaves_a_confined_fresh_interpreter(monkeypatch):
    def lost(*args, **kwargs):
        raise zygote.ZygoteLost("the zygote did not start (planted)")

    monkeypatch.setattr(zygote.Zygotes, "spawn", lost)
    score, worker, described = _graded_by_default()
    assert (score, worker) == (10.0, "fresh")
    assert ("started as a fresh interpreter: the zygote failed (the zygote did not start "
            "(planted))") in described
    assert "its own PID, network and IPC namespaces" in described  # still confined
    monkeypatch.undo()
    assert _graded_by_default()[:2] == (10.0, "zygote")


def test_a_zygote_whose_preload_is_not_installed_says_why():
    """A preload that is not installed (torch without the torch extra) is a `ZygoteLost`
    naming the import's error, on which the grader starts a fresh interpreter."""
    with zygote.Zygotes() as pool, pytest.raises(zygote.ZygoteLost) as lost:
        pool.client(isolation.offered(), ("no_such_module_here",))
    assert str(lost.value) == ("the zygote did not start (ModuleNotFoundError: No module named "
                               "'no_such_module_here')")


BOOTS = """
from grader.sandbox import isolation, zygote
with zygote.Zygotes() as zygotes:
    zygotes.client(isolation.offered(), ())
"""


@pytest.mark.skipif(not isolation.offered().namespaces, reason="no zygote without namespaces")
def test_a_grader_that_writes_no_bytecode_has_a_zygote_that_writes_none(tmp_path):
    """`-I` drops PYTHONDONTWRITEBYTECODE: the zygote wrote the bytecode of the modules it
    imports into the grader's package folder, wherever the grader was told to write none."""
    shutil.copytree(ROOT / "grader", tmp_path / "grader",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([sys.executable, "-B", "-c", BOOTS], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(tmp_path.rglob("__pycache__")) == []
