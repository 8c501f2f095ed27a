"""A Gradescope autograder: build the bundle, and grade inside it.

The bundle holds the grader's source, the assignment's hidden references, `setup.sh` (installs
the grader) and `run_autograder` (runs `grade gradescope run`). Gradescope unpacks it into
/autograder/source, puts the student's files in /autograder/submission and reads
/autograder/results/results.json. `GRADER_AUTOGRADER_ROOT` moves /autograder elsewhere (tests).
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import replace
from pathlib import Path

from grader.course.layout import ENV_AUTOGRADER, PACKAGE_DIR, Layout
from grader.errors import UsageError
from grader.model import Assignment
from grader.pipeline import grading, submissions
from grader.report import gradescope_results
from grader.results import Result
from grader.sandbox import isolation

ROOT_ENV = ENV_AUTOGRADER
SETUP = """#!/usr/bin/env bash
# Installs attention-grader and what the assignment needs (run once by Gradescope).
set -euo pipefail
apt-get update -qq && apt-get install -y -qq python3 python3-pip python3-venv util-linux
python3 -m pip install --break-system-packages {torch}/autograder/source
"""
RUN = """#!/usr/bin/env bash
# Grades /autograder/submission and writes /autograder/results/results.json.
set -uo pipefail
root="${{GRADER_AUTOGRADER_ROOT:-/autograder}}"
export GRADER_REFERENCES="$root/source/references"
# Gradescope's containers have no Linux namespaces: student code then runs as a user of its
# own, which must not be able to open the references, the sources or the metadata here.
chmod 700 "$root"
exec python3 -m grader gradescope run --assignment {assignment}
"""


def autograder_root() -> Path:
    """/autograder, or where GRADER_AUTOGRADER_ROOT says."""
    return Layout.from_environment().autograder


def build(assignment: Assignment, target: Path) -> list[str]:
    """Write the bundle; return the names it holds."""
    package = PACKAGE_DIR
    project = package.parent
    hidden = Layout.from_environment().hidden(assignment.name)
    if not hidden.is_file():
        raise UsageError(f"{hidden}: no hidden references for {assignment.name}; run "
                         f"`grade references build {assignment.name}` first")
    torch = "'torch>=2.1' " if "torch" in assignment.requires else ""
    entries: dict[str, bytes] = {
        "setup.sh": SETUP.format(torch=torch).encode(),
        "run_autograder": RUN.format(assignment=assignment.name).encode(),
        f"references/{assignment.name}.npz": hidden.read_bytes(),
        "pyproject.toml": (project / "pyproject.toml").read_bytes(),
        "README.md": (project / "README.md").read_bytes(),
    }
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            entries[f"grader/{path.relative_to(package).as_posix()}"] = path.read_bytes()
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o755 if name in ("setup.sh", "run_autograder")
                                  else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, data)
    return sorted(entries)


def find_submissions(folder: Path, assignment: Assignment) -> list[Path]:
    """The student's files: those naming the assignment if any, else the notebooks, else
    every notebook or module. Several are graded together, each exercise from the file where
    it scores best (the book's two notebooks)."""
    if not folder.is_dir():
        return []
    candidates = list(submissions.in_folder(folder).files)
    named = [p for p in candidates if grading.infer_assignment(p) == assignment.name]
    notebooks = [p for p in candidates if p.suffix == ".ipynb"]
    for group in (named, notebooks, candidates):
        if group:
            return group
    return []


def run(assignment: Assignment, options: grading.Options) -> Result:
    """Grade the submission in the autograder tree and write results.json."""
    root = autograder_root()
    options = replace(options, closed=(*options.closed, isolation.Closed(
        str(root.resolve()), "the autograder folder, with the references, the grader's "
        "sources and the submission's metadata")))
    found = find_submissions(root / "submission", assignment)
    if not found:
        result = grading.failed_result(assignment, "(nothing)", "no .ipynb or .py file was "
                                       "submitted; upload your notebook")
    else:
        result = grading.grade_files(found, assignment, options)
    document = gradescope_results.to_dict(result)
    metadata = root / "submission_metadata.json"
    if metadata.is_file():
        try:
            users = json.loads(metadata.read_text()).get("users", [])
            document["extra_data"]["users"] = [u.get("email") for u in users]
        except (ValueError, AttributeError):
            pass
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "results.json").write_text(json.dumps(document, indent=2), encoding="utf-8")
    return result
