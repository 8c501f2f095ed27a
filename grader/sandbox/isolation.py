"""How the worker is confined: its command, environment, privileges, and how it is killed."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

PACKAGE_PARENT = Path(__file__).resolve().parents[2]
# -I: ignore PYTHON* variables and the user's site-packages; the worker imports only numpy,
# its own two modules and whatever the student imports.
BOOT = ("import sys; sys.path.append({parent!r}); "
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


def preexec(home: Path) -> Callable[[], None] | None:
    """What runs in the child between fork and exec (nothing yet at this level)."""
    return None


def kill_all(proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker's whole process group."""
    for kill in (lambda: os.killpg(proc.pid, signal.SIGKILL),
                 lambda: os.kill(proc.pid, signal.SIGKILL)):
        try:
            kill()
        except (ProcessLookupError, PermissionError):
            pass


def describe() -> str:
    """How strongly student code is isolated here, for the report."""
    parts = ["a separate process in an empty folder, with resource limits"]
    if namespace_prefix():
        parts.append("own PID and network namespaces (no network; every process it starts "
                     "is killed with it)")
    else:
        parts.append("its own process group only (namespaces are not available here)")
    return "; ".join(parts)
