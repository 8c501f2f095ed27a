"""Non-interference: what a student reads of a graded submission does not depend on the hidden
inputs, except through the verdicts and diagnosis ids of the hidden checks.

Each probe submission is graded twice, against the assignment's hidden cases as declared and
against the same cases drawn from other seeds (same rules for their shapes), each with the
references of its own inputs. Every student-facing format (terminal, JSON, HTML, Markdown,
JUnit, Gradescope's results.json, the feedback notebook) must be byte-identical between the
two runs. The probes try every channel we know of for a hidden call to spell out its inputs:
the names of returned types, structured fields, dtypes, shapes, counts, keys and strings;
exceptions of chosen classes, messages and lines; exit codes and signals; memory and time;
prints, warnings, displays, threads that keep writing and files left behind. A probe's
verdicts are the same on both sets of inputs, so that any difference is a leak.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from grader.authoring import building
from grader.batch import feedback_files
from grader.course import references, registry
from grader.model import Assignment, Visibility
from grader.pipeline import grading, vocabulary
from grader.report import gradescope_results, html, junit, markdown, terminal
from grader.result_json import render as render_json
from grader.results import Result
from grader.sandbox.limits import Engine, Limits
from grader.sandbox.zygote import Zygotes

pytestmark = pytest.mark.slow

LIMITS = Limits(cell_timeout=10, call_timeout=10)
OTHER_SEEDS = 7919

HELPERS = '''
import os, signal, sys, threading, time, warnings
import numpy as np

PUBLIC = {public!r}


def _first(args):
    for item in args:
        if isinstance(item, np.ndarray):
            return item
    return np.asarray(args[0], dtype=float)


def _digest(args):
    return repr(round(float(np.abs(_first(args)).sum()), 6))


def _number(args):
    return int(abs(float(_first(args).ravel()[0])) * 1e6) % 250 + 1


def _spell(args):
    return ("in_" + "_".join(f"{{float(v):.6f}}" for v in _first(args).ravel()[:4])
            .replace("-", "m").replace(".", "p"))


def _bits(args):
    return [int(b) for b in format(_number(args) * 4099 % (1 << 16), "016b")]


def attack(kind, *args):
    if _digest(args) in PUBLIC:
        return np.full((1,), 7.0)  # the same wrong shape on every public case
    n, said, bits = _number(args), _spell(args), _bits(args)
    if kind == "type_name":
        return type(said, (), {{"__module__": "leak"}})()
    if kind == "field_name":
        return np.zeros(3, dtype=[(said, "f8")])
    if kind == "shape":
        return np.ones(tuple(2 if b else 1 for b in bits))
    if kind == "exit_code":
        os._exit(n)
    if kind == "signal":
        signals = [signal.SIGSEGV, signal.SIGABRT, signal.SIGTERM, signal.SIGKILL,
                   signal.SIGBUS, signal.SIGFPE]
        os.kill(os.getpid(), signals[n % len(signals)])
    if kind == "own_class":
        raise type("E_" + said, (Exception,), {{}})(said)
    if kind == "message":
        raise ValueError(said)
    if kind == "line":
        exec(compile("\\n" * n + "raise IndexError(" + repr(said) + ")", "<probe>", "exec"))
    if kind == "exit":
        sys.exit(said)
    if kind == "prints":
        print(said)
        print(said, file=sys.stderr)
        os.write(1, (said + "\\n").encode())
        warnings.warn(said)
        sys.displayhook(said)
        try:
            display(said)  # the notebook's own display(), where the engine gives one
        except NameError:
            pass
    if kind == "thread":
        def chatter():
            for _ in range(50):
                print(said, flush=True)
                time.sleep(0.01)
        threading.Thread(target=chatter, daemon=True).start()
    if kind == "files":
        for folder in ("/tmp", os.getcwd(), os.path.expanduser("~")):
            try:
                with open(os.path.join(folder, said), "w") as f:
                    f.write(said)
            except OSError:
                pass
    if kind == "time":
        time.sleep(0.05 * (n % 4))
    if kind == "memory":
        np.ones(n * 10_000).sum()
    if kind == "count":
        return [0.0] * n
    if kind == "keys":
        return {{said: 1.0}}
    if kind == "text":
        return said
    if kind == "dtype":
        return np.zeros((1,), dtype=["float16", "float32", "int8", "int64"][n % 4])
    if kind == "nan":
        return np.array([np.nan if b else 0.0 for b in bits])
    if kind == "too_large":
        return np.zeros(300_000 + n)
    if kind == "echo":
        return _first(args) * 1.5
    return np.zeros((1,))
'''

FUNCTIONS = '''
def softmax(x):
    return attack({0!r}, x)


def qkv_projections(X, W_q, W_k, W_v):
    return attack({1!r}, X, W_q, W_k, W_v)


def scaled_dot_product_attention(Q, K, V, mask=None):
    return attack({2!r}, Q, K, V)


def causal_mask(seq_len):
    return attack({3!r}, np.full((1,), float(seq_len)))


def causal_self_attention(X, W_q, W_k, W_v):
    return attack({4!r}, X, W_q, W_k, W_v)
'''

PROBES = {
    "names": ("type_name", "field_name", "keys", "text", "shape"),
    "raises": ("count", "message", "line", "exit", "own_class"),
    "processes": ("exit_code", "signal", "memory", "too_large", "dtype"),
    "channels": ("prints", "thread", "files", "time", "nan"),
}


def _digest(args: tuple[object, ...]) -> str:
    first = next((a for a in args if isinstance(a, np.ndarray)), None)
    first = np.asarray(args[0], dtype=float) if first is None else first
    return repr(round(float(np.abs(first).sum()), 6))


def _public_digests(assignment: Assignment) -> list[str]:
    found = []
    for exercise in assignment.exercises:
        for case in exercise.cases:
            if case.visibility is Visibility.PUBLIC:
                args = case.inputs()
                if exercise.name == "causal_mask":
                    args = (np.full((1,), float(args[0])),)
                found.append(_digest(args))
    return found


def other_seeds(assignment: Assignment) -> Assignment:
    """The assignment with every seeded hidden case drawn from another seed."""
    exercises = tuple(dataclasses.replace(exercise, cases=tuple(
        dataclasses.replace(case, seed=case.seed + OTHER_SEEDS)
        if case.visibility is Visibility.HIDDEN else case for case in exercise.cases))
        for exercise in assignment.exercises)
    return dataclasses.replace(assignment, exercises=exercises)


def stored(assignment: Assignment) -> references.References:
    """The references of `assignment`'s own inputs, computed by its solution."""
    return references.References(assignment.name, "probe", building.compute(assignment),
                                 Path("probe"))


