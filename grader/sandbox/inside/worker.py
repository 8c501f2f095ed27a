"""The worker: the only process that runs a student's code.

It is started for a `session.Session` as a fork of the zygote, as a fresh interpreter or as a
Jupyter kernel (`transport.py`), never forked from the grader, so no reference value is in its
memory. It speaks `protocol` frames on two private file descriptors;
the student's stdout and stderr go to a third one that the grader reads and caps.

- `exec` runs one top-level statement of a cell in the shared namespace. A statement that raises
  is reported and the namespace lives on; a soft timer interrupts a statement that runs too
  long, and the grader kills the worker when even that fails.
- `call` forks, calls one exercise on one case's inputs in the child, and relays the child's
  answer. Whatever the call does to its process (hang, crash, corrupt globals) dies with it.

Outside a kernel, `display()` and IPython's display functions behave as in a notebook whose
outputs nobody looks at: they show nothing, and return the handle IPython returns.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import io
import linecache
import os
import re
import signal
import sys
import time
import traceback
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grader.sandbox.inside import processes, protocol, shell
from grader.sandbox.inside.calling import invoke
from grader.sandbox.inside.protocol import Reply

MAX_CHILD_BYTES = 64 << 20
CALL_OUTPUT_BYTES = 64 << 10
"""What is kept of what one call prints (the grader caps all output again)."""
SANDBOX_ENV = "GRADER_SANDBOX"


class StatementTimeout(BaseException):
    """Raised by the soft timer inside a statement that runs past its limit."""


class DisplayHandle:
    """What `display(obj, display_id=...)` returns in IPython; here it shows nothing."""

    def __init__(self, display_id: str | None = None) -> None:
        self.display_id = display_id or os.urandom(16).hex()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} display_id={self.display_id}>"

    def display(self, obj: Any, **kwargs: Any) -> None:
        """Show `obj` again under this handle's id: nothing to show here."""

    def update(self, obj: Any, **kwargs: Any) -> None:
        """Replace what this handle shows: nothing to replace here."""


def display(*objs: Any, display_id: Any = None, **kwargs: Any) -> DisplayHandle | None:
    """IPython's `display`, showing nothing: a handle when a display id is asked for (True
    makes a new one), else None, as IPython returns."""
    if not display_id:
        return None
    return DisplayHandle(None if display_id is True else str(display_id))


def _show_nothing(*args: Any, **kwargs: Any) -> None:
    """IPython's `clear_output` and `update_display`: nothing is shown, nothing to change."""


DISPLAY_MODULE = "IPython.core.display_functions"


def _quiet(module: Any) -> None:
    """Make IPython's display functions the worker's. Outside a kernel IPython's own print
    their objects (and terminal escapes), and `display` returns None even for a display id."""
    module.display = display
    module.clear_output = module.update_display = _show_nothing
    module.DisplayHandle = DisplayHandle


def quiet_ipython() -> None:
    """Make IPython's display functions quiet, now or when they are imported.
    `IPython.display` and `IPython.core.display` take their names from that module, so every
    way of importing `display`, `clear_output` or `update_display` gets the worker's."""
    shell.patch_on_import(DISPLAY_MODULE, _quiet)


def _shown(value: object, how: Callable[[object], str]) -> str:
    """`str` or `repr` of an object of the student's, which may raise, exit or return a
    non-string: the worker must describe every failure, never fail itself."""
    try:
        said = how(value)
    except BaseException:  # noqa: BLE001 - a student's __str__ may raise anything, even exit
        return "<its message cannot be shown: its __str__ or __repr__ raised>"
    return said if isinstance(said, str) else "<its message is not text>"


