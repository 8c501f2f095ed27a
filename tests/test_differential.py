"""Both engines grade what students write alike (issue 22).

Notebooks are generated from the habits of real students' notebooks: prints to stdout and
stderr inside exercises, in the helpers they call and at top level; warnings, NumPy's overflow
in a naive softmax; displays, display ids and rich reprs; `%matplotlib inline`; exceptions at
top level and inside exercises; magics, shell lines, `input()`, `get_ipython()`; top-level
`await`; very long output; bytes that are not UTF-8. Each is graded by the fast engine and by
`--engine kernel`, and everything a user sees must be the same: the score, each check's verdict,
message and diagnosis, the problem cells, and the output (students' and instructors').

The generator is seeded rather than Hypothesis: each example starts a Jupyter kernel, and
shrinking would grade a failing notebook dozens of times; a failure names the seed and lists
each habit of its notebook, which is what reproducing it needs.

Normalised, because each engine must differ there (and nothing else is):
- the numbers of `%time`: timings differ from run to run;
- the file a warning names: each engine names the files it compiles cells to in its own way
  (IPython hashes the source and names the kernel's process), so only the line, category and
  message of a warning are compared.

Not generated, because Jupyter itself gives them no order: a top-level statement that writes to
both stdout and stderr without flushing each write (ipykernel sends each stream's buffer on its
own schedule). A warning is such an unflushed write to stderr. Inside an exercise's call the
streams may mix freely: the issue asks the kernel engine to capture a call's output as the fast
engine does.
"""

from __future__ import annotations

import ast
import difflib
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from grader.course import registry
from grader.pipeline import grading
from grader.sandbox.limits import Limits
from grader.sandbox.session import Engine

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ("attention_basics", "udl_attention")
NOTEBOOKS = 6
# No generated habit waits for a limit, so the limits are generous: a call that a machine busy
# with another suite slows past a tight one would differ between the engines by load alone.
LIMITS = Limits(cell_timeout=60, call_timeout=30, memory_mb=1024)
HEADER = "import numpy as np\nimport sys\nimport warnings"

# ----------------------------------------------------------------------------- habits in code

# Statements put at the top of a function's body; {name} is the function, {arg} its first
# parameter, {flush} and {end} vary, {stream} is ", file=sys.stderr" or "".
INSIDE = {
    "print-shape": "print('{name}: shape', np.shape({arg}){flush}{end})\n",
    "print-stderr": "print('{name} called', file=sys.stderr{flush})\n",
    "print-value": "print(f'{name}: sum {{float(np.sum({arg})):.4f}}'{stream}{flush})\n",
    "helper": "log('{name}', np.shape({arg}))\n",
    "warn": "warnings.warn('{name}: check the shapes')\n",
    "raise-some": "if np.ndim({arg}) > 2:\n    raise ValueError('{name}: only 1-D and 2-D')\n",
}

# Wrong versions students hand in: (function, old text, new text); "" old: put new on top.
VARIANTS = {
    "attention_basics": {
        "naive-softmax": ("softmax", "np.exp(x - np.max(x, axis=-1, keepdims=True))",
                          "np.exp(x)"),
        "missing-scale": ("scaled_dot_product_attention", " / np.sqrt(d_k)", ""),
        "mask-diagonal": ("causal_mask", "k=1", "k=0"),
        "raises": ("qkv_projections", "", "raise ValueError('not finished')\n"),
        "stub": ("causal_self_attention", "", "raise NotImplementedError\n"),
    },
    "udl_attention": {
        "naive-softmax": ("softmax", "np.exp(items_in - np.max(items_in))",
                          "np.exp(items_in)"),
        "naive-softmax-cols": ("softmax_cols",
                               "np.exp(data_in - np.max(data_in, axis=0, keepdims=True))",
                               "np.exp(data_in)"),
        "missing-scale": ("scaled_dot_product_self_attention",
                          "scale = np.sqrt(omega_q.shape[0])", "scale = 1.0"),
        "raises": ("multihead_scaled_self_attention", "", "raise ValueError('not finished')\n"),
        "stub": ("self_attention", "", "raise NotImplementedError\n"),
    },
}

