"""A generated class for the similarity tests and bench: honest students who each write the
exercises of udl_attention their own way, and copies of some of them planted among them.

An honest student picks, per exercise, a structure (vectorised, loops, einsum, a shared
helper...) and, inside it, the equivalent forms people write (`np.max(x)` or `x.max()`,
`K.T` or `np.transpose(K)`, `np.sqrt(d)` or `d ** 0.5`, ...) and their own names, all from a
seeded random generator. A copy is made from an honest student's source the ways a copier
hides one: renamed, helpers reordered, comments, docstrings and prints added, one line changed.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

HEADER = "import numpy as np\n\n\n"
SIG = "(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k)"
ARGS = "X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k"
MULTI_SIG = ("(X, omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1,\n"
             "                                    omega_v2, omega_q2, omega_k2, beta_v2, "
             "beta_q2, beta_k2,\n                                    omega_c)")

SOFTMAX = [
    "def softmax(items_in):\n    {e} = np.exp(items_in - {max_x})\n    return {e} / {sum_e}\n",
    "def softmax(items_in):\n    {m} = {max_x}\n    {e} = [np.exp(v - {m}) for v in items_in]\n"
    "    {s} = sum({e})\n    return np.array([v / {s} for v in {e}])\n",
    "def softmax(items_in):\n    {m} = items_in - {max_x}\n    {e} = np.exp({m})\n"
    "    {s} = {sum_e}\n    return {e} / {s}\n",
    "def softmax(items_in):\n    {m} = {max_x}\n"
    "    {s} = np.log(np.sum(np.exp(items_in - {m}))) + {m}\n"
    "    return np.exp(items_in - {s})\n",
    "def softmax(items_in):\n    {e} = np.zeros(len(items_in))\n    {m} = {max_x}\n"
    "    for i in range(len(items_in)):\n        {e}[i] = np.exp(items_in[i] - {m})\n"
    "    return {e} / {sum_e}\n",
]
ATTENTION = [  # the body of an attention function with the scores scaled by {scale}
    "    {q} = omega_q @ X + beta_q\n    {k} = omega_k @ X + beta_k\n"
    "    {v} = omega_v @ X + beta_v\n"
    "    {a} = softmax_cols({kt} @ {q}{scaled})\n    return {v} @ {a}\n",
    "    {q}, {k}, {v} = omega_q @ X + beta_q, omega_k @ X + beta_k, omega_v @ X + beta_v\n"
    "    return {v} @ softmax_cols({kt} @ {q}{scaled})\n",
    "    {q} = np.matmul(omega_q, X) + beta_q\n    {k} = np.matmul(omega_k, X) + beta_k\n"
    "    {v} = np.matmul(omega_v, X) + beta_v\n    {s} = np.einsum('dn,dm->nm', {k}, {q}){scaled}\n"
    "    {a} = softmax_cols({s})\n    return np.einsum('dn,nm->dm', {v}, {a})\n",
    "    {d}, {n} = X.shape\n    {out} = np.zeros(({d}, {n}))\n    {k} = omega_k @ X + beta_k\n"
    "    {v} = omega_v @ X + beta_v\n    for j in range({n}):\n"
    "        {q} = omega_q @ X[:, j] + beta_q[:, 0]\n        {s} = {kt} @ {q}{scaled}\n"
    "        {out}[:, j] = {v} @ softmax({s})\n    return {out}\n",
    "    {v} = np.dot(omega_v, X) + beta_v\n    {q} = np.dot(omega_q, X) + beta_q\n"
    "    {k} = np.dot(omega_k, X) + beta_k\n    {s} = np.dot({kt}, {q}){scaled}\n"
    "    return np.dot({v}, softmax_cols({s}))\n",
]
MULTI = [
    "    {h1} = scaled_dot_product_self_attention(X, omega_v1, omega_q1, omega_k1, beta_v1, "
    "beta_q1, beta_k1)\n    {h2} = scaled_dot_product_self_attention(X, omega_v2, omega_q2, "
    "omega_k2, beta_v2, beta_q2, beta_k2)\n    return omega_c @ {stack}\n",
    "    {hs} = [scaled_dot_product_self_attention(X, omega_v1, omega_q1, omega_k1, beta_v1, "
    "beta_q1, beta_k1),\n           scaled_dot_product_self_attention(X, omega_v2, omega_q2, "
    "omega_k2, beta_v2, beta_q2, beta_k2)]\n    {h1}, {h2} = {hs}\n    return omega_c @ {stack}\n",
    "    {d}, {n} = X.shape\n    {out} = np.zeros(({d}, {n}))\n"
    "    {out}[:{d} // 2] = scaled_dot_product_self_attention(X, omega_v1, omega_q1, omega_k1, "
    "beta_v1, beta_q1, beta_k1)\n    {out}[{d} // 2:] = scaled_dot_product_self_attention(X, "
    "omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2)\n"
    "    return np.matmul(omega_c, {out})\n",
]
MAXES = ["np.max(items_in)", "items_in.max()", "max(items_in)", "np.amax(items_in)"]
SUMS = ["np.sum({e})", "{e}.sum()", "sum({e})", "np.add.reduce({e})"]
TRANSPOSES = ["{k}.T", "np.transpose({k})", "{k}.transpose()", "np.swapaxes({k}, 0, 1)"]
SQRTS = ["np.sqrt({q}.shape[0])", "{q}.shape[0] ** 0.5", "np.sqrt(len({q}))",
         "np.sqrt(omega_q.shape[0])", "math.sqrt({q}.shape[0])"]
STACKS = ["np.vstack(({h1}, {h2}))", "np.concatenate([{h1}, {h2}], axis=0)",
          "np.vstack([{h1}, {h2}])", "np.row_stack(({h1}, {h2}))"]
NAMES = {"e": ["e", "ex", "exps", "exp_x", "numer", "z"], "m": ["m", "mx", "shift", "biggest"],
         "s": ["s", "total", "denom", "scores", "logits"], "q": ["Q", "q", "queries", "qs"],
         "k": ["K", "k", "keys", "ks"], "v": ["V", "v", "values", "vs"],
         "a": ["A", "attn", "weights", "probs"], "d": ["D", "dim", "d"], "n": ["N", "n_tok", "n"],
         "out": ["out", "result", "res"], "h1": ["h1", "head1", "first"],
         "h2": ["h2", "head2", "second"], "hs": ["heads", "hh"]}


def honest(seed: int) -> str:
    """One honest student's module: each exercise written in a style and with forms of their
    own, picked with `random.Random(seed)`."""
    pick = random.Random(seed)
    names = {key: pick.choice(options) for key, options in NAMES.items()}

    def fill(template: str, **extra: str) -> str:
        forms = {"max_x": pick.choice(MAXES),
                 "sum_e": pick.choice(SUMS).format(e=names["e"]),
                 "kt": pick.choice(TRANSPOSES).format(k=names["k"]),
                 "stack": pick.choice(STACKS).format(h1=names["h1"], h2=names["h2"]), **extra}
        return template.format(**names, **forms)

    attention = pick.sample(ATTENTION, 2)  # unscaled and scaled, often in two styles
    sqrt = pick.choice(SQRTS).format(q=names["q"])
    parts = [HEADER.replace("\n\n\n", "\nimport math\n\n\n") if "math." in sqrt else HEADER,
             fill(pick.choice(SOFTMAX)), "\n\n",
             "def softmax_cols(data_in):\n    exp_values = np.exp(data_in - np.max(data_in, "
             "axis=0, keepdims=True))\n    return exp_values / np.sum(exp_values, axis=0, "
             "keepdims=True)\n\n\n",
             f"def self_attention{SIG}:\n" + fill(attention[0], scaled=""), "\n\n",
             f"def scaled_dot_product_self_attention{SIG}:\n"
             + fill(attention[1], scaled=f" / {sqrt}"), "\n\n",
             f"def multihead_scaled_self_attention{MULTI_SIG}:\n" + fill(pick.choice(MULTI))]
    return _own_lines("".join(parts), pick)


PROJECTION = re.compile(r"(?:np\.(?:matmul|dot)\((omega_[qkv]), X\)|(omega_[qkv]) @ X) "
                        r"\+ (beta_[qkv])")
PROJECTIONS = ["{w} @ X + {b}", "np.matmul({w}, X) + {b}", "np.dot({w}, X) + {b}",
               "{b} + {w} @ X", "{w}.dot(X) + {b}"]


def _own_lines(source: str, pick: random.Random) -> str:
    """Each projection written in one of the equivalent forms, and each run of projection
    lines in an order of the student's own, as people do."""
    source = PROJECTION.sub(lambda m: pick.choice(PROJECTIONS).format(
        w=m.group(1) or m.group(2), b=m.group(3)), source)
    lines, out = source.split("\n"), []
    run: list[str] = []
    for line in lines + [""]:
        if re.match(r"    \w+ = .*omega_[qkv].*X", line) and "," not in line.split("=")[0]:
            run.append(line)
            continue
        pick.shuffle(run)
        out += run + [line]
        run = []
    return "\n".join(out[:-1])


