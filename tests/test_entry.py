"""The `grade` entry point boots the fork server early only for commands that use it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from grader.entry import wants_zygote
from tests.conftest import ROOT, processes, survivors


@pytest.mark.parametrize("argv, wanted", [
    (["run", "a.ipynb"], True),
    (["batch", "subs", "--engine", "fast"], True),
    (["check", "a.ipynb", "--engine=fast"], True),
    (["run", "a.ipynb", "--engine", "kernel"], False),
    (["run", "a.ipynb", "--engine=fresh"], False),
    (["run", "a.ipynb", "--engine"], False),
    (["batch", "subs", "--dask", "local:2"], False),
    (["batch", "subs", "--dask=tcp://10.0.0.1:8786"], False),
    (["gradebook", "export"], False),
    (["--version"], False),
    ([], False),
])
def test_only_commands_that_fork_from_the_zygote_start_it(argv, wanted):
    assert wants_zygote(argv) is wanted


def test_a_command_that_stops_early_leaves_no_zygote_behind(tmp_path):
    before = processes()
    done = subprocess.run([sys.executable, "-m", "grader", "run", str(tmp_path / "none.ipynb"),
                           "--assignment", "udl_attention"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "none.ipynb" in done.stdout + done.stderr
    assert survivors(before) == []
