"""Without Linux namespaces, as root (#21, item 8): Docker's default seccomp profile, which is
what Gradescope's autograders run in, forbids them. The machine is simulated as the issue
found it: `grade` run as root with no `unshare` on its PATH, from a copy of the project (its
package, solutions and hidden references). Student code must then still run as a user of its
own that can open nothing the grader holds, or the grader must refuse to grade.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.sandbox import users
from tests import leakscan
from tests.conftest import ROOT
from tests.helpers.scanning import (
    hidden_needles,
    locked_folders,
    make_passable,
    solution_lines,
    stash_room,
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the root case needs root")

SOFTMAX = ("import numpy as np\n\ndef softmax(x):\n    e = np.exp(x - np.max(x))\n"
           "    return e / e.sum()\n")

# What the submission tries, as the leak scan of this issue asks: open every file the grader
# holds (`TARGETS`, given by the test), walk the test's whole folder looking for hidden bytes
# and solution lines (`leakscan`), read the environment of PID 1 and of the grader, and get
# root back.
PROBE = '''
import json, os
found = {"uid": os.getuid(), "euid": os.geteuid(), "groups": os.getgroups(),
         "opened": [], "listed": []}
try:
    os.setuid(0)
    found["setuid0"] = "allowed"
except OSError as exc:
    found["setuid0"] = exc.errno
for path in TARGETS + ["/proc/1/environ", "/proc/%d/environ" % os.getppid(),
                       "/proc/%d/mem" % os.getppid()]:
    try:
        if os.path.isdir(path):
            os.listdir(path)
            found["listed"].append(path)
        else:
            with open(path, "rb") as stream:
                stream.read(1)
            found["opened"].append(path)
    except OSError:
        pass
main(NEEDLES, LINES, top=TOP)
print("PROBE", json.dumps(found))
'''


def _project(where: Path) -> Path:
    """A copy of the project as an instructor keeps it: the package, the solutions and the
    hidden references."""
    project = where / "project"
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "grader", project / "grader", ignore=skip)
    shutil.copytree(ROOT / "solutions", project / "solutions", ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", project)
    return project


def _grade(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`grade ...` as root, from the copy, where `unshare` cannot be found.

    Without a private root, the worker's user reads the interpreter where it is installed:
    where a folder on its way is private (pyenv under /root), the harness shows, in a mount
    namespace of its own, only the entries on the way to it (`scanning.make_passable`), as a
    machine with Python installed for every user would. The grader inside has no namespaces
    of its own: it cannot find `unshare`."""
    nothing = project.parent / "empty-bin"
    nothing.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "grader", *argv]
    env = {"PATH": str(nothing), "HOME": str(project.parent), "LANG": "C.UTF-8"}
    reach = [Path(sys.executable).parent, Path(sys.executable).resolve(),
             Path(sys.base_prefix), Path(sys.prefix)]
    locked = locked_folders(reach)
    with stash_room() as room:
        if locked:
            script = " ".join(f"'{part}'" for part in command)
            command = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                       f"{make_passable(locked, reach, room)} && PATH={nothing} exec {script}"]
            env["PATH"] = "/usr/bin:/bin"
        return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True,
                              timeout=300)


def _probe(top: Path, targets: list[str]) -> str:
    return (f"NEEDLES = {hidden_needles()!r}\nLINES = {solution_lines()!r}\n"
            f"TOP = {str(top)!r}\nTARGETS = {targets!r}\n"
            + Path(leakscan.__file__).read_text() + PROBE)


def test_without_namespaces_student_code_opens_nothing_the_grader_holds(tmp_path):
    """The issue's attack: as root with `unshare` off the PATH, a submission read every
    hidden reference file and was graded. Now it runs as a leased user with no groups, and
    opens none of them, nor a solution, the grader's files, another student's notebook or
    the gradebook: the project and the batch live in a folder only root may enter, which
    the worker checked as that user before the submission's first statement."""
    project = _project(tmp_path)
    submissions, out = tmp_path / "submissions", tmp_path / "out"
    (submissions / "alice").mkdir(parents=True)
    (submissions / "bob").mkdir()
    # Bob's notebook is the model answer: its lines are among those the scan looks for.
    shutil.copy(project / "solutions" / "udl_attention.py",
                submissions / "bob" / "bob_udl_attention.py")
    targets = sorted(str(path) for path in [
        *project.glob("solutions/references/*.npz"), *project.glob("solutions/*.py"),
        *project.glob("grader/course/public/*.npz"), project / "grader" / "cli" / "app.py",
        project / "solutions", project / "grader", submissions / "bob",
        submissions / "bob" / "bob_udl_attention.py", out / "gradebook.sqlite"])
    assert len(targets) > 12
    (submissions / "alice" / "scan_udl_attention.py").write_text(_probe(tmp_path, targets))

    done = _grade(project, "batch", str(submissions), "--assignment", "udl_attention",
                  "--out", str(out), "--jobs", "1", "--timeout", "120")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((out / "results" / "alice" / "scan_udl_attention.json").read_text())
    lines = result["output"].splitlines()
    found = json.loads(next(line for line in lines if line.startswith("PROBE "))[6:])

    assert [line for line in lines if line.startswith("LEAK")] == []
    assert (found["opened"], found["listed"]) == ([], [])
    assert found["uid"] == found["euid"] and found["uid"] in users.SANDBOX_UIDS
    assert (found["groups"], found["setuid0"]) == ([], errno.EPERM)
    assert result["worker"] == "fresh"
    described = result["isolation"]
    assert "Linux namespaces are not available here (the unshare command (util-linux) is " \
           "not installed)" in described
    assert "running as an unprivileged user of its own (no account, no groups" in described
    assert "no kernel keyrings and no new user namespaces (a seccomp filter)" in described
    # The model answer beside it was graded, from the same copy of the grader.
    bob = json.loads((out / "results" / "bob" / "bob_udl_attention.json").read_text())
    assert bob["score"] == bob["max_score"] == 10.0