def minimal(seed: int) -> str:
    """The book's template filled in the shortest way: what nearly every student writes."""
    pick = random.Random(seed)
    x = pick.choice(["items_in", "x"])
    return (HEADER + f"def softmax(items_in):\n    {x} = items_in\n"
            f"    return np.exp({x}) / np.sum(np.exp({x}))\n\n\n"
            "def softmax_cols(data_in):\n    exp_values = np.exp(data_in - np.max(data_in, "
            "axis=0, keepdims=True))\n    return exp_values / np.sum(exp_values, axis=0, "
            "keepdims=True)\n\n\n"
            f"def self_attention{SIG}:\n    return (omega_v @ X + beta_v) @ softmax_cols("
            "(omega_k @ X + beta_k).T @ (omega_q @ X + beta_q))\n\n\n"
            f"def scaled_dot_product_self_attention{SIG}:\n    return (omega_v @ X + beta_v) @ "
            "softmax_cols((omega_k @ X + beta_k).T @ (omega_q @ X + beta_q) / "
            "np.sqrt(omega_q.shape[0]))\n\n\n"
            f"def multihead_scaled_self_attention{MULTI_SIG}:\n    return omega_c @ np.vstack(("
            f"scaled_dot_product_self_attention({ARGS.replace('omega_v', 'omega_v1')}), "
            f"scaled_dot_product_self_attention({ARGS.replace('omega_v', 'omega_v2')})))\n")


