"""The interpreter's and the process's settings, and the files, that a call could change for
the next one (`state.digest` pictures them with the notebook's globals and the modules).

Runs inside the call process: it imports nothing of the grader's but this package.
"""

from __future__ import annotations

import _signal
import gc
import hashlib
import os
import re
import resource
import signal
import sys
import warnings
from collections.abc import Hashable

MAX_FILES = 2_000
"""Files listed in the working and temporary folders; more, and a fork per call."""
FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")
"""Folders a call may write besides the working folder and $TMPDIR and $HOME."""
_SIGNALS = tuple(int(number) for number in signal.valid_signals())
_LIMITS = tuple(getattr(resource, name) for name in (
    "RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NPROC", "RLIMIT_NOFILE",
    "RLIMIT_STACK") if hasattr(resource, name))


class TooManyFiles(Exception):
    """More files than MAX_FILES in the folders a call may write."""


def interpreter() -> Hashable:
    """The interpreter's and the process's settings a call could change."""
    umask = os.umask(0o077)
    os.umask(umask)
    task = f"/proc/self/task/{os.getpid()}/children"
    try:
        with open(task) as stream:
            children = stream.read()
    except OSError:
        children = "?"
    return (
        _libraries(), tuple(sorted(os.environ.items())), os.getcwd(), umask,
        tuple(sys.path), tuple(map(id, sys.meta_path)), tuple(map(id, sys.path_hooks)),
        sys.getrecursionlimit(), id(sys.gettrace()), id(sys.getprofile()),
        id(sys.stdin), id(sys.stdout), id(sys.stderr), id(sys.displayhook),
        id(sys.excepthook), id(sys.unraisablehook),
        _handlers(),
        signal.getitimer(signal.ITIMER_REAL), signal.getitimer(signal.ITIMER_VIRTUAL),
        signal.getitimer(signal.ITIMER_PROF),
        tuple(resource.getrlimit(which) for which in _LIMITS),
        gc.isenabled(), gc.get_threshold(), len(gc.garbage), tuple(map(id, warnings.filters)),
        tuple(sys.argv), sys.getswitchinterval(), _int_digits(), _process(),
        id(warnings.showwarning), len(os.listdir("/proc/self/task")), children,
        tuple(sorted(os.listdir("/proc/self/fd"))))


def _int_digits() -> int:
    get = getattr(sys, "get_int_max_str_digits", None)
    return get() if get is not None else 0


def _process() -> Hashable:
    """The process's signal mask, priority and CPUs, and the debugging hooks a call may set."""
    faulthandler = sys.modules.get("faulthandler")
    tracemalloc = sys.modules.get("tracemalloc")
    copyreg = sys.modules.get("copyreg")
    return (tuple(sorted(signal.pthread_sigmask(signal.SIG_BLOCK, ()))),
            os.getpriority(os.PRIO_PROCESS, 0),
            tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else (),
            faulthandler.is_enabled() if faulthandler is not None else None,
            tracemalloc.is_tracing() if tracemalloc is not None else None,
            tuple(map(id, copyreg.dispatch_table.values())) if copyreg is not None else ())


def _handlers() -> Hashable:
    """The handler of each signal (`_signal`'s, which skips `signal`'s enum conversions)."""
    handlers = []
    for number in _SIGNALS:
        try:
            handlers.append(id(_signal.getsignal(number)))
        except (OSError, ValueError):
            handlers.append(0)
    return tuple(handlers)


def _libraries() -> Hashable:
    """The global settings and random states of numpy, Python's random and torch."""
    pictures: list[Hashable] = []
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        kind, keys, position, has_gauss, gauss = numpy.random.get_state()
        pictures += [kind, hashlib.blake2b(keys.tobytes(), digest_size=16).digest(),
                     position, has_gauss, gauss, tuple(sorted(numpy.geterr().items())),
                     id(numpy.geterrcall()),
                     numpy.getbufsize(),
                     tuple(sorted((k, repr(v)) for k, v in numpy.get_printoptions().items()))]
    random = sys.modules.get("random")
    if random is not None:
        pictures.append(hash(random.getstate()))
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "get_rng_state"):
        pictures += [hashlib.blake2b(torch.get_rng_state().numpy().tobytes(),
                                     digest_size=16).digest(),
                     torch.is_grad_enabled(), str(torch.get_default_dtype()),
                     torch.get_num_threads(),
                     torch.are_deterministic_algorithms_enabled()]
    return tuple(pictures)


def files() -> Hashable:
    """What is in the folders a call may write: each file's path, inode, size and time.

    What lies below a read-only mount with nothing writable mounted beneath it is left out,
    as no call can change it: the interpreter and its packages, which a sandbox binds below
    its own /tmp when they live in /tmp (a venv made in a CI runner's temporary folder)."""
    roots = {os.path.realpath(path) for path in (
        os.getcwd(), os.environ.get("TMPDIR", ""), os.environ.get("HOME", ""), *FOLDERS)
        if path and os.path.isdir(path)}
    fixed = read_only_mounts(_mountinfo())
    found: list[Hashable] = []
    for root in sorted(roots):
        _listing(root, found, fixed)
    return tuple(found)


def read_only_mounts(mountinfo: str) -> frozenset[str]:
    """The mount points of `/proc/self/mountinfo`'s text that are mounted read-only and have
    no writable mount anywhere below them."""
    read_only: list[str] = []
    writable: list[str] = []
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) < 6:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda match: chr(int(match[1], 8)), fields[4])
        (read_only if "ro" in fields[5].split(",") else writable).append(point)
    writable_below = [point.rstrip("/") + "/" for point in writable]
    return frozenset(point for point in read_only if not any(
        other.startswith(point.rstrip("/") + "/") for other in writable_below))


def _mountinfo() -> str:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as stream:
            return stream.read()
    except OSError:
        return ""


def _read_only(folder: str) -> bool:
    """Whether what is mounted at `folder` now is read-only (a later mount may cover one that
    mountinfo lists there)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _listing(folder: str, found: list[Hashable], fixed: frozenset[str]) -> None:
    if folder in fixed and _read_only(folder):
        found.append((folder, "read-only"))
        return
    try:
        entries = list(os.scandir(folder))
    except OSError:
        found.append((folder, "unreadable"))
        return
    for entry in entries:
        if len(found) >= MAX_FILES:
            raise TooManyFiles
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        found.append((entry.path, info.st_ino, info.st_size, info.st_mtime_ns, info.st_mode))
        if entry.is_dir(follow_symlinks=False):
            _listing(entry.path, found, fixed)
