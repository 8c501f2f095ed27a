"""What the leak scans look for, and how they reach the project: the hidden values and
solution lines that must never be readable from the sandbox or reach students in a release.

These run in the test process; `tests/leakscan.py` is the scan itself, which also runs inside
the sandbox as a submission, so it holds only what the standard library and numpy can run.
"""

from __future__ import annotations

import base64
import contextlib
import glob
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import numpy as np
from packaging.utils import canonicalize_name

from grader.course import references, registry
from grader.course.layout import Layout
from grader.model import Assignment, Visibility
from tests import leakscan
from tests.conftest import ROOT

MARKERS = ("BEGIN SOLUTION", "END SOLUTION")


def distinctive(value: float) -> bool:
    """Whether `value` is worth looking for: finite, and not a number that rounds to four
    decimals (such as the sizes 5 or 32), which would match everywhere."""
    return bool(np.isfinite(value)) and value != round(value, 4)


# ---------------------------------------------------------------- the scan inside the sandbox

def hidden_needles() -> list[str]:
    """16-byte windows of every hidden reference array that are not plain numbers."""
    found: set[bytes] = set()
    for assignment in registry.assignments().values():
        stored = references.load(assignment)
        for exercise in assignment.exercises:
            for case in exercise.cases:
                if case.visibility is not Visibility.HIDDEN:
                    continue
                for array in stored.get(exercise.name, case.name):
                    flat = np.ascontiguousarray(array, dtype="<f8").ravel()
                    for i in range(len(flat) - 1):
                        if distinctive(flat[i]) or distinctive(flat[i + 1]):
                            found.add(flat[i:i + 2].tobytes())
    return sorted(needle.hex() for needle in found)


def solution_lines() -> list[str]:
    """Distinctive lines of the solutions: at least 32 characters (shorter ones, such as
    `x = np.asarray(x, dtype=float)`, stand in SciPy too), and not in what students get."""
    public = set()
    for path in (ROOT / "exercises").iterdir():
        public |= {line.strip() for line in path.read_text().splitlines()}
    lines = set()
    for path in (ROOT / "solutions").glob("*.py"):
        for line in path.read_text().splitlines():
            text = line.strip()
            if (len(text) >= 32 and text not in public
                    and not text.startswith(("#", "import ", "from ", '"""', "def ", "class "))):
                lines.add(text)
    return sorted(lines)



# ---------------------------------------------------- reaching the project as another user

def locked_folders(paths: list[Path]) -> list[Path]:
    """The folders on the way to `paths` that other users cannot pass, outermost first: /root
    under pyenv, or the folder `mktemp -d` made (mode 0700) for a fresh clone."""
    locked = set()
    for path in paths:
        for folder in reversed(path.resolve().parents):
            if folder != Path("/") and not folder.stat().st_mode & stat.S_IXOTH:
                locked.add(folder)
    return sorted(locked, key=lambda folder: len(folder.parts))


@contextlib.contextmanager
def stash_room() -> Iterator[Path]:
    """A folder for `make_passable`'s stashes, removed afterwards. Only with rmdir: in the
    namespace a stash holds a bind of a private folder, so nothing ever empties one (a
    stash still bound, by a namespace that outlived its command, is left in place)."""
    room = Path(tempfile.mkdtemp(prefix="leakscan-stash-"))
    try:
        yield room
    finally:
        for stash in room.iterdir():
            with contextlib.suppress(OSError):
                stash.rmdir()
        with contextlib.suppress(OSError):
            room.rmdir()


def make_passable(locked: list[Path], paths: list[Path], room: Path) -> str:
    """Shell that, in a private mount namespace, makes each locked folder passable while
    showing only the entries on the way to `paths`: the folder is moved aside (to a stash
    in `room`, from `stash_room`), an empty tmpfs (mode 0755) takes its place, and each
    entry needed is bound back into it. Nothing changes outside this namespace, and the
    files keep their own owners and modes."""
    steps = []
    for folder in locked:
        stash = tempfile.mkdtemp(dir=room)
        needed = sorted({path.resolve().relative_to(folder).parts[0]
                         for path in paths if folder in path.resolve().parents})
        steps.append(f"mount --bind '{folder}' '{stash}' && "
                     f"mount -t tmpfs -o mode=0755 tmpfs '{folder}'")
        for entry in needed:
            make = "mkdir" if (folder / entry).is_dir() else "touch"
            steps.append(f"{make} '{folder / entry}' && "
                         f"mount --bind '{stash}/{entry}' '{folder / entry}'")
    return " && ".join(steps)



# ----------------------------------------------------------------------- a release's secrets

