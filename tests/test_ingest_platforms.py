"""`grade batch` on each platform's bulk download, end to end: the students (the platform's
user ids), their names and ids, the submission times and the scores in the gradebook."""

from __future__ import annotations

import pickle
import subprocess

import pytest

from grader import gradebook
from grader.cli import parser
from grader.gradebook import identities
from grader.ingest import canvas, git, recognise
from tests.helpers.command import run
from tests.helpers.platforms import (
    RIGHT_MODULE,
    RIGHT_NOTEBOOK,
    canvas_zip,
    files_outside,
    git_class,
    gradescope_zip,
    moodle_zip,
    zipped,
)
from tests.helpers.sqlite_file import opened


def recorded(out) -> dict[str, tuple[str, float, str | None]]:
    """student -> (submission, score, submitted_at) as the gradebook has them."""
    with opened(out / gradebook.FILENAME) as db:
        rows = db.execute("SELECT student, submission, score, submitted_at FROM results")
        return {student: (name, score, at) for student, name, score, at in rows}


def batch(source, out, *extra):
    return run("batch", str(source), "--assignment", "udl_attention", "--out", str(out),
               "--jobs", "2", *extra)


def test_the_batch_sources_are_the_platforms():
    assert parser.BATCH_SOURCES == recognise.PLATFORMS


@pytest.mark.parametrize("filename, original", [
    ("attention-1.ipynb", "attention.ipynb"), ("attention-12.py", "attention.py"),
    ("attention.ipynb", "attention.ipynb"), ("my-hw.ipynb", "my-hw.ipynb"),
])
def test_canvas_resubmission_suffixes(filename, original):
    assert canvas.original(filename) == original


def test_a_canvas_download(tmp_path):
    out = tmp_path / "out"
    code, stdout, _ = batch(canvas_zip(tmp_path / "submissions.zip"), out)
    assert code == 0, stdout
    assert "as a canvas download" in stdout
    assert recorded(out) == {"1001": ("attention.ipynb", 10.0, None),
                             "1002": ("attention.py", 10.0, None),
                             "1003": ("attention.py", 0.0, None)}
    people = identities.identities(gradebook.Gradebook(out), "udl_attention")
    assert people["1002"] == ("turingalan", {"canvas_late": "yes", "canvas_submission_id":
                                             "5002", "canvas_user_id": "1002"})
    assert people["1001"][1]["canvas_submission_id"] == "5001"
    assert "canvas_late" not in people["1001"][1]
    assert (out / "submissions" / "submissions" / "lovelaceada_1001_5001_attention.ipynb"
            ).is_file()
    assert files_outside(tmp_path, out) == {"submissions.zip"}


@pytest.mark.parametrize("folders", [True, False])
def test_a_moodle_download(tmp_path, folders):
    out = tmp_path / "out"
    code, stdout, _ = batch(moodle_zip(tmp_path / "moodle.zip", folders), out)
    assert code == 0, stdout
    assert "as a moodle download" in stdout
    assert recorded(out) == {"301": ("attention.ipynb", 10.0, None),
                             "302": ("attention.py", 10.0, None),
                             "303": ("attention.py", 0.0, None)}
    people = identities.identities(gradebook.Gradebook(out), "udl_attention")
    assert people["303"] == ("Grace Hopper", {"moodle_participant_id": "303"})


def test_a_gradescope_export(tmp_path):
    out = tmp_path / "out"
    code, stdout, _ = batch(gradescope_zip(tmp_path / "export.zip"), out)
    assert code == 0, stdout
    assert "as a gradescope download" in stdout
    # The SID, or the email for a student with none; each time in UTC.
    assert recorded(out) == {
        "20001": ("attention.ipynb", 10.0, "2024-09-23T23:40:08.574685+00:00"),
        "alan@example.edu": ("attention.py", 10.0, "2024-09-24T08:00:00+00:00"),
        "20003": ("attention.py", 0.0, "2024-09-23T03:59:59.999999+00:00")}
    people = identities.identities(gradebook.Gradebook(out), "udl_attention")
    assert people["20001"] == ("Ada Lovelace", {"email": "ada@example.edu",
                                                "gradescope_sid": "20001",
                                                "gradescope_submission_id": "9001"})


def test_cloned_git_repositories(tmp_path):
    folder = git_class(tmp_path / "repos")
    out = tmp_path / "out"
    code, stdout, _ = batch(folder, out)
    assert code == 0, stdout
    assert "as a git download" in stdout
    assert recorded(out) == {"ada": ("attention.ipynb", 10.0, "2024-09-23T14:40:08+00:00"),
                             "alan": ("attention.py", 10.0, "2024-09-24T14:00:00+00:00"),
                             "grace": ("attention.py", 0.0, "2024-09-22T23:59:59+00:00")}
    people = identities.identities(gradebook.Gradebook(out), "udl_attention")
    assert people["ada"][1]["github_user"] == "ada"
    assert len(people["ada"][1]["git_commit"]) == 40


