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

from tests.helpers.sqlite_file import opened

HEADER = "import numpy as np\n\n\n"
SIG = "(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k)"
ARGS = "X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k"
MULTI_SIG = ("(X, omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1,\n"
             "                                    omega_v2, omega_q2, omega_k2, beta_v2, "
             "beta_q2, beta_k2,\n                                    omega_c)")

NAMES = {"e": ["e", "ex", "exps", "exp_x", "numer", "z"], "m": ["m", "mx", "shift", "biggest"],
         "s": ["s", "total", "denom", "scores", "logits"], "q": ["Q", "q", "queries", "qs"],
         "k": ["K", "k", "keys", "ks"], "v": ["V", "v", "values", "vs"],
         "a": ["A", "attn", "weights", "probs"], "d": ["D", "dim", "d"], "n": ["N", "n_tok", "n"],
         "out": ["out", "result", "res"], "h1": ["h1", "head1", "first"],
         "h2": ["h2", "head2", "second"], "hs": ["heads", "hh"], "c": ["scale", "factor", "c"],
         "i": ["i", "j", "idx"]}


class _Student:
    """One honest student's habits: names, and a fresh seeded choice for every line, so that
    two students meet line by line only as often as people do."""

    def __init__(self, seed: int) -> None:
        self.pick = random.Random(seed)
        self.n = {key: self.pick.choice(options) for key, options in NAMES.items()}

    def one(self, *options: str) -> str:
        return self.pick.choice(options)

    def maybe(self, share: float) -> bool:
        return self.pick.random() < share

    def matmul(self, a: str, b: str) -> str:
        return self.one(f"{a} @ {b}", f"np.matmul({a}, {b})", f"np.dot({a}, {b})",
                        f"{a}.dot({b})")

    def transpose(self, a: str) -> str:
        return self.one(f"{a}.T", f"np.transpose({a})", f"{a}.transpose()",
                        f"np.swapaxes({a}, 0, 1)")

    def project(self, w: str, b: str, x: str = "X") -> str:
        return self.one(f"{self.matmul(w, x)} + {b}", f"{b} + {self.matmul(w, x)}",
                        f"np.add({self.matmul(w, x)}, {b})")

    def maximum(self, x: str) -> str:
        return self.one(f"np.max({x})", f"{x}.max()", f"max({x})", f"np.amax({x})")

    def total(self, x: str) -> str:
        return self.one(f"np.sum({x})", f"{x}.sum()", f"sum({x})", f"np.add.reduce({x})")

    def divide(self, a: str, b: str) -> str:
        return self.one(f"{a} / {b}", f"np.divide({a}, {b})", f"{a} * (1.0 / {b})",
                        f"{a} / float({b})")

    def sqrt_dim(self, q: str) -> str:
        return self.one(f"np.sqrt({q}.shape[0])", f"{q}.shape[0] ** 0.5",
                        f"np.sqrt(len({q}))", "np.sqrt(omega_q.shape[0])",
                        f"math.sqrt({q}.shape[0])", f"np.sqrt(float({q}.shape[0]))")


def _body(lines: list[str]) -> str:
    return "".join(f"    {line}\n" for line in lines)


def _softmax(st: _Student) -> str:
    """softmax in one of five structures, every line in a form of the student's own."""
    n, x = st.n, "items_in"
    m, e, s = n["m"], n["e"], n["s"]
    lines = []
    if st.maybe(0.3):
        lines.append(st.one(f"{x} = np.asarray({x})", f"{x} = np.array({x}, dtype=float)",
                            f"{x} = np.asarray({x}, dtype=np.float64)"))
    style = st.pick.randrange(5)
    if style == 0:
        if st.maybe(0.5):
            lines.append(f"{m} = {st.maximum(x)}")
            lines.append(f"{e} = " + st.one(f"np.exp({x} - {m})", f"np.exp(np.subtract({x}, {m}))"))
        else:
            lines.append(f"{e} = np.exp({x} - {st.maximum(x)})")
        if st.maybe(0.5):
            lines += [f"{s} = {st.total(e)}", f"return {st.divide(e, s)}"]
        else:
            lines.append(f"return {st.divide(e, st.total(e))}")
    elif style == 1:
        lines += [f"{m} = {st.maximum(x)}",
                  st.one(f"{e} = [np.exp(v - {m}) for v in {x}]",
                         f"{e} = [math.exp(v - {m}) for v in {x}]"),
                  f"{s} = " + st.one(f"sum({e})", f"np.sum({e})"),
                  st.one(f"return np.array([v / {s} for v in {e}])",
                         f"return np.array({e}) / {s}")]
    elif style == 2:
        inner = st.total(f"np.exp({x} - {m})")
        lines += [f"{m} = {st.maximum(x)}",
                  f"{s} = " + st.one(f"np.log({inner}) + {m}", f"{m} + np.log({inner})"),
                  f"return np.exp({x} - {s})"]
    elif style == 3:
        i = n["i"]
        lines += [f"{e} = " + st.one(f"np.zeros(len({x}))", f"np.zeros_like({x}, dtype=float)",
                                     f"np.empty(len({x}))"),
                  f"{m} = {st.maximum(x)}",
                  f"for {i} in range(len({x})):",
                  f"    {e}[{i}] = " + st.one(f"np.exp({x}[{i}] - {m})",
                                              f"math.exp({x}[{i}] - {m})"),
                  f"return {st.divide(e, st.total(e))}"]
    else:
        lines += [f"{e} = np.exp({x} - {st.maximum(x)})", f"{e} /= {st.total(e)}",
                  f"return {e}"]
    return "def softmax(items_in):\n" + _body(lines)


