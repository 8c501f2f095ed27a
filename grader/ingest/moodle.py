"""Moodle's "Download all submissions" zip (assign module, Moodle 4.x): one folder per
participant and plugin, `Full Name_participantid_assignsubmission_file_`, holding the files as
the student uploaded them; without "Download submissions in folders", the same prefix begins
each file's name instead (`Full Name_participantid_assignsubmission_file_hw.ipynb`). Online
text (`assignsubmission_onlinetext_`) is not graded here.

The participant id is the student key; it is the same in every download of the assignment.
The download does not say when a file was handed in.
"""

from __future__ import annotations

import re
from pathlib import Path

from grader.ingest.handed import Handed, Read, files_in, frozen

PREFIX = re.compile(r"^(?P<name>[^/]+?)_(?P<participant>\d+)_assign(?:submission|feedback)_"
                    r"(?P<plugin>[a-z]+)_")
FILE = re.compile(PREFIX.pattern + r"/?(?P<file>[^/].*)$")


def looks_like(names: list[str]) -> bool:
    """Whether the files and folders directly in a folder are a Moodle download."""
    return bool(names) and all(PREFIX.match(name) for name in names)


def read(folder: Path) -> Read:
    """Each participant's files in a Moodle download."""
    files, passed = files_in(folder, folder)
    own: dict[str, list[tuple[Path, str]]] = {}
    names: dict[str, str] = {}
    for path in files:
        relative = path.relative_to(folder).as_posix()
        found = FILE.match(relative)
        if found is None:
            passed.append(f"{relative}: not in a participant's folder as Moodle names it "
                          "(Full Name_participantid_assignsubmission_file_); grade with "
                          "--from folder if this is not a Moodle download")
            continue
        if found.group("plugin") != "file":
            passed.append(f"{relative}: handed in as {found.group('plugin')}, not as a file")
            continue
        participant = found.group("participant")
        own.setdefault(participant, []).append((path, found.group("file")))
        names[participant] = found.group("name")
    handed = tuple(
        Handed(student=participant, files=tuple(p for p, _ in items),
               names=tuple(n for _, n in items),
               ids=frozen({"moodle_participant_id": participant}),
               display_name=names[participant])
        for participant, items in sorted(own.items()))
    return Read(handed, tuple(passed))
