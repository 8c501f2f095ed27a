"""What CI and platforms read: JUnit XML, the GitHub job summary, Gradescope's results.json,
and the example GitHub Classroom workflow, run locally with the same environment."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import xml.etree.ElementTree as ET
import zipfile

import yaml

from grader import cli, grading, registry
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
    assert len(cases) == 19 and suite.get("tests") == "19" and suite.get("failures") == "5"
    failing = [c for c in cases if c.find("failure") is not None]
    assert {c.get("classname") for c in failing} == {
        "udl_attention.softmax_cols", "udl_attention.scaled_dot_product_self_attention",
        "udl_attention.multihead_scaled_self_attention"}
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
                "grader/cli.py", "pyproject.toml"} <= set(names)
        assert (archive.getinfo("run_autograder").external_attr >> 16) & 0o111
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    shutil.copy(SEED002, root / "submission" / "my_notebook.ipynb")
    (root / "submission_metadata.json").write_text(json.dumps(
        {"id": 7, "users": [{"email": "bob@example.edu"}], "assignment": {"total_points": 10}}))
    env = dict(os.environ, GRADER_AUTOGRADER_ROOT=str(root))
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
    assert len(tests) == 19
    assert {t["status"] for t in tests} == {"passed", "failed"}
    assert all(set(t) >= {"score", "max_score", "status", "name", "number", "output",
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
    from grader import gradescope

    monkeypatch.setenv(gradescope.ROOT_ENV, str(tmp_path))
    (tmp_path / "submission").mkdir()
    gradescope.run(registry.get("udl_attention"), grading.Options())
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert results["score"] == 0.0
    assert "**Could not be graded.** no .ipynb or .py file was submitted" in results["output"]


def test_the_example_workflow_grades_a_student_repository(tmp_path):
    workflow = yaml.safe_load((ROOT / "examples" / "github-classroom.yml").read_text())
    steps = workflow["jobs"]["grade"]["steps"]
    grade_step = next(step for step in steps if step.get("id") == "grade")
    points_step = next(step for step in steps if step.get("id") == "points")
    repository = tmp_path / "student-repo"
    repository.mkdir()
    shutil.copy(SEED002, repository / workflow["env"]["NOTEBOOK"])
    summary = tmp_path / "summary.md"
    env = dict(os.environ, **workflow["env"], GITHUB_ACTIONS="true",
               GITHUB_STEP_SUMMARY=str(summary),
               GRADER_REFERENCES=str(ROOT / "solutions" / "references"))
    graded = subprocess.run(["bash", "-e", "-c", grade_step["run"]], cwd=repository, env=env,
                            capture_output=True, text=True, timeout=300)
    assert graded.returncode == 0, graded.stderr
    assert graded.stdout.startswith("::stop-commands::")
    assert json.loads((repository / "result.json").read_text())["score"] == \
        4.0
    assert ET.parse(repository / "junit.xml").getroot().tag == "testsuites"
    assert "Each head's attention matrix is applied transposed" in \
        (repository / "feedback.md").read_text()
    assert "## Feedback: " in summary.read_text()
    points = subprocess.run(["bash", "-c", points_step["with"]["command"]], cwd=repository,
                            env=env, capture_output=True, text=True, timeout=300)
    assert points.returncode == 1  # 4 < 10: the all-or-nothing Classroom test fails
