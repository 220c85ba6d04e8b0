"""AMF0 through the Python API: exact bytes from the specification, the mapping, the
reference table (which holds objects and arrays, not dates), and the AVM+ switch."""

from __future__ import annotations

import array
import datetime as dt
import struct

import pytest

import amfkit
from amfkit import amf0, amf3

from graphs import assert_isomorphic


def num(x: float) -> str:
    return "00" + struct.pack(">d", x).hex()


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, "05"),
        (amfkit.Undefined, "06"),
        (True, "0101"),
        (False, "0100"),
        (1.5, num(1.5)),
        (7, num(7)),
        ("", "020000"),
        ("hé", "02000368c3a9"),
        ({}, "03000009"),
        ({"a": 1}, "030001" "61" + num(1) + "000009"),
        ([1], "0a00000001" + num(1)),
        (amfkit.XMLDocument("<a/>"), "0f00000004" + b"<a/>".hex()),
        (dt.datetime(1970, 1, 1, 0, 0, 1), "0b" + struct.pack(">d", 1000).hex() + "0000"),
    ],
)
def test_bytes_follow_the_specification(value, expected):
    assert amf0.encode(value).hex() == expected
    assert amf0.decode(bytes.fromhex(expected)) == value


def test_integral_numbers_read_as_ints():
    assert type(amf0.decode(amf0.encode(3))) is int
    assert type(amf0.decode(amf0.encode(3.5))) is float
    neg_zero = amf0.decode(amf0.encode(-0.0))
    assert type(neg_zero) is float and str(neg_zero) == "-0.0"
    assert type(amf0.decode(amf0.encode(2.0**60))) is float


def test_long_strings():
    s = "x" * 70000
    data = amf0.encode(s)
    assert data[0] == 0x0C and struct.unpack(">I", data[1:5])[0] == 70000
    assert amf0.decode(data) == s


def test_typed_objects():
    t = amfkit.TypedObject("com.example.User", {"name": "a", "age": 3})
    data = amf0.encode(t)
    assert data.startswith(b"\x10\x00\x10com.example.User")
    back = amf0.decode(data)
    assert isinstance(back, amfkit.TypedObject) and back == t
    assert amf0.encode(back) == data


def test_ecma_arrays():
    m = amfkit.MixedArray({0: "a", "k": "v", -1: "n"})
    data = amf0.encode(m)
    assert data[0] == 0x08
    back = amf0.decode(data)
    assert isinstance(back, amfkit.MixedArray) and back == m
    # a plain dict with int keys is an ECMA array too
    assert amf0.decode(amf0.encode({1: "a", "b": 2})) == {1: "a", "b": 2}


def test_ecma_array_count_is_not_trusted():
    # count 0 with two entries present, as real peers write
    data = bytes.fromhex("0800000000" "000161" + num(1)[0:] + "000162" + num(2) + "000009")
    assert amf0.decode(data) == {"a": 1, "b": 2}


def test_references_and_cycles():
    shared = {"x": 1}
    graph = {"a": shared, "b": [shared, shared]}
    graph["self"] = graph
    data = amf0.encode(graph)
    back = amf0.decode(data)
    assert back["a"] is back["b"][0] is back["b"][1]
    assert back["self"] is back
    assert_isomorphic(graph, back)


def test_dates_and_xml_take_reference_table_entries_as_flash_player_counts_them():
    # [date, obj, obj]: the second obj is reference 2 (array 0, date 1, obj 2). The AMF0
    # specification lists only objects and arrays as referenceable; Flash Player numbers
    # dates and XML documents too, and a reader that does not would take reference 1 for
    # the date.
    obj = {"a": 1}
    data = amf0.encode([dt.datetime(2000, 1, 1), obj, obj])
    assert data.endswith(b"\x07\x00\x02")
    back = amf0.decode(data)
    assert back[1] is back[2] and back[1] == obj
    xml = amfkit.XMLDocument("<a/>")
    data = amf0.encode([xml, obj, obj])
    assert data.endswith(b"\x07\x00\x02")


def test_the_same_date_or_xml_twice_is_a_reference_to_the_same_object():
    when = dt.datetime(2001, 2, 3, 4, 5, 6)
    xml = amfkit.XMLDocument("<a/>")
    data = amf0.encode([when, xml, when, xml])
    assert data.endswith(b"\x07\x00\x01\x07\x00\x02")
    back = amf0.decode(data)
    assert back[0] == when and back[0] is back[2] and back[1] is back[3]
    # written by hand: a date at index 1, then a reference to it
    raw = b"\x0a\x00\x00\x00\x02\x0b" + struct.pack(">dh", 0.0, 0) + b"\x07\x00\x01"
    first, again = amf0.decode(raw)
    assert first is again and first == dt.datetime(1970, 1, 1)


def test_avmplus_switch_for_what_amf0_cannot_carry():
    for value in [b"bytes", array.array("i", [1]), amfkit.ObjectVector([1]), amfkit.Dictionary({1: 2})]:
        data = amf0.encode(value)
        assert data[0] == 0x11
        assert data[1:] == amf3.encode(value)
        back = amf0.decode(data)
        assert back == value


def test_amf3_context_spans_the_switched_values_of_a_stream():
    text = "shared text"
    data = amf0.Encoder().encode_all([b"x", text, amfkit.Dictionary({"k": text}), amfkit.Dictionary({"k": text})])
    values = amf0.Decoder().decode_all(data)
    assert values[1] == text and values[2]["k"] == text and values[3]["k"] == text
    # The second switched Dictionary names "k" and the text by string reference.
    second = data[data.rindex(b"\x11\x11") :]
    assert b"shared text" not in second


def test_empty_member_names_round_trip():
    assert amf0.decode(amf0.encode({"": 1, "a": 2})) == {"": 1, "a": 2}


def test_xml_and_e4x_both_write_the_xml_document_marker():
    assert amf0.encode(amfkit.XML("<a/>"))[0] == 0x0F


def test_unsupported_marker_reads_as_undefined():
    assert amf0.decode(b"\x0d") is amfkit.Undefined


@pytest.mark.parametrize("marker, name", [(0x04, "movieclip"), (0x0E, "recordset")])
def test_reserved_markers_are_errors(marker, name):
    with pytest.raises(amfkit.DecodeError, match=f"reserved amf0 marker 0x{marker:02x} \\({name}\\)"):
        amf0.decode(bytes([marker]))


def test_date_time_zone_field_is_kept():
    data = b"\x0b" + struct.pack(">d", 0) + struct.pack(">h", -120)
    back = amf0.decode(data)
    assert back == amfkit.Date(0, tz=-120)
    assert amf0.encode(back) == data


def test_ecma_array_length_is_kept_as_flash_player_wrote_it():
    """Flash Player writes an AS2 array's length in the ECMA count (a holey array of
    length 15 with entries at 0 and 5 says 15); the count is kept as MixedArray.length
    and written back, so the game reads the same length. A new MixedArray writes the
    number of its entries."""
    holey = bytes.fromhex("08 0000000f 0001 30 02 0001 61 0001 35 02 0001 62 0000 09".replace(" ", ""))
    value = amf0.decode(holey)
    assert value == {0: "a", 5: "b"} and value.length == 15
    assert amf0.encode(value) == holey
    assert amf0.encode(amfkit.MixedArray({0: "a", 5: "b"}))[1:5] == b"\x00\x00\x00\x02"
    value.length = None
    assert amf0.encode(value)[1:5] == b"\x00\x00\x00\x02"
