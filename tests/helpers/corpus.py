"""The corpus of submissions with known outcomes (`tests/corpus`), and grading one of them."""

from __future__ import annotations

import dataclasses
import functools
import re

from grader.course import registry
from grader.model import Visibility
from grader.pipeline import grading
from grader.sandbox.limits import Limits
from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "corpus"
FAST = grading.Options(limits=Limits(cell_timeout=4, call_timeout=4, memory_mb=1024))

# submission -> (score, {cell index: status}) ; cells not listed ran cleanly.
EXPECTED = {
    "attention_basics/vectorised_with_magics.ipynb": (10.0, {2: "skipped", 3: "skipped",
                                                              7: "skipped"}),
    "attention_basics/loops.py": (10.0, {}),
    "attention_basics/nbformat3.ipynb": (10.0, {}),
    "attention_basics/nbformat2.ipynb": (10.0, {5: "error"}),
    "attention_basics/display_handles.ipynb": (10.0, {}),
    "attention_basics/after_broken_cell.ipynb": (10.0, {1: "error", 2: "error", 3: "error"}),
    "attention_basics/unstable_softmax.py": (7.0, {}),
    "attention_basics/call_faults.py": (5.0, {}),
    "attention_basics/fault_infinite_cell.ipynb": (10.0, {2: "timeout"}),
    "attention_basics/fault_ignores_signals.ipynb": (10.0, {2: "timeout"}),
    "attention_basics/fault_memory_hog.ipynb": (10.0, {2: "error"}),
    "attention_basics/fault_segfault.ipynb": (10.0, {2: "crashed"}),
    "attention_basics/fault_os_exit.ipynb": (10.0, {2: "crashed"}),
    "attention_basics/fault_self_sigterm.ipynb": (10.0, {2: "crashed"}),
    "attention_basics/fault_sys_exit.ipynb": (10.0, {2: "error"}),
    "attention_basics/fault_print_flood.ipynb": (10.0, {2: "timeout"}),
    "attention_basics/fault_runaway_recursion.ipynb": (10.0, {2: "error"}),
    "attention_basics/fault_forked_children.ipynb": (10.0, {}),
    "attention_basics/fault_reads_stdin.ipynb": (10.0, {2: "error"}),
    "udl_attention/vectorised.py": (10.0, {}),
    "udl_attention/loops.ipynb": (10.0, {}),
    "udl_attention/seed002.ipynb": (4.0, {1: "error"}),
    "torch_attention/einsum_style.py": (5.0, {}),
}


OWN_LIMITS = {"attention_basics/call_faults.py": {"call_timeout": 0.5},
              "attention_basics/fault_infinite_cell.ipynb": {"cell_timeout": 1.0},
              "attention_basics/fault_ignores_signals.ipynb": {"cell_timeout": 1.0},
              "attention_basics/fault_print_flood.ipynb": {"cell_timeout": 1.0}}
"""Files that wait for a time limit, each graded with the smallest limit that still lets its
other cells and calls finish on a busy machine, instead of FAST's 4 s: `call_faults.py`'s
softmax never returns, in each of its six cases; the other three spin in a cell (a loop, one
that ignores signals, a flood of output). Each second of a limit is a second of CPU that the
student's loop spends, in each engine."""


def options_for(relative: str, engine: str = "fast") -> grading.Options:
    """FAST's options for the corpus file at `relative`, by the engine named, with its own
    limits where `OWN_LIMITS` gives them."""
    limits = dataclasses.replace(FAST.limits, **OWN_LIMITS.get(relative, {}))
    return dataclasses.replace(FAST, limits=limits, engine=engine)


def grade(relative: str, options: grading.Options | None = None):
    """Grade the corpus file at `relative` for the assignment its folder is named after, with
    `options` or else `options_for` it."""
    path = CORPUS / relative
    return grading.grade(path, registry.get(path.parent.name), options or options_for(relative))


@functools.cache
def graded(relative: str) -> grading.Result:
    """`grade(relative)` with `options_for(relative)`, done once per run: a result is frozen,
    so the tests that read the same file's grading share one."""
    return grade(relative)


# A number computed from a hidden case, said in its feedback (issue #10,
# `tests/test_hidden_feedback.py`): decimals and exponents, not a line number or a shape.
DECIMAL = re.compile(r"\d\.\d|\d[eE][-+]?\d|\binf\b|\bnan\b")


def hidden_failures_of(result: grading.Result) -> list[tuple[str, str]]:
    """(check, what it says) for every failing hidden check of a result."""
    return [(f"{exercise.name}/{check.name}",
             check.message + " " + (check.diagnosis.message if check.diagnosis else ""))
            for exercise in result.exercises for check in exercise.checks
            if check.visibility is Visibility.HIDDEN and not check.passed]


def hidden_numbers(result: grading.Result) -> list[tuple[str, str]]:
    """The failing hidden checks of a result that say a number."""
    return [(check, said) for check, said in hidden_failures_of(result) if DECIMAL.search(said)]
