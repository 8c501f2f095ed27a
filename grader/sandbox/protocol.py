"""Messages between the grader and its worker: JSON headers plus raw .npy arrays, never pickles.

A frame is a 4-byte big-endian length, a UTF-8 JSON header, then the arrays the header lists,
each as the bytes of an .npy file written with `allow_pickle=False`. Decoding refuses object
arrays, subclasses cannot survive the trip, and every size is capped before it is read.
"""

from __future__ import annotations

import enum
import io
import json
import os
import select
import struct
import time
from typing import Any, BinaryIO

import numpy as np

LENGTH = struct.Struct("!I")
MAX_HEADER = 1 << 20
NUMERIC_KINDS = "biufc"
MAX_DEPTH = 8
MAX_NODES = 4096
INT64 = 1 << 63


class Reply(str, enum.Enum):
    """What a worker's reply says happened: the "status" of its header."""

    OK = "ok"
    """Done: the statement ran, the call returned (its value follows), the worker started."""
    ERROR = "error"
    """The student's code raised; "message" and "line" say what and where."""
    EXIT = "exit"
    """The student's code raised SystemExit."""
    TIMEOUT = "timeout"
    """The statement or call ran past its time limit and was stopped."""
    MISSING = "missing"
    """The exercise is not defined, or not a function (a class)."""
    NO_SNAPSHOT = "no-snapshot"
    """No state was kept right after the cell that defined the exercise."""
    CRASHED = "crashed"
    """The process of the call died ("message" says of what)."""
    UNKNOWN = "unknown"
    """In a kernel: the error IPython showed is not the statement's own."""
    UNCONFINED = "unconfined"
    """The worker could not be confined as planned and refuses to run anything."""
    BAD_OP = "bad-op"
    """The request named no operation the worker knows."""
    RELAY = "relay"
    """Inside the worker only: a child's frame is passed on as it is."""

    @classmethod
    def of(cls, header: dict[str, Any]) -> Reply:
        """The status of a reply header; anything unexpected is UNKNOWN."""
        try:
            return cls(header.get("status"))
        except ValueError:
            return cls.UNKNOWN


class ProtocolError(Exception):
    """A frame that is malformed, too large, or carries something other than numeric data."""


def encode(value: Any, arrays: list[np.ndarray]) -> Any:
    """Turn a value into JSON, moving numeric arrays into `arrays`.

    Anything that is not numeric data becomes {"$u": type name}, so the receiver can say what
    was returned instead of trusting the object.
    """
    if type(value) is int and not -INT64 <= value < INT64:
        return {"$u": "Python int too large for 64 bits"}
    if value is None or type(value) in (bool, int, float, str):
        if type(value) is float and not np.isfinite(value):
            arrays.append(np.array(value))
            return {"$a": len(arrays) - 1}
        return value
    if type(value) is tuple:
        return {"$t": [encode(item, arrays) for item in value]}
    if type(value) is list:
        return {"$l": [encode(item, arrays) for item in value]}
    if type(value) is dict and all(type(key) is str for key in value):
        return {"$d": {key: encode(item, arrays) for key, item in value.items()}}
    if type(value) is np.ndarray or isinstance(value, np.generic):
        array = np.asarray(value)
        if array.dtype.kind not in NUMERIC_KINDS:
            return {"$u": f"numpy array of dtype {array.dtype}"}
        arrays.append(np.array(array, order="C", subok=False))  # keeps 0-d arrays 0-d
        return {"$a": len(arrays) - 1}
    return {"$u": f"{type(value).__module__}.{type(value).__qualname__}"}


def decode(tree: Any, arrays: list[np.ndarray]) -> Any:
    """Rebuild a value encoded by `encode`; unsupported objects become `Unsupported`.

    A frame comes from student code, so its shape is bounded: at most `MAX_DEPTH` levels and
    `MAX_NODES` values, integers that fit in 64 bits, and each array used once (a header that
    named one array a thousand times would make a thousand copies of it in the grader).
    """
    return _decode(tree, arrays, set(), [MAX_NODES], 0)


def _decode(tree: Any, arrays: list[np.ndarray], used: set[int], budget: list[int],
            depth: int) -> Any:
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply or too large in a message")
    if isinstance(tree, int) and not isinstance(tree, bool) and not -INT64 <= tree < INT64:
        raise ProtocolError("integer out of the 64-bit range in a message")
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return tree
    if isinstance(tree, list):
        raise ProtocolError("bare list in a message")
    if not isinstance(tree, dict) or len(tree) != 1:
        raise ProtocolError("malformed value in a message")
    (tag, body), = tree.items()
    if tag == "$a":
        if not isinstance(body, int) or not 0 <= body < len(arrays) or body in used:
            raise ProtocolError("array reference out of range or repeated")
        used.add(body)
        return arrays[body]
    if tag in ("$t", "$l"):
        if not isinstance(body, list):
            raise ProtocolError("malformed sequence in a message")
        items = [_decode(item, arrays, used, budget, depth + 1) for item in body]
        return tuple(items) if tag == "$t" else items
    if tag == "$d":
        if not isinstance(body, dict):
            raise ProtocolError("malformed mapping in a message")
        return {str(key): _decode(item, arrays, used, budget, depth + 1)
                for key, item in body.items()}
    if tag == "$u":
        return Unsupported(str(body)[:200])
    raise ProtocolError(f"unknown tag {tag!r} in a message")