# --------------------------------------------------------------------------- copies


def renamed(source: str) -> str:
    """Every local name replaced by another, the exercise functions' parameters too."""
    swaps = {}
    for key, options in NAMES.items():
        for name in options:
            swaps[name] = f"{name}_{key}x"
    return re.sub(r"\b[A-Za-z_][A-Za-z_0-9]*\b",
                  lambda m: swaps.get(m.group(0), m.group(0)), source)


def reordered(source: str) -> str:
    """The top-level functions in reverse order (helpers after their callers)."""
    header, *functions = re.split(r"\n\n\n(?=def )", source.rstrip("\n"))
    return "\n\n\n".join([header, *reversed(functions)]) + "\n"


def commented(source: str) -> str:
    """Comments, docstrings, blank lines and a print before every return added."""
    out = []
    for line in source.splitlines():
        if line.startswith("    return "):
            out.append("    print('about to return')  # debugging")
        out.append(line)
    text = "\n".join(out) + "\n"
    text = re.sub(r"(def [^\n]*\):\n)", r'\1    """Computes it, see lecture 12."""\n', text)
    return "# Homework 12, all my own work\n" + text.replace("\n\n\n", "\n\n\n# next part\n")


def one_line_changed(source: str) -> str:
    """The multi-head function's return line written another way."""
    lines = source.splitlines()
    last = max(i for i, line in enumerate(lines) if line.startswith("    return "))
    found = re.match(r"    return (?:omega_c @ (.*)|np\.matmul\(omega_c, (.*)\))$", lines[last])
    assert found, lines[last]
    lines[last] = f"    return omega_c.dot({found.group(1) or found.group(2)})"
    return "\n".join(lines) + "\n"


