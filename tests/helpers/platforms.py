"""Bulk downloads as each platform makes them, built from the platforms' documented formats
(docs/class.md, "Grading a whole class"), for a small class: a right notebook, a right module and a
blank stub."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

from tests.conftest import ROOT

RIGHT_NOTEBOOK = ROOT / "tests" / "corpus" / "udl_attention" / "loops.ipynb"
RIGHT_MODULE = ROOT / "tests" / "corpus" / "udl_attention" / "vectorised.py"
STUB = ROOT / "exercises" / "udl_attention.py"


def zipped(path: Path, members: dict[str, bytes]) -> Path:
    """A zip holding `members` (name -> bytes), deflated."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def canvas_zip(path: Path) -> Path:
    """Canvas "Download Submissions": `lastfirst[_LATE]_userid_submissionid_filename`, with a
    resubmission's `-1` before the extension."""
    return zipped(path, {
        "lovelaceada_1001_5001_attention.ipynb": RIGHT_NOTEBOOK.read_bytes(),
        "turingalan_LATE_1002_5002_attention-1.py": RIGHT_MODULE.read_bytes(),
        "hopperg_1003_5003_attention.py": STUB.read_bytes(),
    })


def moodle_zip(path: Path, folders: bool = True) -> Path:
    """Moodle 4.x "Download all submissions": `Full Name_participantid_assignsubmission_file_`
    as a folder per participant, or as each file's prefix."""
    sep = "/" if folders else ""
    return zipped(path, {
        f"Ada Lovelace_301_assignsubmission_file_{sep}attention.ipynb":
            RIGHT_NOTEBOOK.read_bytes(),
        f"Alan Turing_302_assignsubmission_file_{sep}attention.py": RIGHT_MODULE.read_bytes(),
        f"Grace Hopper_303_assignsubmission_file_{sep}attention.py": STUB.read_bytes(),
        "Grace Hopper_303_assignsubmission_onlinetext_/onlinetext.html": b"<p>done</p>",
    })


GRADESCOPE_METADATA = """\
submission_9001:
  :submitters:
  - :name: Ada Lovelace
    :sid: '20001'
    :email: ada@example.edu
  :created_at: 2024-09-23 16:40:08.574685000 -07:00
  :score: 0.0
  :status: processed
submission_9002:
  :submitters:
  - :name: Alan Turing
    :sid: ''
    :email: alan@example.edu
  :created_at: 2024-09-24 09:00:00.000000000 +01:00
  :score: 0.0
  :status: processed
submission_9003:
  :submitters:
  - :name: Grace Hopper
    :sid: '20003'
    :email: grace@example.edu
  :created_at: 2024-09-22 23:59:59.999999000 -04:00
  :score: 0.0
  :status: processed
"""


def gradescope_zip(path: Path) -> Path:
    """Gradescope "Export Submissions": `assignment_<id>_export/` with
    `submission_metadata.yml` and `submission_<id>/` folders."""
    root = "assignment_777_export/"
    return zipped(path, {
        f"{root}submission_metadata.yml": GRADESCOPE_METADATA.encode(),
        f"{root}submission_9001/attention.ipynb": RIGHT_NOTEBOOK.read_bytes(),
        f"{root}submission_9002/attention.py": RIGHT_MODULE.read_bytes(),
        f"{root}submission_9003/attention.py": STUB.read_bytes(),
    })


def git_class(folder: Path) -> Path:
    """Cloned GitHub Classroom repositories `hw1-<user>`, one commit each at a known time."""
    work = {"hw1-ada": (RIGHT_NOTEBOOK, "attention.ipynb", "2024-09-23T16:40:08+02:00"),
            "hw1-alan": (RIGHT_MODULE, "attention.py", "2024-09-24T09:00:00-05:00"),
            "hw1-grace": (STUB, "attention.py", "2024-09-22T23:59:59+00:00")}
    for repository, (source, name, when) in work.items():
        target = folder / repository
        target.mkdir(parents=True)
        (target / name).write_bytes(source.read_bytes())
        env = {"PATH": os.environ["PATH"], "HOME": str(folder), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_AUTHOR_NAME": "s", "GIT_AUTHOR_EMAIL": "s@example.edu",
               "GIT_COMMITTER_NAME": "s", "GIT_COMMITTER_EMAIL": "s@example.edu",
               "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
        for command in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "work"]):
            subprocess.run(["git", "-C", str(target), *command], check=True, env=env)
    return folder


def files_outside(root: Path, out: Path) -> set[str]:
    """Every path under `root` but those under `out`: what a batch must leave as it was."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if out not in p.parents and p != out}


WORKSHEET_HEADER = ("Identifier", "Full name", "Email address", "Status", "Grade",
                    "Maximum Grade", "Grade can be changed", "Last modified (submission)",
                    "Last modified (grade)", "Feedback comments")


def moodle_worksheet(path: Path, times: dict[str, str]) -> Path:
    """Moodle's "Download grading worksheet" (assign, offline grading): participant id ->
    "Last modified (submission)" as Moodle writes it in English ("-": nothing handed in)."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(WORKSHEET_HEADER)
    for participant, when in times.items():
        writer.writerow([f"Participant {participant}", f"Student {participant}",
                         f"s{participant}@example.edu", "Submitted for grading", "", "10.00",
                         "Yes", when, "-", ""])
    path.write_text("\ufeff" + out.getvalue(), encoding="utf-8")
    return path
