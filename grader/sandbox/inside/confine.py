"""Confining the worker before any student code runs: a minimal read-only root, then no power.

Runs inside the worker, which starts in new mount, PID, network and IPC namespaces (as root,
or as root of a new user namespace when the grader is not root): made by `unshare` for a fresh
interpreter (`isolation.command`), by the zygote's middle process for a fork (`zygote_process`).
It
joins its memory cgroup, builds a new root on a tmpfs that holds only the paths the plan
grants (system libraries, the interpreter, the installed packages, and `grader.sandbox`),
pivots into it and drops the old root. Everything is read-only except a small /tmp. Then it
gives up the power to undo this: as root, it becomes an unprivileged user; as the root of a
user namespace, it enters a nested one, which locks the mounts.
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import stat
from typing import Any

from grader.sandbox.inside import cgroups, seccomp

MS_RDONLY, MS_NOSUID, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID = 0x1, 0x2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SYSCALLS = {"x86_64": {"pivot_root": 155, "mount_setattr": 442},
            "aarch64": {"pivot_root": 41, "mount_setattr": 442}}
DEVICES = ("null", "zero", "full", "random", "urandom")
WORK = "/tmp/work"  # the student's working directory, HOME and TMPDIR

_libc = ctypes.CDLL(None, use_errno=True)


class ConfineError(Exception):
    """A step of the confinement failed; the message names it."""


class Exposed(ConfineError):
    """Without namespaces, the machine's file modes break the promise: the worker's user can
    open a path the grader holds, or cannot read the Python it needs."""


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise ConfineError(f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def encode(text: str | None) -> bytes | None:
        return text.encode() if text is not None else None

    _check(_libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags),
                       encode(data)), f"mount {target}")


def _syscall(name: str, *args: Any) -> int:
    number = SYSCALLS.get(platform.machine(), {}).get(name)
    if number is None:
        raise ConfineError(f"{name}: unknown on {platform.machine()}")
    return int(_libc.syscall(number, *args))


def _setattr(path: str, flags: int, set_: int = 0, clear: int = 0) -> None:
    attr = _MountAttr(set_, clear, 0, 0)
    _check(_syscall("mount_setattr", AT_FDCWD, path.encode(), flags, ctypes.byref(attr),
                    ctypes.sizeof(attr)), f"mount attributes of {path}")


def _place(root: str, path: str) -> None:
    """Bind the real path `path` at the same place under `root`."""
    target = root + path
    if os.path.isdir(path):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    _mount(path, target, None, MS_BIND | MS_REC)


def _covered(path: str, others: list[str]) -> bool:
    return any(path != other and path.startswith(other.rstrip("/") + "/") for other in others)


def confine(plan: dict[str, Any]) -> str:
    """Apply a plan from `isolation.plan()`; return a sentence saying what was done."""
    if plan.get("cgroup"):
        cgroups.join(plan["cgroup"])  # before /sys disappears, while still allowed to
    root = plan["root"]
    os.makedirs(root, exist_ok=True)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", root, "tmpfs", 0, "mode=0755,size=4m")
    # /tmp first, so that a bind below it (an interpreter or a venv in /tmp) lands on top.
    os.makedirs(root + "/tmp")
    _mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID,
           f"mode=1777,size={int(plan['tmp_bytes'])}")
    for link in sorted(plan["links"]):
        target = root + link
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            os.symlink(os.readlink(link), target)
    binds = sorted(plan["binds"])
    for path in binds:
        if not _covered(path, binds):
            _place(root, path)
    _place_package(root, plan["package"], plan["package_entries"])
    for path in plan.get("writable", []):
        _place(root, path)
        if plan.get("uid") is not None:  # it and what the grader put there (a connection file)
            for entry in [path, *(os.path.join(path, name) for name in os.listdir(path))]:
                os.chown(entry, int(plan["uid"]), int(plan["gid"]), follow_symlinks=False)
    for device in DEVICES:
        if os.path.exists(f"/dev/{device}"):
            _place(root, f"/dev/{device}")
    os.makedirs(root + "/proc", exist_ok=True)
    _mount("/proc", root + "/proc", None, MS_BIND | MS_REC)
    os.chdir(root)
    os.makedirs(".old", exist_ok=True)
    _check(_syscall("pivot_root", b".", b".old"), "pivot_root")
    os.chdir("/")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "umount the old root")
    os.rmdir("/.old")
    if plan.get("lock"):
        _lock()
    _setattr("/", AT_RECURSIVE, set_=MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID)
    _setattr("/tmp", 0, clear=MOUNT_ATTR_RDONLY)  # only /tmp itself, not the binds below it
    for path in plan.get("writable", []):
        _setattr(path, 0, clear=MOUNT_ATTR_RDONLY)
    os.makedirs(WORK, mode=0o700)  # empty, even when a bind lives elsewhere in /tmp
    if plan.get("uid") is not None:
        os.chown(WORK, int(plan["uid"]), int(plan["gid"]))
    os.chdir(WORK)
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if plan.get("uid") is not None:
        os.setgroups([])
        os.setgid(int(plan["gid"]))
        os.setuid(int(plan["uid"]))
        # Changing credentials clears the parent-death signal that ties us to our parent
        # (`unshare`, or the zygote's middle process).
        _check(_libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0), "pdeathsig")
    filtered = seccomp.install()  # last: nothing of the confinement needs what it refuses
    who = ("an unprivileged user of its own (no account, no capabilities)"
           if plan.get("uid") is not None
           else "a nested user namespace that locks its mounts")
    size = int(plan["tmp_bytes"]) >> 20
    return (f"a private read-only root that holds only the system libraries, Python and its "
            f"installed packages, an empty working folder in a writable /tmp of {size} MiB, "
            f"running as {who}, with {filtered}")


def _place_package(root: str, package: str, entries: list[str]) -> None:
    """The grader package as the worker needs it: only `entries`, on an empty folder that
    covers whatever the import path put there (assignments, public references)."""
    target = root + package
    os.makedirs(target, exist_ok=True)
    _mount("tmpfs", target, "tmpfs", 0, "mode=0755,size=64k")
    for entry in entries:
        source = os.path.join(package, entry)
        os.makedirs(os.path.dirname(target + "/" + entry), exist_ok=True)
        if os.path.isdir(source):
            os.makedirs(target + "/" + entry)
        else:
            open(target + "/" + entry, "a").close()
        _mount(source, target + "/" + entry, None, MS_BIND | MS_REC)


def _lock() -> None:
    """Enter a nested user and mount namespace: inherited mounts can no longer be undone."""
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "nested user namespace")
    with open("/proc/self/setgroups", "w") as stream:
        stream.write("deny")
    for name, outer in (("uid_map", uid), ("gid_map", gid)):
        with open(f"/proc/self/{name}", "w") as stream:
            stream.write(f"{outer} {outer} 1")


def confine_user(plan: dict[str, Any]) -> str:
    """Apply a plan from `isolation.plan_user()` (no namespaces, the grader is root): a
    user of its own with no groups and `no_new_privs`, its cgroup and the seccomp filter;
    then check, as that user, that it can open none of the paths the plan closes. Return a
    sentence saying what was done."""
    if plan.get("cgroup"):
        cgroups.join(plan["cgroup"])
    uid, gid = int(plan["uid"]), int(plan["gid"])
    home = str(plan["home"])
    # The working folder, and what the grader put in a writable one (a kernel's connection
    # file), belong to the worker's user; only it may enter its folder.
    for path in [home, *plan.get("writable", [])]:
        for entry in [path, *(os.path.join(path, name) for name in os.listdir(path))]:
            os.chown(entry, uid, gid, follow_symlinks=False)
        os.chmod(path, 0o700)
    os.chdir(home)
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if (os.getresuid(), os.getresgid(), os.getgroups()) != ((uid,) * 3, (gid,) * 3, []):
        raise ConfineError(f"the worker is still user {os.getresuid()}, group "
                           f"{os.getresgid()} after dropping to {uid}")
    # Our parent is the grader: die with it (a thread of it, which lives as long as the
    # batch that started us). If it is gone already, so are we.
    _check(_libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0), "pdeathsig")
    if os.getppid() != int(plan["parent"]):
        raise ConfineError("the grader exited before the worker was confined")
    # What it is granted must be readable: the interpreter, its standard library and the
    # installed packages (or an import in student code would fail, costing the student).
    shut = [path for path in plan.get("needed", []) if not _readable(path)]
    if shut:
        raise Exposed(f"{shut[0]} (part of the Python installation student code uses) "
                           f"cannot be read by other users, as student code runs here without "
                           f"Linux namespaces; install Python where every user may read it, "
                           f"or let other users pass the folders on its way (chmod o+x)")
    open_ = [(path, what) for path, what in plan.get("closed", []) if _opens(path)]
    if open_:
        path, what = open_[0]
        also = f" (and {len(open_) - 1} more)" if len(open_) > 1 else ""
        raise Exposed(f"{path} ({what}) can be opened by every user of this machine{also}, "
                      f"and student code runs here as such a user, without Linux namespaces "
                      f"to hide it; make it root's only (chmod o-rwx {path})")
    filtered = seccomp.install()  # last: nothing above needs what it refuses
    return (f"running as an unprivileged user of its own (no account, no groups, no "
            f"capabilities, no_new_privs), with {filtered}, in a working folder only that "
            f"user may enter; it can read what every user of this machine can read, and "
            f"was checked to open none of the {len(plan.get('closed', []))} paths the grader "
            f"holds (its files, the solutions, the hidden references, the submissions' "
            f"folders and the outputs)")


def _opens(path: str) -> bool:
    """Whether this process can read `path`, or list or pass it if it is a folder."""
    if not os.path.lexists(path):
        return False
    if os.path.isdir(path):
        return os.access(path, os.R_OK) or os.access(path, os.X_OK)
    return os.access(path, os.R_OK)


def _readable(path: str) -> bool:
    """Whether this process can read `path`, and pass it if it is a folder."""
    try:
        folder = stat.S_ISDIR(os.stat(path).st_mode)
    except FileNotFoundError:
        return True  # what does not exist is not needed
    except OSError:
        return False  # a folder on its way cannot be passed
    return os.access(path, os.R_OK | (os.X_OK if folder else 0))
