"""What a submission may use and how it is run: the limits (each with its `grade` flag), the
engine, what follows a failing statement, and the capped buffer for what the code prints.

This module imports nothing heavy: `grade`'s parser builds its options from these fields
before the grading machinery is imported.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from grader.text import clean


class Engine(enum.StrEnum):
    """How a submission's worker is started (`--engine`)."""

    FAST = "fast"
    """Forked from a warm zygote interpreter; a fresh interpreter where none can be had."""
    FRESH = "fresh"
    """A fresh interpreter for each submission (and after each crash)."""
    KERNEL = "kernel"
    """A real Jupyter kernel through nbclient, for full IPython fidelity."""


class OnError(enum.StrEnum):
    """What happens after a statement fails (`--on-error`)."""

    STATEMENT = "statement"
    """Go on with the next statement: a broken line never hides the functions after it."""
    CELL = "cell"
    """Skip the rest of the cell, as when cells are run one by one in Jupyter."""
    STOP = "stop"
    """Stop everything, as Run All does."""


def limit(default: float, flag: str, unit: str, help: str) -> Any:
    """A field of `Limits` with its command-line option: `flag` (the `grade` option), `unit`
    (its metavar) and `help`; the option's type is the default's."""
    return field(default=default, metadata={"flag": flag, "unit": unit, "help": help})


@dataclass(frozen=True)
class Limits:
    """What a submission may use. Every limit is configurable, on the command line too (each
    field's metadata names its flag); these are the defaults."""

    cell_timeout: float = limit(10.0, "--timeout", "S", "seconds per top-level statement of "
                                "a cell")
    """Wall seconds for one top-level statement of a cell."""
    call_timeout: float = limit(5.0, "--call-timeout", "S", "seconds per call of an exercise")
    """Wall seconds for one call of an exercise on one case."""
    submission_timeout: float = limit(300.0, "--submission-timeout", "S", "seconds for the "
                                      "whole submission, cells and calls together")
    """Wall seconds for the whole submission, cells and calls together."""
    memory_mb: int = limit(2048, "--memory-mb", "MB", "address space each of the student's "
                           "processes may map beyond the interpreter and preloaded modules")
    """Address space each process may map beyond what it holds as it starts (the interpreter,
    numpy and what the assignment preloads: a build of torch with CUDA maps 3 GB), in MiB."""
    cpu_s: int = limit(120, "--cpu-seconds", "S", "CPU seconds of each of the student's "
                       "processes")
    """CPU seconds of each process."""
    processes: int = limit(64, "--max-processes", "N", "processes the student's user may have "
                           "at once (where it is a user of its own)")
    """Processes the student's user may have at once (enforced when it is a dedicated user)."""
    file_size_mb: int = limit(16, "--max-file-mb", "MB", "largest file the student's code may "
                              "write")
    """Largest file the code may write, in MiB."""
    output_bytes: int = limit(64 << 10, "--max-output-bytes", "BYTES", "what is kept of "
                              "everything the student's code prints")
    """What is kept of everything the code prints."""
    # Checked when the submission is loaded, sizes before anything is parsed. A course
    # notebook holds 20-80 code cells, under 100 KB of code and a few hundred statements; the
    # limits are 10-20 times that, and still bound the time to load (linear: at worst about
    # 6 s of CPU per MB of code crafted to be slow), the time to run and the result's size.
    submission_mb: float = limit(50.0, "--max-submission-mb", "MB", "largest submission file; "
                                 "a larger one is refused unread")
    """Largest submission file, in MiB. Outputs count only here (images make notebooks of
    10-20 MB that are normal), so this refuses only absurd files, before they are read."""
    cell_code_mb: float = limit(1.0, "--max-cell-code-mb", "MB", "most code in one cell (or "
                                "one module)")
    """Most code in one cell (or one module), in MiB of UTF-8: room for pasted data."""
    code_mb: float = limit(2.0, "--max-code-mb", "MB", "most code in all the cells of a "
                           "submission together")
    """Most code in all the cells of a submission together, in MiB of UTF-8."""
    code_cells: int = limit(500, "--max-code-cells", "N", "most code cells in a notebook")
    """Most code cells in a notebook; the result has an entry per code cell."""
    statements: int = limit(5000, "--max-statements", "N", "most top-level statements in all "
                            "cells together")
    """Most top-level statements in all cells together: each is a round trip to the worker
    (about 1 ms), and 2 MB of `x = 1` lines would otherwise keep it busy for minutes."""

    def rlimits(self) -> dict[str, int]:
        """The limits the worker applies to itself before any student code runs."""
        return {"memory": self.memory_mb << 20, "cpu": self.cpu_s,
                "file_size": self.file_size_mb << 20, "processes": self.processes}


@dataclass
class CappedOutput:
    """What the student's code printed, capped; once `seal`ed, what it prints after goes to
    `late` instead (what printed while hidden cases ran: no student may see it)."""

    limit: int
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    dropped: int = 0
    late: CappedOutput | None = None

    def seal(self) -> None:
        """From now on, keep what arrives apart, in `late`."""
        if self.late is None:
            self.late = CappedOutput(self.limit)

    def add(self, chunk: bytes) -> None:
        if self.late is not None:
            self.late.add(chunk)
            return
        room = self.limit - self.size
        if room > 0:
            self.chunks.append(chunk[:room])
            self.size += min(room, len(chunk))
        self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        text = clean(b"".join(self.chunks).decode("utf-8", "replace"))
        if self.dropped:
            text += f"\n[grader] {self.dropped} more bytes of output were dropped"
        return text

