"""The users a root grader leases to its workers: one user id per concurrent worker, and
everything such a user leaves behind removed when its submission is done.

As root, each worker runs as a user of its own, with no account: a fork bomb exhausts only its
own process limit, and no two submissions can signal or read each other (`isolation.plan`
and `plan_user` take the leased id). Without namespaces (`end_user`), that user's processes
and what it left in the folders every user may write would reach the next holder of the id.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import os
import random
import shutil
import signal
import stat
import tempfile
import time
from pathlib import Path

SANDBOX_UIDS = range(2_000_000, 3_000_000)
# Root's own folder where there is one; checked to be private either way.
LEASES = (Path("/run/attention-grader-uids") if os.access("/run", os.W_OK)
          else Path(tempfile.gettempdir()) / "attention-grader-uids")
# Without namespaces, the folders every user may write: what a leased user left there is
# removed with its submission, so that the next holder of the id finds nothing of it.
SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")


class UidLease:
    """A user id that no other worker on this machine holds while the lease is open.

    Each id is a lock file under `LEASES`, locked with flock(): two threads of one batch and
    two `grade` processes exclude each other alike, and a lease dies with its holder.
    """

    def __init__(self) -> None:
        _private_folder(LEASES)
        for _attempt in range(64):
            uid = random.choice(SANDBOX_UIDS)
            fd = os.open(LEASES / str(uid),
                         os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise OSError("no free sandbox user id after 64 tries")

    def release(self) -> None:
        """Give the id back."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _private_folder(path: Path) -> None:
    """Make `path` a folder only we can write, or refuse one that someone else prepared."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid()
            or info.st_mode & 0o077):
        raise OSError(f"{path} is not a private folder of this user (owner {info.st_uid}, "
                      f"mode {stat.filemode(info.st_mode)}); remove it")


def end_user(uid: int) -> None:
    """Kill every process of a leased user and remove what it left in the folders every user
    may write: without a PID namespace a daemon could leave the worker's process group, and
    would reach the next submission that holds the id."""
    for _round in range(20):
        found = False
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                if os.stat(f"/proc/{name}").st_uid != uid:
                    continue
                os.kill(int(name), signal.SIGKILL)
                found = True
            except (OSError, ValueError):
                continue
        if not found:
            break
        time.sleep(0.01)
    for folder in shared_writable():
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue
    remove_ipc(uid)


WRITABLE_ROOTS = ("/tmp", "/var", "/run", "/dev", "/home", "/srv", "/opt", "/mnt", "/media")
WRITABLE_DEPTH = 3


@functools.lru_cache(maxsize=1)
def shared_writable() -> tuple[str, ...]:
    """The folders every user of this machine may write, found once: each folder down to
    `WRITABLE_DEPTH` levels below `WRITABLE_ROOTS` whose mode lets others write (/tmp,
    /var/tmp, /dev/shm, /run/lock, /dev/mqueue, ...). Found rather than listed, so that a
    folder nobody thought of is cleaned too."""
    found = list(SHARED_WRITABLE)
    for root in WRITABLE_ROOTS:
        stack = [(root, 0)]
        while stack:
            folder, depth = stack.pop()
            try:
                info = os.lstat(folder)
                entries = list(os.scandir(folder)) if depth < WRITABLE_DEPTH else []
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_IWOTH:
                found.append(folder)
            stack += [(entry.path, depth + 1) for entry in entries
                      if entry.is_dir(follow_symlinks=False)
                      and not entry.path.startswith(("/proc", "/sys"))]
    return tuple(dict.fromkeys(found))


_IPC_RMID = 0
_IPC_KINDS = (("msg", "msgctl", 1), ("sem", "semctl", 1), ("shm", "shmctl", 1))


def remove_ipc(uid: int) -> None:
    """Remove every System V message queue, semaphore set and shared memory segment that a
    leased user owns: without an IPC namespace they outlive its processes, and the next
    submission could read them."""
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, call, id_column in _IPC_KINDS:
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        header = lines[0].split() if lines else []
        if "uid" not in header:
            continue
        for line in lines[1:]:
            fields = line.split()
            try:
                if int(fields[header.index("uid")]) != uid:
                    continue
                ipc_id = int(fields[id_column])
            except (ValueError, IndexError):
                continue
            if kind == "sem":
                getattr(libc, call)(ipc_id, 0, _IPC_RMID)
            else:
                getattr(libc, call)(ipc_id, _IPC_RMID, None)
