"""The exact document of AMF bytes (`amfkit.wire`): every valid vector of fixtures/ and
every foreign packet goes to JSON text and back to the same bytes; the choices a writer
makes that a decoded value forgets are in the document (length fields, traits written
again, NaN payloads, an ECMA array's count, the AVM+ switch, the flags of small forms);
a document that describes no AMF is refused with its JSON path."""

from __future__ import annotations

import json
import struct

import pytest

import amfkit
from amfkit import wire

from repo import FIXTURES

MANIFEST = json.loads((FIXTURES / "vectors.json").read_text(encoding="utf-8"))
VALID = [e for e in MANIFEST if "error" not in e]
FOREIGN = sorted((FIXTURES / "foreign").glob("*.bin"))
#: Vectors written with a non-canonical encoding of their value: the document keeps the
#: value, and writes it the canonical way.
NOT_CANONICAL = {
    "amf0/boolean-true-nonzero.amf": "02 for true",
    "amf0/long-string-short.amf": "a long-string marker for 5 bytes",
    "amf3/integer-overlong-2byte.amf": "a U29 of two bytes for 0",
    "amf3/integer-overlong-4byte.amf": "a U29 of four bytes for 0",
}


def _through_json(doc):
    return json.loads(json.dumps(doc, allow_nan=False))


@pytest.mark.parametrize("entry", VALID, ids=lambda e: e["file"])
def test_every_vector_goes_through_json_to_the_same_bytes(entry):
    data = (FIXTURES / entry["file"]).read_bytes()
    form, stream = f"amf{entry['version']}", bool(entry.get("stream"))
    doc = wire.read(data, form, stream=stream)
    back = wire.write(_through_json(doc), form, stream=stream)
    if entry["file"] in NOT_CANONICAL:
        assert wire.read(back, form, stream=stream) == doc
    else:
        assert back == data


@pytest.mark.parametrize("fixture", FOREIGN, ids=lambda p: p.name)
def test_every_foreign_packet_goes_through_json_to_the_same_bytes(fixture):
    data = fixture.read_bytes()
    doc = wire.read(data, "packet")
    assert wire.is_packet(doc)
    assert wire.write(_through_json(doc)) == data


def test_length_fields_and_string_habits_of_parts_are_kept():
    doc = wire.read((FIXTURES / "foreign" / "py3amf-netconnection-amf3.bin").read_bytes(), "packet")
    assert [b.get("length") for b in doc["bodies"]] == [0, 0]
    assert doc["headers"][0]["length"] == 0
    # The real length is written where the document gives none.
    del doc["bodies"][0]["length"]
    data = wire.write(doc)
    assert wire.read(data, "packet")["bodies"][0].get("length") is None


def test_what_a_decoded_value_forgets_is_in_the_document():
    # An ECMA array whose count field is not its number of entries (Flash writes an AS2
    # array's length there), AMF0 dates with a time zone, NaN payloads.
    ecma = bytes.fromhex("08 0000000f 0001 31 02 0001 61 000009")
    assert wire.read(ecma, "amf0") == {"__ecma__": {"1": "a"}, "length": 15}
    date = bytes.fromhex("0b") + struct.pack(">d", 1715949000000.0) + struct.pack(">h", 120)
    assert wire.read(date, "amf0") == {"__date__": "2024-05-17T12:30:00Z", "tz": 120}
    odd_nan = bytes.fromhex("05 7ff8000000000001")
    doc = wire.read(odd_nan, "amf3")
    assert doc == {"__float__": "NaN", "bits": "7ff8000000000001"}
    assert wire.write(_through_json(doc), "amf3") == odd_nan
    assert wire.read(bytes.fromhex("05 7ff8000000000000"), "amf3") == {"__float__": "NaN"}
    # An AMF0 number is an int when whole; -0.0 and fractions stay floats.
    assert wire.read(amfkit.amf0.encode([7, -0.0, 0.5]), "amf0") == [7, -0.0, 0.5]
    # AMF3 integers and doubles stay apart.
    assert wire.read(amfkit.amf3.encode([7, 7.0]), "amf3") == [7, 7.0]
    assert wire.write([7, 7.0], "amf3") == amfkit.amf3.encode([7, 7.0])


def test_traits_written_again_inline_are_marked():
    # Two anonymous objects, each with its own inline traits definition (a writer that
    # never references traits), then a third referencing the second's.
    data = bytes.fromhex("0907 01 0a0b 01 0378 0401 01 0a0b 01 00 0402 01 0a05 00 0403 01".replace(" ", ""))
    doc = wire.read(data, "amf3")
    assert doc[0] == {"x": 1}
    assert doc[1] == {"__alias__": "", "__traits__": "inline", "x": 2}
    assert wire.write(_through_json(doc), "amf3") == data
    # Without the mark, the writer references the first definition.
    del doc[1]["__traits__"]
    del doc[1]["__alias__"]
    assert wire.write(doc, "amf3") != data


def test_members_that_repeat_or_look_like_tags_are_written_as_pairs():
    obj = {"__alias__": "not a class", "x": 1}
    data = amfkit.amf3.encode(obj)
    doc = wire.read(data, "amf3")
    assert doc == {"__members__": [["__alias__", "not a class"], ["x", 1]]}
    assert wire.write(doc, "amf3") == data
    # A dynamic member named like a sealed one.
    dup = bytes.fromhex("0a 1b 01 03 61 0401 00 0402 01")
    doc = wire.read(dup, "amf3")
    assert doc == {"__alias__": "", "__sealed__": ["a"], "__members__": [["a", 1], ["a", 2]]}
    assert wire.write(doc, "amf3") == dup


