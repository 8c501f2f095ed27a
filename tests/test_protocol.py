"""Frames between grader and worker: numeric data only, sizes capped, no pickles."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from grader.sandbox.inside import protocol
from grader.sandbox.inside.protocol import ProtocolError, Unsupported


def roundtrip(value, limit=1 << 20):
    return protocol.unpack(io.BytesIO(protocol.pack({"op": "x"}, value)), limit)


def test_arrays_tuples_lists_dicts_and_scalars_survive():
    header, value = roundtrip((np.arange(3.0), [1, 2.5], {"w": np.eye(2)}, None, np.float32(2)))
    assert header == {"op": "x"}
    assert value[0].tolist() == [0.0, 1.0, 2.0]
    assert value[1] == [1, 2.5]
    assert value[2]["w"].tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert value[3] is None and float(value[4]) == 2.0


def test_non_finite_floats_travel_as_arrays():
    _, value = roundtrip(float("nan"))
    assert np.isnan(value)


class Sneaky(np.ndarray):
    def __eq__(self, other):
        return True


class Liar:
    def __eq__(self, other):
        return True

    def __array_ufunc__(self, *args, **kwargs):
        return True


def test_anything_but_plain_numeric_data_arrives_as_its_type_name():
    _, value = roundtrip((np.arange(3).view(Sneaky), Liar(), np.array(["a"]),
                          np.array([object()], dtype=object)))
    assert [v.type_name for v in value] == [
        "tests.test_protocol.Sneaky", "tests.test_protocol.Liar", "numpy array of dtype <U1",
        "numpy array of dtype object"]
    assert all(isinstance(v, Unsupported) for v in value)


def _frame(header: dict, blobs: list[tuple[list, bytes]]) -> io.BytesIO:
    """A frame as student code could forge it: each blob its [dtype, shape] and bytes."""
    head = json.dumps(dict(header, blobs=[layout for layout, _ in blobs],
                           data=sum(len(b) for _, b in blobs))).encode()
    return io.BytesIO(protocol.LENGTH.pack(len(head)) + head + b"".join(b for _, b in blobs))


@pytest.mark.parametrize("layout, message", [
    (["|O", [1]], "array of dtype object is not numeric"),
    (["<U1", [2]], "array of dtype <U1 is not numeric"),
    (["<M8[s]", [1]], "is not numeric"),
    (["i4,i4", [1]], "is not numeric"),
    (["(2,)<i4", [1]], "is not numeric"),
    (["no such", [1]], "array of unknown dtype"),
    (["<f8", [-1]], "malformed array layout"),
    (["<f8", [1.5]], "malformed array layout"),
    (["<f8", [1] * 40], "malformed array layout"),
    (["<f8" * 5, [1]], "malformed array layout"),
    (["<f8"], "malformed array layout"),
    (["<f8", [1 << 40, 1 << 40]], "over the 1048576 byte limit"),
])
def test_arrays_that_are_not_plain_numbers_or_lie_about_their_size_are_refused(layout, message):
    with pytest.raises(ProtocolError, match=message):
        protocol.unpack(_frame({"value": {"$a": 0}}, [(layout, bytes(16))]), 1 << 20)


def test_an_array_that_lies_about_its_size_is_refused():
    with pytest.raises(ProtocolError, match="do not add up"):
        protocol.unpack(_frame({"value": {"$a": 0}}, [(["<f8", [4]], bytes(16))]), 1 << 20)


def test_arrays_keep_dtype_byte_order_and_shape_and_can_be_written():
    values = (np.arange(6, dtype=">i4").reshape(2, 3), np.array(2.5), np.zeros((0, 3)),
              np.array([True, False]), np.array([1 + 2j]))
    _, decoded = roundtrip(values)
    for sent, got in zip(values, decoded, strict=True):
        assert (got.dtype, got.shape) == (sent.dtype, sent.shape)
        assert np.array_equal(got, sent)
    decoded[0][0, 0] = 7  # the grader's own copy


@pytest.mark.parametrize("frame, message", [
    (_frame({"value": {"$a": 3}}, []), "array reference out of range"),
    (_frame({"value": {"$zz": 1}}, []), "unknown tag"),
    (_frame({"value": [1, 2]}, []), "bare list"),
    (io.BytesIO(protocol.LENGTH.pack(5) + b"nope!"), "header is not usable JSON"),
    (io.BytesIO(protocol.LENGTH.pack(1 << 30)), "over the 1048576 byte limit"),
])
def test_malformed_frames_are_refused(frame, message):
    with pytest.raises(ProtocolError, match=message):
        protocol.unpack(frame, 1 << 20)


def test_array_bytes_are_capped():
    with pytest.raises(ProtocolError, match="over the 100 byte limit"):
        roundtrip(np.zeros(1000), limit=100)


def test_truncated_frame_is_end_of_file():
    data = protocol.pack({"op": "x"}, np.zeros(10))
    with pytest.raises(EOFError):
        protocol.unpack(io.BytesIO(data[:-5]), 1 << 20)


@pytest.mark.parametrize(("value", "problem"), [
    ({"$l": [{"$a": 0}] * 2}, "array reference out of range or repeated"),
    (10 ** 30, "integer out of the 64-bit range"),
    ({"$l": [{"$l": [{"$l": [{"$l": [{"$l": [{"$l": [{"$l": [{"$l": [{"$l": [1]}]}]}]}]}]}]}]}]},
     "nested too deeply"),
    ({"$l": list(range(5000))}, "too large"),
])
def test_a_forged_frame_cannot_make_the_grader_copy_or_recurse(value, problem):
    # A worker's student code can write any frame: it must not cost the grader memory or crash.
    frame = _frame({"status": "ok", "value": value}, [(["<f8", [8]], np.arange(8.0).tobytes())])
    with pytest.raises(protocol.ProtocolError, match=problem):
        protocol.unpack(frame, 1 << 20)


def test_a_header_nested_past_the_parser_is_a_protocol_error():
    header = b'{"value": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    frame = protocol.LENGTH.pack(len(header)) + header
    with pytest.raises(protocol.ProtocolError, match="RecursionError"):
        protocol.unpack(io.BytesIO(frame), 1 << 20)
