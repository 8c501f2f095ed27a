"""How the grader reaches a worker: one small interface, three ways to start one.

A `Transport` starts one confined worker, sends it requests and stops it. The `Session` owns
everything else (replay after a crash, restarts, `--on-error`, deadlines), the same for all:

- `PipeTransport(use_zygote=True)`, the default: the worker is a fork of a warm zygote
  interpreter (`zygote.py`) that has numpy and the assignment's modules imported. Where no
  zygote can be had (no namespaces, or the zygote failed), it starts a fresh interpreter
  instead, and says so.
- `PipeTransport(use_zygote=False)` (`--engine fresh`): a fresh interpreter per worker.
- `kernel.KernelTransport` (`--engine kernel`): a real IPython kernel through nbclient.

Every worker, however started, runs `startup.main` (or `kernel_agent.main`) behind the same
`confine()`, limits and protocol, with the resources of its submission (`resources.py`).
"""

from __future__ import annotations

import enum
import fcntl
import io
import json
import os
import secrets
import select
import struct
import subprocess
import termios
import threading
from collections.abc import Callable
from typing import Any, Protocol

from grader import text
from grader.errors import SandboxError
from grader.results import CellStatus
from grader.sandbox import isolation, zygote
from grader.sandbox.inside import processes, protocol
from grader.sandbox.limits import CappedOutput
from grader.sandbox.resources import Resources

MAX_REPLY_BYTES = 64 << 20
# No size is said: it would tell how large a hidden case's outputs are.
TOO_LARGE = ("the worker sent far more data than the expected outputs hold; it was not "
             "compared")
MAX_STRAY_FRAMES = 16


class WorkerStart(enum.StrEnum):
    """How a worker was started."""

    ZYGOTE = "zygote"
    """A fork of the warm zygote interpreter (the default where namespaces are offered)."""
    FRESH = "fresh"
    """A fresh interpreter (`--engine fresh`, or where no zygote can be had)."""
    KERNEL = "kernel"
    """A Jupyter kernel (`--engine kernel`)."""


