"""What a platform's download says about each student's work: `Handed`, one per student.

Every layout (`canvas`, `moodle`, `gradescope`, `git`) reads a folder into these, and the batch
makes its jobs from them. The student key is the platform's user id where it gives one, so that
it stays the same from one download to the next; the name shown is kept beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import MappingProxyType

from grader.pipeline import submissions

PERSON_IDS = ("email", "gradescope_sid", "github_user", "canvas_user_id")
"""The platform ids (`Handed.ids`) that name a person on a roster or in a times file, where the
student key does not (a Moodle participant id is of one assignment only; a submission id or
a commit names no one)."""


@dataclass(frozen=True)
class Handed:
    """One student's work as a platform handed it over."""

    student: str
    """The gradebook's key for the student: the platform's user id (Canvas user id, Moodle
    participant id, Gradescope SID or else email, GitHub user)."""
    files: tuple[Path, ...]
    """The submission files, in a stable order."""
    names: tuple[str, ...]
    """Each file's name as the student gave it (its path in their folder), which stays the
    same when they hand in again."""
    submitted_at: datetime | None = None
    """When it was handed in (time zone aware), where the download says so."""
    ids: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """The platform's ids: `canvas_user_id`, `canvas_submission_id`, `moodle_participant_id`,
    `gradescope_submission_id`, `gradescope_sid`, `email`, `github_user`, `git_commit`..."""
    display_name: str = ""
    """The student's name as the platform shows it."""


@dataclass(frozen=True)
class Read:
    """A folder read as one platform's layout."""

    handed: tuple[Handed, ...]
    """The students' work."""
    passed_over: tuple[str, ...]
    """Files and folders not taken, each as "path: why"."""


def files_in(folder: Path, root: Path) -> tuple[list[Path], list[str]]:
    """The submission files under `folder` (the one set of rules, `submissions.in_folder`),
    and what was passed over, named relative to `root`."""
    found = submissions.in_folder(folder)
    return list(found.files), [f"{path.relative_to(root).as_posix()}: {why}"
                               for path, why in found.refused]


def frozen(ids: dict[str, str]) -> Mapping[str, str]:
    """Ids that cannot be changed, without the empty ones."""
    return MappingProxyType({key: value for key, value in ids.items() if value})
