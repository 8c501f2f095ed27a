"""The fork server ("zygote"): one warm interpreter, forked for each submission's worker.

A fresh interpreter that imports numpy and confines itself takes about 100 ms before it runs a
statement (a second with torch; `bench/bench_single.py` measures it); a fork of the zygote
about 6 ms. The zygote pays the start once per command and preload set (`Zygotes`, owned by
the command: a `grade run`, a batch, a Dask worker), and each worker is a fork of it,
confined by the
same code as a fresh worker (`confine`), except that pages shared with the zygote are charged
to the grader's memory cgroup, not the submission's. It is the default (`--engine fast`);
`transport.PipeTransport` falls back to a fresh interpreter where it cannot be had, and says
so.

Design
------
The zygote is started by the grader like a worker, as a fresh interpreter (`python -I -c`),
never as a fork of the grader, so it holds no reference, solution or grader state. It imports
`grader.sandbox.inside.startup` (and with it `worker`, `protocol`, `calling`), numpy and the
assignment's `requires`, and never runs student code. As root it is a plain process in the
grader's namespaces; as a normal user it runs inside `unshare --user --map-root-user`, where
it is root and may make namespaces. It must have one thread only (checked before every fork).

It speaks to the grader over a SOCK_SEQPACKET socket pair (one JSON message per packet):

- grader -> zygote `{"op": "spawn", "id", "env", "cwd"}` with the worker's stdin, stdout and
  stderr pipe ends attached (SCM_RIGHTS). The zygote forks a *middle* process, answers
  `{"id", "pid": middle}` and later `{"op": "exited", "pid": middle, "code": N}` with the
  worker's status as `Popen.returncode` gives it (negative: the signal that killed it), or
  `{"op": "exited", ..., "error": why}` when the worker could not be started.
- grader -> zygote `{"op": "kill", "pid": middle}`: the zygote kills only a middle process it
  has not reaped yet, so a recycled pid is never signalled.

The middle process leaves the zygote's session, asks for SIGKILL when the zygote dies, calls
unshare(CLONE_NEWNS|NEWPID|NEWNET|NEWIPC|NEWUTS) and forks the worker, which is PID 1 of the
new PID namespace (when it dies, every process in it dies). The middle process waits for it
and writes its status to a pipe the zygote watches; on the grader's kill it SIGKILLs the
worker (its own unreaped child) and mirrors the status.

The worker asks for SIGKILL when the middle process dies, puts the passed pipes on 0, 1, 2,
closes every other descriptor (the zygote's socket, other workers' pipes), starts a new
session, mounts its own /proc, takes the environment the grader sent, reseeds numpy's global
generator, and runs `startup.main`: the same limits, the same `confine()` (cgroup, private
read-only root, /tmp of its own, leased uid or nested user namespace) and the same loop.
`hello` finds its modules imported already.

Lifetime: the command that started it stops it when it is done (`Zygotes.close`). Else the
zygote exits when its socket reaches end of file (the grader exited or was killed, in any
way), killing its middle processes; each worker dies with its middle process.
If the zygote dies, its workers die with it; each `Session` sees its worker lost, as after a
crash, and the next worker start makes a new zygote.

What a fork shares with the others, and why it is acceptable
------------------------------------------------------------
- Memory: a copy-on-write copy of an interpreter that only imported modules. Whatever a
  submission does to `sys.modules`, numpy or builtins is in its own copy.
- numpy's legacy global generator (`np.random.seed()` / `np.random.rand()`): seeded from
  the OS at import, so every fork would start from the same state; the worker reseeds it
  from the OS, as a fresh interpreter would be. Python's `random` reseeds itself after fork.
  torch's default generator has a fixed seed at import anyway, as in a fresh interpreter.
- The str hash seed (`-I` ignores PYTHONHASHSEED): the zygote's, shared by every worker it
  forks. Set and dict order of strings is thus the same for every submission of a batch,
  random from one batch to the next. It protects nothing here.
- Descriptors, threads, signal handlers: none are inherited (closed, refused, reset).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from grader.sandbox import isolation
from grader.sandbox.inside import processes
from grader.sandbox.inside.zygote_process import MAX_MESSAGE

BOOT = ("import sys; sys.path.insert(0, {parent!r}); import grader.sandbox.inside.startup; "
        "from grader.sandbox.inside.zygote_process import serve; serve()")
STARTED = ("started as a fork of a warm zygote interpreter that never ran student code or "
           "loaded a reference")


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class ZygoteLost(Exception):
    """The zygote could not be started, died, or refused to fork."""


class Forked:
    """A worker forked by the zygote, shaped like the `subprocess.Popen` a `Session` keeps."""

    def __init__(self, client: Client, pid: int, stdin: int, stdout: int, stderr: int) -> None:
        self.client = client
        self.pid = pid
        """The middle process (the worker's parent); only the zygote signals it."""
        self.stdin = os.fdopen(stdin, "wb", buffering=0)
        self.stdout = os.fdopen(stdout, "rb", buffering=0)
        self.stderr = os.fdopen(stderr, "rb", buffering=0)
        self.returncode: int | None = None
        self.error = ""
        self.worker_pid: int | None = None
        self._done = threading.Event()

    def _exited(self, code: int | None, error: str = "") -> None:
        self.returncode, self.error = code, error
        self._done.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired("zygote worker", timeout or 0)
        return self.returncode

    def kill_all(self) -> None:
        """Kill the worker, and with it its PID namespace."""
        if not self._done.is_set():
            self.client.kill(self.pid)


class Client:
    """The grader's end of one zygote: starts it, asks for forks, learns their exits."""

    def __init__(self, offer: isolation.Offer, preload: tuple[str, ...]) -> None:
        self.preload = preload
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        home = Path("/")
        env = isolation.environment(home)
        # What a preloaded library caches while it is imported (matplotlib's font list) goes
        # to a folder of this zygote's, removed once it is ready: nothing reads it after the
        # import, and no worker can reach it (each has its own /tmp). Removed then, it is not
        # left behind when the grader is killed.
        self.cache = tempfile.mkdtemp(prefix="grader-zygote-")
        env.update(GRADER_ZYGOTE_FD=str(theirs.fileno()), MPLCONFIGDIR=self.cache)
        env[processes.PRELOAD_ENV] = json.dumps(list(preload))
        # As root, a plain process; else root of a user namespace of its own, so that it
        # may make the workers' namespaces and mounts.
        unshare = next((part for part in offer.prefix if Path(part).name == "unshare"), "")
        prefix = [] if offer.root else [unshare, "--user", "--map-root-user"]
        command = [*prefix, *isolation.interpreter(), "-c",
                   BOOT.format(parent=str(isolation.PACKAGE_PARENT))]
        try:
            self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         pass_fds=(theirs.fileno(),), cwd=home, env=env,
                                         start_new_session=True)
        except OSError as exc:
            shutil.rmtree(self.cache, ignore_errors=True)
            raise ZygoteLost(f"the zygote could not be started ({exc})") from None
        finally:
            theirs.close()
        self.sock = ours
        self._lock = threading.Lock()
        self._replies: dict[str, tuple[threading.Event, list[dict[str, Any]]]] = {}
        self._children: dict[int, Forked] = {}
        self._early: dict[int, dict[str, Any]] = {}
        self.alive = True
        self.stderr = b""
        ready = self._receive(timeout=120)
        shutil.rmtree(self.cache, ignore_errors=True)
        if ready is None or ready.get("op") != "ready":
            said = self._said()  # before `close`, which closes the pipe it reads
            self.close()
            raise ZygoteLost(f"the zygote did not start ({said})")
        if ready.get("threads") != 1:
            self.close()
            raise ZygoteLost(f"the zygote has {ready.get('threads')} threads after importing "
                             f"{', '.join(preload) or 'nothing'}; forking it is unsafe")
        self.zygote_pid = int(ready["pid"])
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _said(self) -> str:
        """The last line a zygote that failed to start wrote (say, the ImportError of a
        preloaded library that is not installed), or its exit code. It has forked nothing
        yet, so once it is gone nothing else holds its stderr open."""
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        stderr = self.proc.stderr
        text = stderr.read()[-500:].decode(errors="replace") if stderr else ""
        return text.strip().splitlines()[-1] if text.strip() else f"code {self.proc.poll()}"

    def _receive(self, timeout: float | None) -> dict[str, Any] | None:
        try:
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                return None
            data = self.sock.recv(MAX_MESSAGE)
        except (OSError, ValueError):  # closed under us: the zygote is being stopped
            return None
        return json.loads(data) if data else None

    def _read(self) -> None:
        while True:
            message = self._receive(None)
            if message is None:
                break
            op = message.get("op")
            if op == "spawned":
                waiting = self._replies.get(str(message.get("id")))
                if waiting is not None:
                    waiting[1].append(message)
                    waiting[0].set()
            elif op == "exited":
                with self._lock:
                    child = self._children.pop(int(message["pid"]), None)
                    if child is None:
                        self._early[int(message["pid"])] = message
                if child is not None:
                    child._exited(message.get("code"), str(message.get("error", "")))
        # The zygote is gone, and every worker with it (parent-death signals).
        with self._lock:
            self.alive = False
            children, self._children = list(self._children.values()), {}
            for event, _ in self._replies.values():
                event.set()
        for child in children:
            child._exited(-signal.SIGKILL, "the zygote died")

    def spawn(self, env: dict[str, str], cwd: Path) -> Forked:
        """A new worker with fresh pipes, as `Popen(isolation.command(...))` would give."""
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = secrets.token_hex(8)
        event: threading.Event = threading.Event()
        box: list[dict[str, Any]] = []
        try:
            with self._lock:
                if not self.alive:
                    raise ZygoteLost("the zygote died")
                self._replies[request] = (event, box)
                socket.send_fds(self.sock, [json.dumps(
                    {"op": "spawn", "id": request, "env": env, "cwd": str(cwd)}).encode()],
                    [in_r, out_w, err_w])
            if not event.wait(30) or not box:
                raise ZygoteLost("the zygote did not answer")
            if "error" in box[0]:
                raise ZygoteLost(str(box[0]["error"]))
        except (OSError, ZygoteLost) as exc:
            for fd in (in_w, out_r, err_r):
                os.close(fd)
            raise ZygoteLost(str(exc)) from None
        finally:
            self._replies.pop(request, None)
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        child = Forked(self, int(box[0]["pid"]), in_w, out_r, err_r)
        with self._lock:
            early = self._early.pop(child.pid, None)
            if early is None:
                self._children[child.pid] = child
        if early is not None:
            child._exited(early.get("code"), str(early.get("error", "")))
        return child

    def kill(self, pid: int) -> None:
        try:
            with self._lock:
                self.sock.send(json.dumps({"op": "kill", "pid": pid}).encode())
        except OSError:
            pass  # the zygote is gone, and the worker with it

    def close(self) -> None:
        """Stop the zygote, and every worker it forked."""
        self.alive = False
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # the reader sees the end, and stops
        except OSError:
            pass
        reader = getattr(self, "_reader", None)
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout=5)
        self.sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()