COPIES = {"renamed": renamed, "reordered": reordered, "commented": commented,
          "one_line": one_line_changed}
"""How a copy is made from its source, by name."""


@dataclass(frozen=True)
class Planted:
    """A copy planted in a generated class."""

    copier: str
    """The student who handed in the copy."""
    source: str
    """The student copied."""
    how: str
    """Which of `COPIES` made it."""


def notebook(source: str) -> str:
    """A module's source as a notebook of one cell per top-level part."""
    parts = re.split(r"\n\n\n(?=def )", source)
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": part.strip() + "\n"} for part in parts]
    return json.dumps({"cells": cells, "metadata": {"kernelspec": {
        "name": "python3", "language": "python", "display_name": "Python 3"}},
        "nbformat": 4, "nbformat_minor": 5})


def write_class(folder: Path, honest_students: int, seed: int = 0,
                copies: tuple[str, ...] = tuple(COPIES)) -> list[Planted]:
    """`folder/<student>_udl_attention.py` for each honest student, `s000`, `s001`, ...,
    and one copy of a different honest student for each of `copies`, named `copy<how>`
    (a notebook for "commented"). Returns the copies planted."""
    folder.mkdir(parents=True, exist_ok=True)
    sources = {}
    for number in range(honest_students):
        student = f"s{number:03d}"
        sources[student] = honest(seed * 100_003 + number)
        (folder / f"{student}_udl_attention.py").write_text(sources[student])
    planted = []
    for offset, how in enumerate(copies):
        source = f"s{(offset * 7 + 1) % honest_students:03d}"
        copier = "copy" + how.replace("_", "")  # a batch names a student up to the first _
        text = COPIES[how](sources[source])
        if how == "commented":
            (folder / f"{copier}_udl_attention.ipynb").write_text(notebook(text))
        else:
            (folder / f"{copier}_udl_attention.py").write_text(text)
        planted.append(Planted(copier, source, how))
    return planted


def record(submissions: Path, out: Path, assignment: str = "udl_attention",
           remember: bool = True) -> int:
    """A gradebook in `out` that holds every submission the batch finds in `submissions` (a
    folder or a platform's zip, found with the batch's own `gather`) as graded (full marks,
    no exercise detail), and, with `remember`, where they were read from, as a batch records
    it; without grading anything: the comparison reads only the rows' students, files and
    hashes. Returns the number of rows."""
    import sqlite3

    from grader.classwork import batch, origins
    from grader.classwork.gradebook import FILENAME, Gradebook

    book = Gradebook(out)
    folder, _ = batch.source_folder(submissions, out)
    jobs, _, platform = batch.read_folder(folder, None, None)
    if remember:
        origins.remember(book, assignment, origins.Origin(folder.resolve(), platform))
    result = json.dumps({"assignment": assignment, "exercises": [], "error": None,
                         "status": "graded", "score": 1.0, "max_score": 1.0})
    rows = [(job.student, assignment, job.relative, job.sha256, "graded", 1.0, 1.0, result,
             "2026-01-01T00:00:00+00:00") for job in sorted(jobs, key=lambda j: j.student)]
    with sqlite3.connect(out / FILENAME) as db:
        db.executemany("INSERT INTO results (student, assignment, submission, sha256, status, "
                       "score, max_score, result, graded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       rows)
    return len(rows)
