"""A PyTorch course of our own, end to end, from docs/authoring.md alone.

The instructor writes a master notebook in the style of The Annotated Transformer, with three
exercises on batched (batch, heads, seq, d_k) tensors: `subsequent_mask(size)` (a boolean
lower triangle), `attention(query, key, value, mask=None) -> (output, p_attn)` and
`MultiHeadedAttention(h, d_model)`, an `nn.Module` with four `nn.Linear`. `grade assign`
writes the declaration (no case written by hand); the instructor catalogues three mistakes in
it, as "Complete the declaration" says, and runs `grade validate` and `grade release`. Six
students fill in the released notebook; `grade batch` grades them, the class report counts
them, and a student checks their work with `grade check` beside the released files and with
the notebook's own `check()` cells, in a real kernel.

Each exercise's points are spread over its three hidden cases (the public example earns
none). The students, and the points their code earns (9 in all: mask 2, attention 3,
module 4):
- ada: right, masks with -inf (`masked_fill(~mask, float("-inf"))`): 9;
- ben: right in another style (einsum, `torch.where`, reshape and permute), and prints
  inside `forward`: 9;
- cai: no 1/sqrt(d_k): the mask only, 2. His module is right code around his own attention,
  and loses its points with it: credit is "as written" by default. Its feedback says so (the
  module is right by itself, the mistake is in `attention`), and the class report counts the
  mistake once, on `attention`. With credit "own-code" the module earns its 4;
- dee: the softmax over the queries (dim=-2): 2, likewise;
- eve: the mask's triangle the wrong way (upper, not lower): 3 + 4 = 7; the module is
  graded on the case's own mask, not on hers;
- fay: the released notebook untouched: 0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace

import nbformat
import pytest
from nbclient import NotebookClient

from grader.course import registry
from grader.course.layout import Layout
from grader.pipeline import grading, vocabulary
from tests.conftest import ROOT, needs
from tests.helpers.command import run as grade
from tests.helpers.command import write_master

pytestmark = [pytest.mark.slow, *needs("torch_attention")]
"""Skipped, with the command that installs torch, where it is not installed (the course's
code imports it). These tests never import torch themselves: the processes they start do."""

NAME = "annotated_heads"
CONFIG = f'''# ASSIGNMENT CONFIG
assignment = "{NAME}"
title = "Multi-head attention, annotated"

[exercises]
subsequent_mask = 2
attention = 3
MultiHeadedAttention = 4
'''
IMPORTS = '''import math

import torch
from torch import nn

from grader import check
'''
MASK = '''def subsequent_mask(size):
    """A (1, size, size) boolean mask: position i may attend to positions 0..i."""
    # BEGIN SOLUTION
    shape = (1, size, size)
    future = torch.triu(torch.ones(shape), diagonal=1).type(torch.uint8)
    return future == 0
    # END SOLUTION


check("subsequent_mask")
'''
ATTENTION = '''def attention(query, key, value, mask=None):
    """Scaled dot-product attention over (batch, heads, seq, d_k) tensors: (output, p_attn)."""
    # BEGIN SOLUTION
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return p_attn @ value, p_attn
    # END SOLUTION


check("attention")
'''
MODULE = '''class MultiHeadedAttention(nn.Module):
    """h heads of attention over d_model features: project, attend per head, concatenate,
    project again."""

    def __init__(self, h, d_model):
        super().__init__()
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(4)])

    def forward(self, query, key, value, mask=None):
        # BEGIN SOLUTION
        if mask is not None:
            mask = mask.unsqueeze(1)  # the same mask for every head
        nbatches = query.size(0)
        query, key, value = [
            linear(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for linear, x in zip(self.linears, (query, key, value))
        ]
        x, self.attn = attention(query, key, value, mask=mask)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[-1](x)
        # END SOLUTION


check("MultiHeadedAttention")
'''
# Distinct sizes: batch 3, heads 2, seq 6, d_k 4, d_model 8.
EXAMPLES = '''torch.manual_seed(1)
mask = subsequent_mask(6)
print(mask[0].int())
heads = torch.randn(3, 2, 6, 4)
out, p_attn = attention(heads, heads, heads, mask=mask.unsqueeze(1))
print(out.shape, p_attn.sum(-1))
mha = MultiHeadedAttention(2, 8)
x = torch.randn(3, 6, 8)
print(mha(x, x, x, mask).shape)
'''

# What the instructor adds to the declaration `grade assign` wrote: three catalogued mistakes,
# each a numpy variant called as the grader calls it (a class's: the state_dict, forward's
# inputs, then init_kwargs by name).
VARIANTS = '''

def _attend(query, key, value, mask=None, scale=True, axis=-1):
    """Attention in numpy, scaled or not, with its softmax over `axis`."""
    scores = query @ np.swapaxes(key, -1, -2)
    if scale:
        scores = scores / np.sqrt(query.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    e = np.exp(scores - scores.max(axis=axis, keepdims=True))
    p_attn = e / e.sum(axis=axis, keepdims=True)
    return p_attn @ value, p_attn


def _unscaled(query, key, value, mask=None):
    return _attend(query, key, value, mask, scale=False)


def _over_queries(query, key, value, mask=None):
    return _attend(query, key, value, mask, axis=-2)


def _heads(attend):
    """MultiHeadedAttention in numpy around `attend`."""
    def variant(state, query, key, value, mask=None, *, h, d_model):
        def linear(i, x):
            return x @ state[f"linears.{i}.weight"].T + state[f"linears.{i}.bias"]
        batch, d_k = query.shape[0], d_model // h
        q, k, v = (linear(i, x).reshape(batch, -1, h, d_k).transpose(0, 2, 1, 3)
                   for i, x in enumerate((query, key, value)))
        out, _ = attend(q, k, v, None if mask is None else mask[:, None])
        return linear(3, out.transpose(0, 2, 1, 3).reshape(batch, -1, d_model))
    return variant


def _upper(size):
    return np.triu(np.ones((1, size, size), dtype=bool))
'''
CATALOGUED = {
    "attention": '''misconceptions=(misconception("missing-scale", _unscaled),
                    misconception("softmax-wrong-axis", _over_queries)),''',
    "MultiHeadedAttention": '''misconceptions=(
        misconception("missing-scale", _heads(_unscaled)),
        misconception("softmax-wrong-axis", _heads(_over_queries))),''',
    "subsequent_mask": '''misconceptions=(misconception("mask-wrong-direction", _upper),),''',
}

# The students' code, each exercise in its own cell of the released notebook.
ADA = {"subsequent_mask": '''def subsequent_mask(size):
    return torch.tril(torch.ones(1, size, size)).bool()
''', "attention": '''def attention(query, key, value, mask=None):
    d_k = query.shape[-1]
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    p_attn = torch.softmax(scores, dim=-1)
    return torch.matmul(p_attn, value), p_attn
''', "MultiHeadedAttention": '''class MultiHeadedAttention(nn.Module):
    def __init__(self, h, d_model):
        super().__init__()
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(4)])

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)
        n = query.size(0)
        query, key, value = [lin(x).view(n, -1, self.h, self.d_k).transpose(1, 2)
                             for lin, x in zip(self.linears, (query, key, value))]
        x, self.attn = attention(query, key, value, mask=mask)
        x = x.transpose(1, 2).contiguous().view(n, -1, self.h * self.d_k)
        return self.linears[-1](x)
'''}
BEN = {"subsequent_mask": '''def subsequent_mask(size):
    return torch.ones(size, size, dtype=torch.bool).tril().unsqueeze(0)
''', "attention": '''import torch.nn.functional as F


def attention(query, key, value, mask=None):
    scores = torch.einsum("bhqd,bhkd->bhqk", query, key) * query.shape[-1] ** -0.5
    if mask is not None:
        scores = torch.where(mask, scores, torch.full_like(scores, -1e9))
    weights = F.softmax(scores, dim=-1)
    return torch.einsum("bhqk,bhkd->bhqd", weights, value), weights
''', "MultiHeadedAttention": '''class MultiHeadedAttention(nn.Module):
    def __init__(self, h, d_model):
        super().__init__()
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(4)])

    def forward(self, query, key, value, mask=None):
        print("forward:", tuple(query.shape), "mask" if mask is not None else "no mask")
        batch, seq, _ = query.shape

        def split(x):
            return x.reshape(batch, -1, self.h, self.d_k).permute(0, 2, 1, 3)

        q = split(self.linears[0](query))
        k = split(self.linears[1](key))
        v = split(self.linears[2](value))
        out, _ = attention(q, k, v, None if mask is None else mask[:, None])
        out = out.permute(0, 2, 1, 3).reshape(batch, seq, self.h * self.d_k)
        return self.linears[3](out)
'''}
CAI = {**ADA, "attention": ADA["attention"].replace(" / math.sqrt(d_k)", "")}
DEE = {**ADA, "attention": ADA["attention"].replace("dim=-1", "dim=-2")}
EVE = {**ADA, "subsequent_mask": ADA["subsequent_mask"].replace("tril", "triu")}
STUDENTS: dict[str, dict[str, str]] = {"ada": ADA, "ben": BEN, "cai": CAI, "dee": DEE,
                                       "eve": EVE, "fay": {}}
# The points each student's code earns, per exercise (see the module's docstring).
EARNED = {"ada": (2, 3, 4), "ben": (2, 3, 4), "cai": (2, 0, 0), "dee": (2, 0, 0),
          "eve": (0, 3, 4), "fay": (0, 0, 0)}
# The mistake each wrong exercise is told, on every check it fails: a module that is right
# by itself is told that its failure comes from the attention it calls.
DIAGNOSED = {("cai", "attention"): "missing-scale",
             ("cai", "MultiHeadedAttention"): "callee-fails",
             ("dee", "attention"): "softmax-wrong-axis",
             ("dee", "MultiHeadedAttention"): "callee-fails",
             ("eve", "subsequent_mask"): "mask-wrong-direction"}
RIGHT_BY_ITSELF = ("`MultiHeadedAttention` is right by itself: it fails because the `attention` "
                   "it calls fails (see attention).")
EXERCISES = ("subsequent_mask", "attention", "MultiHeadedAttention")


def catalogue(declaration: str) -> str:
    """The declaration `grade assign` wrote, with the instructor's three mistakes added."""
    edited = declaration.replace(
        "from grader.model import",
        "from grader.assignments.variants import misconception\nfrom grader.model import", 1)
    edited = edited.replace("\nPUBLIC = Visibility.PUBLIC\n",
                            "\nPUBLIC = Visibility.PUBLIC\n" + VARIANTS, 1)
    for name, added in CATALOGUED.items():
        edited = edited.replace(f'    name="{name}",\n', f'    name="{name}",\n    {added}\n', 1)
    assert edited.count("misconception(") == 5 and "import misconception\n" in edited
    return edited


