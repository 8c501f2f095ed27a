"""Finding submission files: the one set of rules for `grade run`, `grade batch` and Gradescope.

A submission is a regular `.ipynb` or `.py` file that was handed in as it is:
- a symbolic link is never followed, neither as a file nor as a folder on the way to one: a
  student could point it at the solutions, or at any file the grader's user can read;
- hidden files and folders (a name that starts with a dot: `.git`, `.ipynb_checkpoints`) are
  not submissions.
What is passed over is said, with the reason, so that nothing disappears silently.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.errors import UsageError

SUFFIXES = (".ipynb", ".py")
LINK = "is a symbolic link; the grader reads only files handed in as they are"


@dataclass(frozen=True)
class Found:
    """Submission files, and what was passed over."""

    files: tuple[Path, ...]
    """The files to grade, in a stable order."""
    refused: tuple[tuple[Path, str], ...] = ()
    """Files or folders passed over, each with why."""


def _walk(folder: Path) -> Iterator[tuple[Path, str | None]]:
    """(path, None) for each submission under `folder`, (path, why) for what is passed over.

    os.walk never descends into a linked folder; links are reported, not followed.
    """
    for current, dirs, files in os.walk(folder, followlinks=False):
        base = Path(current)
        for name in sorted(dirs):
            path = base / name
            if path.is_symlink():
                yield path, LINK
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and not (base / d).is_symlink())
        for name in sorted(files):
            path = base / name
            if name.startswith(".") or path.suffix not in SUFFIXES:
                continue
            why = problem(path)
            yield path, why


def problem(path: Path) -> str | None:
    """Why a path named as a submission is not one, or None when it is."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISLNK(mode):
        return LINK
    if not stat.S_ISREG(mode):
        return "is not a regular file"
    return None


def in_folder(folder: Path) -> Found:
    """Every submission under a folder (the folder itself may not be a link)."""
    if folder.is_symlink() or not folder.is_dir():
        reason = LINK if folder.is_symlink() else "is not a folder"
        raise UsageError(f"{folder}: {reason}; name the folder of submissions itself")
    files: list[Path] = []
    refused: list[tuple[Path, str]] = []
    for path, why in _walk(folder):
        if why is None:
            files.append(path)
        else:
            refused.append((path, why))
    return Found(tuple(files), tuple(refused))


def named(paths: Sequence[str]) -> Found:
    """The submissions named on a command line: files, or folders that stand for their files.

    A named file that is a link, or is not there, is kept: grading reports it as a submission
    that could not be read, in the result the student sees.
    """
    files: list[Path] = []
    refused: list[tuple[Path, str]] = []
    for name in paths:
        path = Path(name)
        if path.is_dir() and not path.is_symlink():
            found = in_folder(path)
            files += found.files
            refused += found.refused
        elif path.is_symlink() or path.is_file() or path.suffix in SUFFIXES:
            files.append(path)  # a file that is not there is a result that says so
        else:
            raise UsageError(f"{name}: no such file or folder")
    if not files:
        raise UsageError(f"no .ipynb or .py submissions in {', '.join(paths)}")
    return Found(tuple(files), tuple(refused))


def read_bytes(path: Path, max_bytes: int | None = None) -> bytes:
    """A submission's bytes, never through a symbolic link, from a regular file only (not a
    FIFO or a device), and never more than `max_bytes`: OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if max_bytes is not None and info.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"larger than {max_bytes} bytes")
        return stream.read(max_bytes if max_bytes is not None else -1)
