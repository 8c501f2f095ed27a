"""Shared fixtures: reference solutions as modules, and a factory for submissions in tmp_path."""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from grader.course import references, registry
from grader.sandbox.zygote import Zygotes

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
INSTALLS = {"torch": 'python3 -m pip install "torch==2.13.0" -e ".[dev,torch]"'}
"""What installs a module an assignment requires, as README says: a skipped test says it."""


def needs(name: str) -> list[pytest.MarkDecorator]:
    """The marks of a test of assignment `name` (its solutions, references, corpus or
    misconceptions): skipped, with the command that installs them, where a module that the
    assignment's code imports (its `requires`: torch for `torch_attention`) is not installed,
    as in an environment made without the torch extra. The one place that decides it: each
    test parametrised by assignment takes its marks from here."""
    missing = [module for module in registry.get(name).requires
               if importlib.util.find_spec(module) is None]
    if not missing:
        return []
    install = "; ".join(INSTALLS.get(module, f"python3 -m pip install {module}")
                        for module in missing)
    return [pytest.mark.skip(reason=f"{name} needs {', '.join(missing)}, which is not "
                                    f"installed: {install}")]


def of_assignment(name: str, *values: object, id: str | None = None) -> object:
    """A parameter set whose first value is assignment `name`, with its `needs` marks."""
    return pytest.param(name, *values, marks=needs(name), id=id)


SPARE_WORKERS = 1
"""pytest-xdist workers beyond one per CPU (`-n auto` in pyproject.toml). The suite keeps the
CPUs busy: its tests grade, start kernels and build environments, and the waits for a time
limit are few, so one spare worker fills them. Each worker also pays its own start (the test
modules' imports and assertion rewriting, about 10 s of CPU). On 2 cores, in one hour of one
machine: 3 workers ran the suite in 316 s (605 s of CPU), 4 in 338 s (672 s), 2 in 370 s
(635 s), 6 in 437 s."""


def pytest_xdist_auto_num_workers(config):
    """How many workers `-n auto` starts: one for each CPU this process may use, and
    `SPARE_WORKERS` more."""
    return len(os.sched_getaffinity(0)) + SPARE_WORKERS


NOT_AT_COLLECTION = ("torch",)
"""Modules that no test module may import when it is collected: every pytest-xdist worker
collects every module, so each worker would pay the import (torch: 1.9 s of CPU), where only
the one that runs the module's tests needs it. Such a test imports it in a fixture
(`tests/test_calling.py`'s `torch`), or leaves it to the processes it starts."""


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    """A test module whose import brings in one of `NOT_AT_COLLECTION` fails to collect, and
    says what to do instead."""
    before = {name for name in NOT_AT_COLLECTION if name in sys.modules}
    report = yield
    brought = [name for name in NOT_AT_COLLECTION if name in sys.modules and name not in before]
    if isinstance(collector, pytest.Module) and report.passed and brought:
        report.outcome = "failed"
        report.longrepr = (
            f"{collector.path}: importing it imports {', '.join(brought)}, which every "
            "pytest-xdist worker then pays for while collecting; import it in a fixture "
            "instead (tests/test_calling.py's `torch`)")
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Tests that share a module-scoped fixture (a built wheel, a graded class, a cluster) run
    in one pytest-xdist worker, which builds it once (`--dist loadgroup`); the others go to
    whichever worker is free. First among the plugins' hooks: pytest-xdist's reads the
    groups into the tests' ids in its own, and a group marked after it is lost."""
    for item in items:
        fixtures = getattr(item, "_fixtureinfo", None)
        if fixtures and any(defs[-1].scope == "module"
                            for defs in fixtures.name2fixturedefs.values()):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


@pytest.fixture(scope="session", autouse=True)
def shared_zygotes():
    """One zygote per preload set for every grading of this pytest worker
    (`tests.helpers.zygotes`), stopped when the worker ends."""
    from tests.helpers.zygotes import Shared  # after the helpers' assertions are rewritten

    pool = Shared()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Zygotes, "client", lambda owner, offer, preload:
                      pool.client(owner, offer, preload))
        yield pool
    pool.close()