def fill_in(notebook: nbformat.NotebookNode, code: dict[str, str]) -> nbformat.NotebookNode:
    """The released notebook with the student's code in place of each stub, keeping the
    cell's own check() line."""
    notebook = nbformat.from_dict(json.loads(json.dumps(notebook)))
    for name, source in code.items():
        cell = next(c for c in notebook.cells if c.cell_type == "code" and (
            f"def {name}(" in c.source or f"class {name}(" in c.source))
        told = next(line for line in cell.source.splitlines() if line.startswith("check("))
        assert told.startswith(f'check("{name}")'), told
        cell.source = f"{source}\n\n{told}\n"
    return notebook


def student_env() -> dict[str, str]:
    """A student's environment: none of the grader's variables; this tree's grader."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GRADER_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The course as docs/authoring.md makes it: assign, validate the skeleton as written,
    catalogue three mistakes, validate again, release; the grader's variables set for the
    module's tests."""
    top = tmp_path_factory.mktemp("torch_course")
    master = write_master(top / f"{NAME}_master.ipynb", [
        ("raw", CONFIG), ("markdown", "# Multi-head attention\n\nFill in each exercise."),
        ("code", IMPORTS), ("code", MASK), ("code", ATTENTION), ("code", MODULE),
        ("code", EXAMPLES)])
    registry.assignments.cache_clear()
    with pytest.MonkeyPatch.context() as patch:
        code, out, err = grade("assign", str(master), "--out", str(top / "course"))
        assert (code, err) == (0, ""), err
        layout = Layout(top / "course")
        for key, value in layout.environment().items():
            patch.setenv(key, value)
        written = layout.declaration(NAME).read_text()
        validated = grade("validate", NAME)
        layout.declaration(NAME).write_text(catalogue(written))
        registry.assignments.cache_clear()
        catalogued = grade("validate", NAME)
        released = grade("release", NAME, "--out", str(top / "release"))
        yield {"top": top, "written": written, "validated": validated,
               "catalogued": catalogued, "released": released, "release": top / "release"}
    registry.assignments.cache_clear()


