"""`--engine kernel`: the same semantics and confinement as the fast engine, in a real kernel.

Each top-level statement runs as its own cell through nbclient, with errors allowed, so a
failing statement is recorded and the next one runs; a statement past its time limit is
interrupted, and a kernel that dies or will not stop is restarted and the statements before
are replayed. Exercises are called through `kernel_agent.serve`, which forks inside the
kernel exactly as the fast engine's worker does, and answers with the same protocol frames.

A failing statement is described by the same code as in the fast engine (`failures.failure`,
asked for IPython's last error), so both engines give it the same message and the same line
of its cell; a kernel that dies is described by its exit status, as the fast engine's worker.
"""

from __future__ import annotations

import json
import logging
import math
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import zmq
import zmq.asyncio
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.v4 import new_code_cell, new_notebook

from grader.errors import SandboxError
from grader.results import CellStatus
from grader.sandbox import isolation
from grader.sandbox.inside import processes
from grader.sandbox.inside.kernel_agent import KERNEL_OUTPUT_ENV
from grader.sandbox.inside.protocol import Reply
from grader.sandbox.kernel_channels import (
    Client,
    bounded,
    channels,
    message_bound,
    never_reconnect,
    pipes,
)
from grader.sandbox.limits import CappedOutput, Limits
from grader.sandbox.resources import Extra, Resources
from grader.sandbox.transport import (
    MAX_REPLY_BYTES,
    WorkerLost,
    WorkerStart,
    exchange,
    lost_by_exit,
)

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SERVE = ("__import__('grader.sandbox.inside.kernel_agent', fromlist=['serve']).serve("
         "get_ipython().user_ns)")
SERVE_END_S = 5.0
WATCHDOG_GRACE_S = 3.0
STUCK = "the kernel did not stop when interrupted"
KERNEL_OVERHEAD = 512 << 20
KERNEL_THREADS = 16
SPEC = "attention-grader"
# Nobody reads the kernel's tracebacks (`failures.failure` describes an error), and IPython's
# usual ones take seconds to build for a runaway recursion: time the statement's limit counts.
KERNEL_OPTIONS = ("--InteractiveShell.xmode=Minimal",
                  # A shell command says it was not run, as in the fast engine
                  # (kernel_agent.in_kernel).
                  "--IPKernelApp.exec_lines=__import__('grader.sandbox.inside.kernel_agent', "
                  "fromlist=['in_kernel']).in_kernel(get_ipython())")
# nbclient logs every timeout and dead kernel as an error; the result reports them instead.
_QUIET = logging.getLogger("grader.kernel")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


