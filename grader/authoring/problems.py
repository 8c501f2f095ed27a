"""`Problem`: one mistake of an author's, as `grade validate` says it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One mistake of the author's."""

    where: str
    """The file, or exercise/case, at fault; empty when the message names it."""
    message: str
    """What is wrong and how to fix it."""

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message
