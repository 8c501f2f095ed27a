"""Workers started ahead, and workers put away after: what a submission's start and end cost
the grader, done while another submission runs.

A worker's start is mostly waiting: the zygote's fork, new namespaces, the confinement, and
above all joining the submission's memory cgroup, which makes the kernel wait for other CPUs
(8 to 15 ms here). None of it depends on the submission: a worker forked from the zygote with
namespaces is planned from the limits and the preload set alone (`Resources`). So when a
session of the fast engine starts its worker, and it is not the command's first of its kind
(a command that grades one submission wastes none), it asks for the next one at once
(`prepare`), in a thread: the next submission of the same command finds a confined worker
waiting for its `hello` (`take`). A spare has run no student code, holds no submission and
no reference, and is stopped with the command if nobody takes it.

After grading, the worker is killed at once, and what remains (waiting for its PID namespace
to die, removing its folder and cgroup, giving its user id back) is done in the background
(`retire`). The command waits for all of it before it ends (`close`).

Only sessions given the command's `Zygotes` use this (`SandboxConfig.zygotes`): a session that
starts its own zygote has no next submission to start ahead for.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from grader.sandbox import isolation
from grader.sandbox.limits import CappedOutput, Limits
from grader.sandbox.resources import Resources
from grader.sandbox.transport import PipeTransport, WorkerStart
from grader.sandbox.zygote import Zygotes

READY_PER_KIND = 1
"""Spare workers kept ready for one kind of worker: every process that grades (`grade run`,
`grade serve`, each job process of a batch, a Dask worker of one thread) grades one submission at
a time."""


@dataclass(frozen=True)
class Spare:
    """A worker started and confined, waiting for its `hello`."""

    resources: Resources
    transport: PipeTransport
    confined: bool
    """Whether it was to be confined (the answer to its `hello` says how)."""


class Background:
    """Tasks run in threads, at most `width` at a time; `shutdown` refuses new ones and waits
    for the rest. What `ThreadPoolExecutor` gives here, without importing `concurrent.futures`
    and with it `logging`, which cost a `grade run` a tenth of numpy's import."""

    def __init__(self, width: int) -> None:
        self._slots = threading.BoundedSemaphore(width)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, task: Callable[..., object], *args: object) -> None:
        """Run `task(*args)` in a thread; RuntimeError once shut down."""
        with self._lock:
            if self._closed:
                raise RuntimeError("shut down")
            thread = threading.Thread(target=self._run, args=(task, args), name="spare",
                                      daemon=True)
            self._threads = [*(t for t in self._threads if t.is_alive()), thread]
            thread.start()

    def _run(self, task: Callable[..., object], args: tuple[object, ...]) -> None:
        with self._slots:
            with contextlib.suppress(Exception):  # nobody waits for its outcome
                task(*args)

    def shutdown(self) -> None:
        """Start no more; wait for the tasks started."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for thread in threads:
            thread.join()


class Spares:
    """The spare workers of one command, by kind, and the workers it is putting away."""

    def __init__(self) -> None:
        self._ready: dict[Hashable, list[Spare]] = {}
        self._pending: dict[Hashable, int] = {}
        self._asked: dict[Hashable, int] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._threads = Background(2)

    def take(self, kind: Hashable) -> Spare | None:
        """A spare worker of this kind, if one is ready."""
        with self._lock:
            ready = self._ready.get(kind)
            return ready.pop() if ready else None

    def prepare(self, kind: Hashable, make: Callable[[], Spare | None]) -> None:
        """Start a worker of this kind in the background, unless enough are ready or on
        their way, or this is the command's first worker of the kind (a command that grades
        one submission, `grade run` on one file, starts none); `make` returns None when it
        could not start a good one."""
        with self._lock:
            self._asked[kind] = asked = self._asked.get(kind, 0) + 1
            waiting = len(self._ready.get(kind, ())) + self._pending.get(kind, 0)
            if self._closed or asked < 2 or waiting >= READY_PER_KIND:
                return
            self._pending[kind] = self._pending.get(kind, 0) + 1
        try:
            self._threads.submit(self._make, kind, make)
        except RuntimeError:  # closed meanwhile
            self._settle(kind, None)

    def _make(self, kind: Hashable, make: Callable[[], Spare | None]) -> None:
        try:
            spare = make()
        except Exception:  # the next session starts its own worker, and says what failed
            spare = None
        self._settle(kind, spare)

    def _settle(self, kind: Hashable, spare: Spare | None) -> None:
        with self._lock:
            self._pending[kind] -= 1
            if spare is not None and not self._closed:
                self._ready.setdefault(kind, []).append(spare)
                return
        if spare is not None:
            _stop(spare.transport, spare.resources)

    def retire(self, transport: PipeTransport, resources: Resources | None) -> None:
        """Kill a worker now; wait for it and remove what it had in the background."""
        transport.kill()
        try:
            self._threads.submit(_stop, transport, resources)
        except RuntimeError:  # the command is closing: do it here
            _stop(transport, resources)

    def waiting(self) -> list[int]:
        """The process ids of the spare workers ready now (their zygote's children)."""
        with self._lock:
            return [spare.transport.pid for ready in self._ready.values() for spare in ready
                    if spare.transport.pid is not None]

    def close(self) -> None:
        """Finish putting workers away, and stop the spares nobody took."""
        with self._lock:
            self._closed = True
        self._threads.shutdown()
        with self._lock:
            spares = [spare for ready in self._ready.values() for spare in ready]
            self._ready.clear()
        for spare in spares:
            _stop(spare.transport, spare.resources)


def start_spare(offer: isolation.Offer, preload: tuple[str, ...], limits: Limits,
                zygotes: Zygotes | None) -> Spare | None:
    """A worker of the fast engine forked from the command's zygotes for this preload set and
    these limits, started and confined: the next session's (None when the zygote failed)."""
    resources = Resources(limits, offer)
    transport = PipeTransport(offer, preload, CappedOutput(limits.output_bytes),
                              use_zygote=True, zygotes=zygotes)
    try:
        confined = transport.start(resources)
    except BaseException:
        resources.close()
        raise
    if transport.worker is not WorkerStart.ZYGOTE:
        transport.close()
        resources.close()
        return None
    return Spare(resources, transport, confined)


def _stop(transport: PipeTransport, resources: Resources | None) -> None:
    transport.close()
    if resources is not None:
        resources.close()
