"""Where one `grading.grade` spends its time: a profile by stage, taken from outside.

The bench process wraps the grader's functions and methods with timers (`instrumented`) and
restores them on leaving; the grader's code is not changed. Timers nest, and each stage
counts only its own time (`Profiler`: a stage's time minus that of the stages it called), so
the stages add up to the whole, and what no timer covers is "grade: rest".

One profiled grading (`profile_one`) is what a batch does for one submission: `grade` with
the warm zygote and the references loaded once, then the reports rendered (terminal,
Markdown, HTML, JSON) and the result recorded in a gradebook (`Gradebook.recorder`'s
function, on a connection opened once, as a batch records).

The worker confines itself (`grader.sandbox.inside.startup`), inside the sandbox, where no
timer of ours reaches: its time is inside "start: hello". `confinement_by_difference` times
`hello` with the confinement plan and without it (the plan removed from the worker's
environment; no student code runs in that worker, only `hello`) and reports the difference.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GROUPS = ("ready", "load", "start", "cells", "calls", "comparison", "source analysis",
          "outputs", "close", "grade", "reports", "gradebook")
"""The order in which `table` prints the groups (a stage's group: the text before ':')."""


BACKGROUND = "background"
"""The group of the stages that ran in other threads than the grading's (a spare worker
started ahead, a used one put away): reported apart, never in the grading's total."""


@dataclass
class Profiler:
    """Nested timers; each stage accumulates its exclusive time and how often it ran.

    Each thread has its own nesting: a stage that another thread enters while the grading is
    inside one (a spare worker started ahead) neither takes time from it nor is counted in
    the grading's total; it is counted as "background: <stage>" (`BACKGROUND`)."""

    clock: Callable[[], float] = time.perf_counter
    totals: dict[str, float] = field(default_factory=lambda: collections.defaultdict(float))
    """Stage -> seconds spent in it, not counting the stages it called."""
    counts: dict[str, int] = field(default_factory=lambda: collections.defaultdict(int))
    """Stage -> how many times it was entered."""
    owner: int = field(default_factory=threading.get_ident)
    """The thread whose stages make the total: the one that made the profiler."""
    _stacks: threading.local = field(default_factory=threading.local)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block as `name`, less the time of the stages entered inside it."""
        stack = self._stacks.__dict__.setdefault("stack", [])
        frame = [self.clock(), 0.0]  # started, time of the stages inside
        stack.append(frame)
        try:
            yield
        finally:
            stack.pop()
            elapsed = self.clock() - frame[0]
            if threading.get_ident() != self.owner:
                name = f"{BACKGROUND}: {name}"
            with self._lock:
                self.totals[name] += elapsed - frame[1]
                self.counts[name] += 1
            if stack:
                stack[-1][1] += elapsed

    def wrap(self, name: str | Callable[..., str], function: Callable[..., Any]
             ) -> Callable[..., Any]:
        """`function`, timed as `name` (or as `name(*args, **kwargs)`, for a stage that
        depends on the arguments)."""

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.stage(name if isinstance(name, str) else name(*args, **kwargs)):
                return function(*args, **kwargs)

        return timed

    def total(self) -> float:
        """Seconds in all stages of the owner's thread."""
        return sum(seconds for name, seconds in self.totals.items()
                   if not name.startswith(f"{BACKGROUND}:"))


@contextlib.contextmanager
def patched(targets: Sequence[tuple[object, str, Callable[[Any], Any]]]) -> Iterator[None]:
    """Replace each `owner.attribute` with `make(original)`; put the originals back."""
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]
    try:
        for owner, name, make in targets:
            setattr(owner, name, make(getattr(owner, name)))
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def _request_stage(self: object, header: dict[str, Any], *args: Any, **kwargs: Any) -> str:
    return {"hello": "start: hello (worker confines itself, imports)", "exec": "cells: exec",
            "snapshot": "cells: snapshot", "call": "calls: worker round trip",
            "prepare": "calls: call processes forked ahead",
            }.get(str(header.get("op")), f"other request: {header.get('op')}")


@contextlib.contextmanager
def instrumented(profiler: Profiler) -> Iterator[None]:
    """Every stage of a grading timed by `profiler` while inside."""
    from grader import result_json
    from grader.model import Case
    from grader.pipeline import (
        checking,
        compare,
        diagnose,
        fingerprint,
        grading,
        loading,
        missing,
        notebook_globals,
    )
    from grader.report import html, markdown, terminal
    from grader.sandbox import resources, session, transport

    def timer(name: str | Callable[..., str]) -> Callable[[Any], Any]:
        return functools.partial(profiler.wrap, name)

    targets: list[tuple[object, str, Callable[[Any], Any]]] = [
        (grading, "grade", timer("grade: rest (disclosure, results)")),
        (grading, "ready", timer("ready: references, inputs checked")),
        (loading, "load", timer("load: read, parse the notebook")),
        (session.Session, "_start_worker", timer("start: grader side")),
        (resources.Resources, "__init__", timer("start: folder, cgroup, uid")),
        (resources.Resources, "environment", timer("start: folder, cgroup, uid")),
        (transport.PipeTransport, "start", timer("start: zygote fork, namespaces")),
        (session.Session, "_request", timer(_request_stage)),
        (session.Session, "run", timer("cells: grader side")),
        (session.Session, "call", timer("calls: grader side")),
        (checking, "grade_calls", timer("calls: grader side")),
        (session.Session, "calls", timer("calls: grader side")),
        (checking, "_graded", timer("calls: grader side")),
        (transport.PipeTransport, "send", timer("calls: group sent")),
        (transport.PipeTransport, "receive", timer("calls: worker round trip")),
        (Case, "inputs", timer("calls: case inputs made")),
        (checking, "judgement", timer("calls: judging (rest)")),
        (diagnose, "matches", timer("calls: judging, diagnosis")),
        (diagnose, "diagnose", timer("calls: judging, diagnosis")),
        (compare, "compare", timer("comparison: compare with reference")),
        (checking, "exercise_result", timer("comparison: agreement, scoring")),
        (notebook_globals, "globals_read", timer("source analysis: globals, numbers")),
        (notebook_globals, "numbers_written", timer("source analysis: globals, numbers")),
        (fingerprint, "fingerprints", timer("source analysis: fingerprints")),
        (missing, "explain", timer("source analysis: missing explained")),
        (checking, "outputs", timer("outputs: printed output split")),
        (session.Session, "captured_output", timer("outputs: printed output split")),
        (transport.PipeTransport, "stop", timer("close: worker killed, reaped")),
        (resources.Resources, "close", timer("close: folder, cgroup removed")),
        (session.Session, "close", timer("close: grader side")),
        (terminal, "render", timer("reports: terminal")),
        (markdown, "render", timer("reports: markdown")),
        (html, "render", timer("reports: html")),
        (result_json, "render", timer("reports: json")),
    ]
    with patched(targets):
        yield