@pytest.fixture(scope="module")
def graded(course):
    """The six students' notebooks through one `grade batch --jobs 2`, and the class report."""
    top, release = course["top"], course["release"]
    stubs = nbformat.read(release / f"{NAME}.ipynb", as_version=4)
    for student, code in STUDENTS.items():
        (top / "submissions" / student).mkdir(parents=True)
        nbformat.write(fill_in(stubs, code), top / "submissions" / student / f"{NAME}.ipynb")
    batch = grade("batch", str(top / "submissions"), "--assignment", NAME, "--out",
                  str(top / "graded"), "--jobs", "2")
    results = {student: json.loads((top / "graded" / "results" / student / f"{NAME}.json")
                                   .read_text()) for student in STUDENTS}
    report = grade("gradebook", "report", "--out", str(top / "graded"), "--json",
                   str(top / "class.json"))
    return {"batch": batch, "results": results, "report": report, "top": top,
            "class": json.loads((top / "class.json").read_text())}


def test_the_master_is_assigned_validated_and_released_with_no_declaration_by_hand(course):
    written = course["written"]
    assert written.splitlines()[-1].startswith("# grade assign skeleton")
    assert 'kind="class"' in written and written.count("tensors='float32'") == 2
    assert "init_kwargs={'h': 2, 'd_model': 8}, visibility=PUBLIC" in written
    # the hidden masks and each exercise's practice mask, causal as the master's
    assert written.count("lower_triangular((") == 8
    assert "misconceptions=" not in written
    assert course["validated"] == (0, f"{NAME}: 3 exercises, 15 cases: no problem found\n", "")
    # Every scored case rejects the three catalogued mistakes: no free points.
    assert course["catalogued"] == (0, f"{NAME}: 3 exercises, 15 cases: no problem found\n",
                                    "")
    assert course["released"][0] == 0, course["released"]
    assert sorted(p.name for p in course["release"].iterdir()) == [
        f"{NAME}.check.npz", f"{NAME}.ipynb", f"{NAME}.py"]


