"""The suite's own set-up (`tests/conftest.py`): tests that share a module-scoped fixture are
one pytest-xdist group, so that one worker builds the fixture once."""

from __future__ import annotations

import os

import pytest


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