def describe(exc: BaseException, filename: str | None = None,
             ours: Callable[[str], bool] | None = None) -> tuple[str, int | None]:
    """'ExcType: message' and the line of the student's code where it was raised: in the
    innermost frame of code from `filename` (or from a file `ours` accepts; any file when
    neither is given). A statement that does not compile (`return` outside a function) is
    described by its own message and line."""
    def mine(name: str) -> bool:
        return ours(name) if ours is not None else filename is None or name == filename

    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if mine(frame.f_code.co_filename):
            line = lineno
    said = _shown(exc, str)
    text = f"{type(exc).__name__}: {said}" if said else type(exc).__name__
    if (isinstance(exc, SyntaxError) and exc.msg and isinstance(exc.filename, str)
            and (ours is not None or filename is not None) and mine(exc.filename)):
        # Its str() names the file, which is the grader's name for the cell, or a kernel's.
        text, line = f"{type(exc).__name__}: {exc.msg}", exc.lineno or line
    return text[:500], line


def failure(exc: BaseException, ours: Callable[[str], bool]) -> dict[str, Any]:
    """The reply to a statement that raised `exc`; `ours` tells the files of its cell."""
    if isinstance(exc, SystemExit):
        return {"status": Reply.EXIT, "message": f"SystemExit({_shown(exc.code, repr)})",
                "line": describe(exc, ours=ours)[1]}
    message, line = describe(exc, ours=ours)
    return {"status": Reply.ERROR, "message": message, "line": line}


@dataclass
class Snapshot:
    """A forked copy of the namespace, taken right after the cell that defined an exercise."""

    pid: int
    requests: int
    replies: int
    executed: int


