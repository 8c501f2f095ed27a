"""One zygote per preload set for every grading a pytest worker does, as in a batch.

A command owns its zygotes (`grader.sandbox.zygote.Zygotes`): `grade run`, `grading.grade`
without a command's zygotes, and a session without either each start one, a fresh interpreter
that imports numpy, and stop it when they end; a batch forks all its workers from one. Booting
one for each grading made a grading in this process 0.41 s instead of 0.14 s, and cost the
suite about a sixth of its CPU (1,272 s before, 1,070 s after, in two full runs on 2 cores).

`Shared.client` stands in for `Zygotes.client` (`conftest.py` puts it there for the whole
session): every `Zygotes` of this process then takes its zygotes from one pool, kept for the
pytest worker's life. Each `Zygotes` still keeps its own spares, and refuses work once its
command has closed it; only the zygote its workers fork from is shared. What a zygote gives
a worker is the same whichever command started it: it imports modules and never runs a
submission's code (`zygote.py`, "What a fork shares with the others"). A zygote that a test
kills is started again by the next grading, as a command's would be.

Tests that watch a zygote's life opt out with the `own_zygotes` mark (`conftest.py`), and
`conftest.OwnProcesses` opts out while it counts a test's processes: a shared zygote started
then would outlive the test. A zygote that a grading finds unanswering is stopped
(`Zygotes._retire`); shared, that also ends the workers other `Zygotes` of the pytest worker
forked from it (a module's spares), which their sessions meet as a lost worker and start
again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from grader.sandbox import isolation
from grader.sandbox.zygote import Client, ZygoteLost, Zygotes


class Shared:
    """The zygotes every `Zygotes` of this process forks from, by isolation offer (a test
    may offer another) and preload set."""

    original = staticmethod(Zygotes.client)
    """`Zygotes.client` as the product defines it (a test of a zygote's own life uses it)."""

    def __init__(self) -> None:
        self._pools: dict[isolation.Offer, Zygotes] = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def client(self, owner: Zygotes, offer: isolation.Offer, preload: tuple[str, ...]) -> Client:
        """`owner`'s zygote for this preload set: the pool's, started on first use; refused,
        as the product refuses it, once `owner` is closed. In a process forked from this one
        (a batch's job), `owner`'s own: the pool's sockets and reader threads are this
        process's."""
        if os.getpid() != self._pid:
            return Shared.original(owner, offer, preload)
        if owner._closed:
            raise ZygoteLost("its command has finished")
        with self._lock:
            pool = self._pools.get(offer)
            if pool is None:
                pool = self._pools[offer] = Zygotes()
        return Shared.original(pool, offer, preload)

    def close(self) -> None:
        """Stop every zygote of the pool."""
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.close()


@contextmanager
def own() -> Iterator[None]:
    """While the block runs, every `Zygotes` boots and stops zygotes of its own, as the product
    does (`Shared.original`)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Zygotes, "client", Shared.original)
        yield
