"""What runs inside the Jupyter kernel of `--engine kernel`: its confined start (`main`), its
shell commands (`in_kernel`) and the loop that answers the grader's requests (`serve`).

The kernel is confined by the same code as the fast engine's worker (`startup`), and the same
`Worker` answers its calls and snapshots, so both engines check exercises the same way.
"""

from __future__ import annotations

import io
import os
import sys
import warnings
from typing import Any

from grader.sandbox.inside import protocol
from grader.sandbox.inside.cellwarnings import show_warning
from grader.sandbox.inside.protocol import Reply
from grader.sandbox.inside.signals import die_of_deadly_signals
from grader.sandbox.inside.startup import confine_as_planned
from grader.sandbox.inside.worker import MAX_CHILD_BYTES, Confinement, Worker

KERNEL_CHANNEL_ENV = "GRADER_KERNEL_CHANNEL"
KERNEL_OUTPUT_ENV = "GRADER_KERNEL_OUTPUT"
"""The bytes of output the grader keeps of a statement (`Limits.output_bytes`)."""
DROPPED = "grader_dropped"
"""The key of a stream message's content that counts the bytes the kernel did not send."""
PIECE = 256 << 10
"""Most characters of output in one message: 1.5 MiB as JSON at most (6 bytes for a control
character), well under what the grader's sockets take (`kernel_channels.MAX_MESSAGE`)."""

_WORKER: Worker | None = None
_CHANNEL: tuple[int, int] = (-1, -1)
_CONFINEMENT = Confinement()
_KEEP = 0  # the grader's output limit, set by `main` (KERNEL_OUTPUT_ENV)


def main() -> None:
    """Entry point of `--engine kernel`: confined exactly as `startup.main`, then an IPython
    kernel (arguments: -f CONNECTION_FILE). A kernel that cannot be confined never starts. The
    grader's requests and replies travel on two pipes it made and the kernel inherited
    (their numbers in GRADER_KERNEL_CHANNEL), never through a file."""
    global _CHANNEL, _CONFINEMENT, _KEEP
    requests, replies = (int(fd) for fd in os.environ.pop(KERNEL_CHANNEL_ENV).split(","))
    _KEEP = int(os.environ.pop(KERNEL_OUTPUT_ENV))
    for fd in (requests, replies):
        os.set_inheritable(fd, False)  # no process the student starts gets them
    _CHANNEL = (requests, replies)
    _CONFINEMENT = confine_as_planned()
    if _CONFINEMENT.error:
        print(f"[grader] refusing to start the kernel unconfined: {_CONFINEMENT.error}",
              file=sys.stderr)
        os._exit(3)
    die_of_deadly_signals()
    warnings.showwarning = show_warning
    from ipykernel.kernelapp import launch_new_instance

    launch_new_instance(argv=[arg for arg in sys.argv[1:] if arg != "-c"])


def serve(namespace: dict[str, Any]) -> None:
    """Answer the grader's requests inside a Jupyter kernel (`--engine kernel`), each read
    from the request pipe and answered on the reply pipe, until one says `serve_end`.

    The kernel's namespace is the student's; the same Worker answers calls and snapshots, so
    both engines check exercises the same way.
    """
    global _WORKER
    requests, replies = _CHANNEL
    if _WORKER is None or _WORKER.namespace is not namespace:
        _WORKER = Worker(namespace, _CONFINEMENT)
        _WORKER.channel = _CHANNEL  # closed in every process a call forks
    stream = io.FileIO(requests, "rb", closefd=False)
    while True:
        header, value = protocol.unpack(stream, MAX_CHILD_BYTES)
        if header.get("op") == "serve_end":
            protocol.send(replies, {"status": Reply.OK, "id": header.get("id")})
            return
        protocol.write_all(replies, _WORKER.answer(header, value))


def in_kernel(shell: Any) -> None:
    """Inside a Jupyter kernel (`--engine kernel`): a shell command says it was not run, as
    the fast engine's stand-in (`shell`) says, instead of failing (the sandbox has no /bin/sh, so
    Jupyter's `system` raised FileNotFoundError where Jupyter itself would run it)."""
    noted: set[str] = set()

    def note(cmd: str) -> None:
        what = f"!{cmd}"
        if what not in noted:
            noted.add(what)
            # On stdout: ipykernel sends stderr apart, and the note must come before what the
            # code prints next, as in the fast engine, where both share one pipe.
            print(f"[grader] not run: {what[:200]}", file=sys.stdout, flush=True)

    def system(cmd: str) -> None:
        note(cmd)

    def getoutput(cmd: str, split: bool = True, depth: int = 0) -> list[str]:
        note(cmd)
        return []

    shell.system = shell.system_piped = shell.system_raw = system
    shell.getoutput = getoutput
    for stream in (sys.stdout, sys.stderr):
        session = getattr(stream, "session", None)
        if callable(getattr(session, "send", None)) and callable(getattr(session, "msg", None)):
            stream.session = InPieces(session)  # type: ignore[union-attr]


class InPieces:
    """The Jupyter session an output stream of the kernel sends with, which sends a large
    stream message in pieces. ipykernel sends all that was written between two flushes as
    one message, and a message larger than the grader's sockets take would close the
    connection: every later output of the notebook would be lost. What the grader keeps of a
    statement (`_KEEP` characters hold at least its bytes) goes in pieces of at most `PIECE`
    characters; the rest is not sent, and the last piece counts its bytes (`DROPPED`), as
    the fast engine counts what it drops. Anything else passes to the session as it is."""

    def __init__(self, session: Any) -> None:
        object.__setattr__(self, "_session", session)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._session, name, value)  # the stream sets the session's pid

    def send(self, socket: Any, msg: Any, *args: Any, **kwargs: Any) -> Any:
        content: Any = msg.get("content") if isinstance(msg, dict) else None
        text = content.get("text") if isinstance(content, dict) else None
        if not isinstance(text, str) or msg.get("msg_type") != "stream" or len(text) <= PIECE:
            return self._session.send(socket, msg, *args, **kwargs)
        kept = text[:_KEEP]
        dropped = len(text[_KEEP:].encode("utf-8", "replace"))
        pieces = [kept[at:at + PIECE] for at in range(0, len(kept), PIECE)] or [""]
        sent = None
        for number, piece in enumerate(pieces, 1):
            extra = {DROPPED: dropped} if number == len(pieces) and dropped else {}
            piece_msg = self._session.msg("stream", {**content, "text": piece, **extra},
                                          parent=msg.get("parent_header"))
            sent = self._session.send(socket, piece_msg, *args, **kwargs)
        return sent
