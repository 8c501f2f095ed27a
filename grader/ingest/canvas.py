"""Canvas's "Download Submissions" zip: one flat folder of files, each named
`lastfirst[_LATE]_userid_submissionid_filename`.

`lastfirst` is the student's sortable name in lower case with everything but letters removed,
`_LATE` marks a submission after the due date, `userid` is the Canvas user id (the student key)
and `filename` is the file as the student uploaded it, to which Canvas adds `-1`, `-2`... before
the extension when a student hands in a file of the same name again. The download does not say
when a file was handed in.
"""

from __future__ import annotations

import re
from pathlib import Path

from grader.ingest.handed import Handed, Read, files_in, frozen

NAME = re.compile(r"^(?P<name>[^_/]+?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<submission>\d+)_"
                  r"(?P<file>[^/]+)$")
RESUBMITTED = re.compile(r"^(?P<stem>.+?)-\d+(?P<suffix>\.[^.]+)$")


def original(filename: str) -> str:
    """The name the student gave the file, without Canvas's resubmission suffix."""
    found = RESUBMITTED.match(filename)
    return found.group("stem") + found.group("suffix") if found else filename


def looks_like(names: list[str]) -> bool:
    """Whether the files directly in a folder are a Canvas download."""
    return bool(names) and all(NAME.match(name) for name in names)


def read(folder: Path) -> Read:
    """Each student's files in a Canvas download."""
    files, passed = files_in(folder, folder)
    own: dict[str, list[tuple[Path, str, re.Match[str]]]] = {}
    for path in files:
        relative = path.relative_to(folder).as_posix()
        found = NAME.match(relative)
        if found is None:
            passed.append(f"{relative}: not named as Canvas names a submission "
                          "(lastfirst_userid_submissionid_filename); rename it so, or "
                          "grade with --from folder")
            continue
        own.setdefault(found.group("user"), []).append(
            (path, original(found.group("file")), found))
    handed = []
    for user, items in sorted(own.items()):
        names = [name for _, name, _ in items]
        if len(set(names)) < len(names):  # two uploads that differ only by Canvas's suffix
            names = [found.group("file") for _, _, found in items]
        first = items[0][2]
        handed.append(Handed(
            student=user, files=tuple(path for path, _, _ in items), names=tuple(names),
            ids=frozen({"canvas_user_id": user,
                        "canvas_submission_id": first.group("submission"),
                        "canvas_late": "yes" if any(f.group("late") for _, _, f in items)
                        else ""}),
            display_name=first.group("name")))
    return Read(tuple(handed), tuple(passed))
