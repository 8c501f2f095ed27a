"""What a submission may use: the limits, and the capped buffer for what it prints."""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.text import clean

MESSAGE_CHARS = 2000
"""Longest message kept in a result (a cell's, a check's): longer helps no one, and a message
built from a submission could otherwise be as large as the submission, or larger."""


@dataclass(frozen=True)
class Limits:
    """What a submission may use. Every limit is configurable; these are the defaults."""

    cell_timeout: float = 10.0
    """Wall seconds for one top-level statement of a cell."""
    call_timeout: float = 5.0
    """Wall seconds for one call of an exercise on one case."""
    submission_timeout: float = 300.0
    """Wall seconds for the whole submission, cells and calls together."""
    memory_mb: int = 2048
    """Address space of each process, in MiB."""
    cpu_s: int = 120
    """CPU seconds of each process."""
    processes: int = 64
    """Processes the student's user may have at once (enforced when it is a dedicated user)."""
    file_size_mb: int = 16
    """Largest file the code may write, in MiB."""
    output_bytes: int = 64 << 10
    """What is kept of everything the code prints."""
    # Checked when the submission is loaded, sizes before anything is parsed. A course
    # notebook holds 20-80 code cells, under 100 KB of code and a few hundred statements; the
    # limits are 10-20 times that, and still bound the time to load (linear: at worst about
    # 6 s of CPU per MB of code crafted to be slow), the time to run and the result's size.
    submission_mb: float = 50.0
    """Largest submission file, in MiB. Outputs count only here (images make notebooks of
    10-20 MB that are normal), so this refuses only absurd files, before they are read."""
    cell_code_mb: float = 1.0
    """Most code in one cell (or one module), in MiB of UTF-8: room for pasted data."""
    code_mb: float = 2.0
    """Most code in all the cells of a submission together, in MiB of UTF-8."""
    code_cells: int = 500
    """Most code cells in a notebook; the result has an entry per code cell."""
    statements: int = 5000
    """Most top-level statements in all cells together: each is a round trip to the worker
    (about 1 ms), and 2 MB of `x = 1` lines would otherwise keep it busy for minutes."""

    def rlimits(self) -> dict[str, int]:
        """The limits the worker applies to itself before any student code runs."""
        return {"memory": self.memory_mb << 20, "cpu": self.cpu_s,
                "file_size": self.file_size_mb << 20, "processes": self.processes}


@dataclass
class CappedOutput:
    """What the student's code printed, capped."""

    limit: int
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    dropped: int = 0

    def add(self, chunk: bytes) -> None:
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


def cap(text: str, limit: int = MESSAGE_CHARS) -> str:
    """`text` cut to `limit` characters, saying how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"