def student_views(result: Result, path: Path, tmp_path: Path) -> dict[str, str]:
    """Every format a student reads, as text."""
    notebook, why = feedback_files.annotated(result, path)
    assert notebook is not None, why
    return {
        "terminal": terminal.render(result, verbose=True),
        "json": render_json(result),
        "html": html.render(result),
        "markdown": markdown.render(result),
        "junit": junit.render([result]),
        "gradescope": gradescope_results.render(result),
        "feedback": json.dumps(notebook, sort_keys=True),
    }


def skeleton(result: Result) -> list[tuple[str, str, str, str]]:
    """What the hidden inputs may decide: each check's verdict and diagnosis id."""
    return [(e.name, c.name, c.verdict.value, c.diagnosis.id if c.diagnosis else "")
            for e in result.exercises for c in e.checks]


@pytest.fixture(scope="module")
def worlds():
    """The assignment, and the same with hidden cases from other seeds: (assignment,
    references) of each."""
    declared = registry.get("attention_basics")
    other = other_seeds(declared)
    changed = [(e.name, c.name) for e, f in zip(declared.exercises, other.exercises, strict=True)
               for c, d in zip(e.cases, f.cases, strict=True)
               if not all(np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
                          for a, b in zip(c.inputs(), d.inputs(), strict=True))]
    assert len(changed) >= 8, changed  # the other seeds do change the hidden inputs
    return [(declared, stored(declared)), (other, stored(other))]


@pytest.fixture(scope="module")
def zygotes():
    with Zygotes() as started:
        yield started


def probe_source(kinds: tuple[str, ...], assignment: Assignment) -> list[str]:
    return [HELPERS.format(public=_public_digests(assignment)), FUNCTIONS.format(*kinds)]


def grade_twice(path: Path, worlds, zygotes, engine: Engine = Engine.FAST
                ) -> tuple[Result, Result]:
    options = grading.Options(limits=LIMITS, zygotes=zygotes, engine=engine)
    first, second = (grading.grade(path, assignment, options, refs)
                     for assignment, refs in worlds)
    return first, second