class KernelTransport:
    """A `Transport` to an IPython kernel, confined like the fast engine's worker: the kernel
    is started by `kernel_agent.main` in the same namespaces, private root, user and cgroup.
    A statement (`exec`) runs as a cell of its own; every other request is answered by
    `kernel_agent.serve` inside the kernel, on two pipes the grader made and the kernel
    inherited: the grader never opens a path the student's code can write.

    Jupyter's own messages use unix sockets that the kernel makes in a folder of its own,
    new at each start; the grader connects to them as the kernel starts, before any student
    code runs in it, and never again (`kernel_channels.never_reconnect`): a socket the code
    replaces with a link is never followed. The connection file and the kernel spec are
    written before the kernel starts, the spec in a folder only the grader can reach. The
    kernel's stdin, stdout and stderr are /dev/null, never the grader's own."""

    worker = WorkerStart.KERNEL
    started = "started as an IPython kernel (--engine kernel)"

    def __init__(self, limits: Limits, preload: tuple[str, ...], output: CappedOutput) -> None:
        self.limits = limits
        self.preload = preload
        self.output = output
        self._client: Client | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._channel: tuple[int, int] | None = None  # (requests to write, replies to read)
        self._serving: str | None = None  # the message id of the cell serving requests
        self._killed = False  # the watchdog killed the kernel
        self._folders: list[Path] = []
        self._context: zmq.asyncio.Context | None = None
        self._executed = 0
        self._sources: dict[int, str] = {}  # each cell's, as the session sent it
        self._nonce = ""

    @property
    def alive(self) -> bool:
        return self._client is not None

    def start(self, resources: Resources) -> bool:
        home = resources.home
        bound = message_bound(int(self.limits.cell_code_mb * (1 << 20)))
        self._context = bounded(bound)
        # A new folder at each start: nothing a kernel before left there is ever used.
        shared = Path(tempfile.mkdtemp(prefix="kernel-", dir=home))  # connection, sockets
        specs = Path(tempfile.mkdtemp(prefix="grader-kernelspec-"))  # the grader's alone
        self._folders = [shared, specs]
        # The kernel's own threads reserve address space and count as processes.
        env, confined = resources.environment(Extra(memory=KERNEL_OVERHEAD,
                                                    processes=KERNEL_THREADS,
                                                    writable=(shared,)))
        env["MALLOC_ARENA_MAX"] = "2"  # one 64 MiB arena per thread would eat the memory limit
        env[KERNEL_OUTPUT_ENV] = str(self.limits.output_bytes)  # kernel_agent.InPieces sends it
        env[processes.PRELOAD_ENV] = json.dumps(list(self.preload))  # imported before the limits
        (specs / SPEC).mkdir()
        (specs / SPEC / "kernel.json").write_text(json.dumps({
            "argv": [*isolation.command(resources.offer, "kernel_agent"), "-f",
                     "{connection_file}", *KERNEL_OPTIONS],
            "display_name": "attention-grader (confined)", "language": "python"}))
        manager = AsyncKernelManager(kernel_name=SPEC, transport="ipc", ip=str(shared / "socket"),
                                     connection_file=str(shared / "connection.json"),
                                     kernel_spec_manager=KernelSpecManager(
                                         kernel_dirs=[str(specs)]),
                                     context=self._context)
        manager.client_factory = channels(bound)  # its sockets too, not only the manager's
        client = Client(new_notebook(), km=manager,
                         timeout=int(math.ceil(self.limits.cell_timeout)),
                         log=_QUIET, allow_errors=True, interrupt_on_timeout=True,
                         startup_timeout=60, resources={"metadata": {"path": str(home)}})
        self._client = client
        try:
            with pipes(env) as (channel, kernel_ends):
                self._channel = channel
                # Its standard streams are /dev/null, opened here: what its code (or a
                # thread it leaves running) writes to fd 1 or 2 never reaches `grade`'s
                # terminal or log; its output comes only through Jupyter's messages.
                client.start_new_kernel(cwd=str(home), env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        pass_fds=kernel_ends)
            client.start_new_kernel_client()
            never_reconnect(client.kc)
        except Exception as exc:  # it died at once: it could not be confined, or not start
            self.stop()
            raise SandboxError(f"the Jupyter kernel did not start ({type(exc).__name__}: "
                               f"{exc}); run `grade doctor`") from None
        # The kernel's process, whose exit status says how it died.
        process = getattr(manager.provisioner, "process", None)
        self._proc = process if isinstance(process, subprocess.Popen) else None
        self._executed = 0
        self._sources = {}
        return confined

    def stop(self) -> None:
        client, self._client = self._client, None
        process, self._proc = self._proc, None
        self._serving = None
        if client is not None:
            # Killed, never asked: jupyter_client's shutdown polls for the exit every 0.1 s,
            # and a kernel's connection files go with its folder (below).
            pid = getattr(getattr(client.km, "provisioner", None), "pid", None)
            try:
                if client.kc is not None:
                    client.kc.stop_channels()
            except Exception:  # channels of a dead kernel
                pass
            if pid:
                processes.kill_group(pid)
            if process is not None:
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass  # the PID namespace's init reaps the rest
        channel, self._channel = self._channel, None
        for fd in channel or ():
            processes.close(fd)
        for folder in self._folders:
            shutil.rmtree(folder, ignore_errors=True)  # never follows a link inside
        self._folders = []
        context, self._context = self._context, None
        if context is not None:
            context.destroy(linger=0)

    def close(self) -> None:
        self.stop()

    def settle(self) -> None:
        """Nothing to wait for: a statement's output arrives with its cell."""

    def request(self, header: dict[str, Any], value: Any, deadline: float,
                limit: int = MAX_REPLY_BYTES) -> tuple[dict[str, Any], Any]:
        op = header.get("op")
        if op == "exec":
            if value is not None:  # the session sends a cell's source once per kernel
                self._sources[int(header["cell"])] = value.tobytes().decode()
            return self._exec(header, self._sources[int(header["cell"])], deadline), None
        if op == "snapshot":  # the kernel runs the statements itself: tell the count
            header = dict(header, executed=self._executed)
        elif op == "hello":  # the kernel has a real IPython shell of its own
            header = dict(header, shell=False)
        return self._answer(header, value, deadline, limit)

    def _answer(self, header: dict[str, Any], value: Any, deadline: float,
                limit: int = MAX_REPLY_BYTES) -> tuple[dict[str, Any], Any]:
        """Ask `kernel_agent.serve` inside the kernel: the request goes down one pipe and
        the reply comes up the other, by `deadline`, the reply within `limit` bytes of
        arrays (`transport.exchange`). The first request after a statement starts the cell
        that serves them, which answers every request until the next statement: a request
        then costs a pipe's round trip, not a cell's."""
        assert self._client is not None and self._client.kc is not None
        assert self._channel is not None
        if self._serving is None:
            self._serving = self._client.kc.execute(SERVE, silent=True, store_history=False,
                                                    allow_stdin=False)
        return exchange(*self._channel, header, value, deadline, limit, self._lost_as)

    def _end_serving(self) -> None:
        """Stop the cell that serves requests, so that a statement can run as a cell."""
        serving, self._serving = self._serving, None
        if serving is None:
            return
        assert self._client is not None and self._channel is not None
        kernel = self._client.kc
        deadline = time.monotonic() + SERVE_END_S
        exchange(*self._channel, {"op": "serve_end"}, None, deadline, 0, self._lost_as)
        while time.monotonic() < deadline:  # its reply: the kernel is ready for a cell
            try:
                reply = run_sync(kernel.get_shell_msg)(  # type: ignore[union-attr]
                    timeout=max(0.01, deadline - time.monotonic()))
            except Exception:  # queue.Empty, or a channel that closed: the kernel is gone
                break
            if reply.get("parent_header", {}).get("msg_id") == serving:
                return
        raise WorkerLost(CellStatus.CRASHED, "the kernel did not stop answering the grader")

    def _lost_as(self, when: str, alive: str) -> WorkerLost:
        """How the kernel was lost when its channel closed (`transport.exchange`)."""
        return self._lost() if self._proc is not None and self._proc.poll() is not None \
            else WorkerLost(CellStatus.CRASHED, f"the kernel closed its channel, {when}")

    def _run_source(self, source: str, timeout: float) -> tuple[list[Any], float]:
        """Run code as one cell; return its outputs and the seconds it took."""
        client = self._client
        assert client is not None
        cell = new_code_cell(source)
        client.nb.cells = [cell]
        # The outputs of the statement before are gone: a display id it showed must not be
        # updated there (nbclient would look for the output in this new cell, and fail).
        client.clear_display_id_mapping(0)
        client.timeout = int(max(1, round(timeout)))
        client.budget, client.overflow = self.limits.output_bytes, 0
        started = time.monotonic()
        # nbclient interrupts a cell past its time, then waits for it again, forever: a
        # statement that ignores SIGINT is killed with its kernel past the limit and a grace.
        self._killed = False
        watchdog = threading.Timer(max(1.0, timeout) + WATCHDOG_GRACE_S, self._kill)
        watchdog.start()
        try:
            client.execute_cell(cell, 0, store_history=False)
        except DeadKernelError:
            if self._killed:
                raise WorkerLost(CellStatus.TIMEOUT, STUCK) from None
            raise self._lost() from None
        except (CellTimeoutError, TimeoutError, RuntimeError):
            raise WorkerLost(CellStatus.TIMEOUT, STUCK) from None
        except Exception as exc:  # a message the kernel's code forged that nbclient chokes on
            raise WorkerLost(CellStatus.CRASHED, "the kernel sent a message the grader cannot "
                             f"read ({type(exc).__name__}: {str(exc)[:200]})") from None
        finally:
            watchdog.cancel()
        return list(cell.outputs), time.monotonic() - started

    def _kill(self) -> None:
        """Kill the kernel and everything it started (the watchdog's last resort)."""
        self._killed = True
        client = self._client
        pid = getattr(getattr(client.km, "provisioner", None), "pid", None) if client else None
        if pid:
            processes.kill_group(pid)

    def _lost(self) -> WorkerLost:
        """The kernel died: how, from its exit status, in the fast engine's words."""
        if self._proc is not None:
            try:
                return lost_by_exit(self._proc.wait(timeout=5), "while it ran")
            except subprocess.TimeoutExpired:
                pass  # nbclient gave up on a kernel that has not exited (yet)
        return WorkerLost(CellStatus.CRASHED, "the kernel died, while it ran")

    def _exec(self, header: dict[str, Any], source: str, deadline: float) -> dict[str, Any]:
        """Run one statement of the cell `source` as a cell of its own; the reply the fast
        worker would give."""
        self._end_serving()
        index, cell = int(header["stmt"]), int(header["cell"])
        timeout = min(float(header["timeout"]), deadline - time.monotonic())
        marker = self._marker(cell)
        outputs, elapsed = self._run_source(_statement_source(source, index) + "\n" + marker,
                                            timeout)
        self._executed += 1
        for output in outputs if not header.get("quiet") else ():  # replayed: shown before
            if output.get("output_type") == "stream":
                self.output.add(str(output.get("text", "")).encode())
        if not header.get("quiet") and self._client is not None:
            self.output.dropped += self._client.overflow
        error = next((o for o in outputs if o.get("output_type") == "error"), None)
        interrupted = elapsed >= timeout
        if error is None:
            # An interrupt that lands while IPython formats a long traceback (a runaway
            # recursion takes seconds) leaves no error output: that statement timed out.
            return {"status": Reply.TIMEOUT if interrupted else Reply.OK}
        if error.get("ename") == "KeyboardInterrupt" and interrupted:
            return {"status": Reply.TIMEOUT}
        reply, _ = self._answer({"op": "last_error", "ename": error.get("ename"),
                                 "marker": marker}, None, time.monotonic() + timeout)
        if Reply.of(reply) in (Reply.ERROR, Reply.EXIT):
            return reply
        return _from_output(error)  # IPython showed an error it did not keep

    def _marker(self, cell: int) -> str:
        """The comment that ends the source of each statement of a cell: it tells the files
        IPython compiles them to, and so the frames of a traceback that are the cell's."""
        if not self._nonce:
            self._nonce = secrets.token_hex(8)
        return f"# grader {self._nonce}: cell {cell}"