def test_small_forms_are_read_by_member_name_and_odd_flags_are_kept():
    small = (FIXTURES / "foreign" / "py3amf-flex-ack-small.bin").read_bytes()
    doc = wire.read(small, "packet")
    ack = doc["bodies"][0]["value"]["__amf3__"][0]
    assert ack["__alias__"] == "DSK" and "__flags__" not in ack
    assert set(ack["__small__"][0]) == {"body", "timestamp", "clientIdBytes", "messageIdBytes"}
    assert ack["__small__"][1] == {"correlationId": "00000001-4455-6677-8899-AABBCCDDEEFF"}
    # A writer's extra, empty flag byte and a bit no Flex version defines.
    odd = bytes.fromhex('0a0707') + b"DSA" + bytes.fromhex("81 80 00 0401 40 0402")
    doc = wire.read(odd, "amf3")
    assert doc == {"__alias__": "DSA", "__small__": [{"body": 1}, {"flag0.6": 2}], "__flags__": [[0x81, 0x80, 0x00], [0x40]]}
    assert wire.write(_through_json(doc), "amf3") == odd
    with pytest.raises(wire.DocumentError, match="__flags__ do not announce the members given"):
        wire.write({**doc, "__flags__": [[0x01], [0x00]]}, "amf3")
    with pytest.raises(wire.DocumentError, match='"sender" is no member of a AbstractMessage'):
        wire.write({"__alias__": "DSA", "__small__": [{"sender": 1}, {}]}, "amf3")


def test_opaque_bodies_and_streams():
    ext = bytes.fromhex("0a07") + b"\x13com.x.Ext" + bytes([1, 2, 3])
    with pytest.raises(amfkit.DecodeError):
        wire.read(ext, "amf3")
    doc = wire.read(ext, "amf3", unknown_externalizable="opaque")
    assert doc == {"__alias__": "com.x.Ext", "__opaque__": "AQID"}
    assert wire.write(doc, "amf3") == ext
    stream = amfkit.amf0.Encoder().encode_all(["connect", {"a": 1}])
    doc = wire.read(stream, "amf0", stream=True)
    assert doc == ["connect", {"a": 1}]
    assert wire.write(doc, "amf0", stream=True) == stream


def test_references_name_the_json_path_of_what_they_refer_to():
    shared = {"k": "v"}
    data = amfkit.amf3.encode({"a": shared, "b": [shared]})
    doc = wire.read(data, "amf3")
    assert doc == {"a": {"k": "v"}, "b": [{"__ref__": "$.a"}]}
    assert wire.write(doc, "amf3") == data
    env = (FIXTURES / "foreign" / "py3amf-flex-request.bin").read_bytes()
    assert wire.write(wire.read(env, "packet")) == env


@pytest.mark.parametrize(
    "doc, form, message",
    [
        ({"a": {"__ref__": "$.b"}, "b": 1}, "amf3", r'__ref__ "\$.b" names no value met before it in this reference context, at \$.a'),
        ({"__ecma__": {}}, "amf3", r"__ecma__ is an AMF0 ECMA array, not an AMF3 value, at \$"),
        ({"__amf3__": {"__amf3__": 1}}, "amf0", r"__amf3__ switches from AMF0 to AMF3, and this value is AMF3 already, at \$.__amf3__"),
        ([{"__date__": "yesterday"}], "amf3", r'__date__ "yesterday" is not an ISO 8601 date in UTC, at \$\[0\]'),
        ({"x": {"__bytes__": "!!"}}, "amf3", r"__bytes__ is not valid base64, at \$.x"),
        ({"__float__": "big"}, "amf3", r'__float__ is "NaN", "Infinity" or "-Infinity", at \$'),
        ({"__alias__": "A", "__sealed__": ["x"]}, "amf3", r'sealed member "x" is missing, at \$'),
        ({"__alias__": "A", "__dynamic__": False, "y": 1}, "amf3", r'member "y" is not sealed, and the traits are not dynamic, at \$'),
        ({"__vector__": "int", "items": ["a"]}, "amf3", r"Vector.<int> holds 32-bit integers, at \$.items"),
        ({"__xml__": "<a/>", "extra": 1}, "amf3", r"unexpected key 'extra'"),
        ({"__sealed__": ["x"], "x": 1}, "amf3", r"__sealed__ belongs to an object with __alias__, at \$"),
        ({"__weird__": 1}, "amf3", r'unexpected key "__weird__" in an object, at \$'),
    ],
)
def test_a_document_that_describes_no_amf_is_refused_with_its_path(doc, form, message):
    with pytest.raises(wire.DocumentError, match=message):
        wire.write(doc, form)


def test_packet_documents_are_checked_too():
    with pytest.raises(wire.DocumentError, match=r"__packet__ is the packet's version, 0, 1 or 3, at \$.__packet__"):
        wire.write({"__packet__": 2})
    with pytest.raises(wire.DocumentError, match=r"a part has a target, at \$.bodies\[0\]"):
        wire.write({"__packet__": 0, "bodies": [{"response": "/1", "value": None}]})
    with pytest.raises(wire.DocumentError, match=r"unexpected key 'version'"):
        wire.write({"__packet__": 0, "version": 0})
    with pytest.raises(wire.DocumentError, match="needs its form"):
        wire.write([1])
    # Each part is its own reference context: a reference cannot reach another part.
    doc = {
        "__packet__": 0,
        "bodies": [
            {"target": "a", "response": "/1", "value": {"x": 1}},
            {"target": "b", "response": "/2", "value": {"__ref__": "$.bodies[0].value"}},
        ],
    }
    with pytest.raises(wire.DocumentError, match="names no value met before it in this reference context"):
        wire.write(doc)
