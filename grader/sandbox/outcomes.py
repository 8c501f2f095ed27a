"""What one call of an exercise produced, as plain data: a worker's reply made into a
`CallOutcome` (`Session.call`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.results import CheckStatus
from grader.sandbox.inside.calling import NOT_IMPLEMENTED
from grader.sandbox.inside.protocol import Reply


@dataclass(frozen=True)
class CallOutcome:
    """What one call of an exercise produced, as plain data."""

    status: CheckStatus
    """PASSED here means "returned a value"; else MISSING, ERROR or TIMEOUT."""
    value: Any = None
    """The decoded return value (arrays, tuples, lists, `protocol.Unsupported`)."""
    message: str = ""
    """Why there is no value."""
    printed: str = ""
    """What the call printed (capped). The grader decides who sees it: a hidden case's call
    may print its inputs, so its output reaches no student."""
    reused: bool = False
    """The worker says that it ran in a call process that had served another call before
    it (`call_process`). The student's code can forge it: it decides nothing."""


def outcome_of(reply: dict[str, Any], value: Any, timeout: float) -> CallOutcome:
    """What a reply to a call says happened."""
    status = Reply.of(reply)
    message = str(reply.get("message", ""))[:500]
    if status is Reply.NO_SNAPSHOT:
        return CallOutcome(CheckStatus.MISSING,
                           message="no snapshot: it was never defined by a cell")
    if status is Reply.OK:
        return CallOutcome(CheckStatus.PASSED, value)
    if status is Reply.MISSING:
        return CallOutcome(CheckStatus.MISSING, message=message)
    if status is Reply.TIMEOUT:
        return CallOutcome(CheckStatus.TIMEOUT, message=f"did not return within {timeout:g} s")
    if status is Reply.CRASHED:
        return CallOutcome(CheckStatus.ERROR, message=f"crashed: {message}")
    if status is Reply.REFUSED:
        return CallOutcome(CheckStatus.ERROR, message=message)
    line = reply.get("line")
    where = f" (line {line})" if isinstance(line, int) else ""
    if message.startswith("NotImplementedError"):
        return CallOutcome(CheckStatus.ERROR, message=f"{NOT_IMPLEMENTED}{where}")
    return CallOutcome(CheckStatus.ERROR, message=f"raised {message}{where}")