def test_the_declaration_keeps_dtypes_makes_the_module_a_class_and_masks_causal(course):
    """What `grade assign` wrote for the tensors, the module and the masks, and the cases the
    registry makes of it."""
    written = course["written"]
    assert 'requires=("torch",)' in written
    assert "init_kwargs={'h': 2, 'd_model': 16}, seed=1" in written  # d_model x 2, h kept
    assert "'linears.0.weight': (('d_model', 'd_model'), 'float32')" in written
    assert "np.array([[[True, False, False, False, False, False]" in written  # boolean
    assignment = registry.get(NAME)
    # the example, the practice case (5 times its size) and the hidden cases
    assert [case.inputs() for case in assignment.exercise("subsequent_mask").cases] == [
        (6,), (30,), (12,), (18,), (24,)]
    state, x, _, _, mask = assignment.exercise("MultiHeadedAttention").cases[1].inputs()
    assert mask.dtype == bool and x.dtype.name == "float32" and x.shape[-1] == 16
    assert sorted(state) == sorted(f"linears.{i}.{p}" for i in range(4)
                                   for p in ("weight", "bias"))


def test_a_failed_assign_writes_nothing(tmp_path):
    broken = [("raw", CONFIG), ("code", IMPORTS), ("code", MASK), ("code", ATTENTION),
              ("code", MODULE), ("code", EXAMPLES + "1 / 0\n")]
    code, out, err = grade("assign", str(write_master(tmp_path / "m.ipynb", broken)),
                           "--out", str(tmp_path / "course"))
    assert code == 1 and "ZeroDivisionError" in err
    assert not (tmp_path / "course").exists()


def test_each_student_gets_the_points_their_code_earns(graded):
    code, out, err = graded["batch"]
    assert code == 0, out + err
    assert "graded 6, skipped 0 already in the gradebook, 0 could not be graded" in out, out
    for student, earned in EARNED.items():
        result = graded["results"][student]
        points = {e["name"]: e["score"] for e in result["exercises"]}
        assert tuple(points[name] for name in EXERCISES) == earned, (student, points)
        assert (result["score"], result["max_score"]) == (sum(earned), 9.0)


def test_each_wrong_exercise_is_told_its_catalogued_mistake(graded):
    for (student, exercise), mistake in DIAGNOSED.items():
        found = next(e for e in graded["results"][student]["exercises"]
                     if e["name"] == exercise)
        failing = [c for c in found["checks"] if not c["passed"]]
        # the example, the practice case and 3 hidden
        assert len(failing) == 5, (student, exercise, failing)
        assert {c["diagnosis"]["id"] for c in failing} == {mistake}, (student, exercise)
    # Credit is "as written": cai's and dee's module is right by itself, yet it runs their
    # attention. Its feedback says where the mistake is, and nothing of the attention's own.
    for student in ("cai", "dee"):
        module = next(e for e in graded["results"][student]["exercises"]
                      if e["name"] == "MultiHeadedAttention")
        assert module["score"] == 0
        said = [(c["visibility"], c["diagnosis"]["message"], "callee" in c)
                for c in module["checks"]]  # the name is the instructor's (the gradebook's)
        # the example, 3 hidden cases, then the practice case (a class's comes last)
        assert said == [("public", RIGHT_BY_ITSELF, False)] + [
            ("hidden", vocabulary.OWN_DIAGNOSES["callee-fails"], False)] * 3 + [
            ("public", RIGHT_BY_ITSELF, False)], said
        assert "sqrt" not in json.dumps(module) and "dim" not in json.dumps(module)
    fay = graded["results"]["fay"]["exercises"]
    assert {c["diagnosis"]["id"] for e in fay for c in e["checks"]} == {"unattempted"}