def test_a_plain_folder_is_still_a_folder_and_from_forces_a_layout(tmp_path):
    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "lovelaceada_1001_5001_attention.py").write_bytes(RIGHT_MODULE.read_bytes())
    out = tmp_path / "out"
    code, stdout, _ = batch(folder, out, "--from", "folder")
    assert code == 0, stdout
    assert list(recorded(out)) == ["lovelaceada"]
    code, stdout, _ = batch(folder, tmp_path / "out2")
    assert code == 0 and "as a canvas download" in stdout
    assert list(recorded(tmp_path / "out2")) == ["1001"]


def test_student_pattern_with_a_platform_is_refused(tmp_path):
    code, _, err = batch(canvas_zip(tmp_path / "c.zip"), tmp_path / "out", "--from", "canvas",
                         "--student-pattern", "(?P<student>x)")
    assert code == 2
    assert "--student-pattern reads a plain folder" in err


def test_a_new_download_regrades_only_what_changed_under_the_same_keys(tmp_path):
    out = tmp_path / "out"
    batch(canvas_zip(tmp_path / "submissions.zip"), out)
    # The next download: Grace handed in again, so Canvas adds -1; the rest is as it was.
    newer = zipped(tmp_path / "submissions.zip", {
        "lovelaceada_1001_5001_attention.ipynb": RIGHT_NOTEBOOK.read_bytes(),
        "turingalan_LATE_1002_5002_attention-1.py": RIGHT_MODULE.read_bytes(),
        "hopperg_1003_5004_attention-1.py": RIGHT_MODULE.read_bytes()})
    code, stdout, _ = batch(newer, out)
    assert code == 0
    assert "graded 1, skipped 2 already in the gradebook" in stdout
    assert recorded(out)["1003"] == ("attention.py", 10.0, None)
    assert len(gradebook.Gradebook(out).rows()) == 3
    people = identities.identities(gradebook.Gradebook(out), "udl_attention")
    assert people["1003"][1]["canvas_submission_id"] == "5004"


def sign(repository):
    """Give the last commit a (fake) signature, as a student's repository may."""
    def git_(*args, data=None):
        return subprocess.run(["git", "-C", str(repository), *args], input=data,
                              capture_output=True, check=True).stdout
    head, _, message = git_("cat-file", "commit", "HEAD").partition(b"\n\n")
    signature = b"gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEz\n -----END PGP SIGNATURE-----"
    commit = git_("hash-object", "-t", "commit", "-w", "--stdin",
                  data=head + b"\n" + signature + b"\n\n" + message).strip()
    git_("update-ref", "HEAD", commit.decode())


def test_git_takes_a_roster_and_never_runs_the_repositorys_config(tmp_path):
    folder = git_class(tmp_path / "repos")
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    sign(folder / "hw1-ada")  # with log.showSignature, plain git would run gpg.program
    config = folder / "hw1-ada" / ".git" / "config"
    config.write_text(config.read_text() + f"[core]\n\tfsmonitor = {script}\n\tpager = {script}\n"
                      f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {script}\n")
    hooks = folder / "hw1-ada" / ".git" / "hooks"
    for hook in ("post-checkout", "pre-commit", "reference-transaction"):
        (hooks / hook).write_text(script.read_text())
        (hooks / hook).chmod(0o755)
    read = git.read(folder, {"hw1-ada": "ada.lovelace"})
    assert not marker.exists()
    assert sorted(h.student for h in read.handed) == ["ada.lovelace", "alan", "grace"]
    ada = next(h for h in read.handed if h.student == "ada.lovelace")
    assert ada.submitted_at.isoformat() == "2024-09-23T16:40:08+02:00"
    assert ada.ids["github_user"] == "ada" and ada.ids["repository"] == "hw1-ada"


@pytest.mark.parametrize("names, prefix", [
    (["hw1-alice", "hw1-alex"], "hw1-"), (["hw-1-alice", "hw-1-bob"], "hw-1-"),
    (["hw1-alice"], "hw1-"), (["alice", "bob"], ""),
])
def test_the_assignment_prefix_of_git_repositories(names, prefix):
    assert git.common_prefix(names) == prefix


def test_a_repository_whose_git_is_a_link_is_not_read(tmp_path):
    folder = git_class(tmp_path / "repos")
    (folder / "hw1-eve").mkdir()
    (folder / "hw1-eve" / ".git").symlink_to(folder / "hw1-ada" / ".git")
    read = git.read(folder)
    assert "hw1-eve: not a cloned repository (no .git folder); it was not graded" \
        in read.passed_over
    assert sorted(h.student for h in read.handed) == ["ada", "alan", "grace"]


def test_a_platforms_job_pickles_for_a_dask_worker(tmp_path):
    from grader.batch import finding

    jobs, ignored, platform = finding.gather(
        gradescope_zip(tmp_path / "export.zip"), tmp_path / "out", None, None)
    assert platform == "gradescope" and ignored == []
    job = next(job for job in jobs if job.student == "20001")
    again = pickle.loads(pickle.dumps(job))
    assert again == job
    assert again.submitted_at.isoformat() == "2024-09-23T16:40:08.574685-07:00"
    assert dict(again.ids)["email"] == "ada@example.edu" and again.display_name == "Ada Lovelace"
