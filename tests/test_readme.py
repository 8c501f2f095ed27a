"""README.md tells the truth: CI runs its set-up commands verbatim, and its examples work."""

from __future__ import annotations

import io
import json
import re

from grader import cli
from tests.conftest import ROOT


def setup_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_readme_gives_an_install_and_a_test_command():
    install, test = setup_commands()
    assert install.startswith("python3 -m pip install") and "torch==2.13.0" in install
    assert test == "python3 -m pytest"


def test_ci_runs_the_readme_commands_verbatim():
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    install, test = setup_commands()
    assert install.replace("pip install", "pip install -q") in ci_lines
    assert test in ci_lines
    assert "apt-get install -y -qq chromium chromium-driver >/dev/null" in ci_lines


def adding_an_assignment() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split("## Adding an assignment", 1)[1].split("\n## ", 1)[0]


def test_adding_an_assignment_starts_from_grade_assign():
    commands = re.findall(r"```bash\n(.+?)\n```", adding_an_assignment())
    assert [command.split()[:2] for command in commands[:3]] == [
        ["grade", "assign"], ["grade", "validate"], ["grade", "release"]]


def test_the_readme_master_notebook_is_assigned(tmp_path):
    section = adding_an_assignment().split("### 2.", 1)[0]
    config, code = re.findall(r"```(?:python)?\n(.+?)\n```", section, re.S)
    example = re.search(r"an example cell that calls it: `(.+?)`", section).group(1)
    cells = [("raw", config), *(("code", part) for part in code.split("\n\n\n")),
             ("code", example)]
    master = tmp_path / "my_unit_master.ipynb"
    master.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": kind, "metadata": {}, "source": source,
         **({"outputs": [], "execution_count": None} if kind == "code" else {})}
        for kind, source in cells]}))
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["assign", str(master), "--out", str(tmp_path / "course")], out, err) == 0, \
        err.getvalue()
    stub = (tmp_path / "course" / "exercises" / "my_unit.py").read_text()
    assert 'def relu(x):\n    """Zero the negative entries."""\n    raise NotImplementedError(' \
        '"relu")' in stub