def arrays_in(value: object) -> Iterator[np.ndarray]:
    """Every numeric array in `value`, however deep in tuples, lists and dicts, as floats."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "fiu":
        yield np.asarray(value, dtype=float)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from arrays_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from arrays_in(item)


def material(assignment: Assignment, visibility: Visibility) -> list[np.ndarray]:
    """Every input and expected array of the cases of one visibility."""
    stored = references.load(assignment)
    found = []
    for exercise in assignment.exercises:
        for case in exercise.cases:
            if case.visibility is visibility:
                found += list(arrays_in((case.inputs(), dict(case.init_kwargs))))
                found += list(stored.get(exercise.name, case.name))
    return found


def windows(arrays: list[np.ndarray]) -> set[bytes]:
    """Each pair of neighbouring values that holds a distinctive one, as float64 and as
    float32 bytes; the value itself where it has no neighbour. A value is judged as that type
    holds it (1e-50 is 0.0 in float32)."""
    found = set()
    for array in arrays:
        for dtype in ("<f8", "<f4"):
            flat = np.asarray(array, dtype=float).ravel().astype(dtype)
            if len(flat) == 1 and distinctive(flat[0]):
                found.add(flat.tobytes())
            for i in range(len(flat) - 1):
                if distinctive(flat[i]) or distinctive(flat[i + 1]):
                    found.add(flat[i:i + 2].tobytes())
    return found


def _texts(arrays: list[np.ndarray]) -> set[str]:
    """A value as Python writes it in full, with 8 significant digits, and as numpy prints
    it (at most 8 decimals, numpy's default precision, or 8 digits in scientific notation,
    which numpy chooses for an array whose values span a wide range)."""
    found = set()
    for array in arrays:
        for value in np.asarray(array, dtype=float).ravel():
            written = {repr(float(value)), np.format_float_positional(
                value, precision=8, unique=False, fractional=False, trim="-"),
                np.format_float_positional(value, precision=8, fractional=True, trim="-"),
                np.format_float_scientific(value, precision=8, unique=False)}
            # A form that has lost the value's distinctive digits (1e-10 prints as 0) is none.
            found |= {text for text in written if distinctive(float(text))}
    return found


def secrets(assignment: Assignment) -> tuple[list[str], list[str], list[str]]:
    """(byte needles, solution lines, text needles) of what must never reach students."""
    hidden = material(assignment, Visibility.HIDDEN)
    public = material(assignment, Visibility.PUBLIC)
    needles = sorted(w.hex() for w in windows(hidden) - windows(public))
    texts = sorted(_texts(hidden) - _texts(public))
    layout = Layout.current()
    given: set[str] = set()
    for path in layout.exercises.glob(f"{assignment.name}*"):
        text = path.read_text()
        if path.suffix == ".ipynb":  # code cells: a solution line in a text cell is a leak
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"]
                             if c["cell_type"] == "code")
        given |= {line.strip() for line in text.splitlines()}
    lines = set()
    for line in layout.solution(assignment.name).read_text().splitlines():
        text = line.strip()
        if len(text) >= 10 and text not in given and not text.startswith(
                ("#", "import ", "from ", '"""', "def ", "class ")):
            lines.add(text)
    return needles, sorted(lines), texts


def scan(folder: Path, assignment: Assignment) -> leakscan.Scan:
    """The deep scan of a released folder: every byte of every file, every string of a
    notebook (any cell, attachment, output, metadata), every member of the check data."""
    needles, lines, texts = secrets(assignment)
    assert needles and lines and texts  # there is something to find
    return leakscan.main(needles, lines, top=str(folder), texts=texts, markers=MARKERS,
                         deep=True)


def installed_files(sites: list[str], ours: str) -> dict[str, tuple[str, bytes]]:
    """The files that packages installed, each path with its hash as the package recorded it
    (`leakscan.Scan`'s `vouched`): every distribution's RECORD in the folders `sites` but the
    grader's own (named `ours`, as pyproject.toml names it), and Debian's md5sums (`/lib/...`
    also as `/usr/lib/...`, where /lib is a link to it)."""
    found: dict[str, tuple[str, bytes]] = {}
    for distribution in metadata.distributions(path=sites):
        if canonicalize_name(distribution.metadata["Name"] or "") == canonicalize_name(ours):
            continue
        for file in distribution.files or []:
            if file.hash is None or file.hash.mode != "sha256":
                continue
            path = os.path.normpath(str(distribution.locate_file(file)))
            found[path] = ("sha256", base64.urlsafe_b64decode(file.hash.value + "=="))
    for listing in glob.glob("/var/lib/dpkg/info/*.md5sums"):
        with open(listing, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                digest, _, relative = line.rstrip("\n").partition("  ")
                if len(digest) != 32 or not relative:
                    continue
                path = "/" + relative
                found[path] = ("md5", bytes.fromhex(digest))
                if path.startswith("/lib/"):
                    found["/usr" + path] = found[path]
    return found
