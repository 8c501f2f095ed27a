"""What one call of an exercise produced, as plain data: a worker's reply made into a
`CallOutcome` (`Session.call`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from grader.results import Verdict
from grader.sandbox.inside.calling import NOT_IMPLEMENTED
from grader.sandbox.inside.protocol import Reply


@dataclass(frozen=True)
class CallOutcome:
    """What one call of an exercise produced, as plain data."""

    failure: Verdict | None = None
    """Why the call returned no value to judge (not written, raised, crashed, timed out, too
    large, or data that is not numbers); None when it returned one."""
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
    error: str = ""
    """For a raise: the exception's class, as "module.name" ("builtins.IndexError")."""
    line: int | None = None
    """For a raise: the line of the student's code it came from, when known."""

    @property
    def returned(self) -> bool:
        """Whether the call returned a value, to be judged."""
        return self.failure is None

    @property
    def unattempted(self) -> bool:
        """Whether the call raised NotImplementedError: a stub nobody has written."""
        return self.error == "builtins.NotImplementedError"


def refused(message: str, too_large: bool) -> CallOutcome:
    """A reply the grader refused as it read it (too large, or data that is not numbers)."""
    return CallOutcome(Verdict.TOO_LARGE if too_large else Verdict.WRONG_TYPE,
                       message=message.replace("the worker sent", "the call returned"))


def outcome_of(reply: dict[str, Any], value: Any, timeout: float) -> CallOutcome:
    """What a reply to a call says happened, with what the call printed."""
    printed = str(reply.get("printed") or "")
    return replace(_outcome(reply, value, timeout), printed=printed,
                   reused=reply.get("reused") is True)


def _outcome(reply: dict[str, Any], value: Any, timeout: float) -> CallOutcome:
    status = Reply.of(reply)
    message = str(reply.get("message", ""))[:500]
    if status is Reply.NO_SNAPSHOT:
        return CallOutcome(Verdict.NOT_WRITTEN,
                           message="no snapshot: it was never defined by a cell")
    if status is Reply.OK:
        return CallOutcome(None, value)
    if status is Reply.MISSING:
        return CallOutcome(Verdict.NOT_WRITTEN, message=message)
    if status is Reply.TIMEOUT:
        return CallOutcome(Verdict.TIMED_OUT, message=f"did not return within {timeout:g} s")
    if status is Reply.CRASHED:
        return CallOutcome(Verdict.CRASHED, message=f"crashed: {message}")
    if status is Reply.REFUSED:  # too much data returned, or no process for the call
        return CallOutcome(Verdict.TOO_LARGE if reply.get("too_large") is True
                           else Verdict.CRASHED, message=message)
    line = reply.get("line")
    line = line if isinstance(line, int) and not isinstance(line, bool) else None
    where = f" (line {line})" if line is not None else ""
    name, module = reply.get("ename"), reply.get("emodule")
    error = f"{module}.{name}" if isinstance(name, str) and isinstance(module, str) else ""
    raised = CallOutcome(Verdict.RAISED, message=f"raised {message}{where}", error=error,
                         line=line)
    if raised.unattempted:
        return replace(raised, message=f"{NOT_IMPLEMENTED}{where}")
    return raised