DEMO = {
    "attention_basics": ("softmax", "np.array([1.0, 2.0, 3.0])"),
    "udl_attention": ("softmax_cols", "np.array([[1.0, 2.0], [3.0, 0.5]])"),
}

# Top-level habits: cells (a list of sources). Each statement writes to one stream only, or
# flushes every write.
OUTSIDE: dict[str, list[str]] = {
    "print": ["print('Part 1: softmax')\nprint('loading', end='')\nprint(' done')"],
    "print-stderr": ["print('note: slow', file=sys.stderr)\n"
                     "print('note: flushed', file=sys.stderr, flush=True)"],
    "both-streams-flushed": ["for i in range(3):\n    print('out', i, flush=True)\n"
                             "    print('err', i, file=sys.stderr, flush=True)"],
    "warning": ["warnings.warn('this cell is deprecated')"],
    "overflow": ["big = np.exp(np.array([1000.0, 1.0]))\nprint(big)"],
    "display": ["h = display('loading', display_id=True)\nh.update('loaded')\n"
                "display({'a': 1})\nprint(type(h).__name__, len(h.display_id))"],
    "rich-repr": ["class Table:\n    def _repr_html_(self):\n        return '<table></table>'\n"
                  "    def __repr__(self):\n        return 'Table()'\n\ndisplay(Table())\nTable()"],
    "matplotlib": ["%matplotlib inline\nimport matplotlib.pyplot as plt",
                   "plt.plot([0, 1, 2], [0, 1, 4])\nplt.title('scores')\nplt.show()\n"
                   "print('plotted')"],
    "raise": ["raise ValueError('this cell fails')"],
    "raise-helper": ["def lookup(i):\n    return [1, 2][i]\n\nprint(lookup(0))\nlookup(5)\n"
                     "print('after the error')"],
    "time": ["%time total = sum(range(1000))\nprint(total)"],
    "capture": ["%%capture\nprint('pip output nobody reads')"],
    "capture-named": ["%%capture captured\nprint('kept for later')",
                      "captured.show()\nprint(repr(captured.stdout))"],
    "shell": ["!ls\n!pip install numpy\nfiles = !ls\nprint('after the shell')"],
    "input": ["name = input('Your name: ')", "try:\n    input()\nexcept Exception as e:\n"
              "    print(type(e).__name__)"],
    "get_ipython": ["ip = get_ipython()\nprint(type(ip).__name__, 'IPKernelApp' in ip.config)\n"
                    "print(ip.kernel is not None, hasattr(ip, 'kernel'))\n"
                    "ip.user_ns['alpha'] = 0.5\nprint(alpha)\n"
                    "ip.run_line_magic('matplotlib', 'inline')"],
    "await": ["import asyncio\nawait asyncio.sleep(0)\nprint('awaited')"],
    "non-utf8": ["sys.stdout.flush()\nsys.stdout.buffer.write(b'caf\\xe9 \\xff\\xfe\\n')\n"
                 "sys.stdout.buffer.flush()"],
    "long-output": ["for i in range(2000):\n    print('row', i, '.' * 40)"],
}
LAST = ("long-output",)  # it fills the output cap: whatever follows it is not compared


@dataclass
class Notebook:
    """One generated notebook: its cells, and the habits they hold (to name a failure)."""

    assignment: str
    cells: list[str] = field(default_factory=list)
    habits: list[str] = field(default_factory=list)


def functions(assignment: str) -> dict[str, str]:
    """The reference solution's top-level functions, by name, in order."""
    source = (ROOT / "solutions" / f"{assignment}.py").read_text()
    return {node.name: ast.get_source_segment(source, node) or ""
            for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}


def inject(source: str, code: str) -> str:
    """`source` (one function) with `code` as the first statements of its body."""
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    body = node.body
    docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    first = body[1] if docstring and len(body) > 1 else body[0]
    lines = source.splitlines(keepends=True)
    indent = " " * first.col_offset
    block = "".join(indent + line + "\n" for line in code.rstrip("\n").split("\n"))
    return "".join(lines[:first.lineno - 1]) + block + "".join(lines[first.lineno - 1:])


