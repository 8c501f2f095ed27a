"""The suite's own set-up (`tests/conftest.py`): tests that share a module-scoped fixture are
one pytest-xdist group, so that one worker builds the fixture once; a test module that imports
torch when collected fails to collect."""

from __future__ import annotations

import os
import sys
import types

import pytest

from tests import conftest


@pytest.fixture(scope="module")
def shared() -> str:
    """A module-scoped fixture, as a built wheel or a graded class is."""
    return "built once"


def test_a_test_with_a_module_fixture_is_in_its_modules_xdist_group(request, shared):
    mark = request.node.get_closest_marker("xdist_group")
    assert mark is not None and mark.args == (__name__,)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # pytest-xdist read the group into the test's id, which is what it schedules by.
        assert request.node.nodeid.endswith(f"@{__name__}"), request.node.nodeid


def test_a_test_without_one_goes_to_any_worker(request):
    assert request.node.get_closest_marker("xdist_group") is None
    assert "@" not in request.node.nodeid


def _collected(module: pytest.Module, imports: str | None,
               monkeypatch: pytest.MonkeyPatch) -> pytest.CollectReport:
    """The report of collecting `module`, as the conftest hook leaves it, when importing the
    module imports `imports` (nothing: None; a stand-in, removed after the test)."""
    hook = conftest.pytest_make_collect_report(module)
    next(hook)
    if imports:
        monkeypatch.setitem(sys.modules, imports, types.ModuleType(imports))
    try:
        hook.send(pytest.CollectReport(module.nodeid, "passed", None, []))
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the hook did not return the report")


def test_a_module_that_imports_torch_when_collected_fails_to_collect(request, monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # restored after the test
    module = request.node.parent
    assert isinstance(module, pytest.Module)
    assert _collected(module, None, monkeypatch).passed
    report = _collected(module, "torch", monkeypatch)
    assert report.failed
    assert report.longrepr == (
        f"{module.path}: importing it imports torch, which every pytest-xdist worker then pays "
        "for while collecting; import it in a fixture instead (tests/test_calling.py's `torch`)")
    # Imported before the module was (by a test of another module, with `-n 0`): not its own.
    assert _collected(module, None, monkeypatch).passed
