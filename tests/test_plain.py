"""The terminal summary without Rich prints what Rich prints without colour."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.markup import escape

from grader import selfcheck
from grader.report import plain, terminal

PIECES = st.lists(st.sampled_from(["[", "]", "\\", "a", "/", "#", "@", " ", "=", "[red]", "[/]",
                                   "[bold]", "1", ":", "(", "x]"]), max_size=12).map("".join)


def _rich(markup: str) -> str:
    target = io.StringIO()
    Console(file=target, highlight=False, soft_wrap=True, emoji=False, force_terminal=False,
            no_color=True, width=100).print(markup)
    return target.getvalue()


def _plain(markup: str) -> str:
    target = io.StringIO()
    plain.Console(target).print(markup)
    return target.getvalue()


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(PIECES)
def test_escaped_text_prints_as_rich_prints_it(text):
    assert plain.escape(text) == escape(text)
    for markup in (escape(text), f"[bold]{escape(text)}[/]: x", f"  [red]{escape(text)}[/] y"):
        assert _plain(markup) == _rich(markup)


def _softmax_cols(data_in):  # the wrong axis: a diagnosis, a table of values
    import numpy as np

    e = np.exp(data_in - data_in.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("name, target", [("softmax_cols", _softmax_cols),
                                          ("causal_mask", None), ("softmax", print)])
def test_a_summary_without_rich_is_the_same_text(monkeypatch, name, target):
    result = selfcheck.run(name, target)
    with_rich = terminal.render(result)
    monkeypatch.setattr(terminal, "Console", plain.Console)
    monkeypatch.setattr(terminal, "escape", plain.escape)
    assert terminal.render(result) == with_rich
    assert with_rich.count("\n") >= 2
