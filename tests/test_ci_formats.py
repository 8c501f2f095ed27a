"""What CI and platforms read: JUnit XML, the GitHub job summary, Gradescope's results.json,
and the example GitHub Classroom workflow, run locally with the same environment."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import yaml

from grader import cli
from grader.course import registry
from grader.pipeline import grading
from grader.report import junit
from tests.conftest import ROOT

SEED002 = ROOT / "tests" / "corpus" / "udl_attention" / "seed002.ipynb"


def test_junit_has_one_testcase_per_check(tmp_path):
    target = tmp_path / "junit.xml"
    code = cli.run(["run", str(SEED002), "--assignment", "udl_attention", "--junit",
                    str(target)], io.StringIO(), io.StringIO())
    assert code == 0
    suites = ET.parse(target).getroot()
    (suite,) = suites.findall("testsuite")
    cases = suite.findall("testcase")
    # 19 checks and a practice case per exercise: the two attention exercises that fail their
    # hidden cases fail their practice case too (at sizes other than the example's).
    assert len(cases) == 24 and suite.get("tests") == "24" and suite.get("failures") == "6"
    assert sorted(c.get("name") for c in cases if c.find("failure") is not None) == [
        "notebook-example (public)", "practice (public)", "practice (public)",
        "small (hidden)", "wide (hidden)", "wide (hidden)"]
    failing = [c for c in cases if c.find("failure") is not None]
    assert {c.get("classname") for c in failing} == {
        "udl_attention.scaled_dot_product_self_attention",
        "udl_attention.multihead_scaled_self_attention"}
    # The book's own softmax_cols overflows on huge inputs: advice, a property, not a failure.
    (tip,) = [c for c in cases if c.find("properties/property[@name='tip']") is not None]
    assert (tip.get("classname"), tip.get("name")) == ("udl_attention.softmax_cols",
                                                       "large-values (hidden)")
    assert tip.find("properties/property[@name='tip']").get("value").startswith(
        "[unstable-softmax] The softmax overflows")
    failure = next(c for c in failing
                   if c.get("name") == "notebook-example (public)").find("failure")
    assert failure.get("message").startswith("[transposed-weights] Each head's attention")
    assert "Mismatched elements: 48 / 48" in failure.text


def test_junit_for_an_ungradable_file_and_odd_characters():
    result = grading.grade(ROOT / "tests" / "corpus" / "broken" / "binary.ipynb",
                           registry.get("udl_attention"))
    document = ET.fromstring(junit.render([result]).split("\n", 1)[1])
    (error,) = document.iter("error")
    assert "is binary data, not text" in error.get("message")
    assert document.find("testsuite").get("errors") == "1"


def test_github_job_summary_is_appended(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    cli.run(["run", str(SEED002), "--assignment", "udl_attention"], io.StringIO(),
            io.StringIO())
    text = summary.read_text()
    assert text.startswith("# earlier step\n## Feedback: ")
    assert "**Likely mistake:** Each head's attention matrix is applied transposed" in text


def test_gradescope_bundle_runs_against_a_fake_autograder_tree(tmp_path):
    bundle = tmp_path / "autograder.zip"
    assert cli.run(["gradescope", "build", "--assignment", "udl_attention", str(bundle)],
                   io.StringIO(), io.StringIO()) == 0
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        assert {"setup.sh", "run_autograder", "references/udl_attention.npz",
                "grader/cli/app.py", "pyproject.toml"} <= set(names)
        assert (archive.getinfo("run_autograder").external_attr >> 16) & 0o111
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    shutil.copy(SEED002, root / "submission" / "my_notebook.ipynb")
    (root / "submission_metadata.json").write_text(json.dumps(
        {"id": 7, "users": [{"email": "bob@example.edu"}], "assignment": {"total_points": 10}}))
    # Its `python3` is the interpreter running these tests, whatever PATH finds first.
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "python3").write_text(f"#!/bin/sh\nexec '{sys.executable}' \"$@\"\n")
    (tools / "python3").chmod(0o755)
    env = dict(os.environ, GRADER_AUTOGRADER_ROOT=str(root),
               PATH=f"{tools}:{os.environ['PATH']}")
    env.pop("GRADER_REFERENCES", None)
    finished = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env,
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    # It says how student code was isolated (#21): Gradescope shows it to the instructor.
    isolation_line = next(line for line in finished.stdout.splitlines()
                          if line.startswith("Isolation: "))
    assert "a separate process with resource limits; " in isolation_line
    assert stat.S_IMODE(root.stat().st_mode) == 0o700  # closed to the worker's user
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == round(results["score"], 6) == 4.0
    assert results["output_format"] == results["test_output_format"] == "md"
    assert results["stdout_visibility"] == "hidden"
    assert results["extra_data"]["users"] == ["bob@example.edu"]
    tests = results["tests"]
    assert len(tests) == 24  # 19 checks and a practice case per exercise
    # A tip (the book's softmax_cols on huge inputs) is neither passed nor failed.
    assert {t.get("status") for t in tests} == {"passed", "failed", None}
    (tip,) = [t for t in tests if "status" not in t]
    assert tip["name"] == "softmax_cols: large-values (a tip)"
    assert tip["output"].startswith("**Tip:** The softmax overflows")
    assert all(set(t) >= {"score", "max_score", "name", "number", "output",
                          "visibility"} for t in tests)
    seed = next(t for t in tests
                if t["name"] == "multihead_scaled_self_attention: notebook-example")
    assert (seed["number"], seed["visibility"], seed["score"]) == ("5.1", "visible", 0.0)
    assert seed["output"].startswith("**Likely mistake:** Each head's attention matrix")
    assert seed["tags"] == ["multihead_scaled_self_attention", "public", "transposed-weights"]
    hidden = next(t for t in tests if t["name"] == "multihead_scaled_self_attention: wide")
    assert hidden["visibility"] == "after_due_date"
    assert sum(t["max_score"] for t in tests) == 10.0


def test_gradescope_with_nothing_submitted(tmp_path, monkeypatch):
    from grader.gradescope import autograder

    monkeypatch.setenv(autograder.ROOT_ENV, str(tmp_path))
    (tmp_path / "submission").mkdir()
    autograder.run(registry.get("udl_attention"), grading.Options())
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert results["score"] == 0.0
    assert "**Could not be graded.** no .ipynb or .py file was submitted" in results["output"]


STUDENT_WORKFLOW = ROOT / "examples" / "github-student-feedback.yml"
INSTRUCTOR_WORKFLOW = ROOT / "examples" / "github-instructor-grading.yml"
SHELL_OPERATORS = {"|", "||", "&&", ";", ">", ">>", "<", "&"}


def _workflow(path: Path) -> dict:
    """A workflow as GitHub reads it, checked for the keys GitHub requires. (YAML 1.1 reads
    a bare `on` as True; GitHub reads it as the key `on`.)"""
    workflow = yaml.safe_load(path.read_text())
    if True in workflow:
        workflow["on"] = workflow.pop(True)
    assert {"name", "on", "permissions", "jobs"} <= set(workflow), path
    assert workflow["jobs"], path
    for name, job in workflow["jobs"].items():
        assert isinstance(job["runs-on"], str) and job["steps"], (path, name)
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), (path, name, step)
            # A run script takes what it needs from `env:`, never from `${{ }}` pasted into it.
            assert "${{" not in step.get("run", ""), (path, name, step)
    return workflow


def _steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def _grade_commands(workflow: dict) -> list[list[str]]:
    """Every `grade ...` command of the workflow's run scripts, as the shell would pass its
    arguments, the workflow's `env` values put in."""
    commands = []
    for step in _steps(workflow):
        script = step.get("run", "").replace("\\\n", " ")
        for line in script.splitlines():
            words = shlex.split(line, comments=True)
            if not words or words[0] != "grade":
                continue
            cut = next((i for i, word in enumerate(words) if word in SHELL_OPERATORS),
                       len(words))
            commands.append([re.sub(r"\$\{?(\w+)\}?", lambda m: workflow["env"][m[1]], word)
                             for word in words[1:cut]])
    return commands


