"""What runs inside the zygote (`zygote.py` has the design): its loop, and the start of
each worker, through a middle process that makes the namespaces.

Started by `zygote.BOOT` in a fresh interpreter; of this module the grader uses only
`MAX_MESSAGE`. Nothing here loads a reference, a solution or student code: `_worker` hands
over to `startup.main`.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import select
import signal
import socket
import sys
from typing import Any

from grader.sandbox.inside import processes

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
PR_SET_PDEATHSIG = 1
MAX_MESSAGE = 1 << 20
"""Largest message on the zygote's socket, either way."""


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def serve() -> None:
    """The zygote's main loop (its socket's fd is in GRADER_ZYGOTE_FD, the modules it
    imports first in `processes.PRELOAD_ENV`, as a fresh worker's)."""
    fd = int(os.environ.pop("GRADER_ZYGOTE_FD"))
    control = socket.socket(fileno=fd)
    os.set_inheritable(fd, False)
    processes.preload(json.loads(os.environ.pop(processes.PRELOAD_ENV, "[]")))
    # Each worker reseeds numpy.random (a lazy submodule: 12 ms to import in every worker
    # otherwise).
    import numpy.random  # noqa: F401

    # And the worker's own modules (its loop, the call process, the state picture, the
    # shell): imported once here, not by every worker as it starts.
    import grader.sandbox.inside.confine  # noqa: F401
    import grader.sandbox.inside.startup  # noqa: F401

    # What was imported stays shared with every worker: out of the collector's sight, no
    # collection in a worker writes to (and so copies) the pages that hold it.
    gc.collect()
    gc.freeze()
    Zygote(control).run()


class Zygote:
    """The zygote's state: its socket and the middle processes it has not reaped."""

    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.children: dict[int, int] = {}  # status pipe -> middle pid
        self.pending: dict[int, bytes] = {}  # status pipe -> what it said so far

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.control.send(json.dumps(message).encode())
        except OSError:
            pass  # the grader is gone: the loop sees it

    def run(self) -> None:
        self.send({"op": "ready", "pid": os.getpid(), "threads": _threads()})
        while True:
            control = self.control.fileno()
            readable, _, _ = select.select([control, *self.children], [], [])
            for ready in readable:
                if ready == control:
                    if not self.request():
                        self.shutdown()
                        return
                else:
                    self.status(ready)

    def request(self) -> bool:
        try:
            data, fds, _, _ = socket.recv_fds(self.control, MAX_MESSAGE, 8)
        except OSError:
            return False
        if not data:
            for fd in fds:
                os.close(fd)
            return False
        message = json.loads(data)
        if message.get("op") == "spawn":
            self.spawn(message, fds)
        elif message.get("op") == "kill":
            for fd in fds:
                os.close(fd)
            pid = int(message["pid"])
            if pid in self.children.values():  # not reaped: the pid is still this one
                try:
                    os.kill(pid, signal.SIGTERM)  # the middle kills the worker, then itself
                except ProcessLookupError:
                    pass
        return True

    def spawn(self, message: dict[str, Any], fds: list[int]) -> None:
        if len(fds) != 3 or _threads() != 1:
            for fd in fds:
                os.close(fd)
            self.send({"op": "spawned", "id": message.get("id"),
                       "error": f"the zygote has {_threads()} threads; it refuses to fork"})
            return
        status_r, status_w = os.pipe()
        zygote = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(status_r)
                _middle(zygote, fds, status_w, message)
            finally:
                os._exit(127)
        os.close(status_w)
        for fd in fds:
            os.close(fd)
        self.children[status_r] = pid
        self.pending[status_r] = b""
        self.send({"op": "spawned", "id": message.get("id"), "pid": pid})

    def status(self, fd: int) -> None:
        chunk = os.read(fd, 4096)
        if chunk:
            self.pending[fd] += chunk
            return
        pid = self.children.pop(fd)
        said = self.pending.pop(fd).decode(errors="replace").splitlines()
        os.close(fd)
        _, status = os.waitpid(pid, 0)
        message: dict[str, Any] = {"op": "exited", "pid": pid}
        for line in said:
            key, _, value = line.partition(" ")
            if key == "exit":
                message["code"] = int(value)
            elif key == "error":
                message["error"] = value
            elif key == "worker":
                message["worker"] = int(value)
        if "code" not in message and "error" not in message:
            message["code"] = os.waitstatus_to_exitcode(status)
        self.send(message)

    def shutdown(self) -> None:
        for pid in self.children.values():
            try:
                os.kill(pid, signal.SIGKILL)  # and each worker with it (parent-death signal)
            except ProcessLookupError:
                pass
        for fd, pid in list(self.children.items()):
            os.close(fd)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _say(fd: int, line: str) -> None:
    try:
        os.write(fd, (line + "\n").encode())
    except OSError:
        pass


def _middle(zygote: int, fds: list[int], status_w: int, message: dict[str, Any]) -> None:
    """The process between the zygote and the worker: makes the namespaces, waits, reports."""
    libc = _libc()
    os.setsid()
    _check(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0), "pdeathsig")
    if os.getppid() != zygote:
        return  # the zygote died before we asked
    _close_all_but({*fds, status_w})
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)
    try:
        _check(libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC
                            | CLONE_NEWUTS), "unshare")
    except OSError as exc:
        _say(status_w, f"error the worker's namespaces could not be made ({exc.strerror})")
        return
    alive_r, alive_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(status_w)
            os.close(alive_w)
            _worker(libc, alive_r, fds, message)
        finally:
            os._exit(127)
    os.close(alive_r)
    for fd in fds:
        os.close(fd)
    _say(status_w, f"worker {pid}")

    def kill_worker(signum: int, frame: Any) -> None:
        os.kill(pid, signal.SIGKILL)  # our unreaped child: the pid is still the worker's

    signal.signal(signal.SIGTERM, kill_worker)
    _, status = os.waitpid(pid, 0)  # retried after the handler (PEP 475)
    _say(status_w, f"exit {os.waitstatus_to_exitcode(status)}")
    os._exit(0)


def _worker(libc: Any, alive_r: int, fds: list[int], message: dict[str, Any]) -> None:
    """PID 1 of the new namespaces: become the worker, as a fresh interpreter would."""
    _check(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0), "pdeathsig")
    if select.select([alive_r], [], [], 0)[0]:
        return  # the middle process is already gone
    for target, fd in enumerate(fds):
        os.dup2(fd, target)  # stdin, stdout, stderr; dup2 makes them inheritable
    _close_all_but({0, 1, 2})
    os.setsid()
    # Our own /proc for our own PID namespace, in our own (now private) mount namespace.
    mount = libc.mount
    _check(mount(None, b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None), "mount /")
    _check(mount(b"proc", b"/proc", b"proc", ctypes.c_ulong(MS_NOSUID | MS_NODEV | MS_NOEXEC),
                 None), "mount /proc")
    os.chdir(str(message["cwd"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in message["env"].items()})
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()  # fresh entropy, as numpy's import gives a fresh interpreter
    from grader.sandbox.inside import startup, streams

    try:
        startup.main(rearm=True)
    finally:
        streams.flush()
        os._exit(0)


def _close_all_but(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass  # the listing's own descriptor
