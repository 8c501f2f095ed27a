"""The grader's side of the sandbox: start a worker, run cells, call exercises, enforce limits.

A `Session` owns one worker process at a time. When the worker dies or stops answering in
the middle of a statement, that statement is recorded as crashed or timed out, a fresh worker
is started, and the statements that had run before are replayed silently (skipping the bad
one), so that one fatal cell costs only itself. The worker never receives a reference.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import secrets
import shutil
import struct
import subprocess
import tempfile
import termios
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import text
from grader.errors import SandboxError
from grader.model import Cell, CellResult, Status, Submission
from grader.sandbox import cgroups, isolation, processes, protocol
from grader.sandbox import zygote as zygote_module
from grader.sandbox.limits import CappedOutput, Limits, cap

GRACE_S = 2.0
zygote_wanted = zygote_module.wanted
MAX_RESTARTS = 8
MAX_REPLY_BYTES = 64 << 20
MAX_STRAY_FRAMES = 16
NOT_IMPLEMENTED = "not implemented yet: the stub still raises NotImplementedError"


@dataclass(frozen=True)
class CallOutcome:
    """What one call of an exercise produced, as plain data."""

    status: Status
    """PASSED here means "returned a value"; else MISSING, ERROR or TIMEOUT."""
    value: Any = None
    """The decoded return value (arrays, tuples, lists, `protocol.Unsupported`)."""
    message: str = ""
    """Why there is no value."""


class WorkerLost(Exception):
    """The worker died, hung past its deadline, or sent something that is not a frame."""

    def __init__(self, status: Status, message: str, in_sync: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.in_sync = in_sync
        """A whole frame was read: the worker is alive and the channel still usable."""


class Session:
    """Runs one submission's code in a worker; use as a context manager."""

    def __init__(self, limits: Limits, preload: tuple[str, ...] = (),
                 module_name: str = "__main__", on_error: str = "statement",
                 watch: tuple[str, ...] = (), started: float | None = None,
                 zygote: bool | None = None) -> None:
        self.limits = limits
        self.watch = watch
        self.preload = preload
        self.module_name = module_name
        self.on_error = on_error
        self.output = CappedOutput(limits.output_bytes)
        # The submission's time limit counts from `started` (before loading, when given).
        self.deadline = (started or time.monotonic()) + limits.submission_timeout
        self.restarts = 0
        self.offer = isolation.offered()
        self.isolation = isolation.describe(self.offer)
        # Prototype (#11): workers forked from a warm zygote (`GRADER_ZYGOTE=1`).
        self.zygote = zygote_wanted() if zygote is None else zygote
        self._started = ""  # how the worker was started, when not as a fresh interpreter
        self._proc: subprocess.Popen[bytes] | zygote_module.Forked | None = None
        self._reader: threading.Thread | None = None
        self._drain_fd: int | None = None
        self._home: Path | None = None
        self._lease: isolation.UidLease | None = None
        self._cgroup: Path | None = None
        self._replay: list[tuple[Cell, int]] = []  # index -1: a snapshot after the cell

    # ------------------------------------------------------------------ life cycle

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill the worker and everything it started; remove its folder, cgroup and lease."""
        self._stop_worker()
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
        if self._cgroup is not None:
            cgroups.remove(self._cgroup)
            self._cgroup = None
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def _stop_worker(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if isinstance(proc, zygote_module.Forked):
            proc.kill_all()
        else:
            isolation.kill_all(proc)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        proc.wait()
        if self._reader is not None:
            # The reader closes the output pipe itself once every writer is gone.
            self._reader.join(timeout=2)

    def _confinement(self, writable: tuple[Path, ...] = ()) -> dict[str, Any] | None:
        """The plan of the worker's confinement, making its lease and cgroup the first time."""
        if not self.offer.namespaces:
            return None
        assert self._home is not None
        if self.offer.root and self._lease is None:
            try:
                self._lease = isolation.UidLease()
            except OSError as exc:
                raise SandboxError(f"cannot lease a user id for the worker ({exc})") from None
        if self.offer.cgroups is not None and self._cgroup is None:
            try:
                self._cgroup = cgroups.create(self.offer.cgroups, self.limits.memory_mb << 20)
            except OSError as exc:
                raise SandboxError(f"cannot make the submission's memory cgroup under "
                                   f"{self.offer.cgroups.parent} ({exc}); run `grade "
                                   "doctor`") from None
        return isolation.plan(self._home, self.limits.file_size_mb << 22,
                              self._lease.uid if self._lease else None, self._cgroup, writable)

    def _rlimits(self) -> dict[str, int]:
        limits = self.limits.rlimits()
        if self._cgroup is None:  # nothing bounds the whole submission: few processes
            limits["processes"] = min(limits["processes"], isolation.FALLBACK_PROCESSES)
        return limits

    def _start_worker(self) -> None:
        if self._home is None:
            self._home = Path(tempfile.mkdtemp(prefix="grader-work-"))
        env = isolation.environment(self._home)
        confinement = self._confinement()
        env["GRADER_LIMITS"] = json.dumps(self._rlimits())
        if confinement is not None:
            env["GRADER_CONFINE"] = json.dumps(confinement)
        self._proc = self._fork(env) if self.zygote else None
        if self._proc is None:
            try:
                self._proc = subprocess.Popen(
                    isolation.command(self.offer), stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=self._home, env=env,
                    start_new_session=True)
            except OSError as exc:
                raise SandboxError(f"cannot start the sandbox worker: {exc}") from None
        assert self._proc.stdin is not None
        os.set_blocking(self._proc.stdin.fileno(), False)  # writes have deadlines
        stderr = self._proc.stderr
        assert stderr is not None
        # Take the raw descriptor: a thread blocked in a buffered read would block close().
        fd = os.dup(stderr.fileno())
        stderr.close()
        self._reader = threading.Thread(target=self._drain, args=(fd,), daemon=True)
        self._reader.start()
        try:
            reply, _ = self._request({"op": "hello", "preload": list(self.preload),
                                      "module_name": self.module_name,
                                      "watch": list(self.watch)}, None, 60.0)
        except WorkerLost as lost:
            self._stop_worker()
            raise SandboxError(f"the sandbox worker did not start ({lost.message}); run "
                               "`grade doctor` to see what this machine allows") from None
        self._accept(reply, confinement is not None)

    def _fork(self, env: dict[str, str]) -> zygote_module.Forked | None:
        """A worker forked from the zygote, or None (and why, in `_started`) where none can
        be had: then a fresh interpreter is started."""
        assert self._home is not None
        if not self.offer.namespaces:
            self._started = ("started as a fresh interpreter: a zygote needs namespaces, "
                             "which this machine does not give")
            return None
        try:
            forked = zygote_module.spawn(self.offer, self.preload, env, self._home)
        except zygote_module.ZygoteLost as lost:
            self._started = f"started as a fresh interpreter: the zygote failed ({lost})"
            return None
        self._started = zygote_module.STARTED
        return forked

    def _accept(self, hello: dict[str, Any], confined: bool) -> None:
        """Check the worker's answer to `hello`: a worker confined less than planned is
        refused. Then say how strongly the student's code is isolated."""
        if hello.get("status") != "ok" or (confined and not hello.get("confinement")):
            self._stop_worker()
            raise SandboxError(
                "refusing to grade: the worker could not be confined as this machine allowed "
                f"at start ({hello.get('confine_error') or hello.get('status')}); run "
                "`grade doctor`")
        memory = (f"a memory cgroup of {self.limits.memory_mb} MiB for the whole submission"
                  if self._cgroup else
                  f"at most {self._rlimits()['processes']} processes of "
                  f"{self.limits.memory_mb} MiB each (no memory cgroup here)")
        self.isolation = isolation.describe(self.offer, str(hello.get("confinement") or ""),
                                            memory, self._started)

    def _drain(self, fd: int) -> None:
        self._drain_fd = fd
        try:
            for chunk in iter(lambda: os.read(fd, 1 << 16), b""):
                self.output.add(chunk)
        finally:
            self._drain_fd = None
            os.close(fd)

    def _settle(self, timeout: float = 1.0) -> None:
        """Wait until the reader has taken in what the worker printed so far: the reply to a
        statement can arrive before the reader thread has read the output written before it.
        Done when the pipe holds no unread byte twice in a row, a few milliseconds apart."""
        deadline = time.monotonic() + timeout
        quiet = 0
        while quiet < 2 and time.monotonic() < deadline:
            fd = self._drain_fd
            if fd is None or self._reader is None or not self._reader.is_alive():
                return
            try:
                waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
            except OSError:
                return
            quiet = quiet + 1 if waiting == 0 else 0
            time.sleep(0.003)

    # ------------------------------------------------------------------ transport

    def _request(self, header: dict[str, Any], value: Any,
                 timeout: float) -> tuple[dict[str, Any], Any]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        nonce = secrets.token_hex(8)
        deadline = min(time.monotonic() + timeout, self.deadline + GRACE_S)
        try:
            protocol.write_by(proc.stdin.fileno(), protocol.pack(dict(header, id=nonce), value),
                              deadline)
        except TimeoutError:
            raise WorkerLost(Status.TIMEOUT, "the worker stopped reading its requests") \
                from None
        except (BrokenPipeError, OSError):
            raise self._lost("before the request could be sent") from None
        # Student code can write to the channel; a frame that does not answer this request is
        # dropped. (Forging this request's answer only forges the student's own outputs.)
        for _ in range(MAX_STRAY_FRAMES):
            try:
                frame = protocol.read_frame(proc.stdout.fileno(), deadline, MAX_REPLY_BYTES)
            except TimeoutError:
                raise WorkerLost(Status.TIMEOUT, "no answer in time") from None
            except EOFError:
                raise self._lost("while it ran") from None
            reply = decode_reply(frame)
            if reply[0].get("id") == nonce:
                return reply
        raise WorkerLost(Status.CRASHED, "the worker's channel was flooded with stray frames")

    def _lost(self, when: str) -> WorkerLost:
        proc = self._proc
        code = proc.wait(timeout=5) if proc is not None else None
        if isinstance(proc, zygote_module.Forked) and proc.error:
            return WorkerLost(Status.CRASHED, f"the worker could not be forked ({proc.error}), "
                              f"{when}")
        if code is not None and code < 0:
            return WorkerLost(Status.CRASHED, f"the interpreter died from "
                              f"{processes.signal_name(-code)}, {when}")
        if code is not None and code > 128 and processes.is_fatal_signal(code - 128):
            # The worker is PID 1 of its namespace: it exits with 128 + the signal's number
            # when the student's code signals it (os.kill(os.getpid(), SIGTERM)).
            return WorkerLost(Status.CRASHED, f"the interpreter was stopped by "
                              f"{processes.signal_name(code - 128)} (exit code {code}), {when}")
        return WorkerLost(Status.CRASHED, f"the interpreter exited with code {code}, {when}")

    @property
    def _alive(self) -> bool:
        return self._proc is not None

    def _ensure_worker(self) -> None:
        """Start a worker if there is none, replaying the statements that ran before."""
        if self._alive:
            return
        self._start_worker()
        self.output.muted = True
        try:
            for cell, index in self._replay:
                self._replay_statement(cell, index)
        finally:
            self.output.muted = False

    def _replay_statement(self, cell: Cell, index: int) -> None:
        request = (self._snapshot_request() if index < 0
                   else _exec_request(cell, index, self.limits.cell_timeout))
        self._request(request, None, self.limits.cell_timeout + GRACE_S)

    def _exec_statement(self, cell: Cell, index: int) -> dict[str, Any]:
        """Run one statement; the worker's reply (status, message, line)."""
        reply, _ = self._request(_exec_request(cell, index, self.limits.cell_timeout),
                                 None, self.limits.cell_timeout + GRACE_S)
        return reply

    def _snapshot_request(self) -> dict[str, Any]:
        return {"op": "snapshot"}

    def _restart(self) -> None:
        self._stop_worker()
        self.restarts += 1

    # ------------------------------------------------------------------ cells

    def run(self, submission: Submission) -> tuple[CellResult, ...]:
        """Run every cell, statement by statement; return what happened to each one."""
        results = []
        halted = False
        for cell in submission.cells:
            if halted:
                results.append(CellResult(cell.index, Status.SKIPPED,
                                          "not run: an earlier cell failed and grading stops "
                                          "at the first failure (--on-error stop)"))
                continue
            result = self._run_cell(cell)
            results.append(result)
            halted = self.on_error == "stop" and result.status not in (Status.OK,
                                                                        Status.SKIPPED)
        return tuple(results)

    def _run_cell(self, cell: Cell) -> CellResult:
        if cell.syntax_error:
            return CellResult(cell.index, Status.ERROR,
                              f"{cell.syntax_error}; the cell did not run")
        notes: list[tuple[Status, str]] = []
        went_on = False
        for statement in cell.statements:
            if statement.skip_reason:
                notes.append((Status.SKIPPED, f"line {statement.lineno}: {statement.skip_reason}"))
                continue
            status, message = self._exec(cell, statement.index)
            if status is Status.OK:
                continue
            notes.append((status, f"line {message}"))
            remaining = len(cell.statements) - statement.index - 1
            if self.on_error != "statement":
                if remaining:
                    notes.append((Status.SKIPPED, f"the {remaining} statement(s) after it did "
                                  f"not run, as in Jupyter (--on-error {self.on_error})"))
                break
            went_on = went_on or remaining > 0
        self._snapshot(cell)
        if not notes:
            return CellResult(cell.index, Status.OK)
        if went_on:
            notes.append((Status.OK, "the grader ran the rest of the cell anyway; Jupyter "
                          "would have stopped at the first error"))
        worst = next((s for s in (Status.CRASHED, Status.TIMEOUT, Status.ERROR)
                      if any(n[0] is s for n in notes)), Status.SKIPPED)
        # A cell of 500 shell escapes would otherwise make a message as long as the cell.
        return CellResult(cell.index, worst, cap("; ".join(text for _, text in notes)))

    def _snapshot(self, cell: Cell) -> None:
        """Let the worker keep the state right after this cell for what the cell defined."""
        if not self.watch or not self._alive:
            return
        try:
            self._request(self._snapshot_request(), None, self.limits.cell_timeout + GRACE_S)
            self._replay.append((cell, -1))
        except WorkerLost:
            self._restart()

    def _exec(self, cell: Cell, index: int) -> tuple[Status, str]:
        lineno = cell.statements[index].lineno
        if time.monotonic() > self.deadline:
            return Status.TIMEOUT, (f"{lineno}: not run, the submission's time limit of "
                                    f"{self.limits.submission_timeout:g} s was used up")
        try:
            self._ensure_worker()
            reply = self._exec_statement(cell, index)
        except WorkerLost as lost:
            self._restart()
            if lost.status is Status.TIMEOUT:
                return Status.TIMEOUT, (f"{lineno}: stopped after {self.limits.cell_timeout:g} s "
                                        "(it did not stop when interrupted); execution went on")
            return Status.CRASHED, f"{lineno}: {lost.message}; only this statement was lost"
        status = reply.get("status")
        line = reply.get("line") or lineno
        if status == "ok":
            self._replay.append((cell, index))
            return Status.OK, ""
        if status == "timeout":
            return Status.TIMEOUT, (f"{lineno}: stopped after {self.limits.cell_timeout:g} s; "
                                    "execution went on")
        self._replay.append((cell, index))  # it ran partly: its effects stay, as in Jupyter
        if status == "exit":
            return Status.ERROR, f"{line}: {reply.get('message')} ended only this statement"
        return Status.ERROR, f"{line}: {reply.get('message', 'failed')}"

    # ------------------------------------------------------------------ calls

    def call(self, name: str, kind: str, args: tuple[Any, ...], init: dict[str, Any],
             tensors: str | None, at: str = "end") -> CallOutcome:
        """Call one exercise on one case's inputs in a fresh fork of the student's state.

        `at` is "end" (after every cell) or "definition" (right after the cell that last
        defined the exercise).
        """
        if time.monotonic() > self.deadline:
            return CallOutcome(Status.TIMEOUT, message="not run: the submission's time limit of "
                               f"{self.limits.submission_timeout:g} s was used up")
        header = {"op": "call", "name": name, "kind": kind, "tensors": tensors,
                  "timeout": self.limits.call_timeout, "at": at}
        for _attempt in range(2):
            if self.restarts > MAX_RESTARTS:
                return CallOutcome(Status.ERROR, message="not run: the student's code killed "
                                   f"the interpreter more than {MAX_RESTARTS} times")
            try:
                self._ensure_worker()
                reply, value = self._request(header, {"args": list(args), "init": init},
                                             self.limits.call_timeout + GRACE_S + 1)
            except WorkerLost as lost:
                if lost.in_sync:  # the call answered, with data that is not numbers
                    return CallOutcome(Status.ERROR, message=lost.message.replace(
                        "the worker sent", "the call returned"))
                self._restart()
                continue
            return _outcome(reply, value, self.limits.call_timeout)
        return CallOutcome(Status.ERROR, message="the interpreter died during this call")

    def captured_output(self) -> str:
        """What the student's code printed (capped), up to the last reply."""
        self._settle()
        return self.output.text()


