"""Shared fixtures: reference solutions as modules, and a factory for submissions in tmp_path."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from grader.course import references, registry
from grader.sandbox import users

# The helpers assert as tests do; their failures should read as the tests' own.
pytest.register_assert_rewrite("tests.helpers")

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts"
"""What the browser tests keep after a run: their screenshots (git ignores the folder)."""
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--window-size=1100,1600"]
CHROMIUM_INSTALL = "apt-get update && apt-get install -y chromium chromium-driver"
"""What installs the browser (Debian's chromium and chromium-driver): a skipped browser test
says it."""


@pytest.fixture
def fresh_registry():
    """The registry read afresh before and after the test (for tests that declare
    assignments of their own: `pytestmark = pytest.mark.usefixtures("fresh_registry")`)."""
    registry.assignments.cache_clear()
    yield
    registry.assignments.cache_clear()


@pytest.fixture(scope="session")
def solution():
    """Import `solutions/<name>.py` by assignment name."""
    return references.load_solution


@pytest.fixture
def make_submission(tmp_path):
    """Write a notebook (list of cell sources) or a module (a string) and return its path."""

    def make(cells: list[str] | str, name: str = "alice", metadata: dict | None = None) -> Path:
        if isinstance(cells, str):
            path = tmp_path / f"{name}.py"
            path.write_text(cells)
            return path
        path = tmp_path / f"{name}.ipynb"
        notebook = {
            "nbformat": 4, "nbformat_minor": 5, "metadata": metadata or {},
            "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "outputs": [],
                       "execution_count": None, "source": source}
                      for i, source in enumerate(cells)],
        }
        path.write_text(json.dumps(notebook))
        return path

    return make


@pytest.fixture
def browser(tmp_path):
    """Headless Chromium driven by selenium. Without it the test is skipped with the command
    that installs it; under CI (`CI` set) that is a failure, since a skip would hide a missing
    install step."""
    from selenium import webdriver  # only the browser tests need selenium
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        message = ("Debian's chromium and chromium-driver are not installed: "
                   f"{CHROMIUM_INSTALL}")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]:
        options.add_argument(flag)
    session = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    yield session
    session.quit()


def processes() -> set[int]:
    """Every process id on the machine now."""
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _ours(pid: int) -> bool:
    """Whether `pid` came from a grader: it runs in another PID namespace (every sandbox has
    its own), as a sandbox uid, or with the grader on its command line. Other processes the
    machine starts meanwhile (a concurrent build, a cron job) are not ours to count."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as stream:
            command = stream.read()
        # A grader of another checkout (a second suite running beside this one) is not ours.
        booted = re.search(rb"sys\.path\.insert\(0, '([^']*)'\)", command)
        if booted and booted.group(1) != str(ROOT).encode():
            return False
        if os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid"):
            return True
        if os.stat(f"/proc/{pid}").st_uid in users.SANDBOX_UIDS:
            return True
        return b"grader" in command
    except OSError:
        return False


def survivors(before: set[int], grace: float = 5.0) -> list[int]:
    """Processes a grader started since `before` that are still alive after a short grace
    period (a dying PID namespace takes a moment to reap its members)."""
    deadline = time.monotonic() + grace
    while True:
        alive = [pid for pid in processes() - before
                 if pid != os.getpid() and _alive(pid) and _ours(pid)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)
