"""DecodeError and EncodeError: their classes, offsets, paths and messages."""

from __future__ import annotations

import pytest

import amfkit
from amfkit import amf0, amf3


def test_error_classes():
    assert issubclass(amfkit.DecodeError, amfkit.AMFError)
    assert issubclass(amfkit.DecodeError, ValueError)
    assert issubclass(amfkit.EncodeError, amfkit.AMFError)
    assert issubclass(amfkit.EncodeError, TypeError)
    assert amfkit.DecodeError.__module__ == "amfkit"


def test_decode_error_has_offset_path_and_a_lowercase_reason():
    data = bytes.fromhex("0a0b01" "0361" "0905" "01" "0401" "20")
    with pytest.raises(amfkit.DecodeError) as e:
        amf3.decode(data)
    err = e.value
    assert err.offset == 10
    assert err.path == "$.a[1]"
    assert err.reason == "unknown amf3 marker 0x20"
    assert str(err) == "unknown amf3 marker 0x20, at byte 10 ($.a[1])"


def test_length_prefix_beyond_the_input():
    with pytest.raises(amfkit.DecodeError) as e:
        amf3.decode(bytes.fromhex("0a0b01" "0361" "06bfffffff"))
    # u29 bf ff ff ff = 0x0fffffff: inline, length 0x07ffffff; the offset is where the
    # string's bytes would start.
    assert str(e.value) == "string length 134217727 exceeds the 0 bytes left, at byte 10 ($.a)"


def test_encode_error_names_the_path():
    with pytest.raises(amfkit.EncodeError) as e:
        amf3.encode({"items": [1, {"owner": object()}]})
    assert e.value.path == "$.items[1].owner"
    assert str(e.value).endswith("($.items[1].owner)")
    with pytest.raises(amfkit.EncodeError) as e:
        amf0.encode({"items": [1, {"owner": object()}]})
    assert e.value.path == "$.items[1].owner"


def test_keys_that_are_not_identifiers_are_quoted_in_paths():
    with pytest.raises(amfkit.EncodeError) as e:
        amf3.encode({"a b": object()})
    assert e.value.path == '$["a b"]'


def test_exceptions_of_hooks_pass_through():
    def default(obj):
        raise KeyError("from the hook")

    with pytest.raises(KeyError, match="from the hook"):
        amf3.encode([object()], default=default)


def test_stream_errors_name_the_value():
    with pytest.raises(amfkit.DecodeError) as e:
        amf3.Decoder().decode_all(b"\x01\x01\x20")
    assert e.value.path == "$[2]" and e.value.offset == 2


def test_empty_input():
    for codec in (amf0, amf3):
        with pytest.raises(amfkit.DecodeError, match="unexpected end of input") as e:
            codec.decode(b"")
        assert e.value.offset == 0
        assert codec.Decoder().decode_all(b"") == []


def test_invalid_utf8():
    with pytest.raises(amfkit.DecodeError, match="invalid utf-8") as e:
        amf3.decode(b"\x06\x05\xc3\x28")
    assert e.value.offset == 2


def test_out_of_range_references():
    for data, table in [(b"\x09\x02", "object"), (b"\x06\x02", "string"), (b"\x0a\x05", "traits")]:
        with pytest.raises(amfkit.DecodeError, match=f"{table} reference"):
            amf3.decode(data)
    with pytest.raises(amfkit.DecodeError, match="object reference 3"):
        amf0.decode(b"\x07\x00\x03")
