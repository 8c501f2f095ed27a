"""`grade serve` and its client: found only through a folder that only its user can open,
it runs `grade run` and `grade check` as they run alone, and without it they grade alone."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.cli import serve_command, served
from grader.course import registry
from grader.course.layout import ENV_ASSIGNMENTS
from tests.conftest import ROOT
from tests.helpers.command import run

NOTEBOOK = "tests/corpus/udl_attention/loops.ipynb"
RUN = ["run", "--assignment", "udl_attention", NOTEBOOK]


@pytest.fixture
def short(tmp_path: Path) -> Iterator[Path]:
    """A private folder of this test's own with a short path, removed after the test: a
    socket's path must fit in 108 bytes, which pytest's folders under a pytest-xdist worker
    may not leave room for."""
    made = Path(tempfile.mkdtemp(prefix="ag-"))
    runtime = made / "run"
    runtime.mkdir(mode=0o700)
    (tmp_path / "runtime").symlink_to(runtime)  # found where the test's files are
    yield runtime
    shutil.rmtree(made, ignore_errors=True)


def _runtime(short: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`short` as this test's runtime folder; the folder of the socket in it."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short))
    return short / "attention-grader"


def _untimed(text: str) -> str:
    return re.sub(r"in \d+(\.\d+)? s\b", "in T s", text)


def test_only_a_private_folder_of_ones_own_is_used(tmp_path):
    folder = tmp_path / "f"
    assert served.private(folder) == "does not exist"
    folder.mkdir(mode=0o700)
    assert served.private(folder) is None
    folder.chmod(0o750)
    assert served.private(folder) == "has mode 750: other users may open it"
    folder.chmod(0o700)
    (tmp_path / "link").symlink_to(folder)
    assert served.private(tmp_path / "link") == "is not a folder (a link or a file is never used)"
    if os.getuid() == 0:
        os.chown(folder, 4321, -1)
        assert served.private(folder) == "is owned by user 4321, not by you (user 0)"


def test_a_socket_in_a_folder_others_may_open_is_never_used(short, monkeypatch):
    folder = _runtime(short, monkeypatch)
    folder.mkdir(mode=0o755)
    accepted: list[bytes] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as planted:
        planted.bind(str(served.socket_path()))
        planted.listen(1)
        planted.settimeout(5)

        def answer() -> None:  # what a stranger's server would tell the client
            try:
                connection, _ = planted.accept()
            except OSError:
                return
            with connection:
                accepted.append(connection.recv(100))
                served.send(connection, {"out": "all full marks\n", "err": "", "code": 0})

        thread = threading.Thread(target=answer)
        thread.start()
        out, err = io.StringIO(), io.StringIO()
        assert served.served(RUN, out, err) is None
        planted.close()
        thread.join()
    assert (accepted, out.getvalue(), err.getvalue()) == ([], "", "")
    folder.chmod(0o700)  # the same socket, now in a private folder: it is asked
    assert served.private(folder) is None


def test_without_a_server_nothing_is_served_and_nothing_printed(short, monkeypatch):
    _runtime(short, monkeypatch)
    out, err = io.StringIO(), io.StringIO()
    assert served.served(RUN, out, err) is None
    assert served.served(["list"], out, err) is None
    assert (out.getvalue(), err.getvalue()) == ("", "")


def test_a_socket_left_by_a_killed_server_is_passed_over(short, monkeypatch):
    folder = _runtime(short, monkeypatch)
    folder.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stale:
        stale.bind(str(served.socket_path()))  # bound, never listening: nobody answers
        out, err = io.StringIO(), io.StringIO()
        assert served.served(RUN, out, err) is None
    assert (out.getvalue(), err.getvalue()) == ("", "")


def test_serve_refuses_a_folder_others_may_open(short, monkeypatch):
    folder = _runtime(short, monkeypatch)
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    code, out, err = run("serve")
    assert (code, out) == (2, "")
    assert err == (f"grade: error: {folder}: has mode 777: other users may open it; remove "
                   "it, or set XDG_RUNTIME_DIR to a folder that only you can open\n")


def test_the_registry_is_read_again_when_a_declaration_changes(tmp_path, monkeypatch):
    declared = tmp_path / "declared"
    declared.mkdir()
    monkeypatch.setenv(ENV_ASSIGNMENTS, str(declared))
    warm = serve_command.Warm(zygotes=None)  # type: ignore[arg-type]
    warm.fresh_registry()
    registry.assignments()
    warm.fresh_registry()  # nothing changed: kept
    assert registry.assignments.cache_info().currsize == 1
    (declared / "mine.py").write_text("ASSIGNMENT = None\n")
    warm.fresh_registry()
    assert registry.assignments.cache_info().currsize == 0


def test_a_served_run_prints_and_writes_what_a_run_alone_does(tmp_path, short, own_processes):
    runtime = short
    client = tmp_path / "client"  # the client's folder: relative paths are read from it
    client.mkdir()
    shutil.copy(ROOT / NOTEBOOK, client / "loops.ipynb")
    here = ["run", "--assignment", "udl_attention", "loops.ipynb"]
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    alone = subprocess.run([sys.executable, "-m", "grader", *here, "--json", "alone.json"],
                           capture_output=True, text=True, cwd=client,
                           env={**env, "XDG_RUNTIME_DIR": str(tmp_path / "none"),
                                "PYTHONPATH": str(ROOT)}, timeout=120)
    server = subprocess.Popen([sys.executable, "-m", "grader", "serve"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        assert "grade serve: listening at" in server.stdout.readline()
        graded = subprocess.run([sys.executable, "-m", "grader", *here, "--json", "got.json"],
                                capture_output=True, text=True, cwd=client,
                                env={**env, "PYTHONPATH": str(ROOT),
                                     "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")},
                                timeout=120)
        assert server.stdout.readline() == f"grade serve: run in {client}: exit 0\n"
        checked = subprocess.run([sys.executable, "-m", "grader", "check", "--assignment",
                                  "udl_attention", "missing.ipynb"], capture_output=True,
                                 text=True, cwd=client, env={**env, "PYTHONPATH": str(ROOT)},
                                 timeout=120)
        assert server.stdout.readline() == f"grade serve: check in {client}: exit 1\n"
    finally:
        server.send_signal(signal.SIGTERM)  # as `kill` and systemd stop it
        rest, _ = server.communicate(timeout=60)
    assert (graded.returncode, graded.stderr) == (alone.returncode, alone.stderr) == (0, "")
    assert _untimed(graded.stdout) == _untimed(alone.stdout)
    assert "10 / 10" in graded.stdout
    got, expected = (json.loads((client / name).read_text()) for name in ("got.json",
                                                                          "alone.json"))
    # A student's JSON gives no time once hidden cases ran.
    assert got.pop("duration_s") is None and expected.pop("duration_s") is None
    assert got == expected
    assert "**Score: 10 / 10**" in (tmp_path / "summary.md").read_text()  # the client's variable
    assert checked.returncode == 1 and "missing.ipynb" in checked.stdout + checked.stderr
    assert "grade: interrupted" in rest and server.returncode == 130
    assert list((runtime / "attention-grader").iterdir()) == []  # its socket is gone
    assert own_processes.survivors() == []
