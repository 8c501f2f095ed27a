"""The address-space limit (`--memory-mb`) bounds what the student's code maps: each process may
map that much beyond what it holds as it starts, the interpreter and the modules the grader
preloads (numpy, an assignment's `requires`). Those are the grader's. A build of torch with
CUDA, which `pip install torch` gives on Linux from PyPI, maps about 3 GB as it is imported:
counted against the student, it left a torch assignment's code no memory at all under the
default 2048 MiB, and every call failed as if the student's code were wrong.

Here torch (about 600 MiB mapped once imported for the CPU build, 3 GB for the CUDA build) is
preloaded under a limit of 256 MiB, less than what torch alone maps: in each engine the
student's code still gets its 256 MiB, and no more.
"""

from __future__ import annotations

import pytest

from grader.pipeline import loading
from grader.results import CellStatus
from grader.sandbox.config import SandboxConfig
from grader.sandbox.inside import processes
from grader.sandbox.limits import Engine, Limits
from grader.sandbox.session import Session
from tests.conftest import needs

LIMITS = Limits(cell_timeout=60, call_timeout=60, memory_mb=256)
CELLS = [
    "import torch\nassert torch.get_num_threads() == 1\nsmall = b'x' * (128 << 20)\n"
    "print('mapped', len(small) >> 20, 'MiB')",
    "big = b'x' * (1 << 30)",  # beyond 256 MiB, and beyond the kernel's own 512 MiB too
]


@pytest.mark.parametrize("engine", [
    pytest.param(Engine.FAST, marks=needs("torch_attention")),
    pytest.param(Engine.FRESH, marks=needs("torch_attention")),
    pytest.param(Engine.KERNEL, marks=[*needs("torch_attention"), pytest.mark.slow])])
def test_what_the_grader_preloads_is_not_the_students_memory(make_submission, engine):
    path = make_submission(CELLS, name="alice_torch_attention")
    submission = loading.load(path, LIMITS, "torch_attention")
    with Session(SandboxConfig(LIMITS, preload=("numpy", "torch"), engine=engine)) as session:
        cells = session.run(submission)
        output = session.captured_output()
    assert [(c.index, c.status) for c in cells] == [(1, CellStatus.OK), (2, CellStatus.ERROR)]
    assert "mapped 128 MiB" in output
    assert "MemoryError" in cells[1].message, cells[1].message


def test_the_limit_is_counted_from_what_the_process_holds():
    """The interpreter running this test holds more than nothing: the limit a worker sets is
    its own mapping and the budget, not the budget alone."""
    held = processes.address_space()
    assert held > 50 << 20  # this interpreter, pytest and numpy at least
    with open("/proc/self/status") as status:
        size = next(int(line.split()[1]) << 10 for line in status if line.startswith("VmSize"))
    assert abs(held - size) < 64 << 20