def _statement_source(source: str, index: int) -> str:
    """The source of exactly one top-level statement (`a = 1; b = 2` is two), after a line
    `#` for each line of the cell before it, so that its line numbers stay the cell's. (Blank
    lines would not do: IPython drops the blank lines a cell starts with.)"""
    import ast

    node = ast.parse(source).body[index]
    decorators = getattr(node, "decorator_list", [])
    start = decorators[0] if decorators else node
    first, last = start.lineno, node.end_lineno or node.lineno
    lines = [line.encode() for line in source.splitlines()[first - 1:last]]
    # Offsets count UTF-8 bytes; a decorator's own offset leaves out its "@".
    begin = (lines[0].rindex(b"@", 0, start.col_offset) if decorators
             else start.col_offset)
    lines[-1] = lines[-1][:node.end_col_offset]
    lines[0] = lines[0][begin:]
    return "#\n" * (first - 1) + b"\n".join(lines).decode()


def _from_output(error: dict[str, Any]) -> dict[str, Any]:
    """A statement's reply read from IPython's error output alone: the line is the last
    one the traceback names in any cell."""
    traceback = ANSI.sub("", "\n".join(error.get("traceback", [])))
    lines = re.findall(r"Cell In\[\d*\], line (\d+)", traceback)
    line = int(lines[-1]) if lines else None
    message = f"{error.get('ename')}: {error.get('evalue')}".rstrip(": ")
    if error.get("ename") == "SystemExit":
        return {"status": Reply.EXIT, "message": f"SystemExit({error.get('evalue')!r})",
                "line": line}
    return {"status": Reply.ERROR, "message": message[:500], "line": line}
