"""Messages between the grader and its worker: JSON headers plus raw numeric arrays, never pickles.

A frame is a 4-byte big-endian length, a UTF-8 JSON header, then the raw bytes of the arrays
the header lists, each as `[dtype, shape]` (`["<f8", [3, 4]]`), "data" bytes in all.
Decoding accepts only plain numeric dtypes (no object, string, structured or datetime data),
subclasses cannot survive the trip, and every size is checked against its dtype and shape and
capped before it is read.
"""

from __future__ import annotations

import enum
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
MAX_DTYPE = 8
MAX_DIMENSIONS = 32


class Reply(enum.StrEnum):
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
    REFUSED = "refused"
    """The call could not be made, or what it returned was refused ("message" says why)."""
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
            return cls(str(header.get("status")))
        except ValueError:
            return cls.UNKNOWN


class ProtocolError(Exception):
    """A frame that is malformed, too large, or carries something other than numeric data."""


class FrameTooLarge(ProtocolError):
    """A frame whose arrays are larger than the reader accepts."""

    def __init__(self, message: str, drained: bool = False) -> None:
        super().__init__(message)
        self.drained = drained
        """Whether the frame's bytes were read and dropped: the channel is still in step."""


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


def pack(header: dict[str, Any], value: Any = None) -> bytes:
    """Serialise a header and an optional value into one frame."""
    arrays: list[np.ndarray] = []
    body = dict(header, value=encode(value, arrays))
    body["blobs"] = [[array.dtype.str, list(array.shape)] for array in arrays]
    body["data"] = sum(array.nbytes for array in arrays)
    head = json.dumps(body, allow_nan=False).encode()
    return LENGTH.pack(len(head)) + head + b"".join(array.tobytes() for array in arrays)


def with_header(frame: bytes, extra: dict[str, Any]) -> bytes:
    """A packed frame with `extra` added to its header; its arrays' bytes are kept as they
    are. A frame that is not well formed is returned unchanged (`unpack` names the problem).
    Runs in the worker, where the student's code may have replaced builtins: it uses none
    but len()."""
    try:
        (size,) = LENGTH.unpack(frame[:LENGTH.size])
        end = LENGTH.size + size
        head = json.dumps({**json.loads(frame[LENGTH.size:end]), **extra},
                          allow_nan=False).encode()
    except (struct.error, ValueError, RecursionError, TypeError):
        return frame
    return LENGTH.pack(len(head)) + head + frame[end:]


def header_of(frame: bytes) -> dict[str, Any]:
    """The header of a packed frame; empty when it is not well formed."""
    try:
        (size,) = LENGTH.unpack(frame[:LENGTH.size])
        header = json.loads(frame[LENGTH.size:LENGTH.size + size])
    except (struct.error, ValueError, RecursionError, TypeError):
        return {}
    return header if isinstance(header, dict) else {}


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
    layouts = [_layout(entry) for entry in _list(header.pop("blobs", []))]
    total = sum(size for _, _, size in layouts)
    if total > max_bytes:
        raise ProtocolError(f"{total} bytes of arrays are over the {max_bytes} byte limit")
    if header.pop("data", 0) != total:
        raise ProtocolError("the arrays' sizes do not add up to the frame's data")
    arrays = [np.frombuffer(bytearray(_read_exactly(stream, size)), dtype).reshape(shape)
              for dtype, shape, size in layouts]
    return header, decode(header.pop("value", None), arrays)


def _list(entries: Any) -> list[Any]:
    if not isinstance(entries, list) or len(entries) > MAX_NODES:
        raise ProtocolError("malformed array list")
    return entries


def _layout(entry: Any) -> tuple[np.dtype[Any], tuple[int, ...], int]:
    """An array's (dtype, shape, size in bytes) from its `[dtype, shape]` entry, refused
    unless the dtype is plain numeric data and the shape a few non-negative integers."""
    if (not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str)
            or len(entry[0]) > MAX_DTYPE or not isinstance(entry[1], list)
            or len(entry[1]) > MAX_DIMENSIONS
            or not all(type(n) is int and 0 <= n < INT64 for n in entry[1])):
        raise ProtocolError("malformed array layout")
    try:
        dtype = np.dtype(entry[0])
    except (TypeError, ValueError, SyntaxError) as exc:
        raise ProtocolError(f"array of unknown dtype {entry[0][:MAX_DTYPE]!r} ({exc})") from None
    if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype:
        raise ProtocolError(f"array of dtype {dtype} is not numeric")
    shape = tuple(entry[1])
    size = dtype.itemsize
    for length in shape:
        size *= length  # Python ints: no overflow, and the sum is capped before any read
    return dtype, shape, size


def size_in_words(count: int) -> str:
    """A number of bytes as people say it: "640 KiB", "64 MiB"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.3g} {unit}"
    return f"{count} bytes"


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


def read_frame(fd: int, deadline: float, max_bytes: int, drain_up_to: int = 0) -> bytes:
    """Read exactly one frame's bytes by a `time.monotonic()` deadline.

    Raises TimeoutError when the deadline passes, EOFError when the writer is gone, and
    FrameTooLarge when its arrays are over `max_bytes`. The rest of such a frame is left in
    the channel, which is out of step from then on; unless its arrays are at most
    `drain_up_to` bytes: then they are read and dropped, a chunk at a time, and the channel
    stays in step (`FrameTooLarge.drained`).
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
        blobs = int(json.loads(bytes(buffer[start:]).decode()).get("data", 0))
    except (ValueError, AttributeError, TypeError):
        return bytes(buffer)  # unpack() names the problem
    if blobs > max_bytes:
        message = f"more than {size_in_words(max_bytes)} of arrays"
        if blobs > drain_up_to:
            raise FrameTooLarge(message)
        left = blobs
        while left:
            buffer.clear()  # what is read is dropped: the grader never holds it whole
            fill(min(left, 1 << 16))
            left -= len(buffer)
        raise FrameTooLarge(message, drained=True)
    fill(start + size + (blobs if blobs > 0 else 0))
    return bytes(buffer)