def differences(first: dict[str, str], second: dict[str, str]) -> list[str]:
    """The formats whose text differs, each with the first line that does."""
    found = []
    for name in first:
        if first[name] != second[name]:
            a, b = first[name].splitlines(), second[name].splitlines()
            line = next((f"{x!r} != {y!r}" for x, y in zip(a, b, strict=False) if x != y),
                        "lengths differ")
            found.append(f"{name}: {line}")
    return found


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_no_student_facing_byte_depends_on_the_hidden_inputs(probe, worlds, zygotes,
                                                             make_submission, tmp_path):
    path = make_submission(probe_source(PROBES[probe], worlds[0][0]), name=probe)
    first, second = grade_twice(path, worlds, zygotes)
    assert skeleton(first) == skeleton(second)  # the probe is deterministic in its verdicts
    hidden = [c for e in first.exercises for c in e.checks
              if c.visibility is Visibility.HIDDEN and c.scored]
    assert hidden and not any(c.passed for c in hidden)
    views = student_views(first, path, tmp_path)
    assert differences(views, student_views(second, path, tmp_path)) == []
    spelled = [_spell(c.inputs()) for e in worlds[0][0].exercises for c in e.cases
               if c.visibility is Visibility.HIDDEN and e.name != "causal_mask"]
    leaks = [(name, s) for name, text in views.items() for s in spelled if s in text]
    assert leaks == [] and not any("leak." in text or "exited with code" in text
                                   for text in views.values())


@pytest.mark.parametrize("probe", ["channels"])
def test_the_kernel_engine_leaks_nothing_either(probe, worlds, zygotes, make_submission,
                                                tmp_path):
    """The kernel engine has streams and a late output of its own: the same probes there."""
    path = make_submission(probe_source(PROBES[probe], worlds[0][0]), name=probe)
    first, second = grade_twice(path, worlds, zygotes, Engine.KERNEL)
    assert first.worker == "kernel" and skeleton(first) == skeleton(second)
    assert differences(student_views(first, path, tmp_path),
                       student_views(second, path, tmp_path)) == []


def _spell(args: tuple[object, ...]) -> str:
    """What the probes spell a case's inputs as (`HELPERS`' `_spell`)."""
    first = next(a for a in args if isinstance(a, np.ndarray))
    return ("in_" + "_".join(f"{float(v):.6f}" for v in first.ravel()[:4])
            .replace("-", "m").replace(".", "p"))


def test_the_probes_reach_every_verdict_they_aim_at(worlds, zygotes, make_submission):
    """The probes do what they say: a crash, a raise of their own class, a refusal..."""
    seen = set()
    for probe, kinds in PROBES.items():
        path = make_submission(probe_source(kinds, worlds[0][0]), name=probe)
        result = grading.grade(path, worlds[0][0], grading.Options(limits=LIMITS,
                                                                   zygotes=zygotes), worlds[0][1])
        seen |= {c.verdict.value for e in result.exercises for c in e.checks
                 if c.visibility is Visibility.HIDDEN}
    assert seen >= {"wrong type", "wrong shape", "raised", "crashed", "too large",
                    "wrong values"}


def test_a_hidden_number_in_a_message_is_caught(worlds, zygotes, make_submission, tmp_path,
                                                monkeypatch):
    """The test can fail: a grader that puts one number of a hidden comparison into one
    hidden check's message is told apart by it."""
    original = vocabulary._closed_check

    def leaky(check, exercise, public):
        closed = original(check, exercise, public)
        said = [line for line in (check.detail or check.message).splitlines()
                if not line.startswith("A value counts as close")]  # the case's tolerance
        number = re.search(r"\d+\.\d+", "\n".join(said))
        if check.visibility is Visibility.HIDDEN and not check.passed and number:
            closed = dataclasses.replace(closed, message=closed.message + number.group())
        return closed

    monkeypatch.setattr(vocabulary, "_closed_check", leaky)
    # Wrong values made of the inputs: the hidden checks' details hold numbers of them.
    path = make_submission(probe_source(("echo",) * 5, worlds[0][0]), name="leaky")
    first, second = grade_twice(path, worlds, zygotes)
    assert skeleton(first) == skeleton(second)
    assert differences(student_views(first, path, tmp_path),
                       student_views(second, path, tmp_path))


DEADLINE = '''
import time
import numpy as np

time.sleep(3)


def _hang():
    while True:
        try:
            time.sleep(100)
        except BaseException:
            pass


def softmax(x):
    if np.asarray(x).ndim == 3:  # the hidden case three-dims: a choice a hidden input can make
        _hang()
    return np.full((1,), 7.0)
'''


def test_a_hidden_call_past_the_submissions_time_limit_is_a_verdict_not_a_failure(
        make_submission, zygotes):
    """A hidden call that runs past the submission's time limit made the worker's restart
    fail, and the grading with it: a bit its inputs could choose. It is a time-out."""
    path = make_submission(DEADLINE, name="deadline")
    options = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5,
                                            submission_timeout=5), zygotes=zygotes)
    result = grading.grade(path, registry.get("attention_basics"), options)
    assert result.status.value == "graded" and not result.grader_failed
    (softmax,) = [e for e in result.exercises if e.name == "softmax"]
    verdicts = {c.name: c.verdict.value for c in softmax.checks}
    assert verdicts["three-dims"] == "timed out"
    assert set(verdicts.values()) <= {"wrong shape", "timed out"}