def _grade_shim(folder: Path) -> Path:
    """A `grade` on the PATH that runs the grader under test, whichever one is installed."""
    folder.mkdir()
    shim = folder / "grade"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH='{ROOT}' exec '{sys.executable}' -m grader \"$@\"\n")
    shim.chmod(0o755)
    return folder


def _run_step(step: dict, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """A step's script as GitHub runs it on Linux (`bash -e`)."""
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_student_workflow_is_given_no_secret_and_only_checks():
    text = STUDENT_WORKFLOW.read_text()
    workflow = _workflow(STUDENT_WORKFLOW)
    assert "secrets." not in text and "GRADER_REFERENCES" not in text
    assert workflow["permissions"] == {"contents": "read"}
    commands = _grade_commands(workflow)
    assert commands == [["check", "--assignment", "udl_attention", "udl_attention.ipynb",
                         "--md", "feedback.md", "--json", "check.json"]]
    for argv in commands:
        assert cli.build_parser().parse_args(argv).handler == "grade_commands:cmd_check"


def test_the_student_workflow_gives_feedback_from_what_the_package_ships(tmp_path):
    workflow = _workflow(STUDENT_WORKFLOW)
    steps = {step.get("name"): step for step in _steps(workflow)}
    repository = tmp_path / "student-repo"
    repository.mkdir()
    shutil.copy(SEED002, repository / workflow["env"]["NOTEBOOK"])
    summary = tmp_path / "summary.md"
    summary.write_text("")
    empty = tmp_path / "nothing-hidden"
    empty.mkdir()
    # No hidden reference and no solution anywhere the grader looks: only the package's own.
    env = dict(os.environ, **workflow["env"], GITHUB_ACTIONS="true",
               GITHUB_STEP_SUMMARY=str(summary), GRADER_REFERENCES=str(empty),
               GRADER_SOLUTIONS=str(empty),
               PATH=f"{_grade_shim(tmp_path / 'bin')}:{os.environ['PATH']}")
    checked = _run_step(steps["Check the public cases"], repository, env)
    assert checked.returncode == 1, checked.stderr  # seed002 fails a public check
    assert checked.stdout.startswith("::stop-commands::")
    result = json.loads((repository / "check.json").read_text())
    assert result["public_only"] is True and result["status"] == "graded"
    assert all(check["visibility"] == "public" for exercise in result["exercises"]
               for check in exercise["checks"])
    assert _run_step(steps["Feedback in the job summary"], repository, env).returncode == 0
    feedback = summary.read_text()
    assert "Each head's attention matrix is applied transposed" in feedback
    assert "**Public checks only** (a self-check, not the grade)" in feedback


def test_the_instructor_workflow_runs_real_commands_and_no_secret_reaches_student_code():
    workflow = _workflow(INSTRUCTOR_WORKFLOW)
    assert workflow["on"] == {"workflow_dispatch": None}
    assert workflow["permissions"] == {"contents": "read"}
    assert "/" not in workflow["env"]["NOTEBOOK"]  # a link on the way would not be seen
    commands = _grade_commands(workflow)
    assert [argv[:2] for argv in commands] == [["doctor"], ["batch", "submissions/"],
                                                ["gradebook", "export"],
                                                ["gradebook", "export"]]
    for argv in commands:
        cli.build_parser().parse_args(argv)  # a UsageError names what it does not accept
    assert ["--column", "udl_attention=Self-attention (4242)"] == commands[3][6:8]
    steps = _steps(workflow)
    with_secrets = {step["id"]: step["env"] for step in steps if "secrets." in str(step)}
    assert with_secrets == {
        "clone": {"READ_TOKEN": "${{ secrets.STUDENT_REPOS_READ_TOKEN }}"},
        "status": {"GH_TOKEN": "${{ secrets.STUDENT_REPOS_STATUS_TOKEN }}"}}
    for step in steps:  # what runs `grade` runs no git and no gh, and is given no token
        if re.search(r"^\s*grade ", step.get("run", ""), re.M):
            assert not re.search(r"\b(git|gh)\b", step["run"]) and "secrets." not in str(step)


def _student_repository(server: Path, name: str, files: dict[str, Path | str]) -> str:
    """A repository under a fake GitHub: its files (a str is a symbolic link's target) in one
    commit; returns that commit."""
    folder = server / f"{name}.git"
    folder.mkdir(parents=True)
    git = ["git", "-C", str(folder), "-c", "user.name=Student", "-c", "user.email=s@example.edu"]
    subprocess.run([*git, "init", "-q"], check=True)
    (folder / "README.md").write_text("# my attention notebook\n")
    for file, content in files.items():
        if isinstance(content, str):
            (folder / file).symlink_to(content)
        else:
            shutil.copy(content, folder / file)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "hand in"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_instructor_workflow_grades_clones_and_posts_statuses(tmp_path):
    workflow = _workflow(INSTRUCTOR_WORKFLOW)
    steps = {step.get("id"): step for step in _steps(workflow)}
    notebook = workflow["env"]["NOTEBOOK"]
    server = tmp_path / "github"
    hidden = ROOT / "solutions" / "references" / "udl_attention.npz"
    commits = {
        "alice": _student_repository(server / "course", "udl-alice", {notebook: SEED002}),
        "bob": _student_repository(server / "course", "udl-bob", {"other.ipynb": SEED002}),
        "carol": _student_repository(server / "course", "udl-carol", {notebook: str(hidden)}),
    }
    workspace = tmp_path / "instructor"
    workspace.mkdir()
    (workspace / "roster.txt").write_text(
        "# login repository\nalice course/udl-alice\nbob course/udl-bob\n"
        "carol course/udl-carol\ndave course/udl-dave\n")
    gh_log = tmp_path / "gh.jsonl"
    tools = _grade_shim(tmp_path / "bin")
    (tools / "gh").write_text(f"#!{sys.executable}\nimport json, sys\nwith open({str(gh_log)!r}, "
                              "'a') as log:\n    log.write(json.dumps(sys.argv[1:]) + '\\n')\n")
    (tools / "gh").chmod(0o755)
    env = dict(os.environ, **workflow["env"], GITHUB_ACTIONS="true",
               GITHUB_SERVER_URL=server.as_uri(), READ_TOKEN="read-token-1234",
               GH_TOKEN="status-token", GRADER_REFERENCES=str(hidden.parent),
               PATH=f"{tools}:{os.environ['PATH']}")
    env.pop("GITHUB_STEP_SUMMARY", None)

    cloned = _run_step(steps["clone"], workspace, env)
    assert cloned.returncode == 0, cloned.stderr
    assert "course/udl-dave: could not be cloned; dave is not graded" in cloned.stderr
    assert (workspace / "commits.tsv").read_text().splitlines() == [
        f"{login}\tcourse/udl-{login}\t{sha}" for login, sha in commits.items()]
    assert sorted(p.relative_to(workspace).as_posix()
                  for p in (workspace / "submissions").rglob("*")) == [
        "submissions/alice", f"submissions/alice/{notebook}", "submissions/bob",
        "submissions/carol"]  # carol's notebook is a link to the runner's references
    assert not any("read-token" in p.read_text(errors="replace")
                   for p in (workspace / "repos").rglob("config"))

    graded = _run_step(steps["grade"], workspace, env)
    assert graded.returncode == 0, graded.stderr
    assert "graded 1, skipped 0 already in the gradebook, 0 could not be graded" in graded.stdout
    exported = _run_step(steps["export"], workspace, env)
    assert exported.returncode == 0, exported.stderr
    canvas = (workspace / "graded" / "canvas.csv").read_text().splitlines()
    assert canvas[0].endswith(",Self-attention (4242)") and canvas[2] == "alice,,,alice,,4"

    posted = _run_step(steps["status"], workspace, env)
    assert posted.returncode == 0, posted.stderr
    calls = [json.loads(line) for line in gh_log.read_text().splitlines()]

    def status(login: str, state: str, description: str) -> list[str]:
        return ["api", "--method", "POST", f"repos/course/udl-{login}/statuses/{commits[login]}",
                "-f", f"state={state}", "-f", "context=grading/udl_attention",
                "-f", f"description={description}"]

    nothing = f"no {notebook} in this commit: nothing was graded"
    assert calls == [status("alice", "success", "4 / 10 points"),
                     status("bob", "failure", nothing), status("carol", "failure", nothing)]


USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<action>\S+?)(?:@(?P<ref>\S*))?(?P<rest>\s.*)?$")
PINNED = re.compile(r"[0-9a-f]{40}")
RELEASE = re.compile(r"\s+# v\d+(\.\d+)*\s*")


def test_every_action_is_pinned_to_a_commit_with_its_release_named():
    """Every `uses:` of every file in the repository names an action by a full commit hash,
    and its release in a comment; a local action (`./...`) has no ref to pin."""
    found = []
    for path in sorted(ROOT.rglob("*")):
        parts = path.relative_to(ROOT).parts
        if not path.is_file() or any(p.startswith(".") or p == "__pycache__" for p in parts):
            continue
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(lines, 1):
            match = USES.match(line)
            if match is None or match["action"].startswith("./"):
                continue
            found.append(f"{path.relative_to(ROOT)}:{number}")
            assert PINNED.fullmatch(match["ref"] or ""), f"{found[-1]}: {line.strip()}"
            assert RELEASE.fullmatch(match["rest"] or ""), f"{found[-1]}: {line.strip()}"
    assert len(found) >= 6, found  # the two example workflows' actions, at least