class Zygotes:
    """The warm interpreters one command forks its workers from, one per preload set.

    The command that grades owns them: `with Zygotes() as zygotes:` around its grading (a
    `grade run`, a batch, a Dask worker's life), handed down in `grading.Options.zygotes` and
    `SandboxConfig.zygotes`. Leaving the block stops every zygote it started, so that none
    outlives its grading. A session given none makes its own, stopped with it.
    """

    def __init__(self) -> None:
        self._clients: dict[tuple[str, ...], Client] = {}
        self._lock = threading.Lock()  # held while a zygote boots: one boot per preload set
        self._closed = False
        self._kept: dict[str, Closable] = {}

    def __enter__(self) -> Zygotes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def client(self, offer: isolation.Offer, preload: tuple[str, ...]) -> Client:
        """The zygote for this preload set, started (again, if it died) on first use."""
        key = tuple(sorted(set(preload)))
        with self._lock:
            if self._closed:
                raise ZygoteLost("its command has finished")
            current = self._clients.get(key)
            if current is not None and current.alive and current.proc.poll() is None:
                return current
            if current is not None:
                current.close()
            self._clients[key] = Client(offer, key)
            return self._clients[key]

    def prestart(self, preload: tuple[str, ...]) -> None:
        """Start the zygote for this preload set in the background, so that it boots while
        the grader does its own work; the first spawn waits for it. Where none can be had,
        that spawn says why."""

        def start() -> None:
            offer = isolation.offered()
            if offer.namespaces:
                with contextlib.suppress(ZygoteLost):
                    self.client(offer, preload)

        threading.Thread(target=start, name="zygote-prestart", daemon=True).start()

    def spawn(self, offer: isolation.Offer, preload: tuple[str, ...], env: dict[str, str],
              cwd: Path) -> Forked:
        """A worker forked from the zygote; a zygote found dead is started again once."""
        for attempt in range(2):
            current = self.client(offer, preload)
            try:
                return current.spawn(env, cwd)
            except ZygoteLost:
                if attempt:
                    raise
                # Retire this one even if it still looks alive (just killed, not yet reaped,
                # or a child still holds its socket): the retry must start a new zygote.
                self._retire(current)
        raise AssertionError("unreachable")

    def _retire(self, current: Client) -> None:
        """Stop `current` and forget it, unless another thread already replaced it."""
        with self._lock:
            for key, known in list(self._clients.items()):
                if known is current:
                    del self._clients[key]
        current.close()

    def running(self) -> dict[tuple[str, ...], Client]:
        """The zygotes started and not stopped, by preload set (for tests)."""
        with self._lock:
            return dict(self._clients)

    def keep(self, name: str, make: Callable[[], C]) -> C:
        """What else the command keeps beside its zygotes, by name (`spares.Spares`): made on
        first use, closed before the zygotes when the command ends."""
        with self._lock:
            if self._closed:
                raise ZygoteLost("its command has finished")
            kept = self._kept.setdefault(name, make())
        return kept  # type: ignore[return-value]

    def close(self) -> None:
        """Stop every zygote (they also stop when this process exits); no new one starts."""
        with self._lock:
            kept, self._kept = list(self._kept.values()), {}
        for item in kept:
            item.close()
        with self._lock:
            self._closed = True
            for current in self._clients.values():
                current.close()
            self._clients.clear()
