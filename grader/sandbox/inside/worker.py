"""The worker's loop: it answers the grader's requests, one at a time, in the student's namespace.

The worker is the only process that runs a student's code. A `Worker` answers the grader's
`protocol` requests in every engine: the fast engine's worker (`startup.main`, a fork of the
zygote or a fresh interpreter) and a Jupyter kernel (`kernel_agent.serve`). It is never
forked from the grader, so no reference value is in its memory.

- `exec` runs one top-level statement of a cell in the shared namespace. A statement that raises
  is reported and the namespace lives on; a soft timer interrupts a statement that runs too
  long, and the grader kills the worker when even that fails.
- `call` hands one exercise and one case's inputs to a forked call process
  (`call_process`) and relays its answer. The process serves the next call only if the call
  returned and left nothing that a later call could see (`state`); whatever else a call
  does to its process (hang, crash, corrupt globals) dies with it. `calls` is a group of
  such calls in one request, answered with one reply per call, each as soon as it is over
  (reply ids `id/0`, `id/1`...): the same calls, made one after the other, without a round
  trip to the grader between them.
- `snapshot` keeps the namespace as it is after a cell that (re)defined an exercise, so that
  an exercise can also be called as it was when it was defined. The copy is a fork, taken
  only when a later statement is about to run that could change what the cell left
  (`inert`): a notebook whose later cells only define functions needs none, and a call "as
  defined" then runs in the namespace without the names bound since.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import functools
import inspect
import linecache
import operator
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from grader.sandbox.inside import (
    displays,
    inert,
    processes,
    protocol,
    shell,
    signals,
    streams,
)
from grader.sandbox.inside.call_process import CallProcess
from grader.sandbox.inside.cellwarnings import fresh_warnings
from grader.sandbox.inside.failures import failure
from grader.sandbox.inside.protocol import Reply

MAX_CHILD_BYTES = 64 << 20
FUTURES = functools.reduce(operator.or_, (getattr(__future__, name).compiler_flag
                                          for name in __future__.all_feature_names))
"""The compiler flag of every `from __future__` feature."""


@dataclass(frozen=True)
class Confinement:
    """What the worker's start-up did to confine it, said in the reply to `hello`."""

    done: str = ""
    """What was done, in a sentence (`confine.confine`); empty when nothing was planned or
    it failed."""
    error: str = ""
    """Why the planned confinement failed; empty when it did not."""
    exposed: bool = False
    """It failed because the worker's user could open a path the grader holds."""


@dataclass
class Snapshot:
    """A forked copy of the namespace, taken right after the cell that defined an exercise."""

    pid: int
    requests: int
    replies: int
    executed: int