class Unsupported:
    """Stands for a returned object that is not numeric data; only its type name crosses."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


def _array_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def pack(header: dict[str, Any], value: Any = None) -> bytes:
    """Serialise a header and an optional value into one frame."""
    arrays: list[np.ndarray] = []
    body = dict(header, value=encode(value, arrays))
    blobs = [_array_bytes(array) for array in arrays]
    body["blobs"] = [len(blob) for blob in blobs]
    head = json.dumps(body, allow_nan=False).encode()
    return LENGTH.pack(len(head)) + head + b"".join(blobs)


def _read_exactly(stream: BinaryIO, size: int) -> bytes:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def unpack(stream: BinaryIO, max_bytes: int) -> tuple[dict[str, Any], Any]:
    """Read one frame; return its header and decoded value. Raises ProtocolError or EOFError."""
    (size,) = LENGTH.unpack(_read_exactly(stream, LENGTH.size))
    if size > MAX_HEADER:
        raise ProtocolError(f"header of {size} bytes is over the {MAX_HEADER} byte limit")
    try:
        header = json.loads(_read_exactly(stream, size))
    except (ValueError, RecursionError) as exc:  # not JSON, too deep, a 5,000-digit number
        raise ProtocolError(f"header is not usable JSON: {type(exc).__name__}") from None
    if not isinstance(header, dict):
        raise ProtocolError("header is not an object")
    sizes = header.pop("blobs", [])
    if not isinstance(sizes, list) or not all(isinstance(s, int) and s >= 0 for s in sizes):
        raise ProtocolError("malformed blob sizes")
    if sum(sizes) > max_bytes:
        raise ProtocolError(f"{sum(sizes)} bytes of arrays are over the {max_bytes} byte limit")
    arrays = [_read_array(_read_exactly(stream, s)) for s in sizes]
    return header, decode(header.pop("value", None), arrays)


def _read_array(blob: bytes) -> np.ndarray:
    try:
        array = np.lib.format.read_array(io.BytesIO(blob), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ProtocolError(f"array is not valid .npy data: {exc}") from None
    if array.dtype.kind not in NUMERIC_KINDS:
        raise ProtocolError(f"array of dtype {array.dtype} is not numeric")
    return array


def write_all(fd: int, data: bytes) -> None:
    """Write every byte to a file descriptor."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_by(fd: int, data: bytes, deadline: float) -> None:
    """Write every byte to a non-blocking file descriptor by a `time.monotonic()` deadline.

    A reader that stops reading (a submission can) must not hang the grader: raises
    TimeoutError when the deadline passes first.
    """
    view = memoryview(data)
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        _, ready, _ = select.select([], [fd], [], left)
        if ready:
            try:
                view = view[os.write(fd, view[:1 << 16]):]
            except BlockingIOError:
                continue


def send(fd: int, header: dict[str, Any], value: Any = None) -> None:
    """Write one frame to a file descriptor."""
    write_all(fd, pack(header, value))


def read_frame(fd: int, deadline: float, max_bytes: int) -> bytes:
    """Read exactly one frame's bytes by a `time.monotonic()` deadline.

    Raises TimeoutError when the deadline passes and EOFError when the writer is gone.
    """
    buffer = bytearray()

    def fill(size: int) -> None:
        while len(buffer) < size:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, size - len(buffer))
                if not chunk:
                    raise EOFError
                buffer.extend(chunk)

    start = LENGTH.size
    fill(start)
    (size,) = LENGTH.unpack(buffer)
    if size > MAX_HEADER:
        return bytes(buffer)  # unpack() names the problem
    fill(start + size)
    # The worker runs this in the student's process, where builtins such as max() or
    # isinstance() may have been replaced: only len(), int() and str methods are used.
    try:
        sizes = json.loads(bytes(buffer[start:]).decode()).get("blobs", [])
        blobs = 0
        for item in sizes:
            blobs += int(item)
    except (ValueError, AttributeError, TypeError):
        return bytes(buffer)  # unpack() names the problem
    fill(start + size + (blobs if 0 <= blobs <= max_bytes else 0 if blobs < 0
                         else max_bytes + 1))
    return bytes(buffer)