class Worker:
    """State of one worker process: the student's namespace and the parsed cells."""

    def __init__(self, namespace: dict[str, Any] | None = None) -> None:
        self.namespace: dict[str, Any] = namespace if namespace is not None else {
            "__builtins__": builtins, "__name__": "__main__"}
        self.trees: dict[int, ast.Module] = {}
        self.watch: list[str] = []
        self.snapshots: dict[str, Snapshot] = {}
        self.seen: dict[str, int] = {}
        self.executed = 0  # statements run so far; a snapshot remembers the count it saw
        self.channel: tuple[int, ...] = ()

    def serve(self, in_fd: int, out_fd: int) -> None:
        """Answer requests until the other side closes the channel."""
        self.channel = (in_fd, out_fd)
        stream = os.fdopen(in_fd, "rb", buffering=0)
        while True:
            try:
                header, value = protocol.unpack(stream, MAX_CHILD_BYTES)
            except EOFError:
                return
            protocol.write_all(out_fd, self.answer(header, value))

    def answer(self, header: dict[str, Any], value: Any) -> bytes:
        """The reply frame to one request."""
        processes.reap()
        handler = getattr(self, f"op_{header.get('op')}", None)
        reply, result = handler(header, value) if handler else ({"status": Reply.BAD_OP}, None)
        if reply["status"] is Reply.RELAY:  # a child's frame, passed on as it is
            return bytes(result or b"")
        return protocol.pack(dict(reply, id=header.get("id")), result)

    def op_hello(self, header: dict[str, Any], value: Any) -> tuple[dict[str, Any], Any]:
        for module in header.get("preload", []):
            __import__(module)
            if module == "torch":
                import torch

                torch.set_num_threads(1)  # a single thread keeps fork() safe
        self.watch = [str(name) for name in header.get("watch", [])]
        if header.get("shell", True):  # not inside a real IPython kernel
            self.namespace["__name__"] = header.get("module_name", "__main__")
            shell.install(self.namespace)
            self.namespace["display"] = display
            quiet_ipython()
        return {"status": Reply.OK, "pid": os.getpid(), "confinement": CONFINEMENT,
                "confine_error": CONFINE_ERROR}, None

    def op_exec(self, header: dict[str, Any], value: Any) -> tuple[dict[str, Any], Any]:
        cell, index, timeout = header["cell"], header["stmt"], float(header["timeout"])
        filename = f"<cell {cell}>"
        if cell not in self.trees:
            self.trees[cell] = ast.parse(header["source"], filename=filename)
        node = self.trees[cell].body[index]
        self.executed += 1
        # A statement replayed after a crash printed its output already: it prints nowhere.
        saved = _silence() if header.get("quiet") else None
        previous = signal.signal(signal.SIGALRM, _raise_timeout)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        me = os.getpid()
        fresh_warnings()
        try:
            # Compiled here: a statement that parses may still not compile (`return` or
            # `break` outside their block), which is the student's error, not the worker's.
            # A top-level `await` runs as IPython runs it, on an event loop kept between
            # statements.
            code = compile(ast.Module([node], type_ignores=[]), filename, "exec",
                           flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            if code.co_flags & inspect.CO_COROUTINE:
                _event_loop().run_until_complete(eval(code, self.namespace))
            else:
                exec(code, self.namespace)
            reply: dict[str, Any] = {"status": Reply.OK}
        except StatementTimeout:
            reply = {"status": Reply.TIMEOUT, "message": f"stopped after {timeout:g} s"}
        except BaseException as exc:  # the student's exception is data, whatever it is
            reply = failure(exc, lambda name: name == filename)
        finally:
            processes.exit_unless(me)
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            _flush()
            if saved is not None:
                _restore(saved)
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
        if "executed" in header:  # a kernel runs the statements itself and tells the count
            self.executed = int(header["executed"])
        self._snapshot_new_definitions()
        return {"status": Reply.OK}, None

    def _snapshot_new_definitions(self) -> None:
        """Fork a snapshot for the exercises that the cell just (re)defined."""
        changed = [name for name in self.watch if name in self.namespace
                   and id(self.namespace[name]) != self.seen.get(name)]
        if not changed:
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
                Worker(self.namespace).serve(request_r, reply_w)
            finally:
                os._exit(0)
        os.close(request_r)
        os.close(reply_w)
        snapshot = Snapshot(pid, request_w, reply_r, self.executed)
        for name in changed:
            self.seen[name] = id(self.namespace[name])
            old = self.snapshots.get(name)
            self.snapshots[name] = snapshot
            if old is not None and old not in self.snapshots.values():
                for fd in (old.requests, old.replies):
                    processes.close(fd)
                processes.kill_group(old.pid)
                try:
                    os.waitpid(old.pid, 0)
                except ChildProcessError:
                    pass  # already collected

    def op_call(self, header: dict[str, Any], value: Any) -> tuple[dict[str, Any], Any]:
        name, kind = header["name"], header["kind"]
        if header.get("at") == "definition":
            return self._call_in_snapshot(header, value)
        target = self.namespace.get(name)
        wanted = "class" if kind == "class" else "function"
        if target is None:
            return {"status": Reply.MISSING,
                    "message": f"no {wanted} named {name} is defined"}, None
        if kind == "class" and not isinstance(target, type) or not callable(target):
            return {"status": Reply.MISSING, "message": f"{name} is of type "
                    f"{type(target).__name__}, not a {wanted}"}, None
        read_fd, write_fd = os.pipe()
        printed = _call_output()
        try:
            pid = processes.fork()
        except OSError as exc:  # the student's processes used up the limit
            for fd in (read_fd, write_fd, printed):
                processes.close(fd)
            return {"status": Reply.REFUSED, "message": "no process could be started for the call "
                    f"({exc.strerror}): too many processes are still running"}, None
        if pid == 0:  # the child: call, answer, vanish
            os.close(read_fd)
            for fd in self.channel:
                processes.close(fd)
            _child_call(write_fd, target, kind, value, header, printed)
        os.close(write_fd)
        # No limit from the grader: one derived from a hidden case's expected outputs would
        # tell their size. The grader applies its own as it reads (and drops) the reply.
        reply, frame = self._collect(pid, read_fd, float(header["timeout"]), MAX_CHILD_BYTES)
        return _with_printed(reply, frame, printed)

    def _call_in_snapshot(self, header: dict[str, Any],
                          value: Any) -> tuple[dict[str, Any], Any]:
        snapshot = self.snapshots.get(header["name"])
        if snapshot is None or snapshot.executed == self.executed:
            return {"status": Reply.NO_SNAPSHOT}, None  # none, or the same state as the end
        timeout = float(header["timeout"]) + 1.0
        try:
            protocol.send(snapshot.requests, dict(header, at="end"), value)
            frame = protocol.read_frame(snapshot.replies, time.monotonic() + timeout,
                                        MAX_CHILD_BYTES)
        except (OSError, EOFError, TimeoutError, protocol.ProtocolError):
            return {"status": Reply.CRASHED, "message": "the snapshot of the notebook's state "
                    "did not answer"}, None
        return {"status": Reply.RELAY}, frame

    def _collect(self, pid: int, read_fd: int, timeout: float,
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


def _call_output() -> int:
    """A file in memory for what one call prints; /dev/null where none can be made, never the
    cells' output, which students see."""
    try:
        return os.memfd_create("grader-call-output", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)


def _with_printed(reply: dict[str, Any], frame: Any, printed: int) -> tuple[dict[str, Any], Any]:
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


def _child_call(write_fd: int, target: Any, kind: str, value: Any, header: dict[str, Any],
                printed: int) -> None:
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
    _flush(*saved)
    try:
        protocol.write_all(write_fd, frame)
    finally:
        os._exit(0)


# Signals whose default action ends a process, and that a notebook's code may send itself:
# `os.kill(os.getpid(), signal.SIGTERM)`, `os.kill(0, ...)`, `signal.raise_signal(...)`, a child
# that kills its parent, `!kill 1`. A Jupyter kernel dies of them. The worker does not: it is
# PID 1 of its PID namespace (see isolation), and the kernel drops a signal that init receives
# from inside its namespace unless init handles it. So these statements would run "ok".
#
# A handler for each is the robust way out: the kernel calls it whoever sent the signal and
# however, where looking for `os.kill(os.getpid(), ...)` in the source would see only the
# spellings it knows. The handler does what the default action would (see `_die_of`).
# Not here: SIGINT (Python's KeyboardInterrupt, as in Jupyter), SIGALRM (the statement timer),
# SIGPIPE and SIGXFSZ (Python ignores them), SIGKILL and SIGSTOP (no process can handle them,
# so a worker that sends them to itself runs on), and the fault signals SIGSEGV, SIGBUS,
# SIGILL, SIGFPE, SIGTRAP and SIGSYS: a real fault kills even PID 1, and a Python handler
# would return to the faulting instruction, which faults again, forever.
class OutStream(io.TextIOWrapper):
    """`sys.stdout` and `sys.stderr` of the student's code, as ipykernel's in Jupyter: text
    only. ipykernel's stream has no `.buffer` (bytes written there raise AttributeError in
    Jupyter), so neither has this one, and both engines fail alike where Jupyter fails."""

    @classmethod
    def on(cls, fd: int, through: bool = False) -> OutStream:
        """A stream that writes to `fd` (left open when the stream is closed), buffered as
        Python buffers its own (stderr by line), or written through with `through`."""
        return cls(io.BufferedWriter(io.FileIO(fd, "w", closefd=False)), encoding="utf-8",
                   errors="backslashreplace" if fd == 2 else "strict",
                   line_buffering=fd == 2 and not through, write_through=through)

    @property
    def buffer(self) -> Any:  # type: ignore[override]
        raise AttributeError("'OutStream' object has no attribute 'buffer'")


_LOOP: Any = None


def _event_loop() -> Any:
    """The event loop of the notebook's top-level `await`s: one for all its statements, as
    IPython keeps one (a new one when a statement stopped it mid-run)."""
    global _LOOP
    import asyncio

    if _LOOP is None or _LOOP.is_closed() or _LOOP.is_running():
        _LOOP = asyncio.new_event_loop()
    return _LOOP


def fresh_warnings() -> None:
    """Show again a warning shown before, as Jupyter does in each cell (its kernel runs each
    cell, and each call, with Python's "once per place" registries out of date): a call
    that warns says so in both engines, whatever ran before it. CPython's own hook, where it
    has one."""
    mutated = getattr(warnings, "_filters_mutated", None)
    if mutated is not None:
        mutated()


_CELL_MARKER = re.compile(r"# grader [0-9a-f]+: cell (\d+)")


def show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
    """`warnings.showwarning` in both engines: one line, the cell named as the fast engine
    names it ("<cell 3>:5: RuntimeWarning: overflow encountered in exp"). In a kernel, a
    cell's statements are compiled to files of IPython's, whose last line is the grader's
    marker for the cell (`kernel.KernelTransport._marker`); Python's own format would name
    that file and quote the line, which the fast engine cannot."""
    where = filename
    lines = linecache.getlines(filename) if not filename.startswith("<") else []
    found = _CELL_MARKER.fullmatch(lines[-1].rstrip("\r\n")) if lines else None
    if found:
        where = f"<cell {found.group(1)}>"
    try:
        (file if file is not None else sys.stderr).write(
            f"{where}:{lineno}: {category.__name__}: {message}\n")
    except Exception:  # a closed or replaced stream: the warning is lost, as in Python
        pass


def die_of_deadly_signals() -> None:
    """As PID 1 of a namespace, end on a deadly signal as any other process would."""
    if os.getpid() != 1:
        return  # not init: the kernel applies the default action itself
    for number in processes.DEADLY:
        try:
            if signal.getsignal(number) == signal.SIG_DFL:
                signal.signal(number, _die_of)
        except (OSError, ValueError):
            pass  # a signal this system does not let a process handle
    # A process forked from the worker (a snapshot, a call, the student's own) is not init:
    # the default action serves it, at once, even in the middle of a long C call.
    os.register_at_fork(after_in_child=_default_deadly_signals)


def _default_deadly_signals() -> None:
    for number in processes.DEADLY:
        try:
            if signal.getsignal(number) is _die_of:
                signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):
            pass


def _die_of(signum: int, frame: Any) -> None:
    """The default action of a deadly signal: the process ends, whatever the student's code
    was doing (no exception, so no `try` or `finally` of theirs runs)."""
    _flush()
    if os.getpid() != 1:  # a child forked without Python's fork hooks: die of it
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
    # PID 1 cannot die of it: it exits with the status a shell gives a process the signal
    # killed (128 + its number), so the statement is recorded as crashed, the worker is
    # started again and the statements before it are replayed, as after any other death.
    os._exit(128 + signum)


def _raise_timeout(signum: int, frame: Any) -> None:
    raise StatementTimeout()


def _silence() -> tuple[int, int]:
    """Send what is written to fds 1 and 2 nowhere; the saved fds, for `_restore`."""
    _flush()
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    return saved


def _restore(saved: tuple[int, int]) -> None:
    # No zip() or other builtin: the student's code may have replaced them.
    os.dup2(saved[0], 1)
    os.dup2(saved[1], 2)
    os.close(saved[0])
    os.close(saved[1])


def _flush(*more: Any) -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__, *more):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass


