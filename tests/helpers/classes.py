"""Class folders for batches, and reading what a batch recorded."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from grader.gradebook import FILENAME
from tests.conftest import ROOT
from tests.helpers.sqlite_file import opened

UDL_CORPUS = ROOT / "tests" / "corpus" / "udl_attention"


def make_class(folder: Path, slow: bool = False) -> Path:
    """Eight submissions: correct, wrong, broken; `slow` adds half a second to each."""
    folder.mkdir(parents=True, exist_ok=True)
    sources = {"alice/hw.ipynb": UDL_CORPUS / "loops.ipynb",
               "bob/hw.ipynb": UDL_CORPUS / "seed002.ipynb",
               "carol_udl.py": UDL_CORPUS / "vectorised.py",
               "dave_hw.ipynb": ROOT / "tests" / "corpus" / "broken" / "not_json.ipynb",
               "erin/hw.py": ROOT / "exercises" / "udl_attention.py",
               "frank_udl.py": ROOT / "solutions" / "udl_attention.py",
               "grace/hw.ipynb": UDL_CORPUS / "seed002.ipynb",
               "heidi_x.py": UDL_CORPUS / "vectorised.py"}
    for relative, source in sources.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_bytes()
        if slow and target.suffix == ".py":
            text = b"import time\ntime.sleep(0.5)\n" + text
        target.write_bytes(text)
    (folder / "notes.txt").write_text("not a submission")
    (folder / ".hidden_udl.py").write_text("x = 1")
    return folder


def small_class(tmp_path: Path) -> Path:
    """`tmp_path/submissions` with two students, alice and bob, who hand in the same right
    answer."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    for student in ("alice", "bob"):
        shutil.copy(UDL_CORPUS / "vectorised.py", folder / f"{student}_udl_attention.py")
    return folder


def normalised(out: Path) -> list[tuple]:
    """The gradebook's rows in `out`, in order, each result's JSON without its duration: two
    batches that graded alike give equal lists."""
    with opened(out / FILENAME) as db:
        rows = db.execute("SELECT student, assignment, submission, sha256, status, score, "
                          "max_score, result FROM results ORDER BY student, submission").fetchall()
    normal = []
    for *fields, result in rows:
        data = json.loads(result)
        data.pop("duration_s")
        normal.append((*fields, json.dumps(data, sort_keys=True)))
    return normal


class Terminal(io.StringIO):
    """A progress stream that says it is a terminal, so that a batch draws its progress bar."""

    def isatty(self) -> bool:
        return True