def _projections(st: _Student, helper: bool) -> list[str]:
    """Q, K and V, in an order of the student's own, through their helper or written out."""
    made = [(st.n[t], f"omega_{t}", f"beta_{t}") for t in "qkv"]
    st.pick.shuffle(made)
    if helper:
        return [f"{name} = project({w}, {b}, X)" for name, w, b in made]
    return [f"{name} = {st.project(w, b)}" for name, w, b in made]


def _scores(st: _Student, scaled: bool) -> list[str]:
    """Lines that leave the scores, scaled in one of four places or not, in n["s"]."""
    q, k, s, c = st.n["q"], st.n["k"], st.n["s"], st.n["c"]
    raw = st.matmul(st.transpose(k), q) if st.maybe(0.8) else \
        st.one(f"np.einsum('dn,dm->nm', {k}, {q})", f"np.einsum('ij,ik->jk', {k}, {q})")
    if not scaled:
        return [f"{s} = {raw}"]
    how = st.pick.randrange(4)
    if how == 0:
        return [f"{s} = {st.divide(raw, st.sqrt_dim(q))}"]
    if how == 1:
        return [f"{c} = " + st.one(f"1.0 / {st.sqrt_dim(q)}", f"{st.sqrt_dim(q)} ** -1"),
                f"{s} = " + st.one(f"{raw} * {c}", f"{c} * {raw}")]
    if how == 2:
        return [f"{c} = {st.sqrt_dim(q)}", f"{s} = {raw}", f"{s} = {st.divide(s, c)}"]
    return [f"{q} = {st.divide(q, st.sqrt_dim(q))}", f"{s} = {raw}"]


def _attention(st: _Student, scaled: bool, helper: bool) -> str:
    """The body of self_attention (or its scaled twin), its style picked per function."""
    v, a, s = st.n["v"], st.n["a"], st.n["s"]
    lines = _projections(st, helper) + _scores(st, scaled)
    if st.maybe(0.85):
        normalise = st.one(f"softmax_cols({s})", f"np.apply_along_axis(softmax, 0, {s})",
                           f"np.stack([softmax({s}[:, j]) for j in range({s}.shape[1])], "
                           "axis=1)")
        if st.maybe(0.5):
            lines += [f"{a} = {normalise}", f"return {st.matmul(v, a)}"]
        else:
            lines.append(f"return {st.matmul(v, normalise)}")
    else:
        lines += [f"{a} = np.exp({s} - {s}.max(axis=0))",
                  f"{a} = " + st.one(f"{a} / {a}.sum(axis=0)",
                                     f"{a} / np.sum({a}, axis=0, keepdims=True)"),
                  f"return {st.matmul(v, a)}"]
    return _body(lines)


