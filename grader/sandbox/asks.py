"""The calls a grader asks of a worker, as plain data, and how many go in one request.

A group of calls (the public cases of an exercise, then the hidden ones) goes to the worker as
one request (`Session.calls`), answered with one reply per call: the worker makes them one
after the other, as it would one request at a time. A request holds as many calls as the
worker's decoder accepts with room to spare (`MAX_NODES`, `MAX_BYTES`); more are split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader.sandbox.inside import protocol
from grader.sandbox.transport import MAX_REPLY_BYTES

MAX_NODES = protocol.MAX_NODES // 2
"""Values (arrays, numbers, containers) of the calls' inputs in one request."""
MAX_BYTES = 16 << 20
"""Bytes of the calls' input arrays in one request."""
MAX_CALLS = 64
"""Calls in one request."""


@dataclass(frozen=True)
class Ask:
    """One call of an exercise on one case's inputs, in a fork of the student's state that no
    other call has changed (`call_process`: calls of the same `group` share a fork while each
    leaves it as it was)."""

    name: str
    """The exercise."""
    kind: str
    """"function", or "class": a module built with `init`, given the state its first input
    holds, and run forward on the others."""
    args: tuple[Any, ...]
    """The case's inputs."""
    init: dict[str, Any] = field(default_factory=dict)
    tensors: str | None = None
    """The tensor library the array inputs are converted to inside ("torch"), if any."""
    at: str = "end"
    """"end" (after every cell) or "definition" (right after the cell that last defined the
    exercise)."""
    max_bytes: int = MAX_REPLY_BYTES
    """A return value whose arrays hold more is refused as the grader reads it, and dropped a
    chunk at a time (the call's error). The worker is never told it: it is derived from the
    expected outputs."""
    group: str = ""
    fresh: bool = False
    """A fork of its own, whatever the call before it left."""
    reference: dict[str, str] | None = None
    """A solution's function ("name", and the "source" that defines it) that the call process
    puts in place of the submission's own before the call (`grader.pipeline.owncode`, after
    every hidden call)."""

    def header(self, timeout: float, fresh: bool) -> dict[str, Any]:
        """The call's request header; the worker is never told `max_bytes`."""
        return {"op": "call", "name": self.name, "kind": self.kind, "tensors": self.tensors,
                "timeout": timeout, "at": self.at, "group": self.group,
                "fresh": self.fresh or fresh}

    def value(self) -> dict[str, Any]:
        """What the call is given: the inputs, and the solution's function if any."""
        sent: dict[str, Any] = {"args": list(self.args), "init": self.init}
        if self.reference:
            sent["reference"] = self.reference
        return sent


def first_request(asks: Sequence[Ask]) -> int:
    """How many of `asks`, from the first, go in one request (at least one). A group nests
    each call's value one level deeper than a lone call does: a call whose inputs are nested
    as deep as a lone request allows (`protocol.MAX_DEPTH`) goes alone."""
    nodes = size = 0
    for count, ask in enumerate(asks):
        ask_nodes, ask_bytes, depth = _measure(ask.value())
        if depth >= protocol.MAX_DEPTH:
            return count or 1
        nodes, size = nodes + ask_nodes + 4, size + ask_bytes
        if count and (nodes > MAX_NODES or size > MAX_BYTES or count >= MAX_CALLS):
            return count
    return len(asks)


def _measure(value: Any, depth: int = 0) -> tuple[int, int, int]:
    """(values, bytes of arrays, levels of containers) of what `protocol.encode` makes of
    `value`, roughly; past `protocol.MAX_DEPTH` levels, as if at that depth."""
    if depth > protocol.MAX_DEPTH:
        return 1, 0, protocol.MAX_DEPTH
    if isinstance(value, (list, tuple)):
        parts = [_measure(item, depth + 1) for item in value]
    elif isinstance(value, dict):
        parts = [_measure(item, depth + 1) for item in value.values()]
    else:
        return 1, np.asarray(value).nbytes if isinstance(value, np.ndarray) else 0, 0
    return (1 + sum(n for n, _, _ in parts), sum(b for _, b, _ in parts),
            1 + max((d for _, _, d in parts), default=0))
