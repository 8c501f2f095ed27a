"""The grader's ends of its connections to a kernel (`--engine kernel`): nbclient's client,
which keeps a statement's output only up to its budget; jupyter_client's, whose ZeroMQ
sockets hold little and never reconnect; and the two pipes of the grader's own requests.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import zmq
import zmq.asyncio
from jupyter_client.asynchronous.client import AsyncKernelClient
from nbclient import NotebookClient

from grader.sandbox.inside import processes
from grader.sandbox.inside.kernel_agent import DROPPED, KERNEL_CHANNEL_ENV

# Bounds on what Jupyter's sockets hold for the grader: a message over MAX_MESSAGE (or over
# `message_bound`, where the code limit makes that larger) ends the connection (the kernel's
# code can print gigabytes at once), and at most QUEUED wait.
MAX_MESSAGE = 4 << 20
QUEUED = 16
ESCAPED = 6
"""Bytes of JSON one byte of code can take (a control character is written \\u0001)."""
MAX_UNSENT = 1 << 50
"""Most bytes a kernel may say it did not send of one message (more than any could print)."""


def message_bound(code_bytes: int) -> int:
    """The largest message the grader's sockets take from a kernel that runs statements of up
    to `code_bytes` bytes: the kernel echoes each statement's code on its iopub socket as
    JSON, and an echo over the bound would end that connection, losing every output after
    it."""
    return max(MAX_MESSAGE, ESCAPED * code_bytes + (64 << 10))


class Client(NotebookClient):
    """nbclient's client, for statements whose outputs are read once and then dropped."""

    budget = 0
    """Bytes of output a statement may still add (`output_bytes`, then what is left):
    nbclient keeps every output of a cell, and a statement can print gigabytes."""
    overflow = 0
    """Bytes of a statement's output dropped past its budget (counted as dropped, as the
    fast engine counts them)."""

    def clear_output(self, outs: list[Any], msg: dict[str, Any], cell_index: int) -> None:
        """Keep what was printed before `clear_output()`: the grader shows all the output
        of the code, as the fast engine (where clearing shows nothing) does."""

    def output(self, outs: list[Any], msg: dict[str, Any], display_id: str | None,
               cell_index: int) -> Any:
        """Keep a statement's stream output up to its budget, and nothing else: what is past
        it is dropped as it arrives, never held."""
        if msg.get("msg_type") == "error":  # how it failed: `KernelTransport._exec` reads it
            return super().output(outs, msg, display_id, cell_index)
        if msg.get("msg_type") != "stream":
            return None  # displays show nothing, as in the fast engine
        data = str(msg.get("content", {}).get("text", "")).encode("utf-8", "replace")
        room = max(0, self.budget)
        kept = data[:room].decode("utf-8", "ignore")
        # What the kernel did not send of a large message (`kernel_agent.InPieces`); the
        # kernel's code can say anything here, of its own output only.
        unsent = msg.get("content", {}).get(DROPPED, 0)
        unsent = min(unsent, MAX_UNSENT) if type(unsent) is int and unsent > 0 else 0
        self.overflow += max(0, len(data) - room) + unsent
        self.budget -= len(data) + unsent
        if kept:
            msg = dict(msg, content=dict(msg["content"], text=kept))
            return super().output(outs, msg, display_id, cell_index)
        return None


@contextlib.contextmanager
def pipes(env: dict[str, str]) -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
    """Two pipes for the kernel about to be started: yields the grader's ends (requests to
    write, non-blocking; replies to read) and the kernel's, which its Popen passes on
    (`pass_fds`; their numbers in `env`) and which are closed here once it has started."""
    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    os.set_blocking(requests_w, False)
    env[KERNEL_CHANNEL_ENV] = f"{requests_r},{replies_w}"
    try:
        yield (requests_w, replies_r), (requests_r, replies_w)
    except BaseException:
        for fd in (requests_w, replies_r):
            processes.close(fd)
        raise
    finally:
        for fd in (requests_r, replies_w):
            os.close(fd)  # the kernel has its own copies


class Channels(AsyncKernelClient):
    """jupyter_client's client, whose sockets (shell, iopub, stdin, heartbeat) are made in a
    bounded context (`bounded`): the client makes a context of its own otherwise, and the
    manager's settings never reach the sockets that read the kernel's messages."""

    max_message = MAX_MESSAGE
    """Its bound (`channels` makes a class with another)."""

    def _context_default(self) -> zmq.asyncio.Context:
        self._created_context = True  # destroyed with the client's channels
        return bounded(self.max_message)


def channels(max_message: int) -> type[Channels]:
    """`Channels` bounded at `max_message` bytes a message (the manager makes the client)."""
    return type("Channels", (Channels,), {"max_message": max_message})


def bounded(max_message: int = MAX_MESSAGE) -> zmq.asyncio.Context:
    """A ZeroMQ context whose sockets hold little for the grader: a message over
    `max_message` ends its connection, and at most `QUEUED` wait to be read."""
    context = zmq.asyncio.Context()
    context.setsockopt(zmq.MAXMSGSIZE, max_message)
    context.setsockopt(zmq.RCVHWM, QUEUED)
    return context


def never_reconnect(client: Any) -> None:
    """Once connected (the kernel has answered, before any student code runs), no socket of
    the client connects again: a socket path that the kernel's code replaces, with a link to
    another socket of the machine say, is never followed. (Set at the start, it would also
    stop the first connection, which retries until the kernel has made its sockets.)"""
    for name in ("shell_channel", "iopub_channel", "stdin_channel", "control_channel",
                 "hb_channel"):
        channel = getattr(client, f"_{name}", None)
        socket = getattr(channel, "socket", None)
        if socket is not None:
            socket.setsockopt(zmq.RECONNECT_IVL, -1)
