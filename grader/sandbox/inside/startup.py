"""The worker process's start: take the protocol's descriptors, apply the limits and the
confinement the grader planned, then hand over to the `Worker` loop (`main`).

Every worker of the fast engine starts here, a fresh interpreter (`isolation.command`) or a
fork of the zygote (`zygote_process`); a Jupyter kernel is confined by the same code
(`kernel_agent.main`). A worker that cannot be confined as planned runs no student code.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import warnings

from grader.sandbox.inside import processes, protocol
from grader.sandbox.inside.calling import SANDBOX_ENV
from grader.sandbox.inside.cellwarnings import show_warning
from grader.sandbox.inside.protocol import Reply
from grader.sandbox.inside.signals import die_of_deadly_signals
from grader.sandbox.inside.streams import OutStream
from grader.sandbox.inside.worker import MAX_CHILD_BYTES, Confinement, Worker


def confine_as_planned() -> Confinement:
    """Apply the limits and the confinement the grader planned (in GRADER_LIMITS and
    GRADER_CONFINE, removed from the environment); what was done, or why it failed."""
    os.environ[SANDBOX_ENV] = "1"
    _first_to_go()
    processes.preload(json.loads(os.environ.pop(processes.PRELOAD_ENV, "[]")))
    processes.apply_limits(json.loads(os.environ.pop("GRADER_LIMITS", "{}")))
    plan = os.environ.pop("GRADER_CONFINE", "")
    if not plan:
        return Confinement()
    from grader.sandbox.inside.confine import WORK, ConfineError, Exposed, confine, confine_user

    planned = json.loads(plan)
    try:
        if planned.get("user_only"):  # no namespaces: HOME and TMPDIR are the working folder
            return Confinement(done=confine_user(planned))
        done = confine(planned)
        os.environ.update(HOME=WORK, TMPDIR=WORK, MPLCONFIGDIR=WORK)
        return Confinement(done=done)
    except (ConfineError, OSError) as exc:
        return Confinement(error=str(exc) or type(exc).__name__,
                           exposed=isinstance(exc, Exposed))


def _first_to_go() -> None:
    """When the machine (or the grader's container) runs out of memory, the kernel kills the
    student's processes first, never the grader or another submission's: every process of
    the worker inherits the highest OOM score, which none of them may lower."""
    try:
        with open("/proc/self/oom_score_adj", "w") as stream:
            stream.write("1000")
    except OSError:
        pass  # no /proc here: the memory limits still hold


def main(rearm: bool = False) -> None:
    """Entry point: take the protocol off fds 0 and 1, then serve requests.

    `rearm`: forked by the zygote, ask again to be killed when the parent dies (entering a
    nested user namespace may have cleared that request)."""
    in_fd, out_fd = os.dup(0), os.dup(1)  # dup() makes them non-inheritable
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the student reads an empty standard input
    os.dup2(2, 1)  # and writes stdout and stderr to the capped output channel
    sys.stdout, sys.stderr = OutStream.on(1), OutStream.on(2)
    confinement = confine_as_planned()
    if confinement.error:
        # The grader asked for a confinement it did not get: it refuses to go on, and no
        # request but `hello` is answered, so no student code runs unconfined.
        _refuse(in_fd, out_fd, confinement)
        return
    if rearm:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    # Python's SIGINT handler, as Jupyter's kernel has: a fresh interpreter installs it only
    # where SIGINT was not ignored when it started, and a grader started with it ignored (a
    # background job of a script, nohup) passes that on; the zygote's worker, as PID 1 of
    # its namespace, would drop the signal at its default action.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    die_of_deadly_signals()
    warnings.showwarning = show_warning
    Worker(confinement=confinement).serve(in_fd, out_fd)


def _refuse(in_fd: int, out_fd: int, confinement: Confinement) -> None:
    """Answer `hello` with the confinement error, and nothing else."""
    stream = os.fdopen(in_fd, "rb", buffering=0)
    try:
        header, _ = protocol.unpack(stream, MAX_CHILD_BYTES)
    except (EOFError, protocol.ProtocolError):
        return
    protocol.write_all(out_fd, protocol.pack({"status": Reply.UNCONFINED, "id": header.get("id"),
                                              "confine_error": confinement.error,
                                              "exposed": confinement.exposed}))


if __name__ == "__main__":
    main()
