"""Where a batch read each assignment's submissions, as the gradebook keeps it."""

from __future__ import annotations

from pathlib import Path

from grader import gradebook
from grader.gradebook import origins
from tests.helpers.command import run
from tests.helpers.platforms import canvas_zip


def test_a_record_reads_back_and_a_later_one_replaces_it(tmp_path):
    book = gradebook.Gradebook(tmp_path)
    assert origins.recalled(book, "udl_attention") is None
    origins.remember(book, "udl_attention", origins.Origin(Path("/a"), "git", None,
                                                           {"hw1-ada": "ada"}))
    origins.remember(book, "udl_attention",
                     origins.Origin(Path("/b"), "folder", r"^(?P<student>\w+)-"))
    again = origins.recalled(book, "udl_attention")
    assert again is not None
    assert (again.folder, again.platform, again.pattern, dict(again.roster)) == \
        (Path("/b"), "folder", r"^(?P<student>\w+)-", {})
    assert origins.recalled(book, "attention_basics") is None


def test_a_batch_of_a_zip_records_the_folder_it_unpacked_and_the_layout(tmp_path):
    out = tmp_path / "out"
    code, stdout, _ = run("batch", str(canvas_zip(tmp_path / "download.zip")), "--assignment",
                          "udl_attention", "--out", str(out), "--jobs", "2")
    assert code == 0, stdout
    found = origins.recalled(gradebook.Gradebook(out), "udl_attention")
    assert found is not None
    assert (found.folder, found.platform) == ((out / "submissions" / "download").resolve(),
                                              "canvas")
    assert sorted(p.name for p in found.folder.iterdir()) == [
        "hopperg_1003_5003_attention.py", "lovelaceada_1001_5001_attention.ipynb",
        "turingalan_LATE_1002_5002_attention-1.py"]
