"""Another instructor's course, end to end, from README and its guides alone.

The assignment is none of ours: attention scoring functions as in Dive into Deep Learning,
in numpy, with batched 3-D inputs and outputs, integer valid lengths, `None`, and a boolean
mask. The instructor writes a master notebook, runs `grade assign` and keeps the skeleton as
it is, `grade validate`, `grade release`; six students hand in; `grade batch` and the class
report follow. Then the instructor catalogues two mistakes (docs/authoring.md, "Complete
the declaration"), releases again, and a student's own `check()` names them as `grade run` does.

The students, and the points their code deserves (5 in all: 2 + 2 + 1):
- ada: vectorised and right: 5;
- ben: loops, right (his lengths slice: floats would crash him): 5;
- cai: no 1/sqrt(d) in the scores: the masked softmax and the mask, 3;
- dee: divides by sqrt of the notebook's `d = 5`: right only where d is 5, which no hidden
  case has: 3;
- eve: ignores the valid lengths (a plain softmax): right where there are none (half of
  masked_softmax's hidden cases), wrong wherever lengths are given, in dot_product_attention
  too; the mask is right: 1 + 0 + 1 = 2;
- fay: has not written keep_softmax yet (still the stub): 4.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.course import registry
from grader.gradebook import Gradebook
from grader.pipeline import vocabulary
from grader.results import Verdict
from tests.conftest import ROOT
from tests.helpers.command import run as grade
from tests.helpers.command import write_master

pytestmark = pytest.mark.usefixtures("fresh_registry")

NAME = "d2l_scores"
CONFIG = f'''# ASSIGNMENT CONFIG
assignment = "{NAME}"
title = "Attention scoring functions, in numpy"

[exercises]
masked_softmax = 2
dot_product_attention = 2
keep_softmax = 1
'''
MASKED = '''def masked_softmax(X, valid_lens):
    """Softmax over the last axis of X (batch, queries, keys), keeping the first valid_lens[b]
    keys of batch b; all keys when valid_lens is None."""
    # BEGIN SOLUTION
    if valid_lens is not None:
        keys = np.arange(X.shape[-1])
        keep = keys[None, None, :] < valid_lens[:, None, None]
        X = np.where(keep, X, -1e6)
    e = np.exp(X - X.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
    # END SOLUTION


check("masked_softmax")
'''
SCALED = '''def dot_product_attention(queries, keys, values, valid_lens):
    """Scaled dot-product attention: queries (batch, n, d), keys (batch, m, d), values
    (batch, m, v); the weights are the masked softmax of the scores."""
    # BEGIN SOLUTION
    d = queries.shape[-1]
    scores = queries @ keys.transpose(0, 2, 1) / np.sqrt(d)
    return masked_softmax(scores, valid_lens) @ values
    # END SOLUTION


check("dot_product_attention")
'''
KEEP = '''def keep_softmax(scores, keep):
    """Softmax over the last axis, over the entries where the boolean `keep` is True."""
    # BEGIN SOLUTION
    scores = np.where(keep, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
    # END SOLUTION


check("keep_softmax")
'''
# Distinct sizes, as docs/authoring.md advises: batch 2, queries 3, keys 4, d 5, values 6.
EXAMPLES = '''rng = np.random.default_rng(0)
X = rng.normal(size=(2, 3, 4))
print(masked_softmax(X, np.array([2, 3])))
print(masked_softmax(X, None))
d = 5
queries, keys = rng.normal(size=(2, 3, d)), rng.normal(size=(2, 4, d))
values = rng.normal(size=(2, 4, 6))
print(dot_product_attention(queries, keys, values, np.array([2, 3])))
keep = np.ones((2, 3, 4), dtype=bool)
keep[0, :, 3] = False
print(keep_softmax(X, keep))
'''

VECTORISED = '''import numpy as np


def masked_softmax(X, valid_lens):
    if valid_lens is not None:
        keep = np.arange(X.shape[-1])[None, None, :] < valid_lens[:, None, None]
        X = np.where(keep, X, -1e6)
    e = np.exp(X - X.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def dot_product_attention(queries, keys, values, valid_lens):
    scores = queries @ np.swapaxes(keys, 1, 2) / np.sqrt(queries.shape[-1])
    return masked_softmax(scores, valid_lens) @ values


def keep_softmax(scores, keep):
    scores = np.where(keep, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''
LOOPS = '''import math

import numpy as np


def masked_softmax(X, valid_lens):
    out = np.zeros(X.shape)
    for b in range(X.shape[0]):
        n = X.shape[2] if valid_lens is None else valid_lens[b]
        for q in range(X.shape[1]):
            row = X[b, q, :n]  # a length must be an integer here
            e = np.exp(row - row.max())
            out[b, q, :n] = e / e.sum()
    return out


def dot_product_attention(queries, keys, values, valid_lens):
    batch, n, d = queries.shape
    scores = np.zeros((batch, n, keys.shape[1]))
    for b in range(batch):
        for i in range(n):
            for j in range(keys.shape[1]):
                scores[b, i, j] = queries[b, i] @ keys[b, j] / math.sqrt(d)
    weights = masked_softmax(scores, valid_lens)
    return np.stack([weights[b] @ values[b] for b in range(batch)])


def keep_softmax(scores, keep):
    out = np.zeros(scores.shape)
    for index in np.ndindex(*scores.shape[:-1]):
        row, mask = scores[index], keep[index]
        e = np.where(mask, np.exp(row - row[mask].max()), 0.0)
        out[index] = e / e.sum()
    return out
'''
NO_SCALE = VECTORISED.replace(" / np.sqrt(queries.shape[-1])", "")
GLOBAL_D = VECTORISED.replace("import numpy as np\n", "import numpy as np\n\nd = 5\n").replace(
    "np.sqrt(queries.shape[-1])", "np.sqrt(d)")
NO_MASK = VECTORISED.replace("    if valid_lens is not None:\n        keep = np.arange(X.shape[-1])"
                             "[None, None, :] < valid_lens[:, None, None]\n        X = np.where"
                             "(keep, X, -1e6)\n", "")
STUB = VECTORISED.split("def keep_softmax")[0] + (
    'def keep_softmax(scores, keep):\n    raise NotImplementedError("keep_softmax")\n')
STUDENTS = {"ada": VECTORISED, "ben": LOOPS, "cai": NO_SCALE, "dee": GLOBAL_D, "eve": NO_MASK,
            "fay": STUB}
# The points each student's code deserves (see the module's docstring).
DESERVED = {"ada": 5.0, "ben": 5.0, "cai": 3.0, "dee": 3.0, "eve": 2.0, "fay": 4.0}
MISCONCEPTIONS = '''
from grader.assignments.variants import misconception


def _unscaled(queries, keys, values, valid_lens):
    scores = queries @ np.swapaxes(keys, 1, 2)
    return masked_softmax_reference(scores, valid_lens) @ values


def _unmasked(X, valid_lens):
    e = np.exp(X - X.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def masked_softmax_reference(X, valid_lens):
    if valid_lens is not None:
        keep = np.arange(X.shape[-1])[None, None, :] < valid_lens[:, None, None]
        X = np.where(keep, X, -1e6)
    return _unmasked(X, None)


ASSIGNMENT = dataclasses.replace(ASSIGNMENT, exercises=(
    dataclasses.replace(masked_softmax, misconceptions=(misconception(
        "lengths-ignored", _unmasked,
        "The valid lengths are ignored: keys past valid_lens[b] must get weight 0."),)),
    dataclasses.replace(dot_product_attention, misconceptions=(misconception(
        "no-scale", _unscaled, "The scores are not divided by sqrt(d), the queries' last "
        "size."),)),
    keep_softmax))
'''


def environment(course: Path) -> dict[str, str]:
    """The variables `grade assign` printed, read back from its export lines."""
    code, out, err = grade("assign", str(course / "master.ipynb"), "--out", str(course))
    assert (code, err) == (0, ""), err
    exports = [line.removeprefix("export ").split("=", 1) for line in out.splitlines()
               if line.startswith("export ")]
    return dict(exports)


def released_command(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`grade ...` as a student runs it beside the released files: no GRADER_* variable."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GRADER_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "grader", *argv], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


def test_another_instructors_course_from_master_to_class_report(tmp_path, monkeypatch):
    course = tmp_path / "course"
    course.mkdir()
    write_master(course / "master.ipynb", [
        ("raw", CONFIG), ("markdown", "# Attention scoring\n\nFill in each function."),
        ("code", "import numpy as np\n\nfrom grader import check\n"),
        ("code", MASKED), ("code", SCALED), ("code", KEEP), ("code", EXAMPLES)])

    # 1. grade assign; the skeleton as it is. Its inputs keep the master's kinds.
    for name, value in environment(course).items():
        monkeypatch.setenv(name, value)
    registry.assignments.cache_clear()
    assignment = registry.get(NAME)
    softmax, scaled, keep = assignment.exercises
    hidden = [c for c in softmax.cases if c.visibility.value == "hidden" and c.inputs()[1]
              is not None]
    assert len(hidden) == 3
    for case in hidden:
        X, lens = case.inputs()
        assert lens.dtype.kind == "i" and lens.min() >= 2 and lens.max() <= X.shape[-1]
    assert {c.inputs()[1] is None for c in softmax.cases} == {True, False}
    assert {str(c.inputs()[1].dtype) for c in keep.cases} == {"bool"}
    for case in scaled.cases:  # hidden sizes are never the example's own d = 5
        if case.visibility.value == "hidden":
            assert case.inputs()[0].shape[-1] in (10, 15)

    # 2. validate: nothing to fix, with the skeleton unedited.
    code, out, err = grade("validate", NAME)
    assert (code, err) == (0, ""), out
    assert out.endswith("no problem found\n")

    # 3. release; 4. six students; 5. batch; 6. the class report.
    release = tmp_path / "release"
    assert grade("release", NAME, "--out", str(release))[0] == 0
    assert sorted(p.name for p in release.iterdir()) == [
        f"{NAME}.check.npz", f"{NAME}.ipynb", f"{NAME}.py"]
    submissions = tmp_path / "submissions"
    for student, code_text in STUDENTS.items():
        (submissions / student).mkdir(parents=True)
        (submissions / student / f"{NAME}.py").write_text(code_text)
    out_folder = tmp_path / "graded"
    code, out, err = grade("batch", str(submissions), "--assignment", NAME, "--out",
                           str(out_folder))
    assert code == 0, out + err
    results = {student: json.loads((out_folder / "results" / student / f"{NAME}.json")
                                   .read_text()) for student in STUDENTS}
    scores = {student: result["score"] for student, result in results.items()}
    for student, points in DESERVED.items():
        assert scores[student] == points, (student, results[student]["exercises"])
    for result in results.values():
        assert result["max_score"] == 5.0
        for exercise in result["exercises"]:
            for check in exercise["checks"]:  # clean points: no 0.6666666666666666
                assert check["max_score"] == round(check["max_score"], 6)
    # dee's own global: every failing check says so; a public one names d and its value, a
    # hidden one says the vocabulary's sentence, and the instructor's gradebook the whole.
    dee = next(e for e in results["dee"]["exercises"] if e["name"] == "dot_product_attention")
    failing = [c for c in dee["checks"] if not c["passed"]]
    assert failing and all(c["diagnosis"]["id"] == "uses-global" for c in failing)
    assert all("d = 5" in c["diagnosis"]["message"] for c in failing
               if c["visibility"] == "public")
    # The practice case, public at other sizes than d = 5, fails the same way: each hidden
    # one says so.
    hidden = [c for c in failing if c["visibility"] == "hidden"]
    assert hidden and all(
        (c["message"], c["diagnosis"]["message"]) ==
        (vocabulary.message(Verdict.WRONG_VALUES, same_as_public=True),
         vocabulary.OWN_DIAGNOSES["uses-global"])
        for c in hidden)
    (kept,) = [stored for row, stored in Gradebook(out_folder).recorded(NAME)
               if row.student == "dee"]
    kept_checks = next(e for e in kept.exercises if e.name == "dot_product_attention")
    details = {c.name: c.detail for c in kept_checks.checks}
    assert all("d = 5" in details[c["name"]] for c in hidden), details
    code, out, err = grade("gradebook", "report", "--out", str(out_folder), "--json",
                           str(tmp_path / "class.json"))
    assert code == 0, err
    report = json.loads((tmp_path / "class.json").read_text())
    assert (report["submissions"], report["graded"], report["mean"]) == (6, 6, 3.666667)
    assert [(e["name"], e["attempted"], e["passed"]) for e in report["exercises"]] == [
        ("masked_softmax", 6, 5), ("dot_product_attention", 6, 3), ("keep_softmax", 5, 5)]

    # 7. The instructor catalogues two mistakes and releases again: the students' own
    #    check() and grade run name them alike.
    declaration = Path(os.environ["GRADER_ASSIGNMENTS"]) / f"{NAME}.py"
    declaration.write_text(declaration.read_text().replace(
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nimport dataclasses\n") + MISCONCEPTIONS)
    registry.assignments.cache_clear()
    assert grade("references", "build", NAME)[0] == 0
    # Ignoring the lengths is right where there are none: validate says what to declare.
    code, out, err = grade("validate", NAME)
    assert code == 1
    assert (f"{NAME}: masked_softmax/random-4: accepts the wrong answer 'lengths-ignored', so "
            "it gives free points; if 'lengths-ignored' is right on such inputs (a mistake that "
            'shows only on some), declare it conditional="the inputs it shows on"') in out
    declaration.write_text(declaration.read_text().replace(
        '"The valid lengths are ignored: keys past valid_lens[b] must get weight 0.")',
        '"The valid lengths are ignored: keys past valid_lens[b] must get weight 0.",\n'
        '        conditional="valid lengths shorter than the keys")'))
    registry.assignments.cache_clear()
    code, out, err = grade("validate", NAME)
    assert code == 0, out
    shutil.rmtree(release)
    assert grade("release", NAME, "--out", str(release))[0] == 0
    for student, mistake in (("cai", "no-scale"), ("eve", "lengths-ignored")):
        path = submissions / student / f"{NAME}.py"
        code, out, err = grade("run", "--assignment", NAME, str(path))
        assert f"[{mistake}]" in out, out
        # The student's copy, beside the released files, checked as the module says.
        mine = release / f"{student}.py"
        mine.write_text(path.read_text())
        checked = released_command(release, "check", "--assignment", NAME, mine.name)
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert f"[{mistake}]" in checked.stdout, checked.stdout
    # ada passes every public check from the released files alone.
    (release / "ada.py").write_text(VECTORISED)
    checked = released_command(release, "check", "--assignment", NAME, "ada.py")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # The released module's own instruction, verbatim, on the module as released (stubs).
    stub = (release / f"{NAME}.py").read_text()
    instruction = next(line for line in stub.splitlines() if "grade check" in line)
    command = instruction[instruction.index("grade check"):].split("`")[0].split()
    assert command == ["grade", "check", f"{NAME}.py"]
    checked = released_command(release, *command[1:])
    assert checked.returncode == 1 and "Not written yet" in checked.stdout, checked.stdout
    # cai's own check() in his module, run from another folder: it names his mistake.
    mine = release / "cai_checks.py"
    mine.write_text(NO_SCALE + '\nfrom grader import check\n\ncheck("dot_product_attention")\n')
    env = {key: value for key, value in os.environ.items() if not key.startswith("GRADER_")}
    ran = subprocess.run([sys.executable, str(mine)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={**env, "PYTHONPATH": str(ROOT)})
    assert ran.returncode == 0, ran.stderr
    assert "[no-scale] The scores are not divided by sqrt(d)" in ran.stdout, ran.stdout
