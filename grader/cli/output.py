"""Writing a file that a command was asked for (`--json`, `--html`, `--output` ...)."""

from __future__ import annotations

from pathlib import Path

from grader.errors import UsageError


def write(path: str, text: str) -> None:
    """Write `text` to `path`, making its folder; a usage error names the path when it
    cannot be written."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot be written ({exc.strerror}); "
                         "choose another path") from None
