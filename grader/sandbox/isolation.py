"""How the worker is confined: its command, environment, privileges, and how it is killed."""

from __future__ import annotations

import functools
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grader.sandbox import processes

PACKAGE_PARENT = Path(__file__).resolve().parents[2]
# -I: ignore PYTHON* variables and the user's site-packages; the worker imports only numpy,
# its own modules and whatever the student imports.
# The worker imports the very grader that started it, even beside another installed copy.
BOOT = ("import sys; sys.path.insert(0, {parent!r}); "
        "from grader.sandbox.worker import main; main()")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS")


def _namespace_prefix() -> list[str]:
    """`unshare` options that put the worker in its own PID and network namespaces.

    In a PID namespace the worker is process 1: when it dies, the kernel kills every process
    the student started, even those that escaped with setsid(). Without root, a user namespace
    makes this possible too. Empty when the system does not allow it.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    options = ["--pid", "--fork", "--kill-child", "--mount-proc", "--net"]
    if os.geteuid() != 0:
        options = ["--user", "--map-root-user", *options]
    prefix = [unshare, *options]
    setpriv = shutil.which("setpriv")
    if setpriv:  # if the grader itself is killed, unshare (and so the worker) dies with it
        prefix = [setpriv, "--pdeathsig", "KILL", *prefix]
    probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10)
    return prefix if probe.returncode == 0 else []


@functools.cache
def namespace_prefix() -> tuple[str, ...]:
    """The cached result of probing `unshare` once per process."""
    try:
        return tuple(_namespace_prefix())
    except (OSError, subprocess.SubprocessError):
        return ()


def command() -> list[str]:
    """The worker's command line: a fresh interpreter, never a fork of the grader."""
    return [*namespace_prefix(), sys.executable, "-I", "-c",
            BOOT.format(parent=str(PACKAGE_PARENT))]


def environment(home: Path) -> dict[str, str]:
    """A minimal environment: nothing of the grader's own variables reaches student code."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(home),
           "LANG": "C.UTF-8", "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(home),
           "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    env.update(dict.fromkeys(THREAD_VARS, "1"))  # one thread each: fork() stays safe
    return env


SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
# As root, each worker runs as a user of its own, with no account: a fork bomb exhausts only
# its own process limit, and no two submissions can signal or read each other.
SANDBOX_UIDS = range(2_000_000, 3_000_000)


def plan(home: Path, hide: Sequence[Path], tmp_bytes: int) -> dict[str, Any] | None:
    """What `confine.confine` builds inside the worker, or None without namespaces.

    Only the system, the interpreter and the import path are visible, read-only; `hide` lists
    folders under them that hold secrets (solutions, references, gradebooks, submissions).
    """
    if not namespace_prefix():
        return None
    import site

    paths = [*SYSTEM_DIRS, sys.prefix, sys.base_prefix, sys.exec_prefix,
             *site.getsitepackages(), str(PACKAGE_PARENT),
             *(entry for entry in sys.path if entry and os.path.isabs(entry))]
    root = os.geteuid() == 0
    uid = random.choice(SANDBOX_UIDS) if root else None
    needed = [sys.prefix, sys.base_prefix, *site.getsitepackages(), str(PACKAGE_PARENT / "grader")]
    return {"root": str(home), "binds": [p for p in dict.fromkeys(paths) if os.path.exists(p)],
            "needed": needed,
            "hide": [str(path) for path in hide], "tmp_bytes": tmp_bytes,
            "uid": uid, "gid": uid,
            "lock": not root}


def _descendants(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children") as stream:
                    children = [int(child) for child in stream.read().split()]
            except OSError:
                continue
            found.extend(children)
            queue.extend(children)
    return found


def kill_all(proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker, its process group and every descendant (even those that left it)."""
    for pid in (proc.pid, *_descendants(proc.pid)):
        processes.kill_group(pid)


def describe(confinement: str | None = None) -> str:
    """How strongly student code is isolated here, for the report."""
    parts = ["a separate process with resource limits"]
    if namespace_prefix():
        parts.append("its own PID and network namespaces (no network; every process it "
                     "starts is killed with it)")
    else:
        parts.append("its own process group only: Linux namespaces are not available here, "
                     "so it could read what the grader's user can read")
    if confinement:
        parts.append(confinement)
    return "; ".join(parts)
