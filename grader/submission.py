"""A student's file as the grader reads it, before anything runs: `Submission`, its `Cell`s
and their `Statement`s (built by `grader.pipeline.loading`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Statement:
    """One top-level statement of a code cell, as the worker will run it."""

    index: int
    """Position among the top-level statements of its cell."""
    lineno: int
    """First line in the cell (1-based)."""
    skip_reason: str | None = None
    """Why it is not run (a shell escape, an unsupported magic), or None to run it."""


@dataclass(frozen=True)
class Cell:
    """A code cell after IPython syntax has been turned into Python."""

    index: int
    """1-based position of the cell in the notebook (a module is one cell)."""
    source: str
    """Python source, with magics already transformed."""
    statements: tuple[Statement, ...]
    """Its top-level statements; empty when `syntax_error` is set."""
    syntax_error: str | None = None
    """The SyntaxError that stops the cell from running at all, with its line."""
    number: int = 1
    """1-based position among the code cells: the cell as a student counts them."""
    execution_count: int | None = None
    """The `In [n]` the notebook was saved with, or None when the cell never ran."""
    imports: tuple[str, ...] = ()
    """The top-level packages its import statements name, read from the source."""


@dataclass(frozen=True)
class Submission:
    """A student's file, loaded and split into cells; nothing of it has run yet."""

    path: str
    """The file as named on the command line."""
    kind: str
    """"notebook" or "module"."""
    cells: tuple[Cell, ...]
    """Code cells in order."""
    assignment_hint: str | None = None
    """Assignment named in the notebook's metadata, if any."""
    sha256: str = ""
    """Hash of the file's bytes, to tell resubmissions apart."""

    @property
    def imports(self) -> frozenset[str]:
        """The top-level packages that its cells import (read from the source)."""
        return frozenset(name for cell in self.cells for name in cell.imports)