def _confine() -> str:
    """Apply the limits and the confinement the grader planned; the error, or "" if none."""
    global CONFINEMENT, CONFINE_ERROR, EXPOSED
    os.environ[SANDBOX_ENV] = "1"
    _first_to_go()
    import json

    processes.apply_limits(json.loads(os.environ.pop("GRADER_LIMITS", "{}")))
    plan = os.environ.pop("GRADER_CONFINE", "")
    if not plan:
        return ""
    from grader.sandbox.inside.confine import WORK, ConfineError, Exposed, confine, confine_user

    planned = json.loads(plan)
    try:
        if planned.get("user_only"):  # no namespaces: HOME and TMPDIR are the working folder
            CONFINEMENT = confine_user(planned)
        else:
            CONFINEMENT = confine(planned)
            os.environ.update(HOME=WORK, TMPDIR=WORK, MPLCONFIGDIR=WORK)
    except (ConfineError, OSError) as exc:
        CONFINE_ERROR = str(exc) or type(exc).__name__
        EXPOSED = isinstance(exc, Exposed)
    return CONFINE_ERROR


def _first_to_go() -> None:
    """When the machine (or the grader's container) runs out of memory, the kernel kills the
    student's processes first, never the grader or another submission's: every process of
    the worker inherits the highest OOM score, which none of them may lower."""
    try:
        with open("/proc/self/oom_score_adj", "w") as stream:
            stream.write("1000")
    except OSError:
        pass  # no /proc here: the memory limits still hold


