"""The interpreter's and the process's settings, and the files, that a call could change for
the next one (`state.digest` pictures them with the notebook's globals and the modules).

Runs inside the call process: it imports nothing of the grader's but this package.
"""

from __future__ import annotations

import _signal
import gc
import hashlib
import os
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
    """What is in the folders a call may write: each file's path, inode, size and time."""
    roots = {os.path.realpath(path) for path in (
        os.getcwd(), os.environ.get("TMPDIR", ""), os.environ.get("HOME", ""), *FOLDERS)
        if path and os.path.isdir(path)}
    found: list[Hashable] = []
    for root in sorted(roots):
        _listing(root, found)
    return tuple(found)


def _listing(folder: str, found: list[Hashable]) -> None:
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
            _listing(entry.path, found)