def test_the_scan_finds_what_is_open_when_run_outside_the_sandbox(tmp_path):
    """The same scan, run as root on the same folder, finds the references, the solutions
    and the other student's work: a passing scan is not a blind one."""
    project = _project(tmp_path)
    (tmp_path / "bob.py").write_text((project / "solutions" / "udl_attention.py").read_text())
    targets = sorted(str(path) for path in project.glob("solutions/references/*.npz"))
    script = tmp_path / "probe.py"
    script.write_text(_probe(tmp_path, targets))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, check=True)
    lines = done.stdout.splitlines()
    found = json.loads(next(line for line in lines if line.startswith("PROBE "))[6:])
    assert set(targets) < set(found["opened"])  # and its parent's environment
    assert (found["uid"], found["setuid0"]) == (0, "allowed")
    leaks = {line.split()[1] for line in lines if line.startswith("LEAK")}
    assert leaks == {"array", "line"}


def test_a_file_the_grader_holds_that_others_can_open_is_named_with_its_fix(tmp_path):
    """In a folder every user may pass, each path the grader holds is refused in turn, with
    the chmod that closes it, before any student code runs; following each fix, it grades."""
    where = Path(tempfile.mkdtemp(prefix="nons-open-"))
    try:
        where.chmod(0o755)
        project = _project(where)
        (where / "submissions").mkdir()
        submission = where / "submissions" / "alice_udl_attention.py"
        marker = where / "ran"
        submission.write_text(f"open({str(marker)!r}, 'w').close()\n" + SOFTMAX)
        named = []
        for _attempt in range(6):
            done = _grade(project, "run", str(submission), "--assignment", "udl_attention")
            if done.returncode != 3:
                break
            assert not marker.exists(), "student code ran before the refusal"
            assert done.stderr.startswith("grade: error: refusing to grade: "), done.stderr
            assert "can be opened by every user of this machine" in done.stderr
            path = re.search(r"\(chmod o-rwx (/[^)]*)\)", done.stderr).group(1)  # type: ignore[union-attr]
            named.append(os.path.relpath(path, where))
            os.chmod(path, os.stat(path).st_mode & ~0o007)
        assert named == ["project/solutions/references", "project/solutions", "submissions",
                         "project"]
        assert done.returncode == 0, done.stderr[-2000:]
        assert "softmax" in done.stdout
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _owned_ipc(uid: int) -> list[str]:
    """The System V IPC objects a user owns, as "kind id"."""
    found = []
    for kind in ("msg", "sem", "shm"):
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        column = lines[0].split().index("uid")
        found += [f"{kind} {line.split()[1]}" for line in lines[1:]
                  if int(line.split()[column]) == uid]
    return found


def test_what_a_leased_user_leaves_where_every_user_may_write_is_removed():
    """Without IPC or mount namespaces, a file in /run/lock and a System V message queue
    outlived a submission, and the next student of a batch read the hidden inputs the first
    had left there (the red-team review of #21). Every folder others may write is found, not
    listed, and everything the user owns there, and in System V IPC, goes with it."""
    import ctypes

    uid = 2_999_777
    folders = users.shared_writable()
    assert {"/tmp", "/dev/shm"} <= set(folders)
    if os.path.isdir("/run/lock"):
        assert "/run/lock" in folders
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the student: leave something everywhere it can
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            libc = ctypes.CDLL(None, use_errno=True)
            made = [libc.msgget(0x5AFE0, 0o1666), libc.semget(0x5AFE1, 1, 0o1666),
                    libc.shmget(0x5AFE2, 4096, 0o1666)]
            left = []
            for folder in folders:
                path = os.path.join(folder, f"left-by-{uid}")
                try:
                    with open(path, "w") as stream:
                        stream.write("hidden inputs")
                    left.append(path)
                except OSError:
                    pass
            os.write(write, json.dumps({"ipc": made, "left": left}).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as stream:
        planted = json.loads(stream.read())
    os.waitpid(pid, 0)
    assert all(ipc_id >= 0 for ipc_id in planted["ipc"]) and len(_owned_ipc(uid)) == 3
    assert len(planted["left"]) >= 2 and all(os.path.exists(p) for p in planted["left"])
    users.end_user(uid)
    assert [p for p in planted["left"] if os.path.lexists(p)] == []
    assert _owned_ipc(uid) == []
