"""How the worker is confined: what the machine offers, what the worker may see, who it runs as.

The sandbox is described by what it grants, never by a list of secrets to hide:
- `visible()` lists every path the worker's private root holds, read-only: the system's
  shared libraries, the interpreter, its standard library and the installed packages, and
  the part of the `grader` package the worker runs (its `__init__` and `grader.sandbox.inside`, not
  the folder above it, its assignments or its public references). Nothing else exists in
  there: not the project, its `.git`, the current folder, the submissions or the gradebook.
- the worker gets an empty working folder in a `/tmp` of its own;
- new PID, network, IPC, UTS and mount namespaces; as root, a user id of its own (leased, so
  that no two concurrent workers share one: `users`); a memory cgroup where one can be made.

`offered()` probes once what this machine allows. Once namespaces have worked, they are
required: a worker that cannot get them is refused (`SandboxError`), never started weaker.

Where there are no namespaces (Docker's default seccomp profile, as on Gradescope), a root
grader still gives each worker a leased user id of its own, no groups, `no_new_privs`, the
seccomp filter, the limits and a working folder only that user owns (`plan_user`). Without a
private root, that user can read what every user of the machine can read: the allow-list is
then "what is open to all". So the files the grader holds (`Closed`: its project, the
solutions, the hidden references, the submissions' folders, the outputs) must be closed to
other users; the worker checks it as that user before any student code runs, and the grader
refuses to grade otherwise. The references themselves are read into the grader's memory
before any worker starts (`grading.ready`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.sandbox.inside import cgroups, processes

PACKAGE_DIR = Path(__file__).resolve().parents[1]
PACKAGE_PARENT = PACKAGE_DIR.parent
# What of the grader package the worker needs: `import grader` and `grader.sandbox.inside`
# (`tests/test_layers.py` checks that it imports nothing else of the grader).
PACKAGE_ENTRIES = ("__init__.py", "sandbox/__init__.py", "sandbox/inside")
# -I: ignore PYTHON* variables, the user's site-packages and the current folder. The worker
# imports the very grader that started it, even beside another installed copy.
BOOT = ("import sys; sys.path.insert(0, {parent!r}); "
        "from grader.sandbox.inside.{entry} import main; main()")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS")
# The dynamic loader and the system's shared libraries: on a multiarch system (Debian, Ubuntu)
# only the architecture's own folders, not the programs that keep their files in /usr/lib.
MULTIARCH = sysconfig.get_config_var("MULTIARCH") or ""
LIBRARY_DIRS = (("/lib64", f"/lib/{MULTIARCH}", f"/usr/lib/{MULTIARCH}",
                 f"/usr/local/lib/{MULTIARCH}") if MULTIARCH
                else ("/lib", "/lib64", "/usr/lib", "/usr/lib64"))
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
             "/etc/alternatives")
# Without a memory cgroup, the submission's memory is bounded by processes x --memory-mb.
FALLBACK_PROCESSES = 12


@dataclass(frozen=True)
class Closed:
    """A path the grader holds that the worker's user must not be able to open."""

    path: str
    """The file or folder (everything below a folder is closed with it)."""
    what: str
    """What it is, for the refusal: "the solutions", "the submission's folder"."""


@dataclass(frozen=True)
class Offer:
    """What isolation this machine gives the worker."""

    prefix: tuple[str, ...]
    """The `unshare` command line that starts the worker in new namespaces; empty if none."""
    reason: str
    """Why there are no namespaces (empty when there are)."""
    cgroups: cgroups.Hierarchy | None
    """Where a memory cgroup per submission can be made (root, or a delegated group)."""
    root: bool
    """The grader runs as root: each worker gets a user id of its own."""

    @property
    def namespaces(self) -> bool:
        """Namespaces, a private root and a locked-down user are available."""
        return bool(self.prefix)


