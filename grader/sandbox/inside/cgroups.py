"""A memory cgroup per submission, where the machine lets the grader make one.

`--memory-mb` as an rlimit bounds each process; a submission that forks eight children gets
eight times as much. A cgroup bounds the submission as a whole: the worker joins it before
any student code runs, and every process it starts is counted together. Both cgroup v1 (a
`memory` hierarchy) and v2 (the unified hierarchy with the memory controller enabled below
the grader's own group) are supported; anything else means no cgroup, and `isolation` falls
back to a low process limit.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Hierarchy:
    """Where the grader may create memory cgroups, and how they are written."""

    parent: Path
    """The folder new groups are made in (the grader's own group)."""
    version: int
    """1 (a `memory` hierarchy) or 2 (unified)."""

    @property
    def limit_file(self) -> str:
        """The file that holds a group's memory limit."""
        return "memory.limit_in_bytes" if self.version == 1 else "memory.max"


def _own_groups(text: str) -> dict[str, str]:
    """controller (or "" for v2) -> the group path, from /proc/self/cgroup."""
    groups = {}
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            groups[controller] = path
    return groups


def find() -> Hierarchy | None:
    """The hierarchy where a memory group can be made here, or None."""
    try:
        groups = _own_groups(Path("/proc/self/cgroup").read_text())
    except (OSError, ValueError):
        return None
    candidates = []
    if "memory" in groups:
        candidates.append(Hierarchy(ROOT / "memory" / groups["memory"].lstrip("/"), 1))
    if "" in groups:
        candidates.append(Hierarchy(ROOT / groups[""].lstrip("/"), 2))
    for hierarchy in candidates:
        try:
            group = create(hierarchy, 64 << 20)
        except OSError:
            continue
        remove(group)
        return hierarchy
    return None


def create(hierarchy: Hierarchy, memory_bytes: int) -> Path:
    """Make a group with a memory limit (swap included where it can be set); OSError if not."""
    group = hierarchy.parent / f"attention-grader-{secrets.token_hex(6)}"
    group.mkdir()
    try:
        (group / hierarchy.limit_file).write_text(str(memory_bytes))
        swap = group / ("memory.memsw.limit_in_bytes" if hierarchy.version == 1
                        else "memory.swap.max")
        if swap.exists():
            try:
                swap.write_text(str(memory_bytes) if hierarchy.version == 1 else "0")
            except OSError:
                pass  # swap accounting off: the limit still bounds memory in RAM
    except OSError:
        remove(group)
        raise
    return group


def remove(group: Path, wait_s: float = 2.0) -> None:
    """Remove a group once its processes are gone (a dying PID namespace takes a moment)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.rmdir(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return  # left empty or nearly so; the kernel frees it with its last process
            time.sleep(0.02)


def join(group: str) -> None:
    """Move the calling process into a group (run by the worker, before it drops its power)."""
    with open(os.path.join(group, "cgroup.procs"), "w") as stream:
        stream.write(str(os.getpid()))


def peak_bytes(group: Path) -> int | None:
    """The most memory the group has used, where the kernel reports it."""
    for name in ("memory.max_usage_in_bytes", "memory.peak"):
        try:
            return int((group / name).read_text())
        except (OSError, ValueError):
            continue
    return None
