"""The calls of an exercise, each in a fork of the notebook's state that no call has changed.

The worker forks a call process and hands it calls one at a time, over a socket of their own.
The process answers each call and keeps serving the next only while it is as the fork left
it: the call returned, started no process or thread that is still there, and the picture of
everything a call could change (`state.digest`) is the one it took before its first call.
It says which after its reply (`KEEP` or `LEAVE`: the picture is taken while the grader
judges the answer), and the worker reads it before it hands over the next call. Otherwise
it exits, and the next call gets a fresh fork. Each reply says whether its call was the
first in its process (`reused`): the tests read it; the student's code can forge it, and no
grade depends on it. A case is never asked twice while graded (SECURITY.md, "How calls share
a process"); once every hidden case has been, a failing one may be asked again with a
solution's function in place of the submission's own (`calling.substitute`).

The worker also starts a fresh process when it is told to (`fresh`), when the calls change
group (public cases never share a process with hidden ones) or when a statement ran since the
fork. What a call prints goes to a file in memory that the worker made for it and passes
with the request, read by the worker once the call is over (dead or alive); the call process
and everything it started die when it stops serving, and with the worker.

`CallProcess` is the worker's side; `serve` runs in the forked process.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import socket
import sys
import time
import types
from dataclasses import dataclass
from typing import Any

from grader.sandbox.inside import processes, protocol, state
from grader.sandbox.inside.calling import invoke, substitute
from grader.sandbox.inside.cellwarnings import fresh_warnings
from grader.sandbox.inside.failures import describe, kind
from grader.sandbox.inside.protocol import Reply
from grader.sandbox.inside.streams import OutStream, flush

KEEP, LEAVE = b"+", b"-"
"""What a call process says after a reply: it found the state as it was (and serves the next
call), or not (and exits)."""
CALL_OUTPUT_BYTES = 64 << 10
"""What is kept of what one call prints (the grader caps all output again)."""
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


def output_file() -> int:
    """A file in memory for what one call prints; /dev/null where none can be made, never the
    cells' output, which students see."""
    try:
        return os.memfd_create("grader-call-output", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)