def _multi(st: _Student) -> str:
    """The two heads stacked and mixed, in one of three structures."""
    n = st.n
    h1, h2, d, out = n["h1"], n["h2"], n["d"], n["out"]
    call = [f"scaled_dot_product_self_attention(X, omega_v{h}, omega_q{h}, omega_k{h}, "
            f"beta_v{h}, beta_q{h}, beta_k{h})" for h in "12"]
    style = st.pick.randrange(3)
    if style == 0:
        stack = st.one(f"np.vstack(({h1}, {h2}))", f"np.concatenate([{h1}, {h2}], axis=0)",
                       f"np.vstack([{h1}, {h2}])", f"np.row_stack(({h1}, {h2}))",
                       f"np.concatenate(({h1}, {h2}))")
        lines = [f"{h1} = {call[0]}", f"{h2} = {call[1]}"]
        if st.maybe(0.5):
            lines += [f"{out} = {stack}", st.one(f"return omega_c @ {out}",
                                                 f"return np.matmul(omega_c, {out})")]
        else:
            lines.append(st.one(f"return omega_c @ {stack}",
                                f"return np.matmul(omega_c, {stack})"))
    elif style == 1:
        hs = n["hs"]
        lines = [f"{hs} = [{call[0]},", f"       {call[1]}]",
                 st.one(f"return omega_c @ np.vstack({hs})",
                        f"return np.matmul(omega_c, np.concatenate({hs}, axis=0))")]
    else:
        lines = [f"{d}, {n['n']} = X.shape",
                 f"{out} = " + st.one(f"np.zeros(({d}, {n['n']}))",
                                      "np.zeros_like(X, dtype=float)", "np.zeros(X.shape)"),
                 f"{out}[:{d} // 2] = {call[0]}", f"{out}[{d} // 2:] = {call[1]}",
                 st.one(f"return np.matmul(omega_c, {out})", f"return omega_c @ {out}")]
    return _body(lines)


def honest(seed: int) -> str:
    """One honest student's module: each exercise in a structure of their own (vectorised,
    loops, log-sum-exp, a projection helper or not, the scale applied in one of four places)
    and every line in one of the equivalent forms people write, with `random.Random(seed)`."""
    st = _Student(seed)
    helper = st.maybe(0.3)
    parts = [_softmax(st), "\n\n",
             "def softmax_cols(data_in):\n    exp_values = np.exp(data_in - np.max(data_in, "
             "axis=0, keepdims=True))\n    return exp_values / np.sum(exp_values, axis=0, "
             "keepdims=True)\n\n\n"]
    if helper:
        w, b, x = st.one("w, b, x", "weights, bias, x", "W, b, inputs").split(", ")
        parts.append(f"def project({w}, {b}, {x}):\n    return {st.project(w, b, x)}\n\n\n")
    parts += [f"def self_attention{SIG}:\n" + _attention(st, False, helper), "\n\n",
              f"def scaled_dot_product_self_attention{SIG}:\n" + _attention(st, True, helper),
              "\n\n", f"def multihead_scaled_self_attention{MULTI_SIG}:\n" + _multi(st)]
    source = "".join(parts)
    header = HEADER.replace("\n\n\n", "\nimport math\n\n\n") if "math." in source else HEADER
    return header + source


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


def disguised(source: str) -> str:
    """Every disguise at once: renamed, reordered, commented and one line changed."""
    return commented(reordered(renamed(one_line_changed(source))))


def _function(source: str, name: str) -> str:
    return re.search(rf"def {name}\(.*?(?=\n\n\ndef |\Z)", source, re.S).group(0)  # type: ignore[union-attr]


def one_exercise(source: str) -> str:
    """A student's own module with one function, the scaled attention, copied and renamed."""
    own = honest(len(source) * 7919)
    name = "scaled_dot_product_self_attention"
    made = own.replace(_function(own, name), renamed(_function(source, name)))
    return made if "import math" in made or "math." not in made else \
        made.replace(HEADER, HEADER.replace("\n\n\n", "\nimport math\n\n\n"), 1)


COPIES = {"renamed": renamed, "reordered": reordered, "commented": commented,
          "one_line": one_line_changed, "disguised": disguised, "one_exercise": one_exercise}
"""How a copy is made from its source, by name."""
PLANTED = ("renamed", "reordered", "commented", "one_line")
"""The copies `write_class` plants unless told."""


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
                copies: tuple[str, ...] = PLANTED) -> list[Planted]:
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
    from grader.batch import finding
    from grader.gradebook import FILENAME, Gradebook, origins

    book = Gradebook(out)
    folder, _ = finding.source_folder(submissions, out)
    jobs, _, platform = finding.read_folder(folder, None, None)
    if remember:
        origins.remember(book, assignment, origins.Origin(folder.resolve(), platform))
    result = json.dumps({"assignment": assignment, "submission": "hw.py", "exercises": [],
                         "error": None, "status": "graded", "score": 1.0, "max_score": 1.0,
                         "duration_s": 0.0})
    rows = [(job.student, assignment, job.relative, job.sha256, "graded", 1.0, 1.0, result,
             "2026-01-01T00:00:00+00:00") for job in sorted(jobs, key=lambda j: j.student)]
    with opened(out / FILENAME) as db:
        db.executemany("INSERT INTO results (student, assignment, submission, sha256, status, "
                       "score, max_score, result, graded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       rows)
    return len(rows)
