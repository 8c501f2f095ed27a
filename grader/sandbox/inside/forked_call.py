"""One call of an exercise in a process forked for it: what it prints goes to a file of its
own, its answer (or its failure) comes back as one protocol frame, and whatever it started is
killed once that frame is read. The worker's `op_call` forks; this is both sides of the fork.
"""

from __future__ import annotations

import os
import sys
import time
import types
from typing import Any

from grader.sandbox.inside import processes, protocol
from grader.sandbox.inside.calling import invoke
from grader.sandbox.inside.cellwarnings import fresh_warnings
from grader.sandbox.inside.failures import describe
from grader.sandbox.inside.protocol import Reply
from grader.sandbox.inside.streams import OutStream, flush

CALL_OUTPUT_BYTES = 64 << 10
"""What is kept of what one call prints (the grader caps all output again)."""


def output_file() -> int:
    """A file in memory for what one call prints; /dev/null where none can be made, never the
    cells' output, which students see."""
    try:
        return os.memfd_create("grader-call-output", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)


def child(write_fd: int, target: Any, kind: str, value: Any, header: dict[str, Any],
          printed: int) -> None:
    """In the forked process: call `target`, write the reply frame to `write_fd`, exit."""
    me = os.getpid()
    reply = {"id": header.get("id")}
    # Everything the call and its processes print goes to its own file, through streams of
    # its own: in a Jupyter kernel, sys.stdout is ipykernel's, whose flushes wait for an I/O
    # thread that a forked process does not have (a print, or a warning, hung the call).
    os.dup2(printed, 1)
    os.dup2(printed, 2)
    os.close(printed)
    saved = sys.stdout, sys.stderr  # a global of the code's may hold them: flushed below
    _to_own_descriptors(*saved)
    sys.stdout, sys.stderr = OutStream.on(1, through=True), OutStream.on(2, through=True)
    fresh_warnings()
    try:
        os.setpgid(0, 0)  # its own group, so everything it starts is killed with it
        result = invoke(target, kind, tuple(value["args"]), value.get("init") or {},
                        header.get("tensors"))
        processes.exit_unless(me)
        frame = protocol.pack(dict(reply, status=Reply.OK), result)
    except BaseException as exc:  # the student's failure is data
        processes.exit_unless(me)
        message, line = describe(exc)
        frame = protocol.pack(dict(reply, status=Reply.ERROR, message=message, line=line))
    # Flushed before the reply: the call's processes are killed as soon as it is read.
    flush(*saved)
    try:
        protocol.write_all(write_fd, frame)
    finally:
        os._exit(0)


def _to_own_descriptors(*streams: Any) -> None:
    """In a forked call inside a Jupyter kernel, make ipykernel's stream class write to this
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


def collect(pid: int, read_fd: int, timeout: float,
            limit: int) -> tuple[dict[str, Any], Any]:
    """The call's answer: one frame of at most `limit` bytes of arrays, read as soon as it
    is whole (a process the call left behind may keep the pipe open), then the call's
    process group is killed."""
    frame, timed_out, too_large = b"", False, False
    try:
        frame = protocol.read_frame(read_fd, time.monotonic() + timeout, limit)
    except TimeoutError:
        timed_out = True
    except protocol.FrameTooLarge:
        too_large = True
    except EOFError:
        pass  # it died before answering
    os.close(read_fd)
    processes.kill_group(pid)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        status = 0
    if timed_out:
        return {"status": Reply.TIMEOUT, "message": f"the call did not return within "
                f"{timeout:g} s"}, None
    if too_large:  # no size said: it would tell how large a hidden case's outputs are
        return {"status": Reply.REFUSED, "message": "the call returned far more data "
                "than the expected outputs hold; it was not compared"}, None
    if not frame:
        return {"status": Reply.CRASHED, "message": processes.death(status)}, None
    return {"status": Reply.RELAY}, frame


def with_printed(reply: dict[str, Any], frame: Any, printed: int) -> tuple[dict[str, Any], Any]:
    """The call's reply with what it printed (`printed`, capped at CALL_OUTPUT_BYTES), read
    after the call's processes are gone: the grader decides who may see it (a hidden case's
    output reaches no student). A relayed frame gets it in its header."""
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
