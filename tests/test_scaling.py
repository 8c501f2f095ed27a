"""A batch leaks nothing (issue #11): no file descriptor, no zombie process, and no growth of
the parent's memory beyond a small allowance.

Sixty submissions: a descriptor or a zombie left by each is counted exactly whatever the
count, and a megabyte kept by each is over the allowance. The memory of a class of a thousand
is measured in bench/ (`bench.py --scaling 10,100,1000`), not here.

Run in this process, so that the descriptors and children counted are the grader's own.
Speed is measured in bench/, never asserted here.
"""

from __future__ import annotations

import gc
import io
import json
import os
import shutil

import pytest

from grader.batch import batch
from grader.course import registry
from grader.gradebook import Gradebook
from grader.pipeline import grading
from grader.sandbox.limits import Limits
from tests.conftest import ROOT
from tests.helpers.memory import reset_peak, resident_mb

pytestmark = pytest.mark.slow
COUNT = 60
OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def zombies() -> list[int]:
    """Children of this process that have exited and were never waited for."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stream:
                fields = stream.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            found.append(int(name))
    return found


def make_class(folder, count: int) -> None:
    sources = [ROOT / "tests" / "corpus" / "udl_attention" / name
               for name in ("loops.ipynb", "seed002.ipynb")]
    for i in range(count):
        notebook = json.loads(sources[i % 2].read_text())
        notebook["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [],
                                  "execution_count": None, "source": f"student = {i}"})
        path = folder / f"student_{i:04d}" / "hw.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(notebook))


def run(folder, out) -> batch.Summary:
    return batch.run(folder, registry.get("udl_attention"), out, 2, OPTIONS, force=True,
                     progress=io.StringIO())


@pytest.mark.timeout(600)  # sixty gradings: more than the suite's 300 s on a busy machine
def test_a_batch_leaks_no_descriptor_zombie_or_memory(tmp_path):
    folder = tmp_path / "submissions"
    make_class(folder, COUNT)
    # A first, small batch warms every import and cache, so that what follows is growth.
    warm = tmp_path / "warm"
    shutil.copytree(folder / "student_0000", warm / "student_0000")
    run(warm, tmp_path / "warm-out")
    gc.collect()
    descriptors, memory = open_descriptors(), resident_mb()
    reset_peak()
    summary = run(folder, tmp_path / "out")
    gc.collect()
    errors = [(result.submission, result.error)
              for result in Gradebook(tmp_path / "out").results() if result.error]
    assert errors == []
    assert summary.graded == COUNT
    assert open_descriptors() == descriptors
    assert zombies() == []
    growth = resident_mb() - memory
    # Results are written to disk, not kept: graded submissions may cost the
    # parent allocator slack, never memory in proportion to the class (each result holds
    # arrays of its public checks, tens of kilobytes).
    assert growth < 40, f"the parent grew by {growth:.1f} MB over {COUNT} submissions"
    peak = resident_mb("VmHWM")
    print(f"{COUNT} submissions: descriptors {descriptors} -> {open_descriptors()}, "
          f"parent RSS {memory:.1f} -> {resident_mb():.1f} MB, peak {peak:.0f} MB")
    assert peak - memory < 60, f"the parent peaked at {peak:.0f} MB, from {memory:.0f} MB"