@pytest.fixture(autouse=True)
def own_zygotes(request, shared_zygotes):
    """A test marked `own_zygotes` gets the zygotes of its commands as the product makes them:
    each command's own, stopped with it (as does a test while it counts the processes it
    starts, `OwnProcesses`)."""
    from tests.helpers.zygotes import own

    with own() if request.node.get_closest_marker("own_zygotes") else contextlib.nullcontext():
        yield


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


def chromium_or_skip() -> tuple[str, str]:
    """Where Chromium and its driver are, found on PATH. Without them the test is skipped with
    the command that installs them; under CI (`CI` set) that is a failure, since a skip would
    hide a missing install step."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        message = ("Debian's chromium and chromium-driver are not installed: "
                   f"{CHROMIUM_INSTALL}")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return chromium, driver


@pytest.fixture
def browser(tmp_path):
    """Headless Chromium driven by selenium (`chromium_or_skip` says what happens without it)."""
    from selenium import webdriver  # only the browser tests need selenium
    from selenium.webdriver.chrome.service import Service

    chromium, driver = chromium_or_skip()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]:
        options.add_argument(flag)
    session = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    yield session
    session.quit()


PR_SET_CHILD_SUBREAPER = 36


def processes() -> set[int]:
    """Every process id on the machine now."""
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def stat_of(pid: int) -> tuple[str, int] | None:
    """The state letter and the parent of `pid`, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stream:
            fields = stream.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def descendants(root: int) -> dict[int, str]:
    """Every process under `root` now, with its state letter."""
    parents: dict[int, list[int]] = {}
    states: dict[int, str] = {}
    for pid in processes():
        found = stat_of(pid)
        if found:
            states[pid] = found[0]
            parents.setdefault(found[1], []).append(pid)
    below: dict[int, str] = {}
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in below:
                below[child] = states[child]
                todo.append(child)
    return below


class OwnProcesses:
    """The processes a test started (`with OwnProcesses() as own:`, or the `own_processes`
    fixture), and only those: what a second suite, another pytest worker or the machine
    starts meanwhile is never counted.

    While the test runs, the test process is a child subreaper (prctl): a process whose parent
    dies is handed to it instead of to PID 1, so everything the test started, even a daemon
    that forked twice, escaped its session or outlived the grader that started it, stays below
    it. Every sandbox's PID namespace has its init below it too, so its members are below it as
    well. Its commands meanwhile boot zygotes of their own, as the product does
    (`tests.helpers.zygotes`): a shared zygote started now would outlive the test."""

    def __init__(self) -> None:
        from tests.helpers.zygotes import own

        self._zygotes = contextlib.ExitStack()
        self._zygotes.enter_context(own())
        libc = ctypes.CDLL(None, use_errno=True)
        self._prctl = libc.prctl
        if self._prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
        self.before = set(descendants(os.getpid()))

    def started(self) -> set[int]:
        """The processes below this one that the test started and that are still alive."""
        return {pid for pid, state in descendants(os.getpid()).items()
                if pid not in self.before and state not in ("Z", "X")}

    def survivors(self, grace: float = 15.0) -> list[int]:
        """The processes the test started that are still alive after a grace period (a dying
        PID namespace takes a moment to reap its members; a busy machine takes longer). The
        grace is waited only while some are alive."""
        deadline = time.monotonic() + grace
        while True:
            alive = sorted(self.started())
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.1)

    def __enter__(self) -> OwnProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop adopting, and reap the zombies of processes adopted meanwhile: their parents
        are gone, so no one else will, and a later test that counts this process's zombies
        would find them."""
        self._zygotes.close()
        self._prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        for pid, state in descendants(os.getpid()).items():
            if state == "Z" and pid not in self.before and stat_of(pid) == ("Z", os.getpid()):
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)


@pytest.fixture
def own_processes():
    """The processes the test starts (`OwnProcesses`): `own_processes.survivors()` lists
    those still alive."""
    with OwnProcesses() as own:
        yield own