def test_the_class_report_counts_each_exercise_and_mistake(graded):
    code, _, err = graded["report"]
    assert code == 0, err
    report = graded["class"]
    assert (report["submissions"], report["graded"]) == (6, 6)
    assert report["mean"] == round(sum(map(sum, EARNED.values())) / 6, 6)
    assert [(e["name"], e["attempted"], e["passed"]) for e in report["exercises"]] == [
        ("subsequent_mask", 5, 4), ("attention", 5, 3), ("MultiHeadedAttention", 5, 3)]
    # A mistake in attention is counted once, on attention, not again under the module that
    # calls it (which fails with it, as written).
    assert [(m["id"], m["exercise"], m["names"]) for m in report["misconceptions"]] == [
        ("mask-wrong-direction", "subsequent_mask", ["eve"]),
        ("missing-scale", "attention", ["cai"]),
        ("softmax-wrong-axis", "attention", ["dee"])]
    assert report["advice"] == []


def test_with_credit_own_code_a_module_right_by_itself_earns_its_points(graded):
    """The same notebooks graded with the assignment's credit "own-code": cai's and dee's
    module earns its 4 points, their attention still none, and the example still says where
    the mistake is."""
    assert registry.get(NAME).credit == "as written"
    own = replace(registry.get(NAME), credit="own-code")
    folder = graded["top"] / "submissions"
    for student, earned in {"cai": (2, 0, 4), "dee": (2, 0, 4), "eve": (0, 3, 4)}.items():
        result = grading.grade(folder / student / f"{NAME}.ipynb", own)
        points = {e.name: e.score for e in result.exercises}
        assert tuple(points[name] for name in EXERCISES) == earned, (student, points)
        assert result.score == sum(earned)
        module = result.exercises[EXERCISES.index("MultiHeadedAttention")]
        if student != "eve":
            assert [(c.passed, c.callee, c.diagnosis and c.diagnosis.message)
                    for c in module.checks] == [(False, "attention", RIGHT_BY_ITSELF)] + [
                (True, "attention", None)] * 3 + [(False, "attention", RIGHT_BY_ITSELF)]


def test_grade_check_beside_the_released_files(course, tmp_path):
    """dee's notebook and the untouched one, checked as a student runs it: in a copy of the
    released folder, with no GRADER_* variable."""
    folder = shutil.copytree(course["release"], tmp_path / "student")
    stubs = nbformat.read(folder / f"{NAME}.ipynb", as_version=4)
    nbformat.write(fill_in(stubs, DEE), folder / "dee.ipynb")
    done = subprocess.run([sys.executable, "-m", "grader", "check", "dee.ipynb"], cwd=folder,
                          env=student_env(), capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (1, ""), done.stdout + done.stderr
    assert done.stdout.startswith(f"dee.ipynb · {NAME}: 2 / 6 public checks pass"), done.stdout
    assert done.stdout.count("[softmax-wrong-axis]") == 2, done.stdout


def test_check_inside_a_students_notebook_names_her_mistake(course, tmp_path, monkeypatch):
    """eve's notebook run in a real kernel in her copy of the release: each check() cell shows
    its exercise, and the mask's names her mistake."""
    folder = shutil.copytree(course["release"], tmp_path / "student")
    notebook = fill_in(nbformat.read(folder / f"{NAME}.ipynb", as_version=4), EVE)
    for key in [k for k in os.environ if k.startswith("GRADER_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    NotebookClient(notebook, timeout=180, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    errors = [o for c in notebook.cells for o in c.get("outputs", [])
              if o.output_type == "error"]
    assert errors == []
    shown = [o.data["text/html"] for c in notebook.cells for o in c.get("outputs", [])
             if o.output_type == "display_data"]
    assert len(shown) == 3, shown
    assert 'data-diagnosis="mask-wrong-direction"' in shown[0]
    assert "data-diagnosis" not in shown[1] + shown[2]
