"""`grade serve`: a warm grader for repeated `grade run` and `grade check` on one machine.

Started explicitly, it imports the grading modules once, keeps a warm zygote, and listens on
the socket of `grader.cli.served` (a folder only its user can open). Each request is one
command line, run as `grade` would run it, one at a time, in the client's folder and with the
client's environment, against this server's zygote; what it printed and its exit code go
back. The registry of assignments is read again when the declarations it reads have changed
(the folders the environment names, their files' sizes and times); the grader's own code and
the installed packages' entry points are not: restart the server after changing them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import socket
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from grader.cli import app, served
from grader.course import registry
from grader.course.layout import Layout
from grader.errors import UsageError
from grader.sandbox.zygote import Zygotes


class _Output(io.StringIO):
    """What a served command prints, with the client's answer to `isatty` (for colour)."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def _listener(path: Path) -> socket.socket:
    """The server's socket at `path`, in a private folder; a UsageError when it cannot be."""
    where = path.parent
    try:
        where.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{where}: cannot be made ({exc.strerror}); set XDG_RUNTIME_DIR to a "
                         "folder of your own") from None
    why = served.private(where)
    if why:
        raise UsageError(f"{where}: {why}; remove it, or set XDG_RUNTIME_DIR to a folder "
                         "that only you can open")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            pass
        else:
            raise UsageError(f"{path}: a grade serve of this grader is running already; "
                             "stop it first (Ctrl-C where it runs)")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # left by a server that was killed
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o600)
    listener.listen(16)
    return listener


def _caller_is_us(connection: socket.socket) -> bool:
    """Whether the process at the other end runs as this server's user."""
    size = struct.calcsize("3i")
    _, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET,
                                                          socket.SO_PEERCRED, size))
    return bool(uid == os.getuid())


def _request(message: dict[str, Any]) -> tuple[list[str], str, dict[str, str], bool]:
    """The request's command line, folder, environment and tty; ValueError when malformed."""
    argv, cwd, env, tty = (message.get(k) for k in ("argv", "cwd", "env", "tty"))
    if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)
            and isinstance(cwd, str) and isinstance(env, dict) and isinstance(tty, bool)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        raise ValueError("a malformed request")
    return argv, cwd, env, tty


def declarations() -> tuple[object, ...]:
    """What the registry reads besides the package, as this process's environment names it:
    each declaration folder, and each file's name, size and modification time in it."""
    seen: list[object] = []
    for folder in Layout.from_environment().declaration_folders:
        seen.append(str(folder))
        with contextlib.suppress(OSError):
            for path in sorted(folder.glob("*.py")):
                status = path.stat()
                seen.append((path.name, status.st_size, status.st_mtime_ns))
    return tuple(seen)


@dataclass
class Warm:
    """What a server keeps from one request to the next."""

    zygotes: Zygotes
    """The zygotes every request forks its workers from."""
    declarations: tuple[object, ...] | None = None
    """The `declarations` the registry was last read from."""

    def fresh_registry(self) -> None:
        """Forget the registry when its declarations changed since it was read."""
        now = declarations()
        if now != self.declarations:
            registry.assignments.cache_clear()
            self.declarations = now


def answer(argv: list[str], cwd: str, env: dict[str, str], tty: bool,
           warm: Warm) -> dict[str, Any]:
    """Run one command line as `grade` would, in `cwd` with `env`: what it printed, its code."""
    out, err = _Output(tty), io.StringIO()
    here, saved = os.getcwd(), dict(os.environ)
    try:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        warm.fresh_registry()
        code = app.run(argv, out, err, zygotes=warm.zygotes)
    except OSError as exc:
        err.write(f"grade: error: {cwd}: cannot be entered ({exc.strerror})\n")
        code = 1
    finally:
        os.environ.clear()
        os.environ.update(saved)
        os.chdir(here)
    return {"out": out.getvalue(), "err": err.getvalue(), "code": code}


def _serve_one(connection: socket.socket, warm: Warm, log: TextIO) -> None:
    with connection:
        if not _caller_is_us(connection):
            return
        try:
            argv, cwd, env, tty = _request(served.receive(connection))
        except (OSError, ValueError):
            return
        reply = answer(argv, cwd, env, tty, warm)
        log.write(f"grade serve: {' '.join(argv[:1])} in {cwd}: exit {reply['code']}\n")
        log.flush()
        with contextlib.suppress(OSError):  # the client gave up (Ctrl-C): nothing to tell
            served.send(connection, reply)


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    """`grade serve`: answer `grade run` and `grade check` until Ctrl-C (or `--idle-timeout`
    seconds without a request)."""
    path = served.socket_path()
    listener = _listener(path)
    identity = os.stat(path).st_ino
    out.write(f"grade serve: listening at {path}; `grade run` and `grade check` of this grader "
              "use it (Ctrl-C stops it)\n")
    out.flush()
    terminated: list[int] = []

    def terminate(signum: int, frame: object) -> None:  # `kill`, systemd: stop as on Ctrl-C
        terminated.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        with Zygotes() as zygotes, listener:
            zygotes.prestart(())
            warm = Warm(zygotes)
            from grader.cli import grade_commands  # noqa: F401  (warm: what a request runs)

            listener.settimeout(args.idle_timeout or None)
            while not terminated:  # a request that SIGTERM cut short ends the loop here
                try:
                    connection, _ = listener.accept()
                except TimeoutError:
                    out.write("grade serve: idle, stopped\n")
                    return 0
                connection.settimeout(None)
                _serve_one(connection, warm, out)
            raise KeyboardInterrupt
    finally:
        signal.signal(signal.SIGTERM, previous)
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == identity:  # still ours, not a newer server's
                os.unlink(path)
