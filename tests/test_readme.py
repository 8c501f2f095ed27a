"""README.md and its guides in docs/ tell the truth: CI runs README's set-up commands verbatim,
and the examples of README and of the guides work."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

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
    """The authoring guide's walk through an assignment, from the master to the release."""
    guide = (ROOT / "docs" / "authoring.md").read_text()
    return guide.split("## Authoring an assignment", 1)[1].split("\n## ", 1)[0]


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


def section(page: str, heading: str) -> str:
    """The text under `heading` (a `## ` line) of `page`, up to the next `## ` heading."""
    return (ROOT / page).read_text().split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def main_job() -> list[tuple[str, str]]:
    """The commands of README's "The main job", then of the students' guide's check before
    handing in (run where the main job leaves off), each with the output shown under it."""
    sections = (section("README.md", "The main job")
                + section("docs/students.md", "Checking your work before you hand in"))
    return re.findall(r"```bash\n(.+?)\n```\n\n```\n(.+?)\n```", sections, re.S)


def timeless(text: str) -> str:
    """Output with its timings set aside: they differ from run to run."""
    return re.sub(r" in \d+\.\d+ s$", " in ... s", text, flags=re.M)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """The tracked files, as a fresh clone has them (with this work tree's edits)."""
    root = tmp_path_factory.mktemp("clone")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, root / name)
    return root


def test_the_main_job_prints_what_readme_shows(checkout, tmp_path):
    shown = main_job()
    assert [command.splitlines()[-1] for command, _ in shown] == [
        "grade run --assignment udl_attention alice.ipynb", "grade check alice.ipynb"]
    # `grade` is this checkout's grader, with none of our variables: as a newcomer runs it.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "grade").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m grader "$@"\n')
    (bin_dir / "grade").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(checkout),
           "HOME": os.environ.get("HOME", str(tmp_path)), "LANG": "C.UTF-8"}
    # One shell for all of them, in order, from the clone's root: a `cd` carries over.
    script = "".join(f"{command}\necho \"#exit=$?#\"\n" for command, _ in shown)
    done = subprocess.run(["bash", "-c", script], cwd=checkout, env=env, capture_output=True,
                          text=True, timeout=600)
    printed = re.split(r"^#exit=(\d+)#\n", done.stdout, flags=re.M)
    outputs, codes = printed[0:-1:2], [int(code) for code in printed[1::2]]
    assert codes == [0, 1], done.stdout + done.stderr  # check: a public check fails
    for (command, expected), output in zip(shown, outputs, strict=True):
        assert timeless(output) == timeless(expected + "\n"), (command, done.stderr)


def test_the_map_of_the_package_names_every_part_and_only_parts_that_exist():
    readme = (ROOT / "README.md").read_text()
    table = readme.split("The package, by what each part is for", 1)[1].split("\n\n", 2)[1]
    rows = [line.split(" | ", 1) for line in table.splitlines()[2:]]
    named_folders = {folder.strip("`/") for row in rows
                     for folder in re.findall(r"`(grader/[\w/]+)/?`", " | ".join(row))
                     if (ROOT / folder).is_dir()}
    packages = {str(path.parent.relative_to(ROOT)) for path in (ROOT / "grader").rglob(
        "__init__.py")} | {"grader/templates"}
    assert packages - {"grader"} == named_folders
    # Every module a row names in its description is in that row's folder (or the base).
    for where, what in rows:
        folders = [ROOT / f.strip("`/") for f in re.findall(r"`(grader/[\w/]+)/?`", where)]
        for module in set(re.findall(r"`([a-z_]+)`", what)) - {"grade"}:  # grade: the command
            found = [folder / f"{module}.py" for folder in folders
                     if (folder / f"{module}.py").exists() or (folder / module).is_dir()]
            assert found or (ROOT / "grader" / f"{module}.py").exists(), (where, module)
