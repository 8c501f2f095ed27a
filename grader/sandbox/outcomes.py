"""What one call of an exercise produced, as plain data: a worker's reply made into a
`CallOutcome` (`Session.call`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from grader.results import CheckStatus, Verdict
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
    verdict: Verdict = Verdict.PASSED
    """Why there is no value, in a word (PASSED: there is one, to be judged)."""
    error: str = ""
    """For a raise: the exception's class, as "module.name" ("builtins.IndexError")."""
    line: int | None = None
    """For a raise: the line of the student's code it came from, when known."""

    @property
    def unattempted(self) -> bool:
        """Whether the call raised NotImplementedError: a stub nobody has written."""
        return self.error == "builtins.NotImplementedError"


def outcome_of(reply: dict[str, Any], value: Any, timeout: float) -> CallOutcome:
    """What a reply to a call says happened."""
    status = Reply.of(reply)
    message = str(reply.get("message", ""))[:500]
    if status is Reply.NO_SNAPSHOT:
        return CallOutcome(CheckStatus.MISSING, verdict=Verdict.NOT_WRITTEN,
                           message="no snapshot: it was never defined by a cell")
    if status is Reply.OK:
        return CallOutcome(CheckStatus.PASSED, value)
    if status is Reply.MISSING:
        return CallOutcome(CheckStatus.MISSING, message=message, verdict=Verdict.NOT_WRITTEN)
    if status is Reply.TIMEOUT:
        return CallOutcome(CheckStatus.TIMEOUT, message=f"did not return within {timeout:g} s",
                           verdict=Verdict.TIMED_OUT)
    if status is Reply.CRASHED:
        return CallOutcome(CheckStatus.ERROR, message=f"crashed: {message}",
                           verdict=Verdict.CRASHED)
    if status is Reply.REFUSED:  # too much data returned, or no process for the call
        return CallOutcome(CheckStatus.ERROR, message=message, verdict=Verdict.TOO_LARGE
                           if reply.get("too_large") is True else Verdict.CRASHED)
    line = reply.get("line")
    line = line if isinstance(line, int) and not isinstance(line, bool) else None
    where = f" (line {line})" if line is not None else ""
    name, module = reply.get("ename"), reply.get("emodule")
    error = f"{module}.{name}" if isinstance(name, str) and isinstance(module, str) else ""
    raised = CallOutcome(CheckStatus.ERROR, message=f"raised {message}{where}",
                         verdict=Verdict.RAISED, error=error, line=line)
    if raised.unattempted:
        return replace(raised, message=f"{NOT_IMPLEMENTED}{where}")
    return raised
