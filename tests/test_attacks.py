"""Attacks on the grader, each written as a submission. None earns a point its outputs did not
earn, none reads a hidden reference, none outlives its grading."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from grader import cli
from grader.batch import finding
from grader.course import registry
from grader.pipeline import grading, loading
from grader.results import CellStatus, ResultStatus
from grader.sandbox import isolation, users
from grader.sandbox.config import SandboxConfig
from grader.sandbox.limits import Limits
from grader.sandbox.session import Session
from tests.conftest import ROOT
from tests.helpers.honest import HONEST, HONEST_SCORE

OPTIONS = grading.Options(limits=Limits(cell_timeout=3, call_timeout=3, memory_mb=1024))


def grade(tmp_path, attack: str, name: str = "attack_attention_basics.py"):
    """Grade HONEST plus `attack` with the default engine, which must have forked every
    worker from the zygote where namespaces are offered (SECURITY.md: the attack suite runs on
    the default path, not on a silent fallback)."""
    path = tmp_path / name
    path.write_text(HONEST + "\n" + attack)
    result = grading.grade(path, registry.get("attention_basics"), OPTIONS)
    assert result.worker == ("zygote" if isolation.offered().namespaces else "fresh"), \
        result.isolation
    return result


ATTACKS = {
    "patch-numpy": '''
np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.shape(b), dtype=bool)
np.array_equal = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
import numpy.testing
''',
    "patch-builtins": '''
import builtins
builtins.isinstance = lambda obj, cls: True
builtins.abs = lambda x: 0
builtins.max = lambda *a, **k: 0
''',
    "override-eq": '''
class Always:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __array__(self, dtype=None, copy=None): return np.zeros((1, 1))
    def __array_ufunc__(self, *args, **kwargs): return True
def scaled_dot_product_attention(Q, K, V, mask=None):
    return Always(), Always()
''',
    "ndarray-subclass": '''
class Liar(np.ndarray):
    def __eq__(self, other): return np.ones(np.shape(other), dtype=bool)
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs): return np.True_
def causal_self_attention(X, W_q, W_k, W_v):
    n = len(X)
    return np.zeros((n, n)).view(Liar), np.zeros((n, W_v.shape[1])).view(Liar)
''',
    "gc-search": '''
import gc
def scaled_dot_product_attention(Q, K, V, mask=None):
    n, m = Q.shape[0], K.shape[0]
    for obj in gc.get_objects():
        if isinstance(obj, np.ndarray) and obj.shape == (n, m) and obj is not mask:
            weights = obj
            break
    else:
        weights = np.zeros((n, m))
    return weights, weights @ V
''',
    "filesystem-search": '''
import os, sys, glob, zipfile
FOUND = {}
roots = set(p for p in sys.path if p) | {os.getcwd(), os.path.expanduser("~"), "/tmp", "/",
                                          "/work", "/root"}
here = os.getcwd()
while here != "/":
    roots.add(here)
    here = os.path.dirname(here)
try:
    import grader
    roots.add(os.path.dirname(os.path.dirname(grader.__file__)))
except Exception:
    pass
for root in roots:
    for path in glob.glob(os.path.join(root, "**", "*.npz"), recursive=True)[:200]:
        try:
            with np.load(path) as data:
                for key in data.files:
                    FOUND[key] = data[key]
        except Exception:
            pass
print("npz keys found:", len(FOUND))
def scaled_dot_product_attention(Q, K, V, mask=None):
    for key, value in FOUND.items():
        if key.startswith("scaled_dot_product_attention/") and key.endswith("/0"):
            other = key[:-1] + "1"
            if value.shape == (Q.shape[0], K.shape[0]) and other in FOUND:
                return value, FOUND[other]
    return np.zeros((Q.shape[0], K.shape[0])), np.zeros((Q.shape[0], V.shape[1]))
''',
    "import-the-grader": '''
def softmax(x):
    from grader.course import references, registry
    stored = references.load(registry.get("attention_basics"))
    for (exercise, case), outputs in stored.outputs.items():
        if exercise == "softmax" and outputs[0].shape == np.shape(x):
            return outputs[0]
    return np.zeros_like(x)
''',
    "exit-after-fake-score": '''
import sys
print("All tests passed\\nScore: 100/100")
print('{"score": 10.0, "max_score": 10.0}')
sys.exit(0)
''',
    "os-exit-after-fake-score": '''
import os
print("::set-output name=score::10\\nAll tests passed / Score: 100")
os._exit(0)
''',
    "forged-frames": '''
import os
from grader.sandbox.inside import protocol
for fd in range(3, 12):
    try:
        os.write(fd, protocol.pack({"status": "ok"}, (np.eye(3), np.eye(3))))
    except OSError:
        pass
''',
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_the_attack_earns_only_what_its_outputs_earn(tmp_path, attack):
    result = grade(tmp_path, ATTACKS[attack])
    assert result.score == HONEST_SCORE, [(e.name, e.score) for e in result.exercises]


def test_nothing_secret_is_readable(tmp_path):
    probe = '''
import os, sys
SECRETS = []
def look(path):
    try:
        if os.path.isdir(path):
            return sorted(os.listdir(path))
        with open(path, "rb") as f:
            return f.read(4096)
    except Exception as exc:
        return type(exc).__name__
import grader
package = os.path.dirname(grader.__file__)
repo = os.path.dirname(package)
report = {
    "solutions": look(os.path.join(repo, "solutions")),
    "references": look(os.path.join(repo, "solutions", "references")),
    "public": look(os.path.join(package, "references")),
    "cmdline": look("/proc/self/cmdline"),
    "environ": look("/proc/self/environ"),
    "parent": look(f"/proc/{os.getppid()}/environ"),
    "pids": [p for p in os.listdir("/proc") if p.isdigit()],
    "root": look("/root"),
    "home": look(os.path.expanduser("~")),
    "uid": os.getuid(),
}
print("REPORT", repr(report))
'''
    result = grade(tmp_path, probe)
    line = next(x for x in result.output.splitlines() if x.startswith("REPORT"))
    report = eval(line[len("REPORT "):])  # our own probe's repr
    for secret in ("solutions", "public", "references"):  # hidden, or not there at all
        assert report[secret] in ([], "FileNotFoundError"), (secret, report[secret])
    for field in ("cmdline", "environ", "parent"):
        assert b"references" not in (report[field] if isinstance(report[field], bytes) else b"")
        assert b"GRADER_" not in (report[field] if isinstance(report[field], bytes) else b"")
    assert len(report["pids"]) <= 3  # only the worker and its own forks are visible
    if os.geteuid() == 0:
        assert report["uid"] >= 2_000_000
    # /root holds at most the way to the interpreter, its environment and the grader, when
    # they live there (pyenv, a venv in ~/.cache, a clone in ~), never anything else
    assert not isinstance(report["root"], list) or set(report["root"]) <= _under_root()


def _under_root() -> set[str]:
    """The names in /root on the way to what the sandbox grants there: the interpreter, its
    environment and the grader package."""
    granted = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
               os.path.realpath(sys.executable), str(isolation.PACKAGE_DIR))
    return {Path(path).parts[2] for path in granted
            if Path(path).parts[1:2] == ("root",) and len(Path(path).parts) > 2}


def test_writing_the_results_file_changes_nothing(tmp_path):
    target = tmp_path / "out" / "result.json"
    attack = f'''
import json, os
for path in [{str(target)!r}, "result.json", "/tmp/result.json", "results/results.json",
             os.path.join({str(tmp_path)!r}, "result.json")]:
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as f:
            json.dump({{"score": 10.0, "max_score": 10.0, "status": "graded"}}, f)
        print("wrote", path)
    except OSError as exc:
        print("refused", path, type(exc).__name__)
'''
    source = tmp_path / "submission_attention_basics.py"
    source.write_text(HONEST + attack)
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["run", str(source), "--json", str(target)], out, err)
    assert code == 0
    assert json.loads(target.read_text())["score"] == HONEST_SCORE
    assert not (tmp_path / "result.json").exists()


def test_workflow_commands_from_student_code_are_inert_under_github_actions(tmp_path,
                                                                            monkeypatch):
    source = tmp_path / "wf_attention_basics.py"
    source.write_text(HONEST + '''
def causal_self_attention(X, W_q, W_k, W_v):
    raise ValueError("boom\\n::error::pwned\\n::set-output name=score::100")
''')
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["run", str(source)], out, err) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("::stop-commands::")
    token = lines[0].split("::")[2]
    assert len(token) == 32 and lines[-1] == f"::{token}::"
    assert "::error::pwned" in out.getvalue()


def test_a_fork_bomb_is_contained_and_leaves_nothing(tmp_path, own_processes):
    bomb = '''
import os
for _ in range(12):     # bounded even if every limit failed: at most 4096 processes
    try:
        os.fork()
    except OSError:
        break
'''
    result = grade(tmp_path, bomb)
    assert result.score == HONEST_SCORE
    assert own_processes.survivors() == []


def test_killing_the_grader_kills_the_student_code_too(tmp_path, own_processes):
    source = tmp_path / "spin_attention_basics.py"
    source.write_text("while True:\n    pass\n")
    grader = subprocess.Popen([sys.executable, "-m", "grader", "run", str(source),
                               "--timeout", "120"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(
            "grader.sandbox.inside.startup" in _cmdline(pid) and _cpu_seconds(pid) > 0.5
            for pid in own_processes.started()):
        time.sleep(0.1)  # until the worker is inside the endless loop
    assert time.monotonic() < deadline
    grader.kill()
    grader.wait()
    assert own_processes.survivors() == []


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as stream:
            return stream.read().decode(errors="replace")
    except OSError:
        return ""


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stream:
            fields = stream.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


# --------------------------------------------------------------------------- the red-team review


def test_a_link_to_the_solution_is_never_graded_as_the_students_work(tmp_path):
    from grader.gradescope import autograder

    solution = ROOT / "solutions" / "udl_attention.py"
    folder = tmp_path / "submissions"
    (folder / "carol").mkdir(parents=True)
    (folder / "alice_udl_attention.py").symlink_to(solution)
    (folder / "bob").symlink_to(ROOT / "solutions")
    (folder / "carol" / "hw.py").symlink_to(solution)
    # grade run: the link is a submission that could not be read, with the reason
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["run", str(folder / "alice_udl_attention.py"), "--json",
                    str(tmp_path / "r.json")], out, err)
    result = json.loads((tmp_path / "r.json").read_text())
    assert (code, result["status"], result["score"]) == (1, "error", 0.0)
    assert result["error"] == (f"{folder / 'alice_udl_attention.py'}: is a symbolic link; the "
                               "grader reads only files handed in as they are; hand in the "
                               "file itself")
    # grade batch: nothing is graded, each link is named as passed over
    out = io.StringIO()
    code = cli.run(["batch", str(folder), "--assignment", "udl_attention", "--out",
                    str(tmp_path / "graded")], out, io.StringIO())
    assert code == 0
    assert sorted(line for line in out.getvalue().splitlines() if line.startswith("ignored")) \
        == ["ignored alice_udl_attention.py: is a symbolic link; the grader reads only files "
            "handed in as they are",
            "ignored bob: is a symbolic link; the grader reads only files handed in as they are",
            "ignored carol/hw.py: is a symbolic link; the grader reads only files handed in as "
            "they are"]
    assert "graded 0, skipped 0" in out.getvalue()
    # Gradescope: a submission folder of links holds no submission
    assert autograder.find_submissions(folder, registry.get("udl_attention")) == []
    assert finding.find(folder, None) == ([], [
        "bob: is a symbolic link; the grader reads only files handed in as they are",
        "alice_udl_attention.py: is a symbolic link; the grader reads only files handed in as "
        "they are",
        "carol/hw.py: is a symbolic link; the grader reads only files handed in as they are"])


SHM_KEY = 0x5EC2E7
SHM = f'''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
KEY = {SHM_KEY}
'''


def test_sysv_shared_memory_dies_with_the_submission(tmp_path):
    before = _segments(SHM_KEY)
    writer = SHM + '''
segment = libc.shmget(KEY, 4096, 0o1666)  # IPC_CREAT | rw for everybody
address = libc.shmat(segment, None, 0)
ctypes.memmove(address, b"answer: 42", 10)
print("created", segment >= 0)
'''
    reader = SHM + '''
segment = libc.shmget(KEY, 0, 0o666)
print("found", segment >= 0)
'''
    first = grade(tmp_path, writer, "a_attention_basics.py")
    second = grade(tmp_path, reader, "b_attention_basics.py")
    assert "created True" in first.output
    assert "found False" in second.output
    assert _segments(SHM_KEY) == before


def _segments(key: int) -> list[str]:
    """The machine's System V shared memory segments of this key (a concurrent test or suite
    may make and remove others meanwhile)."""
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()
    column = lines[0].split().index("key")
    return [line for line in lines[1:] if int(line.split()[column]) == key]


def test_memory_is_bounded_for_the_whole_submission(tmp_path):
    # Eight children each try to hold 150 MiB at once, under --memory-mb 300; the call returns
    # how many hold theirs at the same time.
    attack = '''
import os, time
def softmax(x):
    ready_r, ready_w = os.pipe()
    children = []
    for _ in range(8):
        pid = os.fork()
        if pid == 0:
            try:
                block = bytearray(150 << 20)
                block[::4096] = b"\\x01" * len(range(0, 150 << 20, 4096))
                os.write(ready_w, b"x")
                time.sleep(30)
            finally:
                os._exit(0)
        children.append(pid)
    os.close(ready_w)
    time.sleep(2.5)  # each child that filled its block holds it, asleep, until killed
    os.set_blocking(ready_r, False)
    try:
        filled = len(os.read(ready_r, 64))
    except BlockingIOError:
        filled = 0
    alive = sum(os.waitpid(pid, os.WNOHANG) == (0, 0) for pid in children)
    return np.array([float(min(filled, alive))])
'''
    options = grading.Options(limits=Limits(cell_timeout=5, call_timeout=20, memory_mb=300))
    path = tmp_path / "mem_attention_basics.py"
    path.write_text(HONEST + attack)
    with Session(SandboxConfig(options.limits, ("numpy",), watch=("softmax",))) as session:
        session.run(loading.load(path))
        outcome = session.call("softmax", "function", (np.zeros(3),), {}, None)
        isolation_text = session.isolation
    assert outcome.returned, outcome.message
    held = int(outcome.value[0])
    if "memory cgroup" in isolation_text:
        assert held <= 1  # 2 x 150 MiB and the worker do not fit in 300 MiB
    else:  # the stated bound without a cgroup: a few processes of --memory-mb each
        assert "at most 12 processes of 300 MiB each" in isolation_text
        assert held <= 12


def test_a_worker_that_stops_reading_cannot_hang_the_grader(tmp_path):
    # Cell 1 points the worker's request pipe at a pipe nobody writes; cell 2 is over 64 KiB,
    # more than a pipe holds, so writing it would block forever without a deadline.
    stop_reading = '''
import os, stat
r, w = os.pipe()
for fd in range(3, 12):
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode) and fd not in (r, w) and \\
                os.get_blocking(fd) and (os.open if False else True):
            import fcntl
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
                os.dup2(r, fd)
    except OSError:
        pass
'''
    big = "BIG = " + repr("x" * (100 << 10)) + "\n"
    path = tmp_path / "block_attention_basics.ipynb"
    path.write_text(json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                   "id": f"c{i}", "source": source}
                  for i, source in enumerate([stop_reading, big, HONEST])]}))
    # The grading ends at the submission's limit: each new worker replays cell 1, which stops
    # it reading again, so every later statement waits for its own limit. 8 s shows it as 20 s
    # did.
    limits = Limits(cell_timeout=2, call_timeout=2, submission_timeout=8, memory_mb=1024)
    results: list = []
    thread = threading.Thread(target=lambda: results.append(
        grading.grade(path, registry.get("attention_basics"), grading.Options(limits=limits))),
        daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(timeout=90)
    assert not thread.is_alive(), "grading hung on a worker that stopped reading"
    assert time.monotonic() - started < 60
    cells = results[0].cells
    assert cells[1].status is CellStatus.TIMEOUT
    assert "the worker stopped reading its requests" in cells[1].message or \
        "stopped after" in cells[1].message


def test_student_names_that_are_paths_or_control_characters_are_refused(tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name in ("ok_attention_basics.py", "esc\x1b[2J_attention_basics.py"):
        (folder / name).write_text(HONEST)
    (folder / "deep" / "er").mkdir(parents=True)
    (folder / "deep" / "er" / "x_attention_basics.py").write_text(HONEST)
    pattern = finding.compile_pattern(r"^(?P<student>.+)_attention")
    jobs, ignored = finding.find(folder, pattern)
    assert [job.student for job in jobs] == ["ok"]
    assert sorted(ignored) == [
        "deep/er/x_attention_basics.py: the student name is a path, not a name",
        "esc\x1b[2J_attention_basics.py: the student name has control characters or line "
        "breaks"]
    for name in ("..", "/etc", "a/../b", "tab\tname", "line\u2028break"):
        assert finding.bad_name(name) is not None, name
    assert finding.bad_name("alice.smith-2") is None
    out = tmp_path / "graded"
    code = cli.run(["batch", str(folder), "--assignment", "attention_basics", "--out", str(out),
                    "--student-pattern", r"^(?P<student>.+)_attention"], io.StringIO(),
                   io.StringIO())
    assert code == 0
    written = {p.relative_to(out).as_posix() for p in out.rglob("*.json")}
    assert written == {"results/ok/ok_attention_basics.json"}
    assert not (tmp_path / "escape").exists()


def test_concurrent_workers_never_share_a_user_id(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root gives each worker a user id of its own")
    leases = [users.UidLease() for _ in range(200)]
    assert len({lease.uid for lease in leases}) == 200
    for lease in leases:
        lease.release()
    source = "import os\ndef softmax(x):\n    return np.array([float(os.getuid())])\n"
    path = tmp_path / "uid_attention_basics.py"
    path.write_text(HONEST + source)
    sessions = [Session(SandboxConfig(OPTIONS.limits, ("numpy",), watch=("softmax",)))
                for _ in range(3)]
    uids = []
    for session in sessions:
        session.run(loading.load(path))
        uids.append(int(session.call("softmax", "function", (np.zeros(2),), {}, None).value[0]))
    for session in sessions:
        session.close()
    assert len(set(uids)) == 3 and min(uids) >= 2_000_000


def test_a_probe_that_fails_later_does_not_switch_isolation_off(monkeypatch):
    assert isolation.offered().namespaces, "this test needs namespaces (see grade doctor)"
    monkeypatch.setattr(isolation, "_probe_prefix", lambda: ((), "refused for the test"))
    assert isolation.offered().namespaces  # the first success is kept


def test_a_worker_confined_less_than_the_machine_offered_is_refused(tmp_path, monkeypatch):
    assert isolation.offered().namespaces, "this test needs namespaces (see grade doctor)"
    real_plan = isolation.plan

    def broken(*args, **kwargs):
        plan = real_plan(*args, **kwargs)
        return dict(plan, package="/nonexistent/grader")  # confine() cannot build the root

    monkeypatch.setattr(isolation, "plan", broken)
    path = tmp_path / "x_attention_basics.py"
    path.write_text(HONEST + "print('student code ran')\n")
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["run", str(path)], out, err) == 1
    assert err.getvalue().startswith("grade: error: refusing to grade: the worker could not be "
                                     "confined as this machine allowed at start (")
    assert "student code ran" not in out.getvalue()


def test_the_kernel_engine_is_confined_like_the_fast_one(tmp_path, own_processes):
    probe = '''
import os, subprocess, sys
def look(path):
    try:
        return sorted(os.listdir(path))
    except Exception as exc:
        return type(exc).__name__
import grader
repo = os.path.dirname(os.path.dirname(grader.__file__))
print("REPORT", repr({"uid": os.getuid(), "solutions": look(os.path.join(repo, "solutions")),
                      "repo": look(repo), "git": look(os.path.join(repo, ".git"))}))
import time
child = os.fork()  # a venv's sys.executable is not inside the sandbox's root: fork instead
if child == 0:
    os.setsid()
    time.sleep(300)
    os._exit(0)
print("CHILD", child)
'''
    path = tmp_path / "kernel_attention_basics.py"
    path.write_text(HONEST + probe)
    # A generous statement limit: on a loaded machine, starting the child may take seconds.
    limits = dataclasses.replace(OPTIONS.limits, cell_timeout=30)
    result = grading.grade(path, registry.get("attention_basics"),
                           grading.Options(limits=limits, engine="kernel"))
    assert result.score == HONEST_SCORE
    assert [(c.where, c.status, c.message) for c in result.problem_cells] == []
    line = next(x for x in result.output.splitlines() if x.startswith("REPORT"))
    report = eval(line[len("REPORT "):])  # our own probe's repr
    if os.geteuid() == 0:
        assert report["uid"] >= 2_000_000
    # Of the repository, the package only; and the interpreter's folder, bound in for the
    # kernel to run, where the environment was made inside the clone (`.venv`).
    repo = Path(isolation.PACKAGE_PARENT).resolve()
    interpreter = {Path(p).resolve().relative_to(repo).parts[0]
                   for p in (sys.prefix, sys.exec_prefix) if Path(p).resolve().is_relative_to(repo)}
    assert report["repo"] == sorted({"grader"} | interpreter)
    assert report["solutions"] == report["git"] == "FileNotFoundError"
    assert "CHILD" in result.output  # the escaped child was started, and died with the kernel
    assert own_processes.survivors() == []


def test_a_huge_integer_is_a_wrong_answer_not_a_grader_failure(tmp_path):
    result = grade(tmp_path, "def softmax(x):\n    return 10 ** 400\n")
    assert (result.status, result.grader_failed, result.score) == (ResultStatus.GRADED, False,
                                                                   HONEST_SCORE)
    softmax = next(e for e in result.exercises if e.name == "softmax")
    assert softmax.checks[0].message == ("returned a Python int too large for 64 bits, which "
                                         "is not an array of numbers")


def test_a_fifo_or_a_device_is_never_read_as_a_submission(tmp_path):
    fifo = tmp_path / "fifo_udl_attention.ipynb"
    os.mkfifo(fifo)
    (tmp_path / "zero_udl_attention.ipynb").symlink_to("/dev/zero")
    for name in ("fifo_udl_attention.ipynb", "zero_udl_attention.ipynb"):
        out = io.StringIO()
        started = time.monotonic()
        code = cli.run(["run", str(tmp_path / name)], out, io.StringIO())
        assert code == 1 and time.monotonic() - started < 30
        assert "could not be graded" in out.getvalue() or "cannot be read" in out.getvalue() \
            or "symbolic link" in out.getvalue()


def test_uid_leases_refuse_a_folder_prepared_by_someone_else(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("leases are taken as root")
    trap = tmp_path / "leases"
    trap.mkdir(mode=0o777)
    trap.chmod(0o777)
    monkeypatch.setattr(users, "LEASES", trap)
    with pytest.raises(OSError, match="is not a private folder of this user"):
        users.UidLease()


# Review of the fork server (issue #11): the kernel keyrings are not namespaced, so a key that
# one submission left readable could be read by any later one, whatever its user id.
KEY_GIVER = '''
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
payload = b"answers of alice"
made = _libc.syscall(248, b"user", b"ag-shared-answers", payload, len(payload),
                     ctypes.c_int(-4))  # add_key(..., KEY_SPEC_USER_KEYRING)
print("ADD_KEY", made, ctypes.get_errno())
if made > 0:
    _libc.syscall(250, 5, ctypes.c_int(made), ctypes.c_uint(0x3f3f3f3f))  # KEYCTL_SETPERM
'''
KEY_TAKER = '''
import ctypes, os
keys = open("/proc/keys").read() if os.path.exists("/proc/keys") else ""
print("SEES", "ag-shared-answers" in keys)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
print("KEYCTL", _libc.syscall(250, 0, ctypes.c_int(-4), 0), ctypes.get_errno())  # GET_KEYRING_ID
'''


@pytest.mark.skipif(os.uname().machine not in ("x86_64",), reason="x86_64 syscall numbers")
def test_no_submission_can_leave_a_key_for_the_next_one(tmp_path):
    giver = grade(tmp_path, KEY_GIVER, "giver_attention_basics.py")
    taker = grade(tmp_path, KEY_TAKER, "taker_attention_basics.py")
    assert "ADD_KEY -1 1" in giver.output  # EPERM
    assert "SEES False" in taker.output
    assert "KEYCTL -1 1" in taker.output
    assert giver.score == taker.score == HONEST_SCORE
    assert "no kernel keyrings and no new user namespaces" in taker.isolation


NAMESPACES = '''
import os, threading, subprocess
def attempt(action):
    try:
        action()
        return "allowed"
    except OSError as exc:
        return f"refused {exc.errno}"
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
def unshare(flags):
    if _libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
print("UNSHARE", attempt(lambda: unshare(0x10000000)))  # CLONE_NEWUSER
done = []
thread = threading.Thread(target=lambda: done.append(1))
thread.start()
thread.join()
def forked():
    child = os.fork()
    if child == 0:
        os._exit(7)
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
print("THREAD", done, "FORK", forked())
'''


def test_no_user_namespace_but_threads_and_forks_work(tmp_path):
    result = grade(tmp_path, NAMESPACES)
    assert "UNSHARE refused 1" in result.output  # EPERM: the seccomp filter
    assert "THREAD [1] FORK 7" in result.output  # clone3 refused with ENOSYS: clone is used


def test_the_kernel_kills_the_students_processes_first_when_memory_runs_out(tmp_path):
    attack = '''
import os
print("OOM", open("/proc/self/oom_score_adj").read().strip())
try:
    with open("/proc/self/oom_score_adj", "w") as stream:
        stream.write("-500")
    print("LOWERED")
except OSError as exc:
    print("REFUSED", exc.errno)
'''
    result = grade(tmp_path, attack)
    assert "OOM 1000" in result.output
    # /proc is read-only in the sandbox (EROFS); as root the score is also a floor that the
    # worker's user may not go below (EACCES).
    assert "REFUSED" in result.output and "LOWERED" not in result.output