def exercise_cells(assignment: str, rng: random.Random, habits: list[str],
                   required: list[str]) -> list[list[str]]:
    """One cell per function of the solution, some wrong, some with habits inside: each
    habit of `required` in one function, and a few more at random."""
    variants = VARIANTS[assignment]
    chosen = {variants[v][0]: v for v in required if v in variants}
    for name, (function, _, _) in variants.items():
        if function not in chosen and rng.random() < 0.2:
            chosen[function] = name
    sources = functions(assignment)
    demo = DEMO[assignment][0]
    placed: dict[str, list[str]] = {name: [] for name in sources}
    for habit in (h for h in required if h in INSIDE):
        placed[rng.choice([n for n in sources if n != demo or not placed[n]])].append(habit)
    for name in sources:
        if rng.random() < 0.4 and not (name == demo and placed[name]):
            placed[name].append(rng.choice(list(INSIDE)))
    cells = []
    for name, source in sources.items():
        variant = chosen.get(name)
        if variant is not None:
            _, old, new = variants[variant]
            if old:
                assert old in source, (assignment, variant)
                source = source.replace(old, new)
            else:
                source = inject(source, new)
            habits.append(f"{name}: {variant}")
        for habit in placed[name]:
            arg = ast.parse(source).body[0].args.args[0].arg  # type: ignore[attr-defined]
            flush = rng.choice(["", ", flush=True"])
            stream = rng.choice(["", ", file=sys.stderr"])
            end = rng.choice(["", ", end=''"])
            source = inject(source, INSIDE[habit].format(name=name, arg=arg, flush=flush,
                                                         end=end, stream=stream))
            said = "".join(label for label, chosen, key in (
                (" flushed", flush, "{flush}"), (" to stderr", stream, "{stream}"),
                (" end=''", end, "{end}")) if chosen and key in INSIDE[habit])
            habits.append(f"{name}: {habit}{said}")
        cells.append([source])
    return cells


def generate(seed: int) -> Notebook:
    """The notebook of one seed. Together the seeds use every habit (see `plan`)."""
    rng = random.Random(seed)
    notebook = Notebook(ASSIGNMENTS[seed % len(ASSIGNMENTS)])
    required = plan()[seed]
    stream = rng.choice(["", ", file=sys.stderr"])
    flush = rng.choice(["", ", flush=True"])
    notebook.habits.append(f"log prints to {'stderr' if stream else 'stdout'}{flush}")
    groups = exercise_cells(notebook.assignment, rng, notebook.habits, required)
    outside = [h for h in required if h in OUTSIDE and h not in LAST]
    outside += rng.sample([h for h in OUTSIDE if h not in outside and h not in LAST], 2)
    for habit in outside:  # each at a random place among the exercises
        groups.insert(rng.randrange(len(groups) + 1), OUTSIDE[habit])
        notebook.habits.append(habit)
    function, value = DEMO[notebook.assignment]
    # The demo's result is printed by a statement of its own: its call may print to stderr.
    groups.append([f"demo = {function}({value})", "print(np.round(demo, 4))"])
    for habit in (h for h in required if h in LAST):
        groups.append(OUTSIDE[habit])
        notebook.habits.append(habit)
    notebook.cells = [HEADER, f"def log(*parts):\n    print('[log]', *parts{stream}{flush})"]
    notebook.cells += [cell for group in groups for cell in group]
    return notebook


def plan() -> list[list[str]]:
    """The habits each seed must hold: every habit and every variant in some notebook (the
    variants of each assignment in that assignment's notebooks)."""
    rng = random.Random(22)
    seeds: list[list[str]] = [[] for _ in range(NOTEBOOKS)]
    shared = list(OUTSIDE) + list(INSIDE)
    rng.shuffle(shared)
    for i, habit in enumerate(shared):
        seeds[i % NOTEBOOKS].append(habit)
    for a, assignment in enumerate(ASSIGNMENTS):
        mine = [s for s in range(NOTEBOOKS) if s % len(ASSIGNMENTS) == a]
        for i, variant in enumerate(VARIANTS[assignment]):
            seeds[mine[i % len(mine)]].append(variant)
    return seeds