@dataclass
class CallProcess:
    """The worker's side of one call process."""

    pid: int
    channel: socket.socket
    """The worker's end of the socket to the process."""
    group: str
    """The calls it may serve: "public" or "hidden" (the grader's `group`)."""
    executed: int
    """The statements the worker had run when it forked the process."""
    alive: bool = True
    """Whether it may serve another call: it has not been stopped."""
    hide: tuple[str, ...] = ()
    """Names taken out of the namespace in the process: bound after the cell whose state a
    call "as defined" asks for (`inert`)."""
    verdict_due: bool = False
    """A call returned, and the process has yet to say whether it found the state as it was
    (it says so after its reply, while the worker relays it and the grader judges it)."""

    @classmethod
    def start(cls, namespace: dict[str, Any], group: str, executed: int,
              inherited: tuple[int, ...], max_bytes: int,
              hide: tuple[str, ...] = ()) -> CallProcess:
        """Fork a call process of the namespace as it is now, without the names `hide`;
        `inherited` are the worker's descriptors that the process must not keep (the worker's
        channel, its snapshots'), `max_bytes` the most a request may carry."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            pid = processes.fork()
        except OSError:
            ours.close()
            theirs.close()
            raise
        if pid == 0:
            try:
                ours.close()
                for fd in inherited:
                    processes.close(fd)
                for name in hide:
                    namespace.pop(name, None)
                serve(theirs, namespace, max_bytes)
            finally:
                os._exit(0)
        theirs.close()
        return cls(pid, ours, group, executed, hide=hide)

    def call(self, header: dict[str, Any], value: Any, limit: int) -> tuple[dict[str, Any], Any]:
        """Hand one call to the process; its reply (a frame to relay, with what it printed),
        and whether the process may serve another."""
        printed = output_file()
        try:
            socket.send_fds(self.channel, [b"c"], [printed])
            protocol.send(self.channel.fileno(), header, value)
        except OSError:
            processes.close(printed)
            self.stop()
            return {"status": Reply.CRASHED, "message": "the call's process was gone"}, None
        reply, frame = self._collect(float(header["timeout"]), limit)
        if reply["status"] is Reply.RELAY and protocol.header_of(frame).get("status") == "ok":
            self.verdict_due = True
        else:  # the call failed: the process exits
            self.stop()
        return with_printed(reply, frame, printed)

    def reusable(self, timeout: float) -> bool:
        """Whether the process may serve another call: its verdict on the last one (read
        once, by `timeout` seconds); the process is stopped when it is not."""
        if self.alive and self.verdict_due:
            self.verdict_due = False
            fd = self.channel.fileno()
            ready = select.select([fd], [], [], timeout)[0]
            try:
                verdict = os.read(fd, 1) if ready else b""
            except OSError:
                verdict = b""
            if verdict != KEEP:
                self.stop()
        return self.alive

    def _collect(self, timeout: float, limit: int) -> tuple[dict[str, Any], Any]:
        """The call's answer: one frame of at most `limit` bytes of arrays, read as soon as it
        is whole; the process is stopped when there is none."""
        try:
            frame = protocol.read_frame(self.channel.fileno(), time.monotonic() + timeout, limit)
        except TimeoutError:
            return {"status": Reply.TIMEOUT, "message": f"the call did not return within "
                    f"{timeout:g} s"}, None
        except protocol.FrameTooLarge:  # no size said: it would tell a hidden output's size
            return {"status": Reply.REFUSED, "too_large": True, "message": "the call returned "
                    "far more data than the expected outputs hold; it was not compared"}, None
        except (EOFError, OSError):
            status = self.stop()
            return {"status": Reply.CRASHED, "message": processes.death(status)}, None
        return {"status": Reply.RELAY}, frame

    def stop(self) -> int:
        """Kill the process and everything it started; its wait status."""
        self.alive = False
        self.channel.close()
        processes.kill_group(self.pid)
        try:
            return os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            return 0


def with_printed(reply: dict[str, Any], frame: Any, printed: int) -> tuple[dict[str, Any], Any]:
    """The call's reply with what it printed (`printed`, capped at CALL_OUTPUT_BYTES), read
    once the call is over: the grader decides who may see it (a hidden case's output reaches
    no student). A relayed frame gets it in its header."""
    try:
        data = os.pread(printed, CALL_OUTPUT_BYTES + 1, 0)
    except OSError:
        data = b""
    finally:
        os.close(printed)
    if not data:
        return reply, frame
    # No builtin (len, dict...): the student's code may have replaced them in this process.
    text = data[:CALL_OUTPUT_BYTES].decode("utf-8", "replace")
    if data[CALL_OUTPUT_BYTES:]:
        text += "\n[grader] the rest of what this call printed was dropped"
    if reply["status"] is not Reply.RELAY:
        return {**reply, "printed": text}, frame
    return reply, protocol.with_header(frame, {"printed": text})


# ---------------------------------------------------------------------- in the call process

def serve(channel: socket.socket, namespace: dict[str, Any], max_bytes: int) -> None:
    """Answer calls until one may have changed what the next would see, or the worker closes
    the channel. Everything the process starts is in its process group, and is its child."""
    libc = ctypes.CDLL(None)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)  # dies with the worker
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # what a call's processes leave is ours
    os.setpgid(0, 0)  # its own group, so everything it starts is killed with it
    me = os.getpid()
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    # What the calls print goes to their own file through streams of their own: in a
    # Jupyter kernel, sys.stdout is ipykernel's, whose flushes wait for an I/O thread that a
    # forked process does not have (a print, or a warning, hung the call).
    saved = sys.stdout, sys.stderr  # a global of the code's may hold them: flushed below
    _to_own_descriptors(*saved)
    sys.stdout, sys.stderr = OutStream.on(1, through=True), OutStream.on(2, through=True)
    fd = channel.fileno()
    stream = os.fdopen(os.dup(fd), "rb", buffering=0)
    before = state.digest(namespace)  # with every descriptor it keeps open
    reused = False
    while True:
        try:
            marker, fds, _, _ = socket.recv_fds(channel, 1, 1)
            if not marker or len(fds) != 1:
                return
            header, value = protocol.unpack(stream, max_bytes)
        except (OSError, EOFError, protocol.ProtocolError):
            return
        os.dup2(fds[0], 1)
        os.dup2(fds[0], 2)
        os.close(fds[0])
        frame, returned = _one_call(me, namespace, header, value)
        flush(*saved, sys.stdout, sys.stderr)  # before the reply: the worker reads it then
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        protocol.write_all(fd, protocol.with_header(frame, {"reused": reused}))
        # The verdict follows the reply: the picture is taken while the reply is relayed.
        processes.reap()
        same = returned and before is not None and state.digest(namespace) == before
        try:
            os.write(fd, KEEP if same else LEAVE)
        except OSError:
            return
        if not same:
            return
        reused = True


def _one_call(me: int, namespace: dict[str, Any], header: dict[str, Any],
              value: Any) -> tuple[bytes, bool]:
    """Call the exercise on the case's inputs: the reply frame, and whether it returned."""
    reply = {"id": header.get("id")}
    fresh_warnings()
    try:
        substitute(namespace, value.get("reference"))
        target = namespace[header["name"]]
        result = invoke(target, header["kind"], tuple(value["args"]), value.get("init") or {},
                        header.get("tensors"))
        processes.exit_unless(me)
        return protocol.pack(dict(reply, status=Reply.OK), result), True
    except BaseException as exc:  # the student's failure is data
        processes.exit_unless(me)
        message, line = describe(exc)
        return protocol.pack(dict(reply, status=Reply.ERROR, message=message, line=line,
                                  **kind(exc))), False


def _to_own_descriptors(*streams: Any) -> None:
    """In a call process inside a Jupyter kernel, make ipykernel's stream class write to this
    process's descriptors 1 and 2 (the call's file): a stream the student's code saved before
    (`OUT = sys.stdout`, a logging handler, a progress bar's `sys.stderr`) would otherwise wait
    for the kernel's I/O thread, which a forked process does not have."""
    for stream in streams:
        kind = type(stream)
        if not kind.__module__.startswith("ipykernel"):
            continue

        def write(self: Any, text: str) -> int:
            fd = 2 if getattr(self, "name", "") == "stderr" else 1
            os.write(fd, str(text).encode("utf-8", "replace"))
            return len(text)

        def flush(self: Any) -> None:
            pass

        kind.write, kind.flush = write, flush  # type: ignore[method-assign]
        # An instance may hold its own `write` (IPython 9's kernels wrap it): that one too.
        for name, method in (("write", write), ("flush", flush)):
            if name in getattr(stream, "__dict__", {}):
                setattr(stream, name, types.MethodType(method, stream))
