"""Warnings as a notebook shows them: again in each cell, and on one line that names the cell.
"""

from __future__ import annotations

import linecache
import re
import sys
import warnings
from typing import Any

_CELL_MARKER = re.compile(r"# grader [0-9a-f]+: cell (\d+)")


def fresh_warnings() -> None:
    """Show again a warning shown before, as Jupyter does in each cell (its kernel runs each
    cell, and each call, with Python's "once per place" registries out of date): a call
    that warns says so in both engines, whatever ran before it. CPython's own hook, where it
    has one."""
    mutated = getattr(warnings, "_filters_mutated", None)
    if mutated is not None:
        mutated()


def show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
    """`warnings.showwarning` in both engines: one line, the cell named as the fast engine
    names it ("<cell 3>:5: RuntimeWarning: overflow encountered in exp"). In a kernel, a
    cell's statements are compiled to files of IPython's, whose last line is the grader's
    marker for the cell (`kernel.KernelTransport._marker`); Python's own format would name
    that file and quote the line, which the fast engine cannot."""
    where = filename
    lines = linecache.getlines(filename) if not filename.startswith("<") else []
    found = _CELL_MARKER.fullmatch(lines[-1].rstrip("\r\n")) if lines else None
    if found:
        where = f"<cell {found.group(1)}>"
    try:
        (file if file is not None else sys.stderr).write(
            f"{where}:{lineno}: {category.__name__}: {message}\n")
    except Exception:  # a closed or replaced stream: the warning is lost, as in Python
        pass