def main(rearm: bool = False) -> None:
    """Entry point: take the protocol off fds 0 and 1, then serve requests.

    `rearm`: forked by the zygote, ask again to be killed when the parent dies (entering a
    nested user namespace may have cleared that request)."""
    in_fd, out_fd = os.dup(0), os.dup(1)  # dup() makes them non-inheritable
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the student reads an empty standard input
    os.dup2(2, 1)  # and writes stdout and stderr to the capped output channel
    sys.stdout, sys.stderr = OutStream.on(1), OutStream.on(2)
    if _confine():
        # The grader asked for a confinement it did not get: it refuses to go on, and no
        # request but `hello` is answered, so no student code runs unconfined.
        _refuse(in_fd, out_fd)
        return
    if rearm:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    die_of_deadly_signals()
    warnings.showwarning = show_warning
    Worker().serve(in_fd, out_fd)


KERNEL_CHANNEL_ENV = "GRADER_KERNEL_CHANNEL"


def kernel_main() -> None:
    """Entry point of `--engine kernel`: confined exactly as `main`, then an IPython kernel
    (arguments: -f CONNECTION_FILE). A kernel that cannot be confined never starts. The
    grader's requests and replies travel on two pipes it made and the kernel inherited
    (their numbers in GRADER_KERNEL_CHANNEL), never through a file."""
    global _KERNEL_CHANNEL
    requests, replies = (int(fd) for fd in os.environ.pop(KERNEL_CHANNEL_ENV).split(","))
    for fd in (requests, replies):
        os.set_inheritable(fd, False)  # no process the student starts gets them
    _KERNEL_CHANNEL = (requests, replies)
    error = _confine()
    if error:
        print(f"[grader] refusing to start the kernel unconfined: {error}", file=sys.stderr)
        os._exit(3)
    die_of_deadly_signals()
    warnings.showwarning = show_warning
    from ipykernel.kernelapp import launch_new_instance

    launch_new_instance(argv=[arg for arg in sys.argv[1:] if arg != "-c"])


