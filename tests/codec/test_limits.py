"""Limits: depth, object count and sizes, checked before allocation; deep nesting on
encode is an EncodeError, never a RecursionError or a crash."""

from __future__ import annotations

import inspect

import pytest

import amfkit
from amfkit import _amfkit, amf0, amf3, sol
from amfkit.remoting import packet


def nested_amf3(depth: int) -> bytes:
    return b"\x09\x03\x01" * depth + b"\x01"


def nested_amf0(depth: int) -> bytes:
    return b"\x0a\x00\x00\x00\x01" * depth + b"\x05"


@pytest.mark.parametrize(
    "decoder",
    [
        amf0.decode,
        amf3.decode,
        amf0.Decoder,
        amf3.Decoder,
        _amfkit.decode_packet,
        _amfkit.decode_sol,
        packet.decode,
        sol.loads,
        sol.load,
    ],
)
def test_every_decoder_defaults_to_the_cores_limits(decoder):
    defaults = {
        name: p.default for name, p in inspect.signature(decoder).parameters.items() if name.startswith("max_")
    }
    assert defaults == {
        "max_depth": _amfkit.DEFAULT_MAX_DEPTH,
        "max_objects": _amfkit.DEFAULT_MAX_OBJECTS,
        "max_size": _amfkit.DEFAULT_MAX_SIZE,
    }
    assert (_amfkit.DEFAULT_MAX_DEPTH, _amfkit.DEFAULT_MAX_OBJECTS, _amfkit.DEFAULT_MAX_SIZE) == (
        128,
        10_000_000,
        256 * 1024 * 1024,
    )


@pytest.mark.parametrize("codec, nest", [(amf3, nested_amf3), (amf0, nested_amf0)])
def test_depth_limit_at_the_limit_and_one_past(codec, nest):
    assert codec.decode(nest(128)) is not None
    with pytest.raises(amfkit.DecodeError, match="nesting deeper than the limit of 128"):
        codec.decode(nest(129))
    assert codec.decode(nest(10), max_depth=10) is not None
    with pytest.raises(amfkit.DecodeError):
        codec.decode(nest(11), max_depth=10)


def test_very_deep_input_is_a_clean_error():
    with pytest.raises(amfkit.DecodeError, match="nesting"):
        amf3.decode(nested_amf3(100_000))
    with pytest.raises(amfkit.DecodeError, match="nesting"):
        amf0.decode(nested_amf0(100_000))
    # through the AVM+ switch too: AMF0 arrays, the switch, then AMF3 arrays; the
    # switch itself counts as a level
    assert amf0.decode(b"\x0a\x00\x00\x00\x01" * 60 + b"\x11" + nested_amf3(67)) is not None
    with pytest.raises(amfkit.DecodeError, match="nesting"):
        amf0.decode(b"\x0a\x00\x00\x00\x01" * 60 + b"\x11" + nested_amf3(68))
    with pytest.raises(amfkit.DecodeError, match="nesting"):
        amf0.decode(b"\x0a\x00\x00\x00\x01" * 60 + b"\x11" + nested_amf3(100_000))


def test_max_depth_bounds():
    with pytest.raises(ValueError):
        amf3.Decoder(max_depth=0)
    with pytest.raises(ValueError):
        amf3.Decoder(max_depth=1_000_000)
    d = amf3.Decoder(max_depth=4096, max_objects=5, max_size=10, tz_aware=True)
    assert (d.max_depth, d.max_objects, d.max_size, d.tz_aware) == (4096, 5, 10, True)


def test_object_limit():
    data = amf3.encode([[] for _ in range(10)])
    assert len(amf3.decode(data, max_objects=11)) == 10
    with pytest.raises(amfkit.DecodeError, match="more than the limit of 10 objects"):
        amf3.decode(data, max_objects=10)


def test_size_limit():
    assert amf3.decode(amf3.encode("x" * 100), max_size=100) == "x" * 100
    with pytest.raises(amfkit.DecodeError, match="string length of 101 bytes exceeds the limit of 100"):
        amf3.decode(amf3.encode("x" * 101), max_size=100)
    with pytest.raises(amfkit.DecodeError, match="bytearray length"):
        amf3.decode(amf3.encode(b"x" * 101), max_size=100)


@pytest.mark.parametrize(
    "data",
    [
        b"\x09\xff\xff\xff\xff\x01",  # array of 2^28-1 items in 6 bytes
        b"\x0d\xff\xff\xff\xff\x00",  # Vector.<int>
        b"\x10\xff\xff\xff\xff\x00\x01",  # Vector.<Object>
        b"\x11\xff\xff\xff\xff\x00",  # Dictionary
        b"\x0a\xff\xff\xff\xf3\x01",  # traits with 2^25-1 sealed names
        b"\x0c\xff\xff\xff\xff",  # ByteArray
    ],
)
def test_declared_counts_are_checked_against_the_input_before_allocating(data):
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(amfkit.DecodeError, match="exceeds"):
            amf3.decode(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_amf0_strict_array_count_beyond_the_input():
    with pytest.raises(amfkit.DecodeError, match="array length 4294967295 exceeds"):
        amf0.decode(b"\x0a\xff\xff\xff\xff\x05")


def test_reference_dag_is_not_expanded():
    # 40 levels, each an array holding the previous one twice: 2^40 paths, 41 objects.
    data = bytearray(b"\x09\x05\x01\x01\x01")  # [null, null] is object 0
    for level in range(1, 41):
        # item `level - 1` is object `level` (the outer array is object 0)
        data += b"\x09\x05\x01" + bytes([0x09, level << 1]) * 2
    # wrap all levels in one stream-level array so references resolve inside one value
    outer = b"\x09" + bytes([(41 << 1) | 1]) + b"\x01"
    value = amf3.decode(outer + bytes(data))
    assert value[40][0] is value[40][1] is value[39]


def test_deep_nesting_on_encode_is_an_encode_error():
    x: list = []
    for _ in range(100_000):
        x = [x]
    with pytest.raises(amfkit.EncodeError, match="nesting deeper than the limit of 1024"):
        amf3.encode(x)
    with pytest.raises(amfkit.EncodeError, match="nesting"):
        amf0.encode(x)
    assert amf3.Encoder(max_depth=4096).encode([[[1]]])


def test_cycles_on_encode_are_references_not_recursion():
    a: dict = {}
    a["a"] = a
    assert amf0.decode(amf0.encode(a))["a"] is not None
    assert amf3.decode(amf3.encode(a))["a"] is not None
