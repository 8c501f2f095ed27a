"""One tree of errors for what we, the instructor's setup or the command line got wrong.

A student's mistake is never one of these: it is a status and a message in the result.
Each error carries its exit code and a message that names the culprit and the fix.
"""

from __future__ import annotations


class GraderError(Exception):
    """Base of every error the grader raises on purpose."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(GraderError):
    """The command line asks for something that cannot be done."""

    exit_code = 2


class SubmissionError(GraderError):
    """A submission file cannot be read as a notebook or module."""

    @classmethod
    def unreadable(cls, path: str, problem: str, fix: str) -> SubmissionError:
        """Build the message "<file>: <problem>; <fix>"."""
        return cls(f"{path}: {problem}; {fix}")


class SpecError(GraderError):
    """An assignment declaration, solution or reference file is broken."""


class ReferencesError(SpecError):
    """Stored references are missing or no longer match the solutions."""


class SandboxError(GraderError):
    """The sandbox could not be started at all (not a student's fault)."""


class IsolationError(SandboxError):
    """Student code would run less isolated than asked: no namespaces under
    `--require-namespaces`, or, without namespaces, a file the grader holds that the
    worker's user could open. Nothing was graded."""

    exit_code = 3
