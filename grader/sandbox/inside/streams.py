"""The worker's standard streams: the student's `sys.stdout` and `sys.stderr`, as Jupyter's,
flushing them all, and silencing descriptors 1 and 2 for a statement that is replayed.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any


class OutStream(io.TextIOWrapper):
    """`sys.stdout` and `sys.stderr` of the student's code, as ipykernel's in Jupyter: text
    only. ipykernel's stream has no `.buffer` (bytes written there raise AttributeError in
    Jupyter), so neither has this one, and both engines fail alike where Jupyter fails."""

    @classmethod
    def on(cls, fd: int, through: bool = False) -> OutStream:
        """A stream that writes to `fd` (left open when the stream is closed), buffered as
        Python buffers its own (stderr by line), or written through with `through`."""
        return cls(io.BufferedWriter(io.FileIO(fd, "w", closefd=False)), encoding="utf-8",
                   errors="backslashreplace" if fd == 2 else "strict",
                   line_buffering=fd == 2 and not through, write_through=through)

    @property
    def buffer(self) -> Any:  # type: ignore[override]
        raise AttributeError("'OutStream' object has no attribute 'buffer'")


def silence() -> tuple[int, int]:
    """Send what is written to fds 1 and 2 nowhere; the saved fds, for `restore`."""
    flush()
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    return saved


def restore(saved: tuple[int, int]) -> None:
    """Put back fds 1 and 2 as `silence` found them."""
    # No zip() or other builtin: the student's code may have replaced them.
    os.dup2(saved[0], 1)
    os.dup2(saved[1], 2)
    os.close(saved[0])
    os.close(saved[1])


def flush(*more: Any) -> None:
    """Flush the standard streams (the current and the original ones) and `more`, whatever
    the student's code did to them."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__, *more):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
