"""The worker's signal handlers: the statement timer's, and dying of a deadly signal as PID 1.

Signals whose default action ends a process, and that a notebook's code may send itself:
`os.kill(os.getpid(), signal.SIGTERM)`, `os.kill(0, ...)`, `signal.raise_signal(...)`, a child
that kills its parent, `!kill 1`. A Jupyter kernel dies of them. The worker does not: it is
PID 1 of its PID namespace (see isolation), and the kernel drops a signal that init receives
from inside its namespace unless init handles it. So these statements would run "ok".

A handler for each is the robust way out: the kernel calls it whoever sent the signal and
however, where looking for `os.kill(os.getpid(), ...)` in the source would see only the
spellings it knows. The handler does what the default action would (see `_die_of`).
Not here: SIGINT (Python's KeyboardInterrupt, as in Jupyter), SIGALRM (the statement timer),
SIGPIPE and SIGXFSZ (Python ignores them), SIGKILL and SIGSTOP (no process can handle them,
so a worker that sends them to itself runs on), and the fault signals SIGSEGV, SIGBUS,
SIGILL, SIGFPE, SIGTRAP and SIGSYS: a real fault kills even PID 1, and a Python handler
would return to the faulting instruction, which faults again, forever.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from grader.sandbox.inside import processes
from grader.sandbox.inside.streams import flush


class StatementTimeout(BaseException):
    """Raised by the soft timer inside a statement that runs past its limit."""


def raise_timeout(signum: int, frame: Any) -> None:
    """The SIGALRM handler of a statement's soft timer."""
    raise StatementTimeout()


def die_of_deadly_signals() -> None:
    """End on a deadly signal as any other process would. A signal ignored when the worker
    started was ignored by the grader, which passes that on to the interpreters it starts
    (`nohup` ignores SIGHUP), and is not the student's: it gets the default action again.
    As PID 1 of a namespace, a handler does what the default action would."""
    init = os.getpid() == 1  # else the kernel applies the default action itself
    for number in processes.DEADLY:
        try:
            if signal.getsignal(number) in (signal.SIG_DFL, signal.SIG_IGN):
                signal.signal(number, _die_of if init else signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # a signal this system does not let a process handle
    if init:
        # A process forked from the worker (a snapshot, a call, the student's own) is not
        # init: the default action serves it, at once, even in the middle of a long C call.
        os.register_at_fork(after_in_child=_default_deadly_signals)


def _default_deadly_signals() -> None:
    for number in processes.DEADLY:
        try:
            if signal.getsignal(number) is _die_of:
                signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):
            pass


def _die_of(signum: int, frame: Any) -> None:
    """The default action of a deadly signal: the process ends, whatever the student's code
    was doing (no exception, so no `try` or `finally` of theirs runs)."""
    flush()
    if os.getpid() != 1:  # a child forked without Python's fork hooks: die of it
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
    # PID 1 cannot die of it: it exits with the status a shell gives a process the signal
    # killed (128 + its number), so the statement is recorded as crashed, the worker is
    # started again and the statements before it are replayed, as after any other death.
    os._exit(128 + signum)