class WorkerLost(Exception):
    """The worker died, hung past its deadline, or sent something that is not a frame."""

    def __init__(self, status: CellStatus, message: str, in_sync: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.in_sync = in_sync
        """A whole frame was read: the worker is alive and the channel still usable."""


class Transport(Protocol):
    """One way to start a worker and talk to it."""

    worker: WorkerStart
    """How the current (or last) worker was started."""
    started: str
    """Said in the isolation text: how the worker was started, and why if not as asked."""

    @property
    def alive(self) -> bool:
        """A worker is running (it may still die before the next request)."""

    def start(self, resources: Resources) -> bool:
        """Start a worker confined with `resources`; whether it is to confine itself."""

    def request(self, header: dict[str, Any], value: Any, deadline: float,
                limit: int = MAX_REPLY_BYTES) -> tuple[dict[str, Any], Any]:
        """Send one request, return the reply to it; WorkerLost if there is none by
        `deadline` (a `time.monotonic()` value), or if its arrays are over `limit` bytes."""

    def settle(self) -> None:
        """Wait until what the worker printed before its last reply is in the output."""

    def stop(self) -> None:
        """Kill the worker and every process it started."""

    def close(self) -> None:
        """Stop the worker for good, and let go of what was kept for the next one."""


def decode_reply(frame: bytes) -> tuple[dict[str, Any], Any]:
    """A reply frame decoded, or WorkerLost when it is malformed."""
    try:
        header, value = protocol.unpack(io.BytesIO(frame), MAX_REPLY_BYTES)
    except (protocol.ProtocolError, EOFError) as exc:
        raise WorkerLost(CellStatus.CRASHED, f"the worker sent malformed data ({exc})",
                         in_sync=True) from None
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        # Student code controls these bytes: whatever fails to decode is its failure.
        raise WorkerLost(CellStatus.CRASHED, "the worker sent data the grader cannot decode "
                         f"({type(exc).__name__})", in_sync=True) from None
    # Every string the student's code wrote (exception messages) is made safe here, once.
    return text.clean_tree(header), value  # type: ignore[return-value]


def lost_by_exit(code: int | None, when: str) -> WorkerLost:
    """The worker exited with `code` (as `Popen.returncode` gives it): how, in words."""
    if code is not None and code < 0:
        return WorkerLost(CellStatus.CRASHED, f"the interpreter died from "
                          f"{processes.signal_name(-code)}, {when}")
    if code is not None and code > 128 and processes.is_fatal_signal(code - 128):
        # The worker is PID 1 of its namespace: it exits with 128 + the signal's number
        # when the student's code signals it (os.kill(os.getpid(), SIGTERM)).
        return WorkerLost(CellStatus.CRASHED, f"the interpreter was stopped by "
                          f"{processes.signal_name(code - 128)} (exit code {code}), {when}")
    return WorkerLost(CellStatus.CRASHED, f"the interpreter exited with code {code}, {when}")


def exchange(requests: int, replies: int, header: dict[str, Any], value: Any, deadline: float,
             limit: int, lost: Callable[[str, str], WorkerLost]) -> tuple[dict[str, Any], Any]:
    """Write one request to `requests` (non-blocking) and read the reply to it from
    `replies`, each by `deadline`, the reply's arrays within `limit` bytes: descriptors the
    grader made, never a path. `lost(when, alive)` says how the worker was lost when the
    channel closes (its exit, or `alive` if it lives on)."""
    nonce = send(requests, header, value, deadline, lost)
    return receive(replies, nonce, deadline, limit, lost)


def send(requests: int, header: dict[str, Any], value: Any, deadline: float,
         lost: Callable[[str, str], WorkerLost]) -> str:
    """Write one request to `requests` (non-blocking) by `deadline`; the id its replies
    carry (a group of calls is answered `id/0`, `id/1`...)."""
    nonce = secrets.token_hex(8)
    try:
        protocol.write_by(requests, protocol.pack(dict(header, id=nonce), value), deadline)
    except TimeoutError:
        raise WorkerLost(CellStatus.TIMEOUT, "the worker stopped reading its requests") from None
    except (BrokenPipeError, OSError):
        # Closed by a worker that lives on (the student's code closed the channel): it
        # stopped reading, as above.
        raise lost("before the request could be sent",
                   "the worker stopped reading its requests") from None
    return nonce


def receive(replies: int, nonce: str, deadline: float, limit: int,
            lost: Callable[[str, str], WorkerLost]) -> tuple[dict[str, Any], Any]:
    """Read the reply whose id is `nonce` from `replies` by `deadline`, its arrays within
    `limit` bytes. A reply too large is read and dropped when it can be (WorkerLost
    `in_sync`: the channel is still in step, and the next reply can be read)."""
    # Student code can write to the channel; a frame that does not answer this request is
    # dropped. (Forging this request's answer only forges the student's own outputs.)
    for _ in range(MAX_STRAY_FRAMES):
        try:
            frame = protocol.read_frame(replies, deadline, limit, drain_up_to=MAX_REPLY_BYTES)
        except TimeoutError:
            raise WorkerLost(CellStatus.TIMEOUT, "no answer in time") from None
        except EOFError:
            raise lost("while it ran", "the worker closed its channel") from None
        except protocol.FrameTooLarge as exc:
            if exc.drained:  # read and dropped: the worker goes on
                raise WorkerLost(CellStatus.CRASHED, TOO_LARGE, in_sync=True) from None
            # the channel is out of step: a new worker
            raise WorkerLost(CellStatus.CRASHED, f"the worker sent {exc}") from None
        reply = decode_reply(frame)
        if reply[0].get("id") == nonce:
            return reply
    raise WorkerLost(CellStatus.CRASHED, "the worker's channel was flooded with stray frames")


class PipeTransport:
    """A worker on pipes: requests on its stdin, replies on its stdout, and everything the
    student's code prints on its stderr, drained into `output`."""

    def __init__(self, offer: isolation.Offer, preload: tuple[str, ...], output: CappedOutput,
                 use_zygote: bool, zygotes: zygote.Zygotes | None = None) -> None:
        self.offer = offer
        self.preload = preload
        self.output = output
        self.use_zygote = use_zygote and offer.namespaces
        self.worker = WorkerStart.ZYGOTE if self.use_zygote else WorkerStart.FRESH
        self.started = ("" if self.use_zygote or not use_zygote else
                        "started as a fresh interpreter: a zygote needs namespaces, which this "
                        "machine does not give")
        self._proc: subprocess.Popen[bytes] | zygote.Forked | None = None
        self._reader: threading.Thread | None = None
        self._drain_fd: int | None = None
        self._drain_lock = threading.Lock()
        # The command's zygotes, or, when it gave none, this transport's own, stopped with it.
        self._own = zygote.Zygotes() if zygotes is None and self.use_zygote else None
        self.zygotes = zygotes or self._own

    @property
    def alive(self) -> bool:
        return self._proc is not None

    @property
    def pid(self) -> int | None:
        """The worker's process id (a zygote's: its middle process's), while it runs."""
        return self._proc.pid if self._proc is not None else None

    def start(self, resources: Resources) -> bool:
        env, confined = resources.environment()
        proc: subprocess.Popen[bytes] | zygote.Forked | None = (
            self._fork(env, resources) if self.use_zygote else None)
        if proc is None:
            env[processes.PRELOAD_ENV] = json.dumps(list(self.preload))  # before the limits
            try:
                proc = subprocess.Popen(
                    isolation.command(self.offer), stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=resources.home,
                    env=env, start_new_session=True)
            except OSError as exc:
                raise SandboxError(f"cannot start the sandbox worker: {exc}") from None
        self._proc = proc
        assert proc.stdin is not None and proc.stderr is not None
        os.set_blocking(proc.stdin.fileno(), False)  # writes have deadlines
        # Take the raw descriptor: a thread blocked in a buffered read would block close().
        fd = os.dup(proc.stderr.fileno())
        proc.stderr.close()
        self._reader = threading.Thread(target=self._drain, args=(fd,), daemon=True)
        self._reader.start()
        return confined

    def _fork(self, env: dict[str, str], resources: Resources) -> zygote.Forked | None:
        """A worker forked from the zygote, or None (and why, in `started`): then a fresh
        interpreter is started."""
        assert self.zygotes is not None
        try:
            forked = self.zygotes.spawn(self.offer, self.preload, env, resources.home)
        except zygote.ZygoteLost as lost:
            self.worker = WorkerStart.FRESH
            self.started = f"started as a fresh interpreter: the zygote failed ({lost})"
            return None
        self.worker, self.started = WorkerStart.ZYGOTE, zygote.STARTED
        return forked

    def kill(self) -> None:
        """Kill the worker and everything it started, without waiting (`stop` waits)."""
        proc = self._proc
        if isinstance(proc, zygote.Forked):
            proc.kill_all()
        elif proc is not None:
            isolation.kill_all(proc)

    def stop(self) -> None:
        self.kill()
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        proc.wait()
        if self._reader is not None:
            # The reader closes the output pipe itself once every writer is gone.
            self._reader.join(timeout=2)

    def close(self) -> None:
        self.stop()
        if self._own is not None:
            self._own.close()

    def _drain(self, fd: int) -> None:
        # Each read is added under the lock, so that `settle` never sees a chunk that has
        # left the pipe but is not in the output yet.
        # (Non-blocking: `settle` may have taken what select() saw.)
        os.set_blocking(fd, False)
        self._drain_fd = fd
        try:
            while True:
                select.select([fd], [], [])
                with self._drain_lock:
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        break
                    self.output.add(chunk)
        finally:
            with self._drain_lock:
                self._drain_fd = None
                os.close(fd)

    def settle(self) -> None:
        """Take in what is left in the pipe: the worker flushes what the student's code
        printed before it replies, so after a reply that is all of it."""
        with self._drain_lock:
            fd = self._drain_fd
            while fd is not None:
                try:
                    waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD,
                                                             b"\0" * 4))[0]
                except OSError:
                    return
                if not waiting:
                    return
                self.output.add(os.read(fd, waiting))

    def request(self, header: dict[str, Any], value: Any, deadline: float,
                limit: int = MAX_REPLY_BYTES) -> tuple[dict[str, Any], Any]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        return exchange(proc.stdin.fileno(), proc.stdout.fileno(), header, value, deadline,
                        limit, self._lost)

    def send(self, header: dict[str, Any], value: Any, deadline: float) -> str:
        """Send one request whose replies are read one by one (`receive`): a group of calls,
        answered with one reply per call. Returns the id the replies carry."""
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        return send(proc.stdin.fileno(), header, value, deadline, self._lost)

    def receive(self, nonce: str, deadline: float,
                limit: int = MAX_REPLY_BYTES) -> tuple[dict[str, Any], Any]:
        """The reply whose id is `nonce` (WorkerLost as `request` raises it)."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        return receive(proc.stdout.fileno(), nonce, deadline, limit, self._lost)

    def _lost(self, when: str, alive: str) -> WorkerLost:
        """How the worker was lost: its exit, or `alive` (a TIMEOUT) if it does not exit."""
        proc = self._proc
        try:
            code = proc.wait(timeout=5) if proc is not None else None
        except subprocess.TimeoutExpired:
            return WorkerLost(CellStatus.TIMEOUT, alive)
        if isinstance(proc, zygote.Forked) and proc.error:
            return WorkerLost(CellStatus.CRASHED, f"the worker could not be forked ({proc.error}), "
                              f"{when}")
        return lost_by_exit(code, when)
