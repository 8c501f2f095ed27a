"""Process plumbing for the worker: forking under a process limit, reaping, killing, limits.

Imported by the worker only; nothing here knows about grading.
"""

from __future__ import annotations

import os
import resource
import signal
import time


def fork(attempts: int = 20) -> int:
    """fork(), waiting a little for the student's exiting processes to free their slots."""
    for attempt in range(attempts):
        try:
            return os.fork()
        except BlockingIOError:
            if attempt == attempts - 1:
                raise
            reap()
            time.sleep(0.05)
    raise AssertionError("unreachable")


def reap() -> None:
    """Collect exited children; as PID 1 of its namespace the worker also adopts orphans, and
    their zombies would count against the process limit."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def exit_unless(pid: int) -> None:
    """A process that student code forked must not go on with the worker's work."""
    if os.getpid() != pid:
        os._exit(0)


def close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def kill_group(pid: int) -> None:
    """SIGKILL a process and the process group it leads, whichever still exist."""
    for target in (-pid, pid):
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def signal_name(number: int) -> str:
    """A deadly signal with what it usually means: "SIGSEGV (a segmentation fault)"."""
    name = signal.Signals(number).name
    hint = {"SIGSEGV": " (a segmentation fault)", "SIGKILL": " (killed, often for memory)",
            "SIGXCPU": " (out of CPU time)"}.get(name, "")
    return name + hint


def death(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"the process died from {signal_name(os.WTERMSIG(status))}"
    return f"the process exited with code {os.WEXITSTATUS(status)} before answering"


PRELOAD_ENV = "GRADER_PRELOAD"
"""The modules a zygote, a fresh worker or a kernel imports before it runs a student's code
and before its limits are set (a JSON list): the assignment's `requires`. A worker forked
from a zygote has them already."""


def preload(modules: list[str] | tuple[str, ...]) -> None:
    """Import the modules an assignment's code needs (`Assignment.requires`), as the zygote,
    a fresh worker and a kernel each do before they run a student's code; torch with one
    thread, which keeps fork() safe."""
    for module in modules:
        __import__(module)
        if module == "torch":
            import torch

            torch.set_num_threads(1)


def address_space() -> int:
    """Bytes of address space this process holds now (0 where /proc cannot say)."""
    try:
        with open("/proc/self/statm") as stream:
            return int(stream.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def apply_limits(limits: dict[str, int]) -> None:
    """Set the resource limits the grader asked for (0 or missing leaves one unset). The
    address space ("memory") is what each process may map beyond what it holds now: the
    interpreter and the modules the grader preloaded (numpy, an assignment's torch) are the
    grader's, and a build of torch with CUDA reserves gigabytes as it is imported."""
    names = {"memory": resource.RLIMIT_AS, "cpu": resource.RLIMIT_CPU,
             "file_size": resource.RLIMIT_FSIZE, "processes": resource.RLIMIT_NPROC}
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for key, which in names.items():
        amount = int(limits.get(key) or 0)
        if amount > 0 and key == "memory":
            amount += address_space()
        if amount > 0:
            soft, hard = resource.getrlimit(which)
            ceiling = amount if hard == resource.RLIM_INFINITY else min(amount, hard)
            resource.setrlimit(which, (ceiling, ceiling))


# Signals whose default action ends a process and that a worker, as PID 1 of its namespace,
# handles by exiting with 128 + the signal's number (`grader.sandbox.inside.signals`).
DEADLY = tuple(sorted(
    {getattr(signal, name) for name in ("SIGHUP", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2",
                                        "SIGVTALRM", "SIGPROF", "SIGIO", "SIGPWR", "SIGSTKFLT")
     if hasattr(signal, name)}
    | set(range(signal.SIGRTMIN, signal.SIGRTMAX + 1) if hasattr(signal, "SIGRTMIN") else ())))


def is_fatal_signal(number: int) -> bool:
    """Whether a worker exiting with 128 + `number` was stopped by that signal."""
    return number in DEADLY
