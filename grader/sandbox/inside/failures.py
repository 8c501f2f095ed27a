"""How a student's exception is described to the grader: 'ExcType: message' and the line of
the student's code it came from, the same in both engines and for calls.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from grader.sandbox.inside.protocol import Reply


def _shown(value: object, how: Callable[[object], str]) -> str:
    """`str` or `repr` of an object of the student's, which may raise, exit or return a
    non-string: the worker must describe every failure, never fail itself."""
    try:
        said = how(value)
    except BaseException:  # noqa: BLE001 - a student's __str__ may raise anything, even exit
        return "<its message cannot be shown: its __str__ or __repr__ raised>"
    return said if isinstance(said, str) else "<its message is not text>"


def describe(exc: BaseException, filename: str | None = None,
             ours: Callable[[str], bool] | None = None) -> tuple[str, int | None]:
    """'ExcType: message' and the line of the student's code where it was raised: in the
    innermost frame of code from `filename` (or from a file `ours` accepts; any file when
    neither is given). A statement that does not compile (`return` outside a function) is
    described by its own message and line."""
    def mine(name: str) -> bool:
        return ours(name) if ours is not None else filename is None or name == filename

    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if mine(frame.f_code.co_filename):
            line = lineno
    said = _shown(exc, str)
    text = f"{type(exc).__name__}: {said}" if said else type(exc).__name__
    if (isinstance(exc, SyntaxError) and exc.msg and isinstance(exc.filename, str)
            and (ours is not None or filename is not None) and mine(exc.filename)):
        # Its str() names the file, which is the grader's name for the cell, or a kernel's.
        text, line = f"{type(exc).__name__}: {exc.msg}", exc.lineno or line
    return text[:500], line


def kind(exc: BaseException) -> dict[str, str]:
    """The exception's class as fields of a reply: "ename" (its name) and "emodule" (its
    module), so that the grader never parses them back out of the message."""
    cls = type(exc)
    name, module = getattr(cls, "__name__", ""), getattr(cls, "__module__", "")
    return {"ename": name[:100] if isinstance(name, str) else "",
            "emodule": module[:100] if isinstance(module, str) else ""}


def failure(exc: BaseException, ours: Callable[[str], bool]) -> dict[str, Any]:
    """The reply to a statement that raised `exc`; `ours` tells the files of its cell."""
    if isinstance(exc, SystemExit):
        return {"status": Reply.EXIT, "message": f"SystemExit({_shown(exc.code, repr)})",
                "line": describe(exc, ours=ours)[1], **kind(exc)}
    message, line = describe(exc, ours=ours)
    return {"status": Reply.ERROR, "message": message, "line": line, **kind(exc)}