def _probe_prefix() -> tuple[tuple[str, ...], str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        return (), "the unshare command (util-linux) is not installed"
    options = ["--pid", "--fork", "--kill-child", "--mount-proc", "--net", "--ipc", "--uts"]
    if os.geteuid() != 0:
        options = ["--user", "--map-root-user", *options]
    prefix = [unshare, *options]
    setpriv = shutil.which("setpriv")
    if setpriv:  # if the grader itself is killed, unshare (and so the worker) dies with it
        prefix = [setpriv, "--pdeathsig", "KILL", *prefix]
    try:
        probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return (), f"unshare could not be run ({exc})"
    if probe.returncode != 0:
        said = probe.stderr.decode(errors="replace").strip().splitlines()
        return (), f"unshare was refused ({said[-1] if said else probe.returncode})"
    return tuple(prefix), ""


_OFFER: Offer | None = None
_OFFER_LOCK = threading.Lock()


def offered() -> Offer:
    """What this machine offers, probed once. A failed probe is tried again next time; a
    successful one is kept, so that a later failure refuses to grade instead of grading
    with less isolation."""
    global _OFFER
    with _OFFER_LOCK:
        if _OFFER is not None:
            return _OFFER
        prefix, reason = _probe_prefix()
        offer = Offer(prefix, reason, cgroups.find(), os.geteuid() == 0)
        if offer.namespaces:
            _OFFER = offer
        return offer


def command(offer: Offer, entry: str = "startup") -> list[str]:
    """The worker's command line: a fresh interpreter, never a fork of the grader.

    `entry` is the module of `grader.sandbox.inside` whose `main()` it runs: "startup" (the
    worker of `--engine fresh`, and of the default engine where no zygote can be had) or
    "kernel_agent" (an IPython kernel). The zygote starts the same way
    (`zygote.Client`), then forks the workers it is asked for.
    """
    return [*offer.prefix, *interpreter(), "-c",
            BOOT.format(parent=str(PACKAGE_PARENT), entry=entry)]


def interpreter() -> list[str]:
    """This Python, isolated from the grader's environment (`-I`: no PYTHON* variable, no
    user site, no current folder on the path). `-I` also drops PYTHONDONTWRITEBYTECODE, so
    the grader's own choice not to write bytecode is passed on (`-B`): the zygote, which
    imports before any confinement, wrote it into the grader's package folder."""
    return [sys.executable, "-I", *(["-B"] if sys.dont_write_bytecode else [])]


def environment(home: Path) -> dict[str, str]:
    """A minimal environment: nothing of the grader's own variables reaches student code."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(home),
           "LANG": "C.UTF-8", "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(home),
           "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    env.update(dict.fromkeys(THREAD_VARS, "1"))  # one thread each: fork() stays safe
    return env


def _python_paths() -> list[str]:
    """The interpreter, its standard library, its shared library and the installed packages."""
    import site

    paths = [sys.executable, os.path.realpath(sys.executable)]
    for base in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        scheme = sysconfig.get_paths(vars=base or None)
        paths += [scheme[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    paths += site.getsitepackages()
    library = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("LDLIBRARY")
    if all(library):
        paths.append(os.path.join(*library))
    paths.append(os.path.join(sys.prefix, "pyvenv.cfg"))  # how a venv's python finds itself
    return paths


@functools.cache
def visible() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the worker's root holds besides the grader package: (binds, links), found once
    per process (the system's folders and the interpreter's do not move while it grades).

    Binds are the real paths of what is granted, bound read-only at the same place. Links are
    the symbolic links on the way to them (`/lib -> usr/lib`, a venv's `bin/python`),
    recreated as links: a link on the way brings nothing more than what was granted.
    """
    binds: dict[str, None] = {}
    links: dict[str, None] = {}
    for path in (*LIBRARY_DIRS, *ETC_FILES, *_python_paths()):
        if not os.path.exists(path):
            continue
        parts = Path(path).parts
        for depth in range(2, len(parts) + 1):
            step = os.path.join(*parts[:depth])
            if os.path.islink(step):
                links[step] = None
        binds[os.path.realpath(path)] = None
    return tuple(binds), tuple(links)


def plan(home: Path, tmp_bytes: int, uid: int | None, cgroup: Path | None,
         writable: tuple[Path, ...] = ()) -> dict[str, Any]:
    """What `confine.confine` builds inside the worker (see the module's docstring).

    `writable` folders are bound read-write at the same place (the kernel engine's
    connection folder); the worker's own user owns them.
    """
    binds, links = visible()
    # The new root is built beside, not on, the folder that holds the writable ones.
    return {"root": str(home / "root"), "binds": list(binds), "links": list(links),
            "tmp_bytes": tmp_bytes,
            "package": str(PACKAGE_DIR), "package_entries": list(PACKAGE_ENTRIES),
            "writable": [str(path) for path in writable],
            "uid": uid, "gid": uid, "lock": uid is None and os.geteuid() != 0,
            "cgroup": str(cgroup) if cgroup else None}


def plan_user(home: Path, uid: int, cgroup: Path | None, closed: tuple[Closed, ...],
              writable: tuple[Path, ...] = ()) -> dict[str, Any]:
    """What `confine.confine_user` does inside the worker where there are no namespaces and
    the grader is root: the same identity, filter and cgroup as `plan`, no private root, and
    `closed` checked unreadable by that identity before any student code runs."""
    return {"user_only": True, "home": str(home), "uid": uid, "gid": uid,
            "parent": os.getpid(), "cgroup": str(cgroup) if cgroup else None,
            "needed": list(visible()[0]),
            "closed": [[item.path, item.what] for item in closed],
            "writable": [str(path) for path in writable]}


@functools.cache
def installed() -> bool:
    """The grader runs from an installed package (site-packages, which every user may read
    and which students install too), not from a project folder that holds solutions. Found
    once per process, as `visible` is: each real path costs a `stat` of every folder on the
    way (about a hundred, 3 ms, in every grading)."""
    parent = os.path.realpath(PACKAGE_PARENT)
    return any(os.path.realpath(path) == parent for path in _python_paths())


def _descendants(pid: int) -> Iterator[int]:
    queue = [pid]
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
            yield from children
            queue.extend(children)


def kill_all(proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker, its process group and every descendant (even those that left it)."""
    for pid in (proc.pid, *_descendants(proc.pid)):
        processes.kill_group(pid)


def describe(offer: Offer, confinement: str = "", memory: str = "", start: str = "") -> str:
    """How strongly student code is isolated here, for the report; `start` says how the
    worker was started (`Transport.started`: a zygote's fork, or a fresh interpreter and
    why)."""
    parts = ["a separate process with resource limits"]
    if start:
        parts.append(start)
    if offer.namespaces:
        parts.append("its own PID, network and IPC namespaces (no network; every process it "
                     "starts is killed with it)")
    elif offer.root:
        parts.append(f"no namespaces of its own: Linux namespaces are not available here "
                     f"({offer.reason}), so it shares the machine's network, /tmp and process "
                     "list, and every process of its user is killed with it")
    else:
        parts.append(f"its own process group only: Linux namespaces are not available here "
                     f"({offer.reason}) and the grader is not root, so it runs as the "
                     "grader's own user: it can read and write whatever that user can (the "
                     "hidden references and solutions too, wherever that user can read them) "
                     "and reach the network; only the limits hold. Grade as root, or where "
                     "namespaces are available, to keep them hidden")
    parts += [part for part in (confinement, memory) if part]
    return "; ".join(parts)
