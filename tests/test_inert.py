"""The statements a snapshot is deferred past (`grader.sandbox.inside.inert`): those that can
only bind new names; anything that could run code or rebind a name takes the snapshot first."""

from __future__ import annotations

import ast
import builtins
import types

import numpy as np
import pytest

from grader.sandbox.inside.inert import binds_only


@pytest.fixture(autouse=True)
def alone(monkeypatch):
    """Nothing runs beside the statements looked at: the tests' own process has threads (a
    zygote's reader, say), and may be traced (coverage); the test below says what does."""
    import sys
    import threading

    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(sys, "gettrace", lambda: None)
    monkeypatch.setattr(sys, "getprofile", lambda: None)


class Evil(dict):
    """Builtins whose look-ups run code."""

    def __getitem__(self, key):
        raise AssertionError("ran")


def _namespace(**extra) -> dict:
    return {"__builtins__": builtins, "__name__": "__main__", "np": np, "f": len,
            "obj": types.SimpleNamespace(attr=int), **extra}


@pytest.mark.parametrize("source, names", [
    ("pass", ()),
    ("def g(x, y=1, *a, z=-2.5, w=(1, [2.0, 'a']), **k):\n    return undefined(x)", ("g",)),
    ("async def g():\n    await something()", ("g",)),
    ("def g(x: np.ndarray, y: float, z: 'T') -> np.linalg.LinAlgError:\n    pass", ("g",)),
    ("def g(x: undefined_anywhere):\n    pass", ("g",)),  # a NameError binds nothing
    ("def max(a, b):\n    return -1", ("max",)),  # shadows a builtin: taken out, it is seen
    ("N = 3", ("N",)),
    ("a = b = (1, -2, [3.0, None])", ("a", "b")),
    # Each of these may run code of the student's or rebind a name the cell left.
    ("def f():\n    pass", None),
    ("f = 3", None),
    ("def g(x=len([])):\n    pass", None),
    ("def g(x=[n for n in range(3)]):\n    pass", None),
    ("@staticmethod\ndef g():\n    pass", None),
    ("def g(x: obj.attr):\n    pass", None),
    ("def g(x: np.not_an_attribute):\n    pass", None),  # a module's __getattr__ would run
    ("def g(x: list[int]):\n    pass", None),
    ("def g(x: int | None):\n    pass", None),
    ("def g(x=-True):\n    pass", None),
    ("a, b = 1, 2", None),
    ("a = N", None),
    ("x: int = 3", None),
    ("np.x = 3", None),
    ("import os", None),
    ("class C:\n    pass", None),
    ("print(1)", None),
    ("'a docstring'", None),
    ("del obj", None),
])
def test_only_statements_that_bind_new_names_and_run_nothing_are_inert(source, names):
    assert binds_only(ast.parse(source).body[0], _namespace()) == names


def test_builtins_of_the_students_own_make_nothing_inert():
    """A name not among the globals is looked up in the builtins: through the `__getitem__`
    of a class of the student's, where a cell put one."""
    node = ast.parse("def g(x: undefined_anywhere):\n    pass").body[0]
    assert binds_only(node, _namespace(__builtins__=Evil())) is None
    assert binds_only(node, _namespace(__builtins__=dict(vars(builtins)))) == ("g",)
    known = ast.parse("def g(x: np):\n    pass").body[0]
    assert binds_only(known, _namespace(__builtins__=Evil())) is None


class Key(str):
    """A name of the student's own class: its `__eq__` runs at every look-up it collides
    with."""

    def __eq__(self, other):
        raise RuntimeError("ran")

    __hash__ = str.__hash__


def test_nothing_is_inert_while_the_students_code_may_run_beside_it(monkeypatch):
    """A trace or profile hook, another thread, or a global's, builtin's or module's name that
    is not a plain string: every statement takes the snapshot first, and looking never
    raises."""
    import sys
    import threading

    node = ast.parse("def g(x: np.ndarray):\n    pass").body[0]
    assert binds_only(node, _namespace()) == ("g",)
    assert binds_only(node, {**_namespace(), Key("g"): 0}) is None
    assert binds_only(node, _namespace(__builtins__={**vars(builtins), Key("h"): 0})) is None
    module = types.ModuleType("np")
    module.ndarray = int
    vars(module)[Key("x")] = 0
    assert binds_only(node, _namespace(np=module)) is None
    for owner, name, value in ((sys, "gettrace", lambda: print), (sys, "getprofile",
                                                                   lambda: print),
                               (threading, "active_count", lambda: 2)):
        with monkeypatch.context() as patch:
            patch.setattr(owner, name, value)
            assert binds_only(node, _namespace()) is None, name
    assert binds_only(node, _namespace()) == ("g",)


def test_looking_runs_no_eq_of_the_students_own():
    """A global named by an object of the student's str subclass is refused before any
    look-up could run its `__eq__` (one that never returns would hang the worker before the
    statement's timer is set)."""
    called = []

    class Spy(str):
        def __eq__(self, other):
            called.append(other)
            return False

        __hash__ = str.__hash__

    namespace = {Spy("__builtins__"): 0, **_namespace()}
    called.clear()
    assert binds_only(ast.parse("N = 3").body[0], namespace) is None
    assert called == []