class Worker:
    """State of one worker process: the student's namespace and the parsed cells."""

    def __init__(self, namespace: dict[str, Any] | None = None,
                 confinement: Confinement | None = None) -> None:
        self.namespace: dict[str, Any] = namespace if namespace is not None else {
            "__builtins__": builtins, "__name__": "__main__"}
        self.trees: dict[int, ast.Module] = {}
        self.watch: list[str] = []
        self.snapshots: dict[str, Snapshot] = {}
        self.hidden: dict[str, tuple[str, ...]] = {}
        """Exercise -> the names that a call in its snapshot takes out: bound, after its cell,
        by statements that the snapshot was deferred past."""
        self.pending: dict[str, list[str]] = {}
        """Exercises (re)defined whose snapshot is not taken yet -> the names bound since."""
        self.seen: dict[str, int] = {}
        self.executed = 0  # statements run so far; a snapshot remembers the count it saw
        self.futures = 0  # the compiler flags of the notebook's `from __future__` imports
        self.channel: tuple[int, ...] = ()
        self.confinement = confinement or Confinement()
        self.caller: CallProcess | None = None  # the process that serves calls, if any
        self.ready: dict[str, CallProcess] = {}
        """Group -> a call process forked ahead of the group's first call (`op_prepare`)."""

    def serve(self, in_fd: int, out_fd: int) -> None:
        """Answer requests until the other side closes the channel."""
        self.channel = (in_fd, out_fd)
        stream = os.fdopen(in_fd, "rb", buffering=0)
        while True:
            try:
                header, value = protocol.unpack(stream, MAX_CHILD_BYTES)
            except EOFError:
                return
            for frame in self.frames(header, value):
                protocol.write_all(out_fd, frame)

    def frames(self, header: dict[str, Any], value: Any) -> Iterator[bytes]:
        """The reply frames to one request: one, or one per call of a group of calls
        (`calls`), each written as soon as its call is over."""
        if header.get("op") != "calls":
            yield self.answer(header, value)
            return
        calls, values = header.get("calls"), value
        if not isinstance(calls, list) or not isinstance(values, list) \
                or len(calls) != len(values) or not all(isinstance(c, dict) for c in calls):
            yield protocol.pack({"status": Reply.BAD_OP, "id": f"{header.get('id')}/0"})
            return
        for index, (call, sent) in enumerate(zip(calls, values, strict=True)):
            yield self.answer(dict(call, op="call", id=f"{header.get('id')}/{index}"), sent)

    def answer(self, header: dict[str, Any], value: Any) -> bytes:
        """The reply frame to one request."""
        processes.reap()
        handler = getattr(self, f"op_{header.get('op')}", None)
        reply, result = handler(header, value) if handler else ({"status": Reply.BAD_OP}, None)
        if reply["status"] is Reply.RELAY:  # a child's frame, passed on under this request's id
            # (the student's code may have set another: a later call's in a group)
            return protocol.with_header(bytes(result or b""), {"id": header.get("id")})
        return protocol.pack(dict(reply, id=header.get("id")), result)

    def op_hello(self, header: dict[str, Any], value: Any) -> tuple[dict[str, Any], Any]:
        self.watch = [str(name) for name in header.get("watch", [])]
        if header.get("shell", True):  # not inside a real IPython kernel
            self.namespace["__name__"] = header.get("module_name", "__main__")
            shell.install(self.namespace)
            self.namespace["display"] = displays.display
            displays.quiet_ipython()
        return {"status": Reply.OK, "pid": os.getpid(), "confinement": self.confinement.done,
                "confine_error": self.confinement.error}, None

    def op_exec(self, header: dict[str, Any], value: Any) -> tuple[dict[str, Any], Any]:
        self.stop_caller()
        cell, index, timeout = header["cell"], header["stmt"], float(header["timeout"])
        filename = f"<cell {cell}>"
        if cell not in self.trees:
            self.trees[cell] = ast.parse(value.tobytes().decode(), filename=filename)
        node = self.trees[cell].body[index]
        if self.pending:
            bound = inert.binds_only(node, self.namespace)
            if bound is None:  # it could change what the pending definitions left
                self._take_snapshot()
            for names in self.pending.values():
                names.extend(bound or ())
        self.executed += 1
        # A statement replayed after a crash printed its output already: it prints nowhere.
        saved = streams.silence() if header.get("quiet") else None
        previous = signal.signal(signal.SIGALRM, signals.raise_timeout)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        me = os.getpid()
        fresh_warnings()
        try:
            # Compiled here: a statement that parses may still not compile (`return` or
            # `break` outside their block), which is the student's error, not the worker's.
            # A top-level `await` runs as IPython runs it, on an event loop kept between
            # statements.
            # Not this module's `from __future__` imports, but the notebook's own, from the
            # statement that makes one on, as IPython carries them from cell to cell.
            code = compile(ast.Module([node], type_ignores=[]), filename, "exec",
                           flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT | self.futures,
                           dont_inherit=True)
            self.futures |= code.co_flags & FUTURES
            if code.co_flags & inspect.CO_COROUTINE:
                _event_loop().run_until_complete(eval(code, self.namespace))
            else:
                exec(code, self.namespace)
            reply: dict[str, Any] = {"status": Reply.OK}
        except signals.StatementTimeout:
            reply = {"status": Reply.TIMEOUT, "message": f"stopped after {timeout:g} s"}
        except BaseException as exc:  # the student's exception is data, whatever it is
            reply = failure(exc, lambda name: name == filename)
        finally:
            processes.exit_unless(me)
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            streams.flush()
            if saved is not None:
                streams.restore(saved)
            processes.reap()
        return reply, None

    def op_last_error(self, header: dict[str, Any],
                      value: Any) -> tuple[dict[str, Any], Any]:
        """Inside a kernel (`--engine kernel`): what `op_exec` would have replied for the error
        IPython has just shown. The source of each statement of the cell ends with the line
        `marker`, which tells the files IPython compiled that cell's statements to."""
        error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        if not isinstance(error, BaseException) or type(error).__name__ != header.get("ename"):
            return {"status": Reply.UNKNOWN}, None  # not the error of that statement
        marker = str(header.get("marker"))

        def ours(name: str) -> bool:
            lines = linecache.getlines(name)
            return bool(lines) and lines[-1].rstrip("\r\n") == marker

        return failure(error, ours), None

    def op_snapshot(self, header: dict[str, Any], value: Any) -> tuple[dict[str, Any], Any]:
        """After a cell: the exercises it (re)defined get a snapshot, taken when a statement
        that could change them is about to run (`op_exec`). A Jupyter kernel runs the
        statements itself and says how many it ran: there, the snapshot is taken now."""
        self.stop_caller()
        for name in self.watch:
            if name in self.namespace and id(self.namespace[name]) != self.seen.get(name):
                self.seen[name] = id(self.namespace[name])
                self._forget(name)
                self.pending[name] = []
        if "executed" in header:
            self.executed = int(header["executed"])
            self._take_snapshot()
        return {"status": Reply.OK}, None

    def _take_snapshot(self) -> None:
        """Fork one snapshot for the exercises whose snapshot is pending."""
        pending, self.pending = self.pending, {}
        if not pending:
            return
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        try:
            pid = processes.fork()
        except OSError:  # no room for a snapshot: calls will use the final state only
            for fd in (request_r, request_w, reply_r, reply_w):
                os.close(fd)
            return
        if pid == 0:  # the snapshot: answer calls from the worker, never from the grader
            for fd in (request_w, reply_r, *self.channel,
                       *(fd for snap in self.snapshots.values()
                         for fd in (snap.requests, snap.replies))):
                processes.close(fd)
            try:
                Worker(self.namespace, self.confinement).serve(request_r, reply_w)
            finally:
                os._exit(0)
        os.close(request_r)
        os.close(reply_w)
        snapshot = Snapshot(pid, request_w, reply_r, self.executed)
        for name, bound in pending.items():
            self.snapshots[name], self.hidden[name] = snapshot, tuple(bound)

    def _forget(self, name: str) -> None:
        """Drop the snapshot of an exercise that was defined again; stop its process when no
        other exercise's snapshot it is."""
        old = self.snapshots.pop(name, None)
        self.hidden.pop(name, None)
        if old is None or old in self.snapshots.values():
            return
        for fd in (old.requests, old.replies):
            processes.close(fd)
        processes.kill_group(old.pid)
        try:
            os.waitpid(old.pid, 0)
        except ChildProcessError:
            pass  # already collected

    def op_call(self, header: dict[str, Any], value: Any) -> tuple[dict[str, Any], Any]:
        if header.get("at") == "definition":
            return self._call_in_snapshot(header, value)
        return self._call(header, value, tuple(header.get("hide") or ()))

    def _call(self, header: dict[str, Any], value: Any,
              hide: tuple[str, ...]) -> tuple[dict[str, Any], Any]:
        """The call, in a call process of the namespace without the names `hide`."""
        name, kind = header["name"], header["kind"]
        target = self.namespace.get(name)
        wanted = "class" if kind == "class" else "function"
        if target is None:
            return {"status": Reply.MISSING,
                    "message": f"no {wanted} named {name} is defined"}, None
        if kind == "class" and not isinstance(target, type) or not callable(target):
            return {"status": Reply.MISSING, "message": f"{name} is of type "
                    f"{type(target).__name__}, not a {wanted}"}, None
        caller = self._caller(str(header.get("group", "")), bool(header.get("fresh")),
                              float(header["timeout"]), hide)
        if isinstance(caller, OSError):  # the student's processes used up the limit
            return {"status": Reply.REFUSED, "message": "no process could be started for the call "
                    f"({caller.strerror}): too many processes are still running"}, None
        # No limit from the grader: one derived from a hidden case's expected outputs would
        # tell their size. The grader applies its own as it reads (and drops) the reply.
        reply, frame = caller.call(header, value, MAX_CHILD_BYTES)
        if caller.alive:
            self.caller = caller
        return reply, frame

    def op_prepare(self, header: dict[str, Any], value: Any) -> tuple[dict[str, Any], Any]:
        """Fork the call processes of the groups named, ahead of their first calls: each takes
        its picture of the state (`state.digest`) while the grader works on the cells' results.
        They are forked from the state the cells left: no statement runs before their first
        call (one that does stops them, as `stop_caller` says)."""
        for group in map(str, header.get("groups", [])):
            if group not in self.ready:
                caller = self._fork_caller(group, ())
                if isinstance(caller, CallProcess):
                    self.ready[group] = caller
        return {"status": Reply.OK}, None

    def _caller(self, group: str, fresh: bool, timeout: float,
                hide: tuple[str, ...]) -> CallProcess | OSError:
        """The call process for the next call: the current one while it may serve it (same
        group, no statement since, the same names taken out, not asked for a fresh one, and
        it found the state as it was), else a new fork."""
        caller, self.caller = self.caller, None
        if caller is not None:
            if caller.alive and not fresh and caller.group == group and caller.hide == hide \
                    and caller.executed == self.executed and caller.reusable(timeout):
                return caller
            caller.stop()
        # Fresh, it has served no call; forked from this state (`stop_caller` empties `ready`
        # whenever the namespace may change).
        ready = None if hide else self.ready.pop(group, None)
        return ready if ready is not None else self._fork_caller(group, hide)

    def _fork_caller(self, group: str, hide: tuple[str, ...]) -> CallProcess | OSError:
        """A new call process of the namespace, holding none of the worker's descriptors."""
        inherited = (*self.channel, *(fd for snap in self.snapshots.values()
                                      for fd in (snap.requests, snap.replies)),
                     *(other.channel.fileno() for other in (self.caller, *self.ready.values())
                       if other is not None and other.alive))
        try:
            return CallProcess.start(self.namespace, group, self.executed, inherited,
                                     MAX_CHILD_BYTES, hide)
        except OSError as exc:
            return exc

    def stop_caller(self) -> None:
        """Stop the call processes, if any: the namespace is about to change."""
        caller, self.caller = self.caller, None
        ready, self.ready = self.ready, {}
        for process in (caller, *ready.values()):
            if process is not None:
                process.stop()

    def _call_in_snapshot(self, header: dict[str, Any],
                          value: Any) -> tuple[dict[str, Any], Any]:
        name = header["name"]
        if name in self.pending:  # not taken: only statements that bind new names ran since
            bound = tuple(self.pending[name])
            if not bound:
                return {"status": Reply.NO_SNAPSHOT}, None  # the same state as the end
            return self._call(dict(header, at="end"), value, bound)
        snapshot, hide = self.snapshots.get(name), self.hidden.get(name, ())
        if snapshot is None or snapshot.executed == self.executed and not hide:
            return {"status": Reply.NO_SNAPSHOT}, None  # none, or the same state as the end
        timeout = float(header["timeout"]) + 1.0
        try:
            protocol.send(snapshot.requests, dict(header, at="end", hide=list(hide)), value)
            frame = protocol.read_frame(snapshot.replies, time.monotonic() + timeout,
                                        MAX_CHILD_BYTES)
        except (OSError, EOFError, TimeoutError, protocol.ProtocolError):
            return {"status": Reply.CRASHED, "message": "the snapshot of the notebook's state "
                    "did not answer"}, None
        return {"status": Reply.RELAY}, frame


_LOOP: Any = None


def _event_loop() -> Any:
    """The event loop of the notebook's top-level `await`s: one for all its statements, as
    IPython keeps one (a new one when a statement stopped it mid-run)."""
    global _LOOP
    import asyncio

    if _LOOP is None or _LOOP.is_closed() or _LOOP.is_running():
        _LOOP = asyncio.new_event_loop()
    return _LOOP
