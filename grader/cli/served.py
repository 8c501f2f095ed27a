"""Where `grade serve` listens, and the client side: `grade run` and `grade check` hand their
command line to a running `grade serve` of the same grader, and grade here, silently, when
none answers.

The socket is in a folder that only its user can open: `$XDG_RUNTIME_DIR/attention-grader/`,
else `/tmp/grade-<uid>/`. Both sides check, with `lstat` (never through a link), that it is a
folder owned by the user with no permission for anyone else, and the client that the socket
is the user's; the server also checks each caller's user id (`SO_PEERCRED`). The socket's
name holds a checksum of the grader's folder and version, so that a server only ever serves
the grader it was started from.

This module runs before anything else of the grader is imported: it imports the standard
library only, and only once a command is to be served.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TextIO

from grader import __version__

SERVED = ("run", "check")
"""The commands a `grade serve` runs (the others are run here)."""
MAX_FRAME = 256 << 20
"""Largest request or reply, in bytes (a reply holds the command's whole output)."""
CONNECT_SECONDS = 2.0
"""How long a client waits to be accepted before it grades on its own."""
PACKAGE = Path(__file__).resolve().parents[1]


def folder() -> Path:
    """The folder of the socket: `$XDG_RUNTIME_DIR/attention-grader`, else `/tmp/grade-<uid>`."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "attention-grader" if runtime else Path(f"/tmp/grade-{os.getuid()}")


def socket_path() -> Path:
    """The socket of a `grade serve` of this grader (its folder and version)."""
    import zlib

    tag = zlib.crc32(f"{PACKAGE}\0{__version__}".encode())
    return folder() / f"grade-{tag:08x}.sock"


def private(path: Path) -> str | None:
    """Why `path` is not a folder that only this user can open, or None when it is one."""
    import stat

    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return "does not exist"
    if not stat.S_ISDIR(status.st_mode):
        return "is not a folder (a link or a file is never used)"
    if status.st_uid != os.getuid():
        return f"is owned by user {status.st_uid}, not by you (user {os.getuid()})"
    if status.st_mode & 0o077:
        return f"has mode {status.st_mode & 0o777:o}: other users may open it"
    return None


def send(connection: Any, message: dict[str, Any]) -> None:
    """Write one frame: its length in 8 bytes, then its JSON."""
    import json

    data = json.dumps(message).encode()
    connection.sendall(len(data).to_bytes(8, "big") + data)


def receive(connection: Any) -> dict[str, Any]:
    """Read one frame; OSError when the peer closes early or sends more than `MAX_FRAME`."""
    import json

    size = int.from_bytes(_exactly(connection, 8), "big")
    if size > MAX_FRAME:
        raise OSError(f"a frame of {size} bytes, over the {MAX_FRAME} bytes allowed")
    message = json.loads(_exactly(connection, size))
    if not isinstance(message, dict):
        raise OSError("a frame that is not a JSON object")
    return message


def _exactly(connection: Any, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = connection.recv(min(left, 1 << 20))
        if not chunk:
            raise OSError("the peer closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def served(argv: list[str], out: TextIO, err: TextIO) -> int | None:
    """Run `argv` in a running `grade serve` and print what it printed: its exit code. None,
    having printed nothing, when the command is not one it serves or no server answers (the
    caller then runs it here)."""
    if not argv or argv[0] not in SERVED:
        return None
    path = socket_path()
    if private(path.parent) is not None:
        return None
    import socket
    import stat

    try:
        status = os.lstat(path)
        if not stat.S_ISSOCK(status.st_mode) or status.st_uid != os.getuid():
            return None
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(CONNECT_SECONDS)
            connection.connect(str(path))
            connection.settimeout(None)
            isatty = getattr(out, "isatty", None)
            send(connection, {"argv": list(argv), "cwd": os.getcwd(), "env": dict(os.environ),
                              "tty": bool(isatty()) if isatty else False})
            reply = receive(connection)
    except (OSError, ValueError):  # none listens, it stopped, or it answered nonsense
        return None
    except KeyboardInterrupt:
        err.write("grade: interrupted\n")
        return 130
    code = reply.get("code")
    if not isinstance(code, int):
        return None
    out.write(str(reply.get("out", "")))
    err.write(str(reply.get("err", "")))
    return code
