"""The grader's side of the sandbox: run a submission's cells, call its exercises, enforce limits.

A `Session` owns one worker at a time, reached through a `Transport` (a zygote's fork, a fresh
interpreter or a Jupyter kernel: `transport.py`). When the worker dies or stops answering in
the middle of a statement, that statement is recorded as crashed or timed out, a fresh worker
is started, and the statements that had run before are replayed silently (skipping the bad
one), so that one fatal cell costs only itself. The worker never receives a reference
output; it receives the source of a solution's function only to call an exercise again with
it, once every hidden case has been asked (`call`'s `reference`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from grader.errors import IsolationError, SandboxError
from grader.results import CellResult, CellStatus, Verdict
from grader.sandbox import isolation, not_started
from grader.sandbox.asks import Ask, first_request
from grader.sandbox.config import SandboxConfig
from grader.sandbox.inside.protocol import Reply
from grader.sandbox.limits import CappedOutput, Engine, OnError
from grader.sandbox.outcomes import CallOutcome, outcome_of, refused
from grader.sandbox.resources import Resources
from grader.sandbox.spares import Spare, Spares, start_spare
from grader.sandbox.transport import (
    MAX_REPLY_BYTES,
    TOO_LARGE,
    PipeTransport,
    Transport,
    WorkerLost,
    WorkerStart,
)
from grader.sandbox.zygote import ZygoteLost
from grader.submission import Cell, Submission
from grader.text import cap

GRACE_S = 2.0
MAX_RESTARTS = 8


class Session:
    """Runs one submission's code in a worker; use as a context manager."""

    def __init__(self, config: SandboxConfig | None = None, started: float | None = None,
                 transport: Transport | None = None) -> None:
        self.config = config = config or SandboxConfig()
        self.limits = config.limits
        self.output = CappedOutput(config.limits.output_bytes)
        # The submission's time limit counts from `started` (before loading, when given).
        self.deadline = (started or time.monotonic()) + config.limits.submission_timeout
        self.restarts = 0
        self.offer = isolation.offered()
        self.isolation = isolation.describe(self.offer)
        self.transport = transport or config.transport(self.offer, self.output)
        self._resources: Resources | None = None
        self._replay: list[tuple[Cell, int]] = []  # index -1: a snapshot after the cell
        self._given: set[int] = set()  # cells whose source the worker holds

    @property
    def worker(self) -> WorkerStart:
        """How the (last) worker was started."""
        return self.transport.worker

    # ------------------------------------------------------------------ life cycle

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill the worker and everything it started; remove its folder, cgroup and lease
        (in the background, when the command keeps spare workers: `spares`)."""
        resources, self._resources = self._resources, None
        spares = self._spares()
        if spares is not None and isinstance(self.transport, PipeTransport):
            spares.retire(self.transport, resources)
            return
        self.transport.close()
        if resources is not None:
            resources.close()

    def _spares(self) -> Spares | None:
        """The command's spare workers, for a worker of the fast engine forked from the
        command's zygotes; None for any other."""
        zygotes = self.config.zygotes
        if zygotes is None or self.config.engine is not Engine.FAST or not self.offer.namespaces:
            return None
        try:
            return zygotes.keep("spares", Spares)
        except ZygoteLost:
            return None

    def _spare_kind(self) -> tuple[object, ...]:
        return (self.config.preload, self.limits)

    def _start_worker(self) -> None:
        spares = self._spares() if self._resources is None else None
        if spares is not None:
            spare = spares.take(self._spare_kind())
            spares.prepare(self._spare_kind(), functools.partial(  # the next session's
                start_spare, self.offer, self.config.preload, self.limits, self.config.zygotes))
            if spare is not None and self._adopt(spare):
                return
        if self._resources is None:
            self._resources = Resources(self.limits, self.offer, closed=self.config.closed)
        confined = self.transport.start(self._resources)
        try:
            reply = self._hello()
        except WorkerLost as lost:
            self.transport.stop()
            raise SandboxError(not_started.why(self.config.preload, lost.message)) from None
        self._accept(reply, confined)

    def _adopt(self, spare: Spare) -> bool:
        """Take a spare worker as this session's; False when it died waiting (its zygote was
        killed, say): then the session starts its own."""
        own = self.transport
        self._resources, self.transport = spare.resources, spare.transport
        spare.transport.output = self.output
        try:
            reply = self._hello()
        except WorkerLost:
            spare.transport.close()
            spare.resources.close()
            self._resources, self.transport = None, own
            return False
        own.close()
        self._accept(reply, spare.confined)
        return True

    def _hello(self) -> dict[str, Any]:
        """The worker's answer to `hello`, which tells it what to watch and its `__name__`."""
        hello = {"op": "hello", "module_name": self.config.module_name,
                 "watch": list(self.config.watch)}
        return self._request(hello, None, 60.0)[0]

    def _accept(self, hello: dict[str, Any], confined: bool) -> None:
        """Check the worker's answer to `hello`: a worker confined less than planned is
        refused. Then say how strongly the student's code is isolated."""
        if hello.get("exposed"):
            self.transport.stop()
            raise IsolationError(f"refusing to grade: {hello.get('confine_error')}; or grade "
                                 "where Linux namespaces are available (see `grade doctor`)")
        if Reply.of(hello) is not Reply.OK or (confined and not hello.get("confinement")):
            self.transport.stop()
            raise SandboxError(
                "refusing to grade: the worker could not be confined as this machine allowed "
                f"at start ({hello.get('confine_error') or hello.get('status')}); run "
                "`grade doctor`")
        assert self._resources is not None
        self._given = set()  # a new worker holds no cell's source yet
        self.isolation = isolation.describe(self.offer, str(hello.get("confinement") or ""),
                                            self._resources.memory(), self.transport.started)

    def _exec_request(self, cell: Cell, index: int,
                      quiet: bool = False) -> tuple[dict[str, Any], np.ndarray | None]:
        """The request to run statement `index` of `cell`; the cell's source goes as bytes once
        to each worker (in JSON, escapes may pass the header's limit; 4,000 statements: 12 s)."""
        header = {"op": "exec", "cell": cell.index, "stmt": index,
                  "timeout": self.limits.cell_timeout, **({"quiet": True} if quiet else {})}
        if cell.index in self._given:
            return header, None
        self._given.add(cell.index)
        return header, np.frombuffer(cell.source.encode(), dtype=np.uint8)

    def _request(self, header: dict[str, Any], value: Any, timeout: float,
                 limit: int = MAX_REPLY_BYTES) -> tuple[dict[str, Any], Any]:
        deadline = min(time.monotonic() + timeout, self.deadline + GRACE_S)
        return self.transport.request(header, value, deadline, limit)

    def _ensure_worker(self) -> None:
        """Start a worker if there is none, replaying the statements that ran before."""
        if self.transport.alive:
            return
        self._start_worker()
        for cell, index in self._replay:
            # A replayed statement printed its output the first time: `quiet`, it prints
            # nowhere now (muting in the grader would race with output still in the pipe).
            request, source = (({"op": "snapshot"}, None) if index < 0 else
                               self._exec_request(cell, index, quiet=True))
            self._request(request, source, self.limits.cell_timeout + GRACE_S)

    def _restart(self) -> None:
        self.transport.stop()
        self.restarts += 1

    # ------------------------------------------------------------------ cells

    def run(self, submission: Submission) -> tuple[CellResult, ...]:
        """Run every cell, statement by statement; return what happened to each one."""
        results = []
        halted = False
        for cell in submission.cells:
            if halted:
                results.append(CellResult(cell.index, CellStatus.SKIPPED,
                                          "not run: an earlier cell failed and grading stops "
                                          "at the first failure (--on-error stop)"))
                continue
            result = self._run_cell(cell)
            results.append(result)
            halted = (self.config.on_error is OnError.STOP
                      and result.status not in (CellStatus.OK, CellStatus.SKIPPED))
        if self.config.call_groups:  # forked now (where a fork fails: at the first call)
            self._tell({"op": "prepare", "groups": list(self.config.call_groups)},
                       self.limits.call_timeout)
        return tuple(results)

    def _run_cell(self, cell: Cell) -> CellResult:
        if cell.syntax_error:
            return CellResult(cell.index, CellStatus.ERROR,
                              f"{cell.syntax_error}; the cell did not run")
        notes: list[tuple[CellStatus, str]] = []
        went_on = False
        for statement in cell.statements:
            if statement.skip_reason:
                notes.append((CellStatus.SKIPPED,
                              f"line {statement.lineno}: {statement.skip_reason}"))
                continue
            status, message = self._exec(cell, statement.index)
            if status is CellStatus.OK:
                continue
            notes.append((status, f"line {message}"))
            remaining = len(cell.statements) - statement.index - 1
            if self.config.on_error is not OnError.STATEMENT:
                if remaining:
                    notes.append((CellStatus.SKIPPED, f"the {remaining} statement(s) after it did "
                                  "not run, as in Jupyter (--on-error "
                                  f"{self.config.on_error.value})"))
                break
            went_on = went_on or remaining > 0
        self._snapshot(cell)
        if not notes:
            return CellResult(cell.index, CellStatus.OK)
        if went_on:
            notes.append((CellStatus.OK, "the grader ran the rest of the cell anyway; Jupyter "
                          "would have stopped at the first error"))
        worst = next((s for s in (CellStatus.CRASHED, CellStatus.TIMEOUT, CellStatus.ERROR)
                      if any(n[0] is s for n in notes)), CellStatus.SKIPPED)
        # A cell of 500 shell escapes would otherwise make a message as long as the cell.
        return CellResult(cell.index, worst, cap("; ".join(text for _, text in notes)))

    def _snapshot(self, cell: Cell) -> None:
        """Let the worker keep the state right after this cell for what the cell defined."""
        if self.config.watch and self._tell({"op": "snapshot"}, self.limits.cell_timeout):
            self._replay.append((cell, -1))

    def _tell(self, header: dict[str, Any], timeout: float) -> bool:
        """Make a request whose reply only says it was done (a snapshot, `prepare`): False
        when there is no worker, or it was lost meanwhile (then it is restarted)."""
        if not self.transport.alive:
            return False
        try:
            self._request(header, None, timeout + GRACE_S)
        except WorkerLost:
            self._restart()
            return False
        return True

    def _exec(self, cell: Cell, index: int) -> tuple[CellStatus, str]:
        lineno = cell.statements[index].lineno
        if time.monotonic() > self.deadline:
            return CellStatus.TIMEOUT, (f"{lineno}: not run, the submission's time limit of "
                                    f"{self.limits.submission_timeout:g} s was used up")
        try:
            self._ensure_worker()
            reply, _ = self._request(*self._exec_request(cell, index),
                                     self.limits.cell_timeout + GRACE_S)
        except WorkerLost as lost:
            self._restart()
            if lost.status is CellStatus.TIMEOUT:
                return CellStatus.TIMEOUT, (
                    f"{lineno}: stopped after {self.limits.cell_timeout:g} s "
                    "(it did not stop when interrupted); execution went on")
            return CellStatus.CRASHED, f"{lineno}: {lost.message}; only this statement was lost"
        status = Reply.of(reply)
        line = reply.get("line") or lineno
        if status is Reply.OK:
            self._replay.append((cell, index))
            return CellStatus.OK, ""
        if status is Reply.TIMEOUT:
            return CellStatus.TIMEOUT, (f"{lineno}: stopped after {self.limits.cell_timeout:g} s; "
                                    "execution went on")
        self._replay.append((cell, index))  # it ran partly: its effects stay, as in Jupyter
        if status is Reply.EXIT:
            return CellStatus.ERROR, f"{line}: {reply.get('message')} ended only this statement"
        return CellStatus.ERROR, f"{line}: {reply.get('message', 'failed')}"

    # ------------------------------------------------------------------ calls

    def call(self, name: str, kind: str, args: tuple[Any, ...], init: dict[str, Any],
             tensors: str | None, at: str = "end",
             max_bytes: int = MAX_REPLY_BYTES, group: str = "",
             fresh: bool = False, reference: dict[str, str] | None = None) -> CallOutcome:
        """One call's outcome (`Ask` says what each argument means)."""
        return self.calls([Ask(name, kind, args, init, tensors, at, max_bytes, group, fresh,
                               reference)])[0]

    def calls(self, asks: Sequence[Ask]) -> list[CallOutcome]:
        """The outcome of each call, as `call` gives it, the calls sent to the worker as one
        request and answered one reply per call, each by its own deadline. A call whose worker
        dies or stops answering is asked once more in a new worker, with the calls after it
        (which the lost worker never made), as `call` does it alone."""
        outcomes: list[CallOutcome | None] = [None] * len(asks)
        tries = [0] * len(asks)
        while any(outcome is None for outcome in outcomes):
            left = [i for i, outcome in enumerate(outcomes) if outcome is None]
            if time.monotonic() > self.deadline or self.restarts > MAX_RESTARTS:
                for i in left:
                    outcomes[i] = self._not_run()
                break
            # A kernel answers a request with one reply: one call at a time, each checked
            # against the submission's time limit above, as a lone call is.
            grouped = isinstance(self.transport, PipeTransport)
            left = left[:first_request([asks[i] for i in left]) if grouped else 1]
            try:
                self._ensure_worker()
                read = self._send_calls([asks[i] for i in left])
                for position, i in enumerate(left):
                    outcomes[i] = self._reply(read, position, asks[i].max_bytes)
            except SandboxError:
                # A worker restarted after the submission's time ran out cannot say hello in
                # time: that is the submission's time-out, never the grader's failure (which
                # a hidden call could otherwise choose to cause, as a bit of its inputs).
                if time.monotonic() > self.deadline:
                    continue
                raise
            except WorkerLost:
                self._restart()
                i = next(i for i in left if outcomes[i] is None)
                tries[i] += 1
                if tries[i] >= 2:
                    outcomes[i] = CallOutcome(Verdict.CRASHED,
                                              message="the interpreter died during this call")
        return [outcome for outcome in outcomes if outcome is not None]

    def _not_run(self) -> CallOutcome:
        if time.monotonic() > self.deadline:
            return CallOutcome(Verdict.TIMED_OUT, message="not run: the submission's time "
                               f"limit of {self.limits.submission_timeout:g} s was used up")
        return CallOutcome(Verdict.CRASHED, message="not run: the student's code killed the "
                           f"interpreter more than {MAX_RESTARTS} times")

    def _send_calls(self, asks: Sequence[Ask]) -> Callable[[int, int], tuple[dict[str, Any], Any]]:
        """Send the calls (a lone one as a plain request); a function that reads the reply to
        the n-th within `limit` bytes, by the call's own deadline counted from when the grader
        waits for it (the worker makes them in turn). Groups go to a `PipeTransport` only."""
        timeout = self.limits.call_timeout + GRACE_S + 1
        fresh = self.config.fork_every_call

        def deadline() -> float:
            return min(time.monotonic() + timeout, self.deadline + GRACE_S)

        if len(asks) == 1:
            return lambda n, limit: self._request(asks[n].header(self.limits.call_timeout, fresh),
                                                  asks[n].value(), timeout, limit)
        transport = self.transport
        assert isinstance(transport, PipeTransport)
        nonce = transport.send({"op": "calls", "calls": [
            ask.header(self.limits.call_timeout, fresh) for ask in asks]},
            [ask.value() for ask in asks], deadline())
        return lambda n, limit: transport.receive(f"{nonce}/{n}", deadline(), limit)

    def _reply(self, read: Callable[[int, int], tuple[dict[str, Any], Any]], position: int,
               limit: int) -> CallOutcome:
        """The outcome of the call at `position` of a request; WorkerLost when the worker is
        lost (a reply refused as it was read leaves the channel in step: the call's error)."""
        try:
            reply, value = read(position, limit)
        except WorkerLost as lost:
            if not lost.in_sync:
                raise
            return refused(lost.message, too_large=lost.message == TOO_LARGE)
        return outcome_of(reply, value, self.limits.call_timeout)

    def captured_output(self) -> str:
        """What the student's code printed (capped), up to the last reply, or up to
        `seal_output`."""
        self.transport.settle()
        return self.output.text()

    def seal_output(self) -> None:
        """Keep what the student's code prints from now on apart from `captured_output`: the
        grader calls this before the first hidden case, whose inputs a process of the
        student's may print on the cells' channel (a descriptor kept from a cell)."""
        self.transport.settle()
        self.output.seal()

    def late_output(self) -> str:
        """What the student's code printed after `seal_output` (capped)."""
        self.transport.settle()
        return self.output.late.text() if self.output.late is not None else ""