def decode_reply(frame: bytes) -> tuple[dict[str, Any], Any]:
    """A reply frame decoded, or WorkerLost when it is malformed."""
    try:
        header, value = protocol.unpack(io.BytesIO(frame), MAX_REPLY_BYTES)
    except (protocol.ProtocolError, EOFError) as exc:
        raise WorkerLost(Status.CRASHED, f"the worker sent malformed data ({exc})",
                         in_sync=True) from None
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        # Student code controls these bytes: whatever fails to decode is its failure.
        raise WorkerLost(Status.CRASHED, "the worker sent data the grader cannot decode "
                         f"({type(exc).__name__})", in_sync=True) from None
    # Every string the student's code wrote (exception messages) is made safe here, once.
    return text.clean_tree(header), value  # type: ignore[return-value]


def _exec_request(cell: Cell, index: int, timeout: float) -> dict[str, Any]:
    return {"op": "exec", "cell": cell.index, "stmt": index, "source": cell.source,
            "timeout": timeout}


def _outcome(reply: dict[str, Any], value: Any, timeout: float) -> CallOutcome:
    status = reply.get("status")
    message = str(reply.get("message", ""))[:500]
    if status == "no-snapshot":
        return CallOutcome(Status.MISSING, message="no snapshot: it was never defined by a cell")
    if status == "ok":
        return CallOutcome(Status.PASSED, value)
    if status == "missing":
        return CallOutcome(Status.MISSING, message=message)
    if status == "timeout":
        return CallOutcome(Status.TIMEOUT, message=f"did not return within {timeout:g} s")
    if status == "crashed":
        return CallOutcome(Status.ERROR, message=f"crashed: {message}")
    line = reply.get("line")
    where = f" (line {line})" if isinstance(line, int) else ""
    if message.startswith("NotImplementedError"):
        return CallOutcome(Status.ERROR, message=f"{NOT_IMPLEMENTED}{where}")
    return CallOutcome(Status.ERROR, message=f"raised {message}{where}")
