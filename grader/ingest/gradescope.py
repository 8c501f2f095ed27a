"""Gradescope's "Export Submissions" (programming assignments): a folder, zipped, holding
`submission_metadata.yml` and one folder per submission, `submission_<id>/`, with the files
as the student uploaded them.

The metadata maps each folder to its submitters (`:name:`, `:sid:`, `:email:`) and its time
(`:created_at:`, with an offset). The student key is the SID, or the email when a submitter
has none. A group submission is graded once for each of its submitters.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grader import isotime
from grader.errors import UsageError
from grader.ingest.handed import Handed, Read, files_in, frozen
from grader.pipeline import submissions

METADATA = "submission_metadata.yml"
MAX_METADATA_BYTES = 64 * 1024**2


def looks_like(folder: Path) -> bool:
    """Whether a folder is a Gradescope export."""
    return (folder / METADATA).is_file() and not (folder / METADATA).is_symlink()


def metadata(path: Path) -> dict[str, Any]:
    """The metadata file, read safely (plain YAML data, never objects); a UsageError says what
    is wrong with it."""
    try:
        import yaml  # PyYAML: installed with the grader
    except ImportError:  # pragma: no cover - a dependency
        raise UsageError(f"{path}: reading it needs PyYAML; pip install pyyaml") from None
    try:
        data = yaml.safe_load(submissions.read_bytes(path, MAX_METADATA_BYTES))
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc}); export the "
                         "submissions from Gradescope again") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not YAML ({text_of(exc)}); export the submissions from "
                         "Gradescope again") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not the submission metadata Gradescope exports (a mapping "
                         "of submission folders to their :submitters: and :created_at:); "
                         "export the submissions from Gradescope again")
    return {str(key): value for key, value in data.items()}


def text_of(exc: Exception) -> str:
    """An error's message on one line."""
    return " ".join(str(exc).split())


def when(value: object) -> datetime | None:
    """A `:created_at:` as a time zone aware datetime (UTC when it names no zone)."""
    if isinstance(value, str):
        try:
            value = isotime.parse(value.strip().replace(" ", "T", 1))
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def read(folder: Path) -> Read:
    """Each submitter's files in a Gradescope export."""
    path = folder / METADATA
    data = metadata(path)
    handed: list[Handed] = []
    passed: list[str] = []
    described = set()
    for key, entry in sorted(data.items()):
        submitters = entry.get(":submitters") if isinstance(entry, dict) else None
        if not isinstance(submitters, list) or not submitters:
            passed.append(f"{METADATA}: {key!r} names no :submitters:; it was not graded")
            continue
        where = folder / key
        if "/" in key or key in (".", "..") or where.is_symlink() or not where.is_dir():
            passed.append(f"{key}: the metadata names it, but it is not a folder of the "
                          "export; it was not graded")
            continue
        described.add(key)
        files, refused = files_in(where, folder)
        passed += refused
        if not files:
            passed.append(f"{key}: no .ipynb or .py files in it")
            continue
        names = tuple(p.relative_to(where).as_posix() for p in files)
        at = when(entry.get(":created_at"))
        for person in submitters:
            person = person if isinstance(person, dict) else {}
            sid, email = (str(person.get(":sid") or "").strip(),
                          str(person.get(":email") or "").strip())
            if not (sid or email):
                passed.append(f"{key}: a submitter has neither :sid: nor :email:; "
                              "it was not graded for them")
                continue
            handed.append(Handed(
                student=sid or email, files=tuple(files), names=names, submitted_at=at,
                ids=frozen({"gradescope_submission_id": key.removeprefix("submission_"),
                            "gradescope_sid": sid, "email": email}),
                display_name=str(person.get(":name") or "")))
    for child in sorted(folder.iterdir()):
        if child.is_dir() and not child.name.startswith(".") and child.name not in described:
            passed.append(f"{child.name}: not in {METADATA}; it was not graded")
    return Read(tuple(handed), tuple(passed))
