"""Which platform a download comes from, and reading it as that platform's layout.

A folder is recognised by what is directly in it (hidden names aside):
- Gradescope: `submission_metadata.yml` (or one folder holding it, as the export's zip has);
- Git: every folder a cloned repository;
- Moodle: every name begins `Full Name_participantid_assignsubmission_`;
- Canvas: only files, every one named `lastfirst[_LATE]_userid_submissionid_filename`;
- anything else is a plain folder of submissions, read as `grade batch` always has.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal, get_args

from grader.ingest import canvas, git, gradescope, moodle
from grader.ingest.handed import Read

Platform = Literal["canvas", "moodle", "gradescope", "git", "folder"]
PLATFORMS: tuple[str, ...] = get_args(Platform)


def _visible(folder: Path) -> list[Path]:
    return sorted(c for c in folder.iterdir() if not c.name.startswith("."))


def unwrapped(folder: Path) -> Path:
    """The folder itself, or the one folder it holds when a zip wrapped the download in one
    (Gradescope's `assignment_<id>_export/`)."""
    children = _visible(folder)
    if (len(children) == 1 and children[0].is_dir() and not children[0].is_symlink()
            and not git.is_repository(children[0])):
        return children[0]
    return folder


def recognise(folder: Path) -> tuple[Platform, Path]:
    """The platform a download folder comes from, and the folder its layout starts in."""
    inner = unwrapped(folder)
    if gradescope.looks_like(inner):
        return "gradescope", inner
    if git.looks_like(folder):
        return "git", folder
    children = _visible(inner)
    names = [c.name for c in children]
    if moodle.looks_like(names):
        return "moodle", inner
    if all(c.is_file() for c in children) and canvas.looks_like(names):
        return "canvas", inner
    return "folder", folder


def read(folder: Path, platform: Platform, roster: Mapping[str, str] | None = None) -> Read:
    """The students' work in `folder` read as `platform`'s layout (not "folder")."""
    if platform == "gradescope":
        return gradescope.read(unwrapped(folder))
    if platform == "git":
        return git.read(folder, roster)
    if platform == "moodle":
        return moodle.read(unwrapped(folder))
    if platform == "canvas":
        return canvas.read(unwrapped(folder))
    raise ValueError(f"{platform} has no layout to read")