def profile_one(path: Path, assignment: Any, options: Any, stored: Any,
                record: Callable[[Sequence[tuple[str, str, Any]]], None],
                profiler: Profiler) -> None:
    """One submission as a batch handles it, every stage timed: graded, its reports
    rendered, its result recorded through `record` (a `Gradebook.recorder()`'s, opened once
    as a batch opens it; one transaction per result, as when results finish one by one)."""
    from grader import result_json
    from grader.pipeline import grading
    from grader.report import html, markdown, terminal

    with instrumented(profiler):
        result = grading.grade(path, assignment, options, stored)
        terminal.render(result)
        markdown.render(result)
        html.render(result)
        result_json.render(result, instructor=True)
        profiler.wrap("gradebook: record (SQLite, one transaction)", record)(
            [("student", path.name, result)])


def _hello_seconds(assignment: Any, zygotes: Any, plan: bool) -> float:
    """Seconds of one `hello` round trip of a fresh worker started on demand (not a spare
    started ahead), confined as planned or (plan False) with the confinement plan removed
    from its environment."""
    from grader.sandbox import resources
    from grader.sandbox.config import SandboxConfig
    from grader.sandbox.session import Session

    def unplanned(original: Callable[..., Any]) -> Callable[..., Any]:
        def environment(*args: Any, **kwargs: Any) -> tuple[dict[str, str], bool]:
            env, _ = original(*args, **kwargs)
            env.pop("GRADER_CONFINE", None)
            return env, False
        return environment

    def no_spares(original: Callable[..., Any]) -> Callable[..., Any]:
        return lambda self: None  # a worker started now, as without `spares`

    profiler = Profiler()
    targets = [(Session, "_spares", no_spares)]
    if not plan:
        targets.append((resources.Resources, "environment", unplanned))
    with patched(targets), instrumented(profiler), \
            Session(SandboxConfig(preload=assignment.requires, zygotes=zygotes)) as session:
        session._start_worker()
        if not plan and session.isolation and "read-only root" in session.isolation:
            raise RuntimeError("the worker was confined although its plan was removed")
    return profiler.totals["start: hello (worker confines itself, imports)"]


def confinement_by_difference(assignment: Any, zygotes: Any, repeat: int
                              ) -> tuple[float, float]:
    """(median hello with the plan, median hello without it), alternated to share the
    machine's load; their difference is what the worker's confinement costs."""
    confined, bare = [], []
    for _ in range(repeat):
        confined.append(_hello_seconds(assignment, zygotes, True))
        bare.append(_hello_seconds(assignment, zygotes, False))
    return statistics.median(confined), statistics.median(bare)


def table(profiler: Profiler, runs: int, confinement: tuple[float, float] | None) -> str:
    """The stages by group, in ms per grading (mean over `runs`), with their share of the
    grading's thread; then what other threads did meanwhile, not in the total."""
    total = profiler.total()
    lines = [f"{'stage':<52} {'ms':>7} {'share':>6} {'per run':>7}"]
    groups = collections.defaultdict(list)
    for name in profiler.totals:
        groups[name.split(":")[0]].append(name)
    order = [g for g in GROUPS if g in groups] + sorted(set(groups) - set(GROUPS) - {BACKGROUND})
    for group in order:
        lines += _group_lines(profiler, groups[group], group, runs, total)
        if group == "start" and confinement is not None:
            with_plan, without = confinement
            lines.append(f"  {'of hello: confinement (with plan - without)':<50} "
                         f"{(with_plan - without) * 1000:7.2f}   (hello {with_plan * 1000:.2f}"
                         f" ms confined, {without * 1000:.2f} ms not; medians)")
    lines.append(f"{'total':<52} {total / runs * 1000:7.2f} {1:6.1%}")
    if groups[BACKGROUND]:
        lines += _group_lines(profiler, groups[BACKGROUND],
                              f"{BACKGROUND} (other threads, meanwhile; not in the total)",
                              runs, total)
    return "\n".join(lines)


def _group_lines(profiler: Profiler, names: list[str], title: str, runs: int,
                 total: float) -> list[str]:
    """A group's line, then one line per stage, largest first."""
    seconds = sum(profiler.totals[name] for name in names)
    lines = [f"{title:<52} {seconds / runs * 1000:7.2f} {seconds / total:6.1%}"]
    for name in sorted(names, key=lambda n: -profiler.totals[n]):
        lines.append(f"  {name:<50} {profiler.totals[name] / runs * 1000:7.2f} "
                     f"{profiler.totals[name] / total:6.1%} "
                     f"{profiler.counts[name] / runs:7.1f}")
    return lines
