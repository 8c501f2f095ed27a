"""bench/stages.py, the profile by stage of bench/bench_floor.py: its timers count each
stage's own time, and its wrappers leave the grader as they found it. (Speed itself is
measured in bench/, never asserted here.)"""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path

import pytest

from grader.course import registry
from grader.gradebook import Gradebook
from grader.pipeline import checking, grading
from grader.sandbox.session import Session
from grader.sandbox.zygote import Zygotes

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_stages", ROOT / "bench" / "stages.py")
assert _spec is not None and _spec.loader is not None
stages = importlib.util.module_from_spec(_spec)
sys.modules.setdefault(_spec.name, stages)  # its dataclass looks its module up there
_spec.loader.exec_module(stages)


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_stage_counts_its_own_time_not_that_of_the_stages_inside_it():
    clock = Clock()
    profiler = stages.Profiler(clock=clock)
    with profiler.stage("outer"):
        clock.now = 2.0
        with profiler.stage("inner"):
            clock.now = 5.0
        with profiler.stage("inner"):
            clock.now = 6.0
        clock.now = 10.0
    assert dict(profiler.totals) == {"outer": 6.0, "inner": 4.0}
    assert dict(profiler.counts) == {"outer": 1, "inner": 2}
    assert profiler.total() == 10.0


def test_a_stage_in_another_thread_takes_no_time_from_the_grading_and_is_kept_apart():
    # A spare worker is started ahead in a thread while the grading is inside a stage: the
    # other thread's stage must not be subtracted from it, nor pop its frame, nor count in
    # the total. Each thread's steps are ordered by events, the clock moved by hand.
    clock = Clock()
    profiler = stages.Profiler(clock=clock)
    entered, leave, done = threading.Event(), threading.Event(), threading.Event()

    def spare() -> None:
        with profiler.stage("start: zygote fork"):
            entered.set()
            leave.wait(5)
            clock.now += 7.0
        done.set()

    with profiler.stage("calls: round trip"):
        clock.now = 1.0
        other = threading.Thread(target=spare)
        other.start()
        entered.wait(5)
        with profiler.stage("comparison"):
            clock.now = 3.0
            leave.set()
            done.wait(5)  # the spare's stage, from 1 to 10, ends inside this one
        clock.now = 12.0
    other.join(5)
    assert dict(profiler.totals) == {"calls: round trip": 3.0, "comparison": 9.0,
                                     "background: start: zygote fork": 9.0}
    assert profiler.total() == 12.0
    report = stages.table(profiler, 1, None)
    assert report.splitlines()[-3:] == [
        "total" + " " * 48 + "12000.00 100.0%",
        "background (other threads, meanwhile; not in the total) 9000.00  75.0%",
        "  background: start: zygote fork" + " " * 21 + "9000.00  75.0%     1.0"]


def test_a_wrapped_function_is_timed_under_the_name_its_arguments_give():
    clock = Clock()
    profiler = stages.Profiler(clock=clock)

    def work(op: str) -> str:
        clock.now += 3.0 if op == "exec" else 1.0
        return op.upper()

    timed = profiler.wrap(lambda op: f"request: {op}", work)
    assert [timed("exec"), timed("call"), timed("call")] == ["EXEC", "CALL", "CALL"]
    assert dict(profiler.totals) == {"request: exec": 3.0, "request: call": 2.0}


def test_patched_puts_the_originals_back_even_after_an_error():
    original = Session._request
    with pytest.raises(RuntimeError, match="inside"):
        with stages.patched([(Session, "_request", lambda f: None)]):
            assert Session._request is None
            raise RuntimeError("inside")
    assert Session._request is original


def test_a_profiled_grading_times_each_stage_once_and_leaves_the_grader_unchanged(tmp_path):
    originals = (Session._request, Session.call, checking.judgement, grading.grade)
    assignment = registry.get("udl_attention")
    profiler = stages.Profiler()
    with Zygotes() as zygotes:
        options = grading.Options(zygotes=zygotes)
        stored = grading.ready(assignment, options)
        with Gradebook(tmp_path).recorder() as record:
            stages.profile_one(ROOT / "tests" / "corpus" / "udl_attention" / "loops.ipynb",
                               assignment, options, stored, record, profiler)
    counts = dict(profiler.counts)
    once = ["start: hello (worker confines itself, imports)",
            "gradebook: record (SQLite, one transaction)", "reports: html", "reports: markdown",
            "reports: json", "reports: terminal",
            "close: grader side", "grade: rest (disclosure, results)"]
    assert {name: counts.get(name) for name in once} == dict.fromkeys(once, 1)
    assert "ready: references, inputs checked" not in counts  # `stored` was given
    cases = sum(len(exercise.cases) for exercise in assignment.exercises)
    assert counts["calls: judging (rest)"] == cases  # the correct notebook: each passes at once
    assert counts["cells: exec"] >= 1
    assert not [name for name in counts if name.startswith("other request")]
    assert (Session._request, Session.call, checking.judgement, grading.grade) == originals
    assert [row.score for row in Gradebook(tmp_path).rows()] == [10.0]  # it was recorded