def _refuse(in_fd: int, out_fd: int) -> None:
    """Answer `hello` with the confinement error, and nothing else."""
    stream = os.fdopen(in_fd, "rb", buffering=0)
    try:
        header, _ = protocol.unpack(stream, MAX_CHILD_BYTES)
    except (EOFError, protocol.ProtocolError):
        return
    protocol.write_all(out_fd, protocol.pack({"status": Reply.UNCONFINED, "id": header.get("id"),
                                              "confine_error": CONFINE_ERROR,
                                              "exposed": EXPOSED}))


CONFINEMENT = ""
CONFINE_ERROR = ""
EXPOSED = False
"""The confinement failed because the worker's user could open a path the grader holds."""


_KERNEL_WORKER: Worker | None = None
_KERNEL_CHANNEL: tuple[int, int] = (-1, -1)


def kernel_serve(namespace: dict[str, Any]) -> None:
    """Answer the grader's requests inside a Jupyter kernel (`--engine kernel`), each read
    from the request pipe and answered on the reply pipe, until one says `serve_end`.

    The kernel's namespace is the student's; the same Worker answers calls and snapshots, so
    both engines check exercises the same way.
    """
    global _KERNEL_WORKER
    requests, replies = _KERNEL_CHANNEL
    if _KERNEL_WORKER is None or _KERNEL_WORKER.namespace is not namespace:
        _KERNEL_WORKER = Worker(namespace)
        _KERNEL_WORKER.channel = _KERNEL_CHANNEL  # closed in every process a call forks
    stream = io.FileIO(requests, "rb", closefd=False)
    while True:
        header, value = protocol.unpack(stream, MAX_CHILD_BYTES)
        if header.get("op") == "serve_end":
            protocol.send(replies, {"status": Reply.OK, "id": header.get("id")})
            return
        protocol.write_all(replies, _KERNEL_WORKER.answer(header, value))


if __name__ == "__main__":
    main()
