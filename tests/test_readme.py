"""README.md tells the truth: CI runs its set-up commands verbatim, and its examples work."""

from __future__ import annotations

import re

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