# ----------------------------------------------------------------------------- what users see

WARNING_FILE = re.compile(r"(?:<cell \d+>|/[\w./-]+\.py|<[\w -]+>):(\d+): (\w+Warning): ")


def normalise(text: str) -> str:
    """See the module's docstring for why each of these must differ."""
    text = re.sub(r"(?m)^CPU times: .*$", "CPU times: <timings>", text)
    text = re.sub(r"(?m)^Wall time: .*$", "Wall time: <timing>", text)
    return WARNING_FILE.sub(r"<file>:\1: \2: ", text)


def seen(result) -> dict[str, list[str]]:
    """Everything of a result that a report shows, as lines to compare."""
    assert result.status.value == "graded", result.error
    checks = [f"{e.name}: {e.status.value} {e.score:g}/{e.max_score:g}" for e in result.exercises]
    checks += [f"{e.name}/{c.name}: passed={c.passed} {c.status.value} {c.score:g} "
               f"diagnosis={c.diagnosis.id if c.diagnosis else None} {c.message!r} "
               f"{c.caution!r}" for e in result.exercises for c in e.checks]
    return {
        "score": [f"{result.score:g}/{result.max_score:g}"],
        "problem cells": [f"cell {c.index}: {c.status.value} {c.message!r}"
                          for c in result.problem_cells],
        "checks": checks,
        "output": normalise(result.output).splitlines(),
        "instructor's output": normalise(result.hidden_output).splitlines(),
    }


def differences(fast: dict[str, list[str]], kernel: dict[str, list[str]]) -> str:
    """What differs, part by part, as a diff from the fast engine to the kernel engine."""
    parts = []
    for part in fast:
        if fast[part] != kernel[part]:
            diff = difflib.unified_diff(fast[part], kernel[part], "fast", "kernel", lineterm="",
                                        n=1)
            parts.append(f"-- {part} differs:\n" + "\n".join(list(diff)[2:]))
    return "\n".join(parts)


def write(notebook: Notebook, folder: Path) -> Path:
    import json

    path = folder / f"{notebook.assignment}.ipynb"
    path.write_text(json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "outputs": [],
                   "execution_count": None, "source": source}
                  for i, source in enumerate(notebook.cells)]}))
    return path


def test_the_notebooks_hold_every_habit():
    """The generator is deterministic, and between them the notebooks use each habit, each
    wrong variant and every print inside a function."""
    notebooks = [generate(seed) for seed in range(NOTEBOOKS)]
    assert [n.cells for n in notebooks] == [generate(s).cells for s in range(NOTEBOOKS)]
    used = " ".join(h for n in notebooks for h in n.habits)
    for habit in [*OUTSIDE, *INSIDE, *(v for vs in VARIANTS.values() for v in vs)]:
        assert re.search(rf"(^|[ :]){re.escape(habit)}\b", used), habit
    for notebook in notebooks:  # a generated cell that does not parse would test nothing
        for cell in notebook.cells:
            if not re.search(r"^\s*[%!]|await |= !", cell, re.M):
                ast.parse(cell)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(NOTEBOOKS))
def test_both_engines_grade_a_generated_notebook_alike(tmp_path, seed):
    notebook = generate(seed)
    path = write(notebook, tmp_path)
    assignment = registry.get(notebook.assignment)
    results = {engine: seen(grading.grade(path, assignment,
                                          grading.Options(limits=LIMITS, engine=engine)))
               for engine in (Engine.FAST, Engine.KERNEL)}
    differ = differences(results[Engine.FAST], results[Engine.KERNEL])
    if differ:
        pytest.fail(f"seed {seed} ({notebook.assignment}; habits: "
                    f"{'; '.join(notebook.habits)}):\n{differ}", pytrace=False)
